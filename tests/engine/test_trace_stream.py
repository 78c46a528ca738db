"""Streaming replay and the fast line validator (issue 16, point 6)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from conftest import REPO
from hypothesis import given, settings
from hypothesis import strategies as st

from wmtsim.engine.trace import trace
from wmtsim.engine.trace.events import _fast_valid, _schema, _validator
from wmtsim.engine.trace.replay import _Replayer
from wmtsim.engine.trace.trace import run, stream

TRACES = sorted((REPO / "scenarios" / "traces").glob("*.jsonl"))

json_value = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 2**31) | st.floats(-1e3, 1e3)
    | st.sampled_from(["", "a", "t1", "success", "failure", "folded", "active"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner,
                                                                max_size=2),
    max_leaves=4)
FIELDS = ["op", "id", "parent", "tokens", "poisoned", "result", "selected", "candidates",
          "summary_tokens", "u", "m", "state", "tol", "note", "params", "bogus"]


@st.composite
def events(draw: st.DrawFn) -> dict[str, Any]:
    """Lines near the schema's edge: a real op, then fields of any name and value."""
    ev: dict[str, Any] = {"op": draw(st.sampled_from(
        [*_schema()["properties"]["op"]["enum"], "nope", 3]))}
    for name in draw(st.lists(st.sampled_from(FIELDS[1:]), max_size=5, unique=True)):
        ev[name] = draw(json_value | st.sampled_from(["x", ["a", "b"], ["a", "a"], 0, 1.0]))
    return ev


@pytest.mark.slow  # 3,000 Hypothesis examples, 20 s on two loaded cores: make test-all
@settings(max_examples=3000, deadline=None)
@given(events())
def test_fast_validator_accepts_only_what_the_schema_accepts(ev: dict[str, Any]) -> None:
    if _fast_valid(ev):
        assert not list(_validator().iter_errors(ev)), ev


def test_fast_validator_accepts_every_line_of_the_shipped_traces() -> None:
    """The fast path is the one taken on valid traces (else jsonschema runs on each)."""
    lines = [json.loads(x) for p in TRACES for x in p.read_text().splitlines() if x.strip()]
    assert len(lines) > 50
    assert all(_fast_valid(ev) for ev in lines)


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_stream_writes_the_frame_run_returns(path: Path, suffix: str, tmp_path: Path) -> None:
    full = run(path)
    out = tmp_path / f"steps{suffix}"
    res = stream(path, out=out, batch_rows=7)  # many small batches
    assert res.rows == full.frame.height and res.steps == full.steps
    assert res.divergence == full.divergence and res.expectations == full.expectations
    back = pl.read_parquet(out) if suffix == ".parquet" else pl.read_csv(
        out, schema=full.frame.schema)
    assert back.equals(full.frame)
    if full.steps:
        assert res.last.equals(full.frame.filter(pl.col("step") == full.steps))
    assert [p.name for p in tmp_path.iterdir()] == [out.name]  # no temporary file left


def test_stream_keeps_no_frame_without_out(tmp_path: Path) -> None:
    """Memory is bounded by the tree: nothing per step is kept but the last step."""
    lines = ['{"op": "query"}', '{"op": "task", "id": "t", "parent": "root"}',
             '{"op": "activate", "id": "t"}', '{"op": "action", "id": "a", "parent": "t"}']
    lines += ['{"op": "select", "selected": ["a"]}'] * 2000
    steps: list[int] = []
    original = _Replayer.frame

    def counting(self: Any, s: Any) -> pl.DataFrame:
        steps.append(len(s))
        return original(self, s)

    _Replayer.frame = counting  # type: ignore[method-assign]
    try:
        res = stream(lines)
    finally:
        _Replayer.frame = original  # type: ignore[method-assign]
    assert res.steps == 2000 and res.rows == 2000 * 3
    assert steps == [1]  # only the last step was ever turned into rows


def test_stream_bad_trace_leaves_out_untouched(tmp_path: Path) -> None:
    out = tmp_path / "steps.parquet"
    out.write_bytes(b"old")
    lines = ['{"op": "query"}', '{"op": "action", "id": "a", "parent": "root"}']
    lines += ['{"op": "select", "selected": ["a"]}'] * 50 + ['{"op": "bogus"}']
    with pytest.raises(trace.TraceError, match="line 53"):
        stream(lines, out=out, batch_rows=10)  # batches were written before the error
    assert out.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["steps.parquet"]
