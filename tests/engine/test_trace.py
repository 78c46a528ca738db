"""Trace replay: the paper A.4 golden trace, the output frame, and replay vs the reference."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from conftest import REPO

import wmtsim
from wmtsim.conformance.generate import generate
from wmtsim.core.params import Params
from wmtsim.engine.trace.trace import REPLAY_COLUMNS, Divergence, check, replay, run, write_frame
from wmtsim.testing import assert_trace_matches

PAPER_A4 = REPO / "scenarios" / "traces" / "paper_a4.jsonl"


def _u(frame: pl.DataFrame, step: int, node: str) -> float:
    return frame.filter((pl.col("step") == step) & (pl.col("node") == node))["u"].item()


def _row(frame: pl.DataFrame, step: int, node: str) -> dict[str, Any]:
    return frame.filter((pl.col("step") == step) & (pl.col("node") == node)).row(0, named=True)


# ---------------------------------------------------------------------------------------
# Golden: paper Appendix A.4


def test_paper_a4_expectations_hold() -> None:
    result = run(PAPER_A4)
    assert result.divergence is None
    assert result.expectations == 31
    assert result.steps == 9
    assert_trace_matches(PAPER_A4)


def test_paper_a4_blog_decay_literals() -> None:
    frame = replay(PAPER_A4)
    # Failed poisoned blog: 0.30, missed at steps 1-4 (ρ = 0.9, M = 3).
    assert [_u(frame, s, "blog_lookup") for s in (1, 2, 3, 4)] == pytest.approx(
        [0.27, 0.2187, 0.1594323, 0.1162261467], abs=1e-12)
    # Eq. 15 closed form: 0.30 · ρ^h_3(r), h = 1, 3, 6, 9.
    for r, h in zip((1, 2, 3, 4), (1, 3, 6, 9), strict=True):
        assert _u(frame, r, "blog_lookup") == pytest.approx(0.30 * 0.9**h, abs=1e-12)
    # The clean arXiv record is selected every step: it keeps 0.75, m = 0.
    assert {_u(frame, s, "arxiv_record") for s in (1, 2, 3, 4)} == {0.75}


def test_paper_a4_mirror_and_fold_literals() -> None:
    frame = replay(PAPER_A4)
    # Plausible poison recorded as success starts at 0.75 like clean evidence ...
    assert [_u(frame, s, "mirror_page") for s in (5, 6, 7)] == pytest.approx(
        [0.675, 0.54675, 0.39858075], abs=1e-12)
    assert _u(frame, 7, "author_list") == 0.75
    # ... and once superseded leaves the pool untouched.
    row = _row(frame, 8, "mirror_page")
    assert (row["state"], row["eligible"], row["m"]) == ("obsolete", False, 3)
    assert row["u"] == pytest.approx(0.39858075, abs=1e-12)
    # Fold: branch 1 folded, its raw nodes hidden, its summary a candidate at 0.80.
    b1 = _row(frame, 5, "b1")
    assert b1["state"] == "folded" and not b1["eligible"]
    assert b1["priority"] == pytest.approx(0.54 + 0.075 * (0.9 + 0.1162261467 + 0.75 + 0.8)
                                           - 0.2 * 0.25, abs=1e-9)
    assert not _row(frame, 5, "blog_lookup")["eligible"]
    assert _row(frame, 5, "b1/summary")["eligible"]
    assert _u(frame, 9, "b1/summary") == pytest.approx(0.72)
    # The failed action stays a warning, never made obsolete automatically.
    assert _row(frame, 9, "blog_lookup")["state"] == "active"


def test_packaged_copy_matches_repo_copy() -> None:
    packaged = Path(wmtsim.__file__).parent / "data" / "paper_a4.jsonl"
    assert packaged.read_bytes() == PAPER_A4.read_bytes()


# ---------------------------------------------------------------------------------------
# The output frame


def test_frame_columns_and_dtypes() -> None:
    frame = replay(PAPER_A4)
    assert frame.columns == [name for name, _ in REPLAY_COLUMNS]
    assert [str(t) for t in frame.dtypes] == [dtype for _, dtype in REPLAY_COLUMNS]
    # one row per (step, node existing at that step)
    assert frame.group_by("step").len().sort("step")["len"].to_list() == [
        4, 4, 4, 4, 8, 8, 8, 8, 9]
    assert frame.filter(pl.col("kind") != "task")["priority"].null_count() == frame.filter(
        pl.col("kind") != "task").height
    assert frame.filter(pl.col("kind") == "task")["priority"].null_count() == 0
    assert frame.select(pl.col("eligible") | ~pl.col("selected")).to_series().all()


def test_trace_without_selects_gives_empty_typed_frame() -> None:
    frame = replay([{"op": "query"}, {"op": "task", "id": "t", "parent": "root"}])
    assert frame.height == 0
    assert frame.columns == [name for name, _ in REPLAY_COLUMNS]


def test_iterables_of_dicts_and_strings_equal_the_file() -> None:
    lines = PAPER_A4.read_text().splitlines()
    from_file = replay(PAPER_A4)
    assert replay(lines).equals(from_file)
    assert replay([json.loads(x) for x in lines]).equals(from_file)
    assert replay(str(PAPER_A4)).equals(from_file)


def test_write_frame_csv_and_parquet_roundtrip(tmp_path: Path) -> None:
    frame = replay(PAPER_A4)
    pq = write_frame(frame, tmp_path / "sub" / "a.parquet")
    assert pl.read_parquet(pq).equals(frame)
    csv = write_frame(frame, tmp_path / "a.csv")
    back = pl.read_csv(csv, schema=frame.schema)
    assert back.equals(frame)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv", "sub"]  # no temp files
    with pytest.raises(ValueError, match=r"allowed: \.parquet, \.csv"):
        write_frame(frame, tmp_path / "a.json")


# ---------------------------------------------------------------------------------------
# Semantics of individual ops


def _q(**kw: Any) -> Any:
    return {"op": "query", **kw}


def test_params_on_query_line_and_argument() -> None:
    events = [_q(params={"rho": 0.5}), {"op": "action", "id": "a", "parent": "root"},
              {"op": "select", "selected": []}, {"op": "expect", "id": "a", "u": 0.25}]
    assert check(events) is None
    # The argument is the base; the query line overrides it field by field.
    assert check(events, params=Params(rho=0.9, u_init_action=1.0)) is not None
    assert check(events, params=Params(u_init_action=0.5, rho_g=0.5)) is None
    assert run(events, params=Params(M=5)).params == Params(rho=0.5, M=5)


def test_global_memory_decays_by_rho_g() -> None:
    events = [_q(), {"op": "global", "id": "g", "poisoned": True},
              {"op": "select", "selected": []}, {"op": "select", "selected": []},
              {"op": "expect", "id": "g", "u": 0.6 * 0.98 * 0.98, "m": 1}]
    assert check(events) is None


def test_outcome_revision_keeps_m_unless_configured() -> None:
    """Eq. 3 by default: an outcome event leaves m; ``event_resets_m`` resets it."""
    base: list[dict[str, Any]] = [
        {"op": "action", "id": "a", "parent": "root"}, {"op": "select", "selected": []},
        {"op": "outcome", "id": "a", "result": "failure"},
        {"op": "outcome", "id": "a", "result": "success"}]
    assert check([_q(), *base, {"op": "expect", "id": "a", "u": 0.75, "m": 1}]) is None
    on = _q(params={"event_resets_m": True})
    assert check([on, *base, {"op": "expect", "id": "a", "u": 0.75, "m": 0}]) is None
    # The trace an Eq. 3 implementation writes: outcome after a miss, then another miss.
    follow = [*base, {"op": "select", "selected": []},
              {"op": "expect", "id": "a", "u": 0.75 * 0.81, "m": 2}]
    assert check([_q(), *follow]) is None


def test_complete_reopen_refold_keeps_one_summary() -> None:
    events = [
        _q(), {"op": "task", "id": "t", "parent": "root"}, {"op": "activate", "id": "t"},
        {"op": "action", "id": "a", "parent": "t"},
        {"op": "complete", "id": "t", "summary_tokens": 9},
        {"op": "select", "selected": []},  # summary missed: 0.72
        {"op": "expect", "id": "t/summary", "u": 0.72, "m": 1},
        {"op": "reopen", "id": "t"},
        {"op": "expect", "id": "t", "state": "active"},
        {"op": "select", "selected": ["a", "t/summary"]},  # reopened: a is a candidate again
        {"op": "complete", "id": "t"},
        {"op": "expect", "id": "t/summary", "u": 0.8, "m": 0, "state": "active"},
        {"op": "expect", "id": "t", "state": "folded"},
    ]
    assert check(events) is None
    frame = replay(events)
    assert frame.filter(pl.col("kind") == "summary")["node"].unique().to_list() == [
        "t/summary"]


def test_complete_on_active_path_moves_active_task_to_parent() -> None:
    events = [_q(), {"op": "task", "id": "t", "parent": "root"},
              {"op": "task", "id": "s", "parent": "t"}, {"op": "activate", "id": "s"},
              {"op": "complete", "id": "s"},
              # active is now t: t is on the path (not a candidate), s's summary is.
              {"op": "select", "selected": ["s/summary"]}]
    frame = replay(events)
    assert not _row(frame, 1, "t")["eligible"]
    assert _row(frame, 1, "s/summary")["selected"]


def test_explicit_candidates_override_the_pool() -> None:
    events = [_q(), {"op": "action", "id": "a", "parent": "root"},
              {"op": "action", "id": "b", "parent": "root"},
              {"op": "select", "selected": ["a"], "candidates": ["a"]},
              {"op": "expect", "id": "b", "u": 0.5, "m": 0},
              {"op": "expect", "id": "a", "u": 0.5, "m": 0}]
    assert check(events) is None


def test_suppression_makes_low_priority_branch_obsolete() -> None:
    events = [_q(params={"tau_obs": 0.8}), {"op": "task", "id": "t", "parent": "root"},
              {"op": "action", "id": "a", "parent": "t"},
              {"op": "outcome", "id": "a", "result": "failure"},
              {"op": "select", "selected": []},
              {"op": "expect", "id": "t", "state": "obsolete"}]
    assert check(events) is None
    row = _row(replay(events), 1, "t")
    # priority is Eq. 6 before suppression; state is after Eq. 7.
    assert row["priority"] < 0.8 and row["state"] == "obsolete"


def test_check_reports_first_divergence() -> None:
    events = [_q(), {"op": "action", "id": "a", "parent": "root"},
              {"op": "expect", "id": "a", "u": 0.4, "tol": 0.05},
              {"op": "expect", "id": "a", "m": 2},
              {"op": "expect", "id": "a", "state": "folded"}]
    d = check(events)
    assert d == Divergence(line=3, node="a", field="u", expected=0.4, got=0.5, tol=0.05)
    assert str(d).startswith("line 3: node 'a' field u: expected 0.4, got 0.5")
    with pytest.raises(AssertionError, match=r"line 3: node 'a', field u: expected 0\.4, "
                                             r"got 0\.5 \(tolerance 0\.05\)"):
        assert_trace_matches(events)
    events[2]["tol"] = 0.1
    assert check(events) == Divergence(4, "a", "m", 2, 0, None)
    events.pop(3)
    assert check(events) == Divergence(4, "a", "state", "folded", "active", None)


# ---------------------------------------------------------------------------------------
# Differential: random valid traces, expectations computed by the pure-Python reference


def _random_trace(seed: int) -> tuple[list[dict[str, Any]], list[Any]]:
    """A valid trace with the twin's expect lines (tol 0) and its step reports, from the
    project's one random-trace generator."""
    trace = generate(seed)
    return trace.events, trace.reports


