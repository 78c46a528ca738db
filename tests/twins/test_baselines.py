"""The field's memory policies (docs/field.md) in the one engine.

Each policy's numba version (`wmtsim.engine.field.dispatch` via `wmtsim.engine`) equals its readable
twin (`wmtsim.twins.field_reference` via `wmtsim.twins.simulator`) exactly, on small batches and
with knobs that make every rule bind; then each policy's characteristic behaviour holds
in a purpose-built world; bad knobs raise ValueError naming the field.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from conftest import counters

from wmtsim.core.field_knobs import B_DROPPED, B_EVICTED, B_IN, Baselines
from wmtsim.core.metrics import COUNTERS, C
from wmtsim.core.params import Params
from wmtsim.core.policies import FAM_WMT, FIELD_POLICIES, POLICIES, SEL_BASELINE
from wmtsim.core.stubs import Stubs
from wmtsim.core.world_spec import POISON_KINDS, PoisonSpec, World, WorldSpec
from wmtsim.engine.simulation import SimResult, simulate
from wmtsim.engine.world import generate
from wmtsim.studies.scenarios.scenario import ScenarioError, load_scenario
from wmtsim.twins.simulator import simulate_reference

ALL_POISON = tuple(PoisonSpec(kind, p_supersede=0.5, persuasiveness=0.8)
                   for kind in POISON_KINDS)

# Small worlds and knobs that make capacities, windows, limits and clusters bind.
CASES: dict[str, tuple[WorldSpec, Baselines, Stubs, int]] = {
    "binding": (
        WorldSpec(n_subtasks=(2, 4), max_depth=2, p_nested=0.5, n_actions=(1, 6),
                  n_globals=2, p_resume=0.5, poison=ALL_POISON),
        Baselines(capacity=4, window_tokens=200, token_limit=150, window_steps=3, top_k=2,
                  cluster_size=2, ga_top_k=3, mb_time_scale=2.0, drop_failed=True,
                  mb_session_steps=2, mem0_match=0.5, mem0_p_update=0.4,
                  mem0_p_delete=0.2, mem0_p_none=0.2, dup_content=False,
                  ga_reflect_threshold=15, tr_buffer=2, tr_eval_every=3,
                  mem0_random_decision=True, retrieval_noise=3.0, warning_fraction=0.5,
                  archival_k=2),
        Stubs(p_leak=0.7), 3),
    "defaults": (
        WorldSpec(poison=(PoisonSpec("plausible"), PoisonSpec("failed"))),
        Baselines(), Stubs(), 4),
    "corners": (
        WorldSpec(n_subtasks=(1, 3), n_actions=(0, 3), n_globals=3, p_resume=1.0,
                  tokens_sigma=1.2, poison=ALL_POISON),
        Baselines(capacity=1, keep_last=0, recall_k=5, window_steps=1, token_limit=1,
                  z_window=2, importance_noise=0.0, hours_per_step=3.0, mb_s_cap=1,
                  dup_threshold=0.5, replace_threshold=0.3, mb_session_steps=1,
                  mb_code_recent=0, mb_code_top_k=1, mem0_match=0.0, mem0_p_update=1.0,
                  mem0_p_delete=0.0, mem0_p_none=0.0, ga_reflect_threshold=1,
                  ga_focal_points=2, ga_thoughts=1, tr_buffer=0, own_caps=True,
                  importance_reads_evidence=True, letta_walk=False, core_fraction=0.0,
                  save_threshold=0.0, summary_is_result=True),
        Stubs(selector_noise=0.0, c_sum=1.0), 5),
}


@cache
def world_of(case: str) -> World:
    spec, _, _, seed = CASES[case]
    return generate(spec, seed=seed, n=20, start=7)


@cache
def engine_run(case: str, policy: str) -> SimResult:
    _, knobs, stubs, _ = CASES[case]
    return simulate(world_of(case), policy, stubs=stubs, baselines=knobs)


@pytest.mark.parametrize("policy", FIELD_POLICIES)
@pytest.mark.parametrize("case", list(CASES))
def test_engine_equals_reference(case: str, policy: str) -> None:
    _, knobs, stubs, _ = CASES[case]
    res = engine_run(case, policy)
    ref, trees = simulate_reference(world_of(case), policy, Params(), stubs, knobs)
    eng = counters(res)
    for k, name in enumerate(COUNTERS):
        np.testing.assert_array_equal(eng[:, k], ref[:, k], err_msg=name)
    for i, tree in enumerate(trees):  # same nodes (summaries included), same tokens
        assert int(res.forest.n_slots[i]) == len(tree.nodes)
        toks = [tree.nodes[v].tokens for v in tree.nodes]
        assert toks == res.forest.tokens[i, :len(toks)].tolist()
        pois = [tree.nodes[v].poisoned for v in tree.nodes]
        assert pois == res.forest.poisoned[i, :len(pois)].tolist()


def test_cases_make_the_rules_bind() -> None:
    def total(policy: str, counter: str, case: str = "binding") -> float:
        return float(counters(engine_run(case, policy))[:, getattr(C, counter)].sum())

    # Summaries were made (clusters, recursive and running summaries).
    for p in ("traceretain_cluster", "memgpt", "sliding_window_summary",
              "token_buffer_summary"):
        assert total(p, "summariser_calls") > 0, p
    assert total("traceretain_z", "llm_calls") > total("sliding_window", "llm_calls")
    # GA reflected (thought memories are summaries); Letta's walk would have raised.
    for case in ("binding", "corners"):
        assert (engine_run(case, "generative_agents").forest.kind == 4).any(), case
    assert total("memgpt", "context_overflows") > 0
    # MemoryBank wrote daily summaries (summary nodes) in every case.
    for case in CASES:
        for p in ("memorybank", "memorybank_code"):
            assert (engine_run(case, p).forest.kind == 4).any(), (case, p)
    # Letta's warning made the agent save: into core memory and into archival memory.
    memories: list[object] = []
    for case in ("binding", "corners"):
        _, knobs, stubs, _ = CASES[case]
        simulate_reference(world_of(case), "memgpt", Params(), stubs, knobs, memories)
    items = [it for m in memories for it in m.items.values()]  # type: ignore[attr-defined]
    assert any(it.place == "core" for it in items)
    assert any(it.archival for it in items)


# ---------------------------------------------------------------- characteristic rules


def one_task_world(actions: int, seed: int = 0, tokens: float = 60.0) -> World:
    return generate(WorldSpec(n_subtasks=(1, 1), n_actions=(actions, actions), p_resume=0.0,
                              tokens_median=tokens, tokens_sigma=0.0, p_distractor=0.0),
                    seed=seed, n=4)


def test_lru_and_lfu_evict_the_least_recently_and_least_frequently_retrieved() -> None:
    from wmtsim.engine.field.admission import _tr_victim

    bs = np.array([B_IN, B_IN, B_IN, B_DROPPED], np.int8)
    imp = np.array([9.0, 2.0, 5.0, 0.0])
    last = np.array([4, 1, 3, 0], np.int64)  # slot 1 retrieved longest ago
    freq = np.array([1, 5, 0, 0], np.int64)  # slot 2 retrieved least often
    bl = Baselines().pack()
    created = np.array([0, 0, 3, 0], np.int32)
    assert _tr_victim(5, 4, bs, imp, last, freq, created, 0, bl) == 1  # LRU
    assert _tr_victim(5, 4, bs, imp, last, freq, created, 1, bl) == 2  # LFU
    # Importance + frequency (the article): 0.7·imp/10 + 0.3·freq/(5 − created + 1):
    # slot 0: 0.63 + 0.05, slot 1: 0.14 + 0.25 = 0.39, slot 2: 0.35 + 0 → slot 2.
    assert _tr_victim(5, 4, bs, imp, last, freq, created, 2, bl) == 2
    # Importance + recency: 0.7·imp/10 + 0.3·0.99^idle is lowest for slot 1 (2, idle 4).
    assert _tr_victim(5, 4, bs, imp, last, freq, created, 4, bl) == 1


def test_bounded_store_never_exceeds_capacity_and_evicts() -> None:
    w = one_task_world(12)
    knobs = Baselines(capacity=3, z_threshold=-10.0, min_tokens=0, dup_threshold=1.0)
    for p in ("traceretain_z", "traceretain_lfu", "traceretain_importance"):
        res = simulate(w, p, baselines=knobs)
        from wmtsim.core.policies import get_policy
        from wmtsim.engine import run  # the store's final places
        _, _, rec = run(w, get_policy(p).pack(), Params().pack(), Stubs().pack(), 0, None,
                        knobs.pack())
        assert ((rec["baseline_place"] == B_IN).sum(axis=1) <= 3).all(), p
        assert (rec["baseline_place"] == B_EVICTED).any(), p
        assert res.trajectories.height == 4


def test_z_score_retains_only_above_normal_traces() -> None:
    w = generate(WorldSpec(n_subtasks=(3, 4), n_actions=(4, 6), tokens_sigma=0.0),
                 seed=9, n=20)
    knobs = Baselines(capacity=1000, min_tokens=0, dup_threshold=1.0, z_threshold=0.5)
    memories: list[object] = []
    simulate_reference(w, "traceretain_z", Params(), Stubs(), knobs, memories)
    kept = dropped = 0
    for mem in memories:
        # Replay the rule over the rated traces in order: kept iff z > 0.5 against the
        # previous ratings (after the cold start of two ratings).
        scores = [it.importance for it in mem.items.values()]  # type: ignore[attr-defined]
        places = [it.place for it in mem.items.values()]  # type: ignore[attr-defined]
        for j in range(2, len(scores)):
            prev = np.array(scores[max(0, j - 50):j])
            if prev.std() > 0:
                z = (scores[j] - prev.mean()) / prev.std()
                assert (places[j] == "in") == (z > 0.5)
                kept += places[j] == "in"
                dropped += places[j] == "dropped"
    assert kept > 0 and dropped > kept  # only the above-normal part is kept


def test_memorybank_strength_grows_on_recall_and_forgetting_follows_the_curve() -> None:
    w = one_task_world(10)
    memories: list[object] = []
    knobs = Baselines(top_k=1, mb_time_scale=1.0, mb_threshold=0.5, mb_session_steps=1)
    simulate_reference(w, "memorybank", Params(), Stubs(), knobs, memories)
    strengths = [it.strength for m in memories for it in m.items.values()]  # type: ignore[attr-defined]
    assert max(strengths) > 1.0  # recalled items got S + 1
    places = {it.place for m in memories for it in m.items.values()}  # type: ignore[attr-defined]
    assert "forgotten" in places  # t > S·ln 2 without recall
    # Stochastic variant caps S.
    memories = []
    simulate_reference(w, "memorybank_stochastic", Params(), Stubs(),
                       Baselines(top_k=3, mb_s_cap=3, mb_session_steps=1), memories)
    assert max(it.strength for m in memories for it in m.items.values()) <= 3.0  # type: ignore[attr-defined]


def test_memgpt_queue_never_exceeds_its_window() -> None:
    w = generate(WorldSpec(n_subtasks=(3, 4), n_actions=(4, 6), tokens_sigma=0.3),
                 seed=2, n=10)
    # The queue's own walk (core memory's share of W: tests/twins/test_field_tools.py).
    knobs = Baselines(window_tokens=400, letta_memory=False)
    res = simulate(w, "memgpt", baselines=knobs, record_steps=10)
    # The queue and its summary in context stay within W at every step (each step
    # record carries the memory's size at that step).
    # At critical steps a recall search adds what the budget B (1024 here) leaves.
    per_step = (res.steps.filter(pl.col("selected"))
                .group_by(["trajectory", "step", "event"]).agg(pl.col("tokens").sum()))
    queue = per_step.filter(pl.col("event") == "action")
    assert queue.height and int(queue["tokens"].max()) <= 400  # type: ignore[arg-type]
    assert int(per_step["tokens"].max()) <= Params().budget  # type: ignore[arg-type]
    assert float(res.trajectories["n_summariser_calls"].sum()) > 0


def test_sliding_window_keeps_only_the_last_k_steps_and_token_buffer_its_limit() -> None:
    w = generate(WorldSpec(n_subtasks=(2, 3), n_actions=(4, 6)), seed=4, n=8)
    res = simulate(w, "sliding_window", baselines=Baselines(window_steps=2), record_steps=8)
    created = res.forest.created
    sel = res.steps.filter(res.steps["selected"])
    for row in sel.iter_rows(named=True):
        assert created[row["trajectory"], row["slot"]] > row["step"] - 2
    res = simulate(w, "token_buffer", baselines=Baselines(token_limit=150), record_steps=8)
    per_step: dict[tuple[int, int], int] = {}
    for row in res.steps.filter(res.steps["selected"]).iter_rows(named=True):
        key = (row["trajectory"], row["step"])
        per_step[key] = per_step.get(key, 0) + int(res.forest.tokens[row["trajectory"],
                                                                      row["slot"]])
    assert per_step and max(per_step.values()) <= 150


def test_generative_agents_code_variant_ranks_recency_oldest_first() -> None:
    from wmtsim.twins.field_store import minmax, power

    assert minmax([2.0, 2.0]) == [0.5, 0.5]
    assert power(0.99, 3) == 0.99 * 0.99 * 0.99
    w = one_task_world(6)
    a = counters(simulate(w, "generative_agents", baselines=Baselines(ga_top_k=2)))
    b = counters(simulate(w, "generative_agents_code", baselines=Baselines(ga_top_k=2)))
    assert a.shape == b.shape


# ---------------------------------------------------------------- knobs and plumbing


@pytest.mark.parametrize(("field", "value"), [
    ("capacity", 0), ("top_k", -1), ("z_window", 1), ("z_threshold", float("nan")),
    ("raw_threshold", 11.0), ("dup_threshold", 1.5), ("recency_decay", 0.0),
    ("cluster_size", 1), ("mb_threshold", 1.0), ("mb_time_scale", 0.0),
    ("window_tokens", -1), ("evict_fraction", 2.0), ("token_limit", -1),
    ("drop_failed", 1), ("hours_per_step", -1.0), ("dup_content", 0),
    ("mb_session_steps", -1), ("mb_code_top_k", 0), ("mem0_match", 1.5),
    ("mem0_p_update", -0.1),
])
def test_bad_knobs_name_the_field(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=f"Baselines.{field}="):
        Baselines(**{field: value})  # type: ignore[arg-type]


def test_scenario_section_and_overrides() -> None:
    sc = load_scenario("paper_poisoning")
    swept = sc.with_overrides({"baselines.capacity": 3, "window_steps": 4})
    assert swept.baselines.capacity == 3 and swept.baselines.window_steps == 4
    assert swept.to_dict()["baselines"]["capacity"] == 3
    with pytest.raises(ScenarioError, match=r"baselines\.capacity: 0 is invalid"):
        sc.with_overrides({"baselines.capacity": 0})
    with pytest.raises(ScenarioError, match=r"baselines\.bogus: unknown key"):
        sc.with_overrides({"baselines.bogus": 1})


def test_policies_registered_and_reference_is_pure_python() -> None:
    # Every non-WMT family is a field policy, and each has its row in docs/field.md's
    # generated table "The policies", in registration order (no count is hard-coded: a new
    # policy needs no edit here; tests/test_docs_generated.py checks the block is current).
    assert FIELD_POLICIES and set(FIELD_POLICIES) == {
        name for name, p in POLICIES.items() if p.family != FAM_WMT}
    doc = (Path(__file__).resolve().parents[2] / "docs" / "field.md").read_text()
    block = doc.split("<!-- generated:field-policies -->")[1].split(
        "<!-- /generated:field-policies -->")[0]
    rows = [line.split("|")[1].strip().strip("`") for line in block.splitlines()
            if line.startswith("| `")]
    assert rows == list(FIELD_POLICIES)
    assert all(POLICIES[p].selection == SEL_BASELINE for p in FIELD_POLICIES)
    import wmtsim.twins.field_reference as ref

    tree = ast.parse(Path(ref.__file__).read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "baselines":
            assert {a.name for a in node.names} <= {"PURPOSE_FORGET", "PURPOSE_IMPORTANCE",
                                                    "PURPOSE_MEM0", "Baselines"}
        if isinstance(node, ast.Import):
            assert all("numba" not in a.name for a in node.names)
