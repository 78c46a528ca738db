"""Trace replay: a JSONL trace through the WMT kernels, step by step."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import streamlit as st

from wmtsim.core.formatting import plural
from wmtsim.interfaces.dashboard import charts, services_trace, widgets

st.title("Trace replay")
st.caption("Replay a JSON Lines trace of WMT events (docs/trace_format.md) with "
           "`wmtsim.engine.trace.trace.run`: the scores after each select step, the tree, "
           "and every `expect` line checked.")

up = st.sidebar.file_uploader("Trace (.jsonl)", type=["jsonl", "json", "txt"],
                              key="trace_upload")
path = st.sidebar.text_input("…or a trace file path", key="trace_path",
                             help="A JSON Lines file under the results folder "
                                  "(`wmtsim dashboard --results DIR`, default results/).")
# Bytes, decoded line by line as `wmtsim replay` decodes a file: the same messages.
if up is None and path:
    try:  # under the results folder only, one message for every failure
        data = services_trace.trace_file_bytes(path)
    except ValueError as e:
        st.error(str(e))
        st.stop()
    source = path
elif up is None:
    st.sidebar.caption("No file given: showing the paper's worked example (A.4).")
    data = services_trace.demo_trace_bytes()
    source = "paper A.4 worked example"
else:
    data = up.getvalue()
    source = up.name

try:
    view = services_trace.replay_trace(data)
except ValueError as e:  # TraceError: "line N: ..."
    st.error(f"{source}: cannot replay: {e}")
    st.stop()

failed = view.expectations.filter(pl.col("status") == "FAILED")
st.subheader(source)
c1, c2, c3 = st.columns(3)
c1.metric("select steps", view.steps)
c2.metric("expect lines", view.expectations.height)
c3.metric("failed expect lines", failed.height)
if failed.height:
    st.error("Failed expect lines: " + ", ".join(
        f"line {r['line']} ({r['node']} {r['field']}: expected {r['expected']}, "
        f"got {r['got']}, tolerance {r['tolerance']})"
        for r in failed.iter_rows(named=True)))
elif view.expectations.height:
    st.success(f"All {view.expectations.height} expect lines hold.")

if view.steps == 0:
    st.info("The trace has no select step: nothing to show.")
    st.stop()

widgets.derive_state("trace", data, {"trace_step": 1}, keep={"trace_upload", "trace_path"})
step = st.slider("Select step", 1, max(view.steps, 2), key="trace_step",
                 disabled=view.steps < 2)
at = view.frame.filter(pl.col("step") == step)
nodes, edges = services_trace.trace_tree(view, step)
name = f"{Path(source).stem} step {step}"
left, right = st.columns(2)
with left:
    widgets.chart(charts.tree_chart(nodes, edges, f"tree after select step {step} "
                                    f"(line {at['line'][0]})", label="node"),
                  "trace_tree", f"{name} tree")
    leaves = charts.leaf_count(nodes)
    st.caption(charts.TREE_CAPTION + (
        f" {plural(leaves, 'leaf', 'leaves')}: too many to label; hover a node for its u."
        if leaves > charts.TREE_LABELS else ""))
with right:
    steps = view.frame.with_columns(slot=pl.col("node"))
    widgets.chart(charts.score_lines(steps, step, "retention scores u per select step"),
                  "trace_scores", f"{Path(source).stem} scores")

st.markdown(f"**Scores after select step {step}**")
# u at the replay's own resolution: it is compared with expect lines to 1e-9.
widgets.table(at.drop("parent"), "trace_table", name,
              precise={"u": "%.10g", "priority": "%.6g"})


def _highlight(row: dict[str, object]) -> list[str]:
    bad = row["status"] == "FAILED"
    return ["background-color: #f8d7da; color: #842029" if bad else ""] * len(row)


if view.expectations.height:
    st.markdown("**expect lines** (failed ones highlighted)")
    st.dataframe(widgets.shown_frame(view.expectations).to_pandas().style
                 .apply(_highlight, axis=1), hide_index=True, key="trace_expect")
    widgets.table_downloads(view.expectations, "trace_expect",
                            f"{Path(source).stem} expect lines")
with st.expander("all replayed rows (the trace's step records)"):
    widgets.table(view.frame, "trace_rows", f"{Path(source).stem} replayed rows",
                  precise={"u": "%.10g", "priority": "%.6g"})
