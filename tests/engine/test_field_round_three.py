"""The field on equal terms, round three (issue 20): one rule for a field policy's own
summaries as a subtask's result, the robustness flips applied to every reader of their
knob, MemoryBank's one summary per day, Letta's core_memory_replace and agent-decided
searches (docs/field.md). Engine == twin for every policy is
`tests/twins/test_baselines.py`; here each rule's characteristic behaviour.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import counters

from wmtsim.core.codes import SUMMARY
from wmtsim.core.field_knobs import Baselines
from wmtsim.core.knob_readers import readers
from wmtsim.core.policies import FIELD_POLICIES
from wmtsim.core.world_spec import PoisonSpec, World, WorldSpec
from wmtsim.engine.simulation import simulate
from wmtsim.engine.world import generate


def world(seed: int = 2, n: int = 16) -> World:
    return generate(WorldSpec(n_subtasks=(3, 4), n_actions=(4, 6), tokens_sigma=0.3,
                              poison=(PoisonSpec("plausible"),)), seed=seed, n=n)


# ---------------------------------------------------------------- one rule for summaries


@pytest.mark.parametrize("policy", ["generative_agents", "generative_agents_code",
                                    "memorybank", "traceretain_cluster"])
def test_a_derived_summary_is_a_result_only_with_evidence(policy: str) -> None:
    """A GA thought, a MemoryBank daily summary and a TraceRetain cluster summary stand
    for their subtask's result in the final answer (``top`` >= 0, read by
    `wmtsim.engine.agent._reason`) only when they carry the subtask's evidence; the one
    knob ``summary_is_result`` makes every one of them count, evidence or not."""
    w = world()
    F = simulate(w, policy).forest
    summary = F.kind == SUMMARY
    assert (summary & ~F.evidence).any()  # the case exists
    assert not (summary & (F.top >= 0) & ~F.evidence).any()
    assert (summary & (F.top >= 0) & F.evidence).any()
    G = simulate(w, policy, baselines=Baselines(summary_is_result=True)).forest
    assert ((G.kind == SUMMARY) & (G.top >= 0) & ~G.evidence).any()


def test_summary_is_result_is_one_knob_for_every_derived_summary() -> None:
    assert set(readers("baselines.summary_is_result", FIELD_POLICIES)) == {
        "generative_agents", "generative_agents_code", "memorybank",
        "memorybank_stochastic", "memorybank_code", "traceretain_cluster"}


# ---------------------------------------------------------------- robustness flips


def test_every_flip_covers_every_reader_of_its_knob() -> None:
    from wmtsim.studies.field.robustness import FLIPS

    for f in FLIPS:
        if f.name == "designs' own item caps":  # the subset whose cap differs
            continue
        covered = {p for p in FIELD_POLICIES if f.reads(p)}
        expected = {p for k in f.overrides for p in readers(k, FIELD_POLICIES)}
        assert covered == expected, f.name
    evidence = next(f for f in FLIPS if f.overrides == {
        "baselines.importance_reads_evidence": True})
    assert evidence.reads("memgpt") and not evidence.reads("mem0")


def test_memgpt_saves_read_the_evidence_flag_when_the_rater_does() -> None:
    """MemGPT's saves at the memory-pressure warning are rated by the shared importance
    stub, so the evidence flip moves it; mem0's decision reads its own signal."""
    from wmtsim.core.params import Params

    w = world()
    tight = Params(budget=200)
    flip = Baselines(importance_reads_evidence=True)
    a = counters(simulate(w, "memgpt", params=tight))
    b = counters(simulate(w, "memgpt", params=tight, baselines=flip))
    assert not np.array_equal(a, b)
    np.testing.assert_array_equal(counters(simulate(w, "mem0", params=tight)),
                                  counters(simulate(w, "mem0", params=tight, baselines=flip)))


# ---------------------------------------------------------------- MemoryBank: one per day


@pytest.mark.parametrize("scale", [10.0, 2.5])
def test_memorybank_writes_one_summary_per_day(scale: float) -> None:
    """summarize_memory.py `summarize_memory`: one call per day without a summary. A day
    is mb_time_scale prompt steps; at each session start (every mb_session_steps = 5)
    every day that has ended since the last one gets one summary: with 10-step days one
    every other session, with 2.5-step days two per session."""
    from wmtsim.core.metrics import C

    knobs = Baselines(mb_time_scale=scale)
    session = knobs.mb_session_steps
    c = counters(simulate(world(), "memorybank", baselines=knobs))
    steps = c[:, C.prompt_steps]
    last_start = session * np.floor((steps - 1) / session)
    days_ended = np.floor(last_start / scale)
    calls = c[:, C.summariser_calls]
    assert (calls <= days_ended).all() and (calls > 0).any()
    if scale > session:
        assert (calls < np.floor((steps - 1) / session)).any()  # fewer than one a session
    else:
        assert (calls > np.floor((steps - 1) / session)).any()  # more than one a session