@pytest.mark.parametrize("seed", range(60))
def test_replay_matches_reference_on_random_traces(seed: int) -> None:
    events, reports = _random_trace(seed)
    result = run(events)
    assert result.divergence is None, str(result.divergence)
    assert result.steps == len(reports)
    frame = result.frame
    for step, rep in enumerate(reports, start=1):
        at = frame.filter(pl.col("step") == step)
        assert at.filter(pl.col("eligible"))["node"].to_list() == rep.candidates
        assert at.filter(pl.col("selected"))["node"].to_list() == rep.selected
        got = dict(at.filter(pl.col("kind") == "task").select("node", "priority").iter_rows())
        assert got == rep.priorities  # Eq. 6 bit for bit, before suppression


def test_random_traces_exercise_every_op() -> None:
    ops: set[str] = set()
    states: set[str] = set()
    suppressed = 0
    for seed in range(60):
        events, reports = _random_trace(seed)
        ops |= {e["op"] for e in events}
        states |= {e["state"] for e in events if e["op"] == "expect"}
        suppressed += sum(len(r.suppressed) for r in reports)
    assert suppressed > 0  # Eq. 7 fires in some traces
    assert ops == {"query", "task", "action", "outcome", "global", "activate", "complete",
                   "reopen", "supersede", "select", "expect"}
    assert states == {"active", "folded", "obsolete"}


def test_a_byte_order_mark_is_not_part_of_line_1(tmp_path: Path) -> None:
    from wmtsim.engine.trace.trace import check

    path = tmp_path / "bom.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"op": "query"}\n{"op": "expect", "id": "root", "u": 1.0}\n')
    assert check(path) is None
