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
    from wmtsim.studies.field_robustness import FLIPS

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