# ---------------------------------------------------------------- Letta


def _letta_records(rel: list[float], knobs: Baselines):  # type: ignore[no-untyped-def]
    """Four queued tool messages of 30 tokens (`_letta_pressure`'s records)."""
    from wmtsim.core.codes import ACTION, SUCCESS
    from wmtsim.core.field_knobs import B_IN, N_MISC
    from wmtsim.core.metrics import N_COUNTERS
    from wmtsim.core.packing import as_array
    from wmtsim.engine.forest import Forest
    from wmtsim.engine.records import FieldScratch, FieldState, LifecycleScratch, Trajectory

    n = len(rel)
    F = Forest.allocate(1, n, n).row(0)
    F.kind[:] = ACTION
    F.outcome[:] = SUCCESS
    F.tokens[:] = 30
    F.rel[:] = rel
    F.wid[:] = np.arange(n)
    b = np.zeros(n, np.bool_)
    f = np.zeros(n)
    out = np.zeros(N_COUNTERS)
    T = Trajectory(np.int64(0), np.int64(0), F, np.zeros(n, np.int64), b, b, b, b, f, b,
                   out, LifecycleScratch(b, b, f, f, f, f, f, np.full(1, -1, np.int64)))
    store = FieldState(np.full(n, B_IN, np.int8), np.zeros(n), np.zeros(n, np.int64),
                       np.zeros(n, np.int64), np.ones(n), np.zeros(n, np.bool_))
    X = FieldScratch(store, np.zeros(2), np.zeros(N_MISC, np.int64), as_array(knobs.pack()))
    return T, X, store, out


@pytest.mark.parametrize("replace", [True, False])
def test_core_memory_replace_hand_worked(replace: bool) -> None:
    # W = 100, core room 0.3 · 100 = 30 tokens. Ratings without noise, round(10 · (0.75 ·
    # rel + 0.25)): rel 0.6 → 7, 0.9 → 9, 0.2 → 4. a0 (7) is appended to core memory; a1
    # (9) does not fit: core_memory_replace puts it in place of a0 (rated below it; a0
    # goes to recall storage), one call of 60 + 30 + 30; a2 (9) replaces nothing (a1 is
    # not rated below it): archival; a3 (4) is not saved. Calls: the chained step
    # (60 + 120), a0 (90), a1 (120), a2 (90) = 480 tokens. Without replace: a1 archival.
    from wmtsim.core.field_knobs import B_CORE, B_IN, B_RECALL
    from wmtsim.core.metrics import C
    from wmtsim.engine.field.letta import _letta_pressure

    T, X, store, out = _letta_records([0.6, 0.9, 0.9, 0.2],
                                      Baselines(importance_noise=0.0, core_replace=replace))
    _letta_pressure(T, X, 3, 4, 100.0)
    if replace:
        assert store.place.tolist() == [B_RECALL, B_CORE, B_IN, B_IN]
        assert store.archival.tolist() == [False, False, True, False]
        assert out[C.llm_calls] == 4 and out[C.memory_tokens] == 480.0
    else:
        assert store.place.tolist() == [B_CORE, B_IN, B_IN, B_IN]
        assert store.archival.tolist() == [False, True, True, False]
        assert out[C.llm_calls] == 4 and out[C.memory_tokens] == 450.0


def test_the_agent_searches_only_when_its_context_lacks_a_result() -> None:
    from wmtsim.core.codes import FAILURE
    from wmtsim.engine.field.letta import _letta_needs_search

    T, _, _, _ = _letta_records([0.5, 0.5], Baselines())
    F = T.F
    F.topic[:] = [1, 2]
    selected = np.array([True, False])
    assert not _letta_needs_search(2, F, selected, 1)  # a successful result about 1
    assert _letta_needs_search(2, F, selected, 2)  # nothing about 2 in context
    F.outcome[0] = FAILURE
    assert _letta_needs_search(2, F, selected, 1)  # a failure is no result
    # In a run: fewer tool calls than searching at every subtask's answer.
    from wmtsim.core.metrics import C

    w = world()
    on = counters(simulate(w, "memgpt"))[:, C.llm_calls].sum()
    off = counters(simulate(w, "memgpt", baselines=Baselines(search_on_need=False)))
    assert on < off[:, C.llm_calls].sum()
