"""Dashboard services of the Trace page: replay of a pasted JSON Lines trace and the tree at
a chosen step. Part of the service layer (`wmtsim.interfaces.dashboard`).
"""

from __future__ import annotations

import io
import json
import os
from dataclasses import dataclass
from typing import Any

import polars as pl
import streamlit as st

from wmtsim.interfaces.dashboard.services_dynamics import tree_layout


@dataclass(frozen=True)
class TraceView:
    """A replayed trace: the replay frame (plus ``parent``), expectations and parameters."""

    frame: pl.DataFrame
    steps: int
    expectations: pl.DataFrame
    params: dict[str, Any]


def _expect_lines(lines: list[str]) -> list[tuple[int, dict[str, Any]]]:
    from wmtsim.engine.trace.trace import read_events

    return [(line, dict(ev)) for line, ev in read_events(lines) if ev.get("op") == "expect"]


@st.cache_data(show_spinner="Replaying…", max_entries=32)
def replay_trace(data: bytes) -> TraceView:
    """Replay a JSONL trace (its bytes, read as ``wmtsim replay`` reads a file:
    `wmtsim.engine.trace.events.decode_lines`, so both name the same line and column of
    a bad byte or value) with `wmtsim.engine.trace.trace.run`; raises `TraceError` for a bad
    trace.

    Every ``expect`` line is checked on its own (the trace with the other expect lines
    blanked), so all failing lines are reported, not only the first.
    """
    from wmtsim.engine.trace.events import decode_lines
    from wmtsim.engine.trace.trace import read_events, run

    lines = list(decode_lines(io.BytesIO(data)))
    result = run(lines)
    parents: dict[str, str | None] = {}
    for _, ev in read_events(lines):
        if ev.get("op") in ("task", "action"):
            parents[ev["id"]] = ev["parent"]
        elif ev.get("op") == "query":
            parents[ev.get("id", "root")] = None  # the trace format's default root id
        elif ev.get("op") == "global":
            parents[ev["id"]] = None
    nodes = result.frame["node"].unique(maintain_order=True).to_list()
    for node in nodes:  # fold summaries: "<task>/summary" under the task
        if node not in parents and node.endswith("/summary"):
            parents[node] = node[: -len("/summary")]
    frame = result.frame.join(
        pl.DataFrame({"node": nodes, "parent": [parents.get(v) for v in nodes]},
                     schema={"node": pl.String, "parent": pl.String}),
        on="node", how="left")
    expects = _expect_lines(lines)
    rows = []
    for line, ev in expects:
        alone = [ln if k + 1 == line or not _is_expect(ln) else "" for k, ln in
                 enumerate(lines)]
        d = run(alone).divergence
        checks = ", ".join(f"{f}={ev[f]!r}" for f in ("u", "m", "state") if f in ev)
        rows.append({"line": line, "node": ev["id"], "expect": checks,
                     "status": "ok" if d is None else "FAILED",
                     "field": None if d is None else d.field,
                     "expected": None if d is None else repr(d.expected),
                     "got": None if d is None else repr(d.got),
                     "tolerance": None if d is None else
                     ("exact" if d.tol is None else f"{d.tol:g}")})
    schema = {"line": pl.Int64, "node": pl.String, "expect": pl.String, "status": pl.String,
              "field": pl.String, "expected": pl.String, "got": pl.String,
              "tolerance": pl.String}
    return TraceView(frame, result.steps, pl.DataFrame(rows, schema=schema),
                     result.params.to_dict())


def _is_expect(line: str) -> bool:
    try:
        return json.loads(line).get("op") == "expect"
    except (ValueError, AttributeError):
        return False


def trace_file_bytes(path: str) -> bytes:
    """The bytes of the trace file typed in the Trace page's path box: only a regular file
    under the results folder (`results_dir`; a relative path is taken from the folder the
    dashboard was started in), through the one door (no FIFO, device, link anywhere below
    the results folder, nor more than `MAX_READ_BYTES`). Every failure is one
    `ValueError` with one message: the page may be served to others (``--host
    0.0.0.0``), and different messages for a missing file and an unreadable one would
    tell them which files exist on the server."""
    from wmtsim.core.input_files import MAX_READ_BYTES, read_regular
    from wmtsim.interfaces.dashboard.services_runs import results_dir

    root = results_dir()
    try:
        return read_regular(os.path.abspath(path), limit=MAX_READ_BYTES, root=root)
    except (OSError, ValueError):  # ValueError: a NUL byte in the path
        raise ValueError(f"{path}: no trace file to read there; allowed: a regular file "
                         f"of at most {MAX_READ_BYTES:,} bytes under the results folder "
                         f"({root}), or an upload") from None


def demo_trace_bytes() -> bytes:
    """The paper's A.4 worked example trace."""
    from wmtsim.interfaces.cli.main import demo_trace_path

    return demo_trace_path().read_bytes()


def trace_tree(view: TraceView, step: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The replayed tree after select step ``step``: node positions and edges."""
    at = view.frame.filter(pl.col("step") == step)
    index = {v: k for k, v in enumerate(at["node"].to_list())}
    nodes = at.with_columns(
        slot=pl.Series(list(range(at.height)), dtype=pl.Int64),
        parent=pl.Series([index.get(p, -1) if p is not None else -1
                          for p in at["parent"].to_list()], dtype=pl.Int64),
    )
    return tree_layout(nodes)
