"""The field on equal terms (issue 12): each rule against a small hand-computed case
transcribed from its source, one budget B for every selective policy on random worlds,
supersession only where a policy's design has a contradiction rule, and the budget curves.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wmtsim.core.codes import ACTION, FAILURE, SUCCESS, SUMMARY
from wmtsim.core.field_knobs import (
    B_DELETED,
    B_DROPPED,
    B_FORGOTTEN,
    B_IN,
    B_OVERWRITTEN,
    B_RECALL,
    B_UNSEEN,
    N_MISC,
    Baselines,
    M,
)
from wmtsim.core.field_policies import MB_CODE, MB_STOCHASTIC
from wmtsim.core.metrics import N_COUNTERS, C
from wmtsim.core.packing import as_array
from wmtsim.core.params import Params
from wmtsim.core.policies import FAM_WMT, FIELD_POLICIES, POLICIES, get_policy
from wmtsim.core.stubs import Stubs
from wmtsim.core.world_spec import PoisonSpec, WorldSpec
from wmtsim.engine.field.admission import _mem0_admit
from wmtsim.engine.field.common import _content_similarity
from wmtsim.engine.field.forgetting import _letta_overflow, _mb_forget
from wmtsim.engine.field.generative import _ga_retrieve
from wmtsim.engine.forest import Forest, ForestRows
from wmtsim.engine.loop import _field_scratch, _trajectory
from wmtsim.engine.records import FieldScratch, FieldState, Knobs, Trajectory
from wmtsim.engine.simulation import simulate
from wmtsim.engine.world import generate

UNSELECTIVE = ("no_memory", "linear", "tree", "tree_summary")


def forest_row(n: int) -> ForestRows:
    """One trajectory's per-slot arrays (`Forest.row`) of ``n`` action slots."""
    rows = Forest.allocate(1, n, n).row(0)
    rows.kind[:] = ACTION
    rows.outcome[:] = SUCCESS
    rows.topic[:] = 0
    rows.wid[:] = np.arange(n)
    return rows


def kernel_records(F: ForestRows, policy: str, bl: Baselines | None = None,
                   params: Params | None = None, stubs: Stubs | None = None,
                   cross: float = 0.3) -> tuple[Trajectory, Knobs, FieldScratch]:
    """The `Trajectory`, `Knobs` and `FieldScratch` a field kernel takes, around the forest
    row ``F``, built as the engine builds them (every slot unseen, counters zero)."""
    n = F.kind.shape[0]
    T = _trajectory(np.int64(0), np.int64(0), F, np.full(n, -1, np.int32), n,
                    np.zeros(N_COUNTERS))
    store = FieldState(place=np.zeros((1, n), np.int8), importance=np.zeros((1, n)),
                       last=np.zeros((1, n), np.int64), freq=np.zeros((1, n), np.int64),
                       strength=np.zeros((1, n)), archival=np.zeros((1, n), np.bool_))
    X = _field_scratch(store, 0, n, as_array((bl or Baselines()).pack()))
    K = Knobs(sw=get_policy(policy).pack(), p=(params or Params()).pack(),
              st=(stubs or Stubs()).pack(), wk=WorldSpec(cross_relevance=cross).pack()[0])
    return T, K, X


# ---------------------------------------------------------------- TraceRetain


def test_traceretain_near_duplicate_compares_content_not_topic_alone() -> None:
    # Article §3.2: "cosine similarity > 0.95 → duplicate, keep the earliest". Two
    # successful actions of one subtask at relevance 0.80 and 0.81: topic-level
    # similarity 0.99; but one carries the key fact (evidence), so they are not the
    # same content and neither is a duplicate of the other.
    F = forest_row(3)
    F.rel[:] = [0.80, 0.81, 0.80]
    F.evidence[:] = [False, True, False]
    assert _content_similarity(0, 1, F, 0.2) == 0.0
    assert _content_similarity(0, 2, F, 0.2) == 1.0  # same kind, outcome, evidence
    F.outcome[2] = FAILURE
    assert _content_similarity(0, 2, F, 0.2) == 0.0


# ---------------------------------------------------------------- Generative Agents


def _ga_case(n: int, policy: str, bl: Baselines, budget: int = 1000,
             tokens: int | list[int] = 10) -> tuple[Trajectory, Knobs, FieldScratch]:
    """n stored memories of ``tokens`` each, all eligible, for `_ga_retrieve`."""
    F = forest_row(n)
    F.tokens[:] = tokens
    T, K, X = kernel_records(F, policy, bl, params=Params(budget=budget))
    X.store.place[:] = B_IN
    T.eligible[:] = True
    return T, K, X


def test_generative_agents_ties_go_as_the_public_code_orders_them() -> None:
    # retrieve.py `new_retrieve`: nodes = seq_event (newest first), stably sorted by
    # last_accessed; `top_highest_x_values` is a stable sort, so equal scores keep that
    # order. Three memories, same access step, importance and relevance: the paper's
    # scores all tie (min-max of constants = 0.5) and the newest wins; the code's rank
    # recency gives the first of that order (the newest) 0.99^1, the largest.
    n = 3
    util = np.full(n, 0.5)
    for policy in ("generative_agents", "generative_agents_code"):  # variants 0 and 1
        T, K, X = _ga_case(n, policy, Baselines(top_k=1, ga_top_k=1))
        X.store.importance[:] = 5.0
        _ga_retrieve(T, K, X, 4, n, util)
        assert T.selected.tolist() == [False, False, True], policy
    # Recency by rank, oldest access first (the code's ascending sort): slot 0 was
    # accessed at step 3, slots 1, 2 at step 1 → order 2, 1, 0; with relevance and
    # importance equal the code variant takes slot 2 (recency 0.99 > 0.99² > 0.99³).
    T, K, X = _ga_case(n, "generative_agents_code", Baselines(ga_top_k=1))
    X.store.importance[:] = 5.0
    X.store.last[:] = [3, 1, 1]
    _ga_retrieve(T, K, X, 4, n, util)
    assert T.selected.tolist() == [False, False, True]


def test_generative_agents_takes_what_fits_the_budget() -> None:
    n = 3
    util = np.array([0.9, 0.5, 0.1])
    T, K, X = _ga_case(n, "generative_agents_code", Baselines(), budget=200,
                       tokens=[300, 80, 80])
    _ga_retrieve(T, K, X, 0, n, util)
    assert T.selected.tolist() == [False, True, True]  # the best (300 tokens) does not fit


# ---------------------------------------------------------------- MemoryBank


def test_memorybank_code_formula_as_written_makes_strength_forget_faster() -> None:
    # forget_memory.py `forgetting_curve`: math.exp(-t / 5*S) = exp(-(t/5)·S). With
    # t = 10 days and S = 50 the code's R = e^-100 (forgotten on any draw), the paper's
    # R = exp(-t/S) = e^-0.2 ≈ 0.82.
    bl = Baselines(mb_time_scale=1.0)
    assert math.exp(-10.0 / 5 * 50) == math.exp(-(10.0 / 5.0) * 50.0)
    assert get_policy("memorybank_code").variant == MB_CODE
    assert get_policy("memorybank_stochastic").variant == MB_STOCHASTIC
    for policy, gone in (("memorybank_code", True), ("memorybank_stochastic", None)):
        T, K, X = kernel_records(forest_row(1), policy, bl)
        X.store.place[0], X.store.strength[0] = B_IN, 50.0
        _mb_forget(T, K, X, 10, 1)
        if gone:
            assert X.store.place[0] == B_FORGOTTEN
    # The paper's threshold rule: forget when steps > S·scale·ln(1/θ) = 1·1·ln 2.
    for dt, place in ((0, B_IN), (1, B_FORGOTTEN)):
        T, K, X = kernel_records(forest_row(1), "memorybank", bl)
        X.store.place[0], X.store.strength[0] = B_IN, 1.0
        _mb_forget(T, K, X, dt, 1)
        assert X.store.place[0] == place


def test_memorybank_forgets_only_at_session_starts() -> None:
    w = generate(WorldSpec(n_subtasks=(3, 4), n_actions=(4, 6)), seed=3, n=10)
    from wmtsim.engine import run

    for p in ("memorybank", "memorybank_stochastic", "memorybank_code"):
        for session, forgets in ((0, False), (1, True)):
            knobs = Baselines(mb_session_steps=session, mb_time_scale=1.0)
            _, _, rec = run(w, get_policy(p).pack(), Params().pack(), Stubs().pack(), 0,
                            None, knobs.pack())
            assert bool((rec["baseline_place"] == B_FORGOTTEN).any()) == forgets, p


# ---------------------------------------------------------------- mem0


@pytest.mark.parametrize(("knobs", "old", "new"), [
    ({"mem0_p_update": 1.0, "mem0_p_delete": 0.0, "mem0_p_none": 0.0}, B_OVERWRITTEN, B_IN),
    ({"mem0_p_update": 0.0, "mem0_p_delete": 1.0, "mem0_p_none": 0.0}, B_DELETED, B_DROPPED),
    ({"mem0_p_update": 0.0, "mem0_p_delete": 0.0, "mem0_p_none": 1.0}, B_IN, B_DROPPED),
    ({"mem0_p_update": 0.0, "mem0_p_delete": 0.0, "mem0_p_none": 0.0}, B_IN, B_IN),
])
def test_mem0_decisions(knobs: dict[str, float], old: int, new: int) -> None:
    # A true fact (slot 0, relevance 0.8) is stored; a poisoned fact on the same subtask
    # that looks relevant (0.9) arrives: similarity 1 − 0.1 = 0.9 >= mem0_match 0.8, so the
    # decision stub applies: UPDATE overwrites the true fact with the poisoned one (last
    # writer wins), DELETE removes it as contradicted, NONE keeps it and drops the new.
    F = forest_row(2)
    F.rel[:] = [0.8, 0.9]
    F.poisoned[1] = True
    bl = Baselines(mem0_random_decision=True, **knobs)  # type: ignore[arg-type]
    T, K, X = kernel_records(F, "mem0", bl, cross=0.2)
    X.store.place[:] = [B_IN, B_UNSEEN]
    _mem0_admit(T, K, X, 1, 1)
    assert tuple(X.store.place) == (old, new)
    assert T.out[C.llm_calls] == 2  # extraction + decision calls
    # Below the match threshold: always ADD.
    X.store.place[:] = [B_IN, B_UNSEEN]
    F.topic[1] = 1  # another subtask: similarity 0.2·0.9 = 0.18
    _mem0_admit(T, K, X, 1, 1)
    assert tuple(X.store.place) == (B_IN, B_IN)


@pytest.mark.parametrize(("rel_new", "old", "new"), [
    (0.9, B_OVERWRITTEN, B_IN),  # looks more informative: UPDATE (keeps the richer fact)
    (0.75, B_IN, B_DROPPED),  # looks less informative: NONE (already known)
])
def test_mem0_content_aware_decision_keeps_the_fact_with_more_information(
        rel_new: float, old: int, new: int) -> None:
    # DEFAULT_UPDATE_MEMORY_PROMPT: "keep the fact which has the most information". The
    # decision reads what the selector reads (apparent relevance, outcome), noise off.
    F = forest_row(2)
    F.rel[:] = [0.8, rel_new]
    T, K, X = kernel_records(F, "mem0", Baselines(mem0_match=0.5),
                             stubs=Stubs(selector_noise=0.0), cross=0.2)
    X.store.place[:] = [B_IN, B_UNSEEN]
    _mem0_admit(T, K, X, 1, 1)
    assert tuple(X.store.place) == (old, new)


def test_mem0_knob_probabilities_are_bounded() -> None:
    with pytest.raises(ValueError, match=r"Baselines\.mem0_p_none="):
        Baselines(mem0_p_update=0.6, mem0_p_delete=0.3, mem0_p_none=0.3)


# ---------------------------------------------------------------- supersession


def test_only_policies_with_a_contradiction_rule_act_on_supersede_events() -> None:
    w = generate(WorldSpec(n_subtasks=(3, 4), n_actions=(4, 6),
                           poison=(PoisonSpec("plausible", p_supersede=1.0),)), seed=5, n=30)
    acting = {p for p, pol in POLICIES.items() if pol.supersede}
    assert acting == {"wmt", "a3_no_semantic", "mem0", "traceretain_conflict"}
    for p in FIELD_POLICIES:
        n_sup = float(simulate(w, p).trajectories["n_superseded"].sum())
        assert (n_sup > 0) == (p in acting), p


# ---------------------------------------------------------------- one budget for all


@pytest.mark.slow  # every selective policy on six worlds, 13 s: make test-all
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), budget=st.integers(40, 900),
       top_k=st.integers(0, 6), sigma=st.floats(0.0, 1.2))
def test_every_selective_policy_keeps_its_context_within_the_budget(
        seed: int, budget: int, top_k: int, sigma: float) -> None:
    w = generate(WorldSpec(n_subtasks=(2, 4), n_actions=(2, 7), n_globals=1,
                           tokens_sigma=sigma, poison=(PoisonSpec("plausible"),
                                                       PoisonSpec("summary"))),
                 seed=seed, n=6)
    params = Params(budget=budget)
    stubs = Stubs(top_k=top_k)
    for p in POLICIES:
        if p in UNSELECTIVE:
            continue
        if p == "a3_no_semantic":
            # A3 has no selector to stop its whole-branch retrieval (the paper's rule,
            # `branch_retrieval = "whole"`); bounded by B only under the previous rule.
            res = simulate(w, p, params=params, stubs=replace(stubs, branch_retrieval="fit"),
                           record_steps=6)
            used = (res.steps.filter(pl.col("selected"))
                    .group_by(["trajectory", "step"]).agg(pl.col("tokens").sum()))
            assert used.height == 0 or int(used["tokens"].max()) <= budget, p  # type: ignore[arg-type]
            continue
        res = simulate(w, p, params=params, stubs=stubs, record_steps=6)
        used = (res.steps.filter(pl.col("selected"))
                .group_by(["trajectory", "step"]).agg(pl.col("tokens").sum()))
        assert used.height == 0 or int(used["tokens"].max()) <= budget, p  # type: ignore[arg-type]
        if top_k > 0 and POLICIES[p].family != FAM_WMT:  # one shared cap for the whole field
            n_sel = (res.steps.filter(pl.col("selected"))
                     .group_by(["trajectory", "step"]).len())
            assert n_sel.height == 0 or int(n_sel["len"].max()) <= top_k, p  # type: ignore[arg-type]


def test_unselective_baselines_serialise_everything_as_before() -> None:
    w = generate(WorldSpec(n_subtasks=(2, 3), n_actions=(3, 5)), seed=1, n=5)
    for p in ("linear", "tree", "tree_summary"):
        res = simulate(w, p, params=Params(budget=10), record_steps=5)
        s = res.steps
        assert (s["selected"] == s["eligible"]).all(), p


# ---------------------------------------------------------------- curves


def test_budget_curves_pair_every_policy_with_wmt_on_the_same_trajectories(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from wmtsim.studies.field.curves import budget_curves, parse_budgets, verdict, write_curves
    from wmtsim.studies.scenarios.scenario import load_scenario

    assert parse_budgets("200, 400,200") == [200, 400]
    with pytest.raises(ValueError, match="--budget 'x'"):
        parse_budgets("200,x")
    from wmtsim.core.inference import FAILS, HOLDS, HOLDS_NS, TIE

    # Δ = policy − wmt: a significant negative Δ TSR is "WMT beats it" holding
    assert verdict(-0.15, 0.001) == HOLDS and verdict(-0.05, 0.3) == HOLDS_NS
    assert verdict(0.15, 0.001) == FAILS and verdict(0.0, 1.0) == TIE
    assert verdict(0.15, 0.001, False) == HOLDS  # ASR: lower is better
    assert verdict(None, None) == ""
    sc = load_scenario("paper_poisoning")
    frame = budget_curves(sc, [150, 600], ["memgpt", "linear"], n=20, n_resamples=50)
    assert set(frame["policy"]) == {"wmt", "memgpt", "linear"}
    assert frame.filter(pl.col("policy") == "wmt")["d_mean"].null_count() == 6
    lin = frame.filter((pl.col("policy") == "linear") & (pl.col("metric") == "tsr"))
    assert lin["mean"].n_unique() == 1  # linear does not depend on B
    # one family per metric: Holm's adjusted p-values are at least the raw ones, and the
    # verdict is read from them (never from the interval alone)
    tests = frame.filter(pl.col("metric").is_in(["tsr", "asr"]) & (pl.col("policy") != "wmt"))
    assert tests.height == 8 and (tests["d_p_adjusted"] >= tests["d_p"] - 1e-15).all()
    assert set(tests["verdict"]) <= {HOLDS, HOLDS_NS, TIE, FAILS}
    for r in tests.iter_rows(named=True):
        assert r["verdict"] == verdict(r["d_mean"], r["d_p_adjusted"], r["metric"] == "tsr")
    written = write_curves(frame, tmp_path)
    assert {p.name for p in written} == {"curves.parquet", "curves.md", "curves.png"}
    assert (tmp_path / "curves.png").read_bytes()[:4] == b"\x89PNG"
    # curves.md writes every cell in the precision policy, as `compare --budget` prints it
    from wmtsim.core.formatting import interval, num

    md = (tmp_path / "curves.md").read_text(encoding="utf-8")
    for r in frame.iter_rows(named=True):
        cell = num(r["mean"]) + ("" if r["d_mean"] is None else "<br>Δ " + interval(
            r["d_mean"], r["d_low"], r["d_high"], sign=True))
        assert f"| {cell}" in md, (r, cell)


# ---------------------------------------------------------------- MemGPT / Letta


def _letta_case(summary_tokens: int, n_queue: int) -> tuple[Trajectory, Knobs, FieldScratch]:
    """Slot 0: the running summary message; slots 1..: queued actions of 40 tokens."""
    F = forest_row(n_queue + 1)
    F.kind[0] = SUMMARY
    F.tokens[:] = 40
    F.tokens[0] = summary_tokens
    T, K, X = kernel_records(F, "memgpt", stubs=Stubs(c_sum=0.5))
    X.store.place[:] = B_IN
    X.misc[M.seen] = n_queue + 1
    X.misc[M.summary] = 0
    assert X.misc.shape == (N_MISC,)
    return T, K, X


def test_letta_summarises_the_messages_before_the_one_that_crosses() -> None:
    # letta/agent.py `summarize_messages_inplace`: buffer = [summary 100, 5 × 40] = 300
    # tokens > W = 250; desired = int(0.75 · 300) = 225; candidates = the buffer minus
    # the last 3 = [summary, a1, a2] (100, 140, 180: none crosses), so the cutoff is the
    # last candidate a2 and [summary, a1] are summarised: a2 stays (wmtsim's old rule
    # popped through it). New summary ceil(0.5 · 140) = 70; 70 + 4 · 40 = 230 ≤ 250.
    T, K, X = _letta_case(100, 5)
    _letta_overflow(T, K, X, 3, 6, 250.0, 0.75, 3)
    assert X.store.place.tolist() == [B_IN, B_RECALL, B_IN, B_IN, B_IN, B_IN]
    assert T.F.tokens[0] == 70 and T.out[C.summariser_calls] == 1
    assert T.out[C.context_overflows] == 0


def test_letta_would_raise_when_fewer_than_two_messages_can_be_summarised() -> None:
    # [summary 200, 3 × 40] = 320 > 250: the only candidate is the summary (the last 3
    # are kept), so fewer than two messages would be summarised: Letta raises
    # ContextWindowExceededError. The run is flagged and nothing is evicted.
    T, K, X = _letta_case(200, 3)
    _letta_overflow(T, K, X, 3, 4, 250.0, 0.75, 3)
    assert X.store.place.tolist() == [B_IN] * 4
    assert T.out[C.context_overflows] == 1 and T.out[C.summariser_calls] == 0


def test_conversation_search_is_a_charged_tool_call_over_user_messages() -> None:
    # Letta's conversation_search returns user messages only (task nodes), oldest first;
    # the agent's call is one LLM call charged its base and what it returns.
    # Searching at every subtask's answer (search_on_need false; the default searches
    # only when the context lacks a successful tool result, tests/engine/
    # test_field_round_three.py), each answer is one call.
    w = generate(WorldSpec(n_subtasks=(3, 4), n_actions=(3, 5)), seed=7, n=20)
    knobs = {"window_tokens": 200, "search_on_need": False}
    on = simulate(w, "memgpt", baselines=Baselines(**knobs), record_steps=20)
    off = simulate(w, "memgpt", baselines=Baselines(**knobs, recall_k=0), record_steps=20)
    crit = float(on.trajectories["n_critical_steps"].sum())
    final = float(on.trajectories.height)  # the final answer searches nothing
    calls = on.trajectories["n_llm_calls"].sum() - off.trajectories["n_llm_calls"].sum()
    assert calls == crit - final
    sel = on.steps.filter(pl.col("selected"))
    off_sel = off.steps.filter(pl.col("selected"))
    extra = sel.join(off_sel, on=["trajectory", "step", "slot"], how="anti")
    assert set(extra["kind"].to_list()) <= {"task"}  # never an observation
    # Each call is charged its base and what it returns (the subtask's own request,
    # already in the prompt on the active path: the search costs and adds nothing).
    tokens = (on.trajectories["n_memory_tokens"].sum()
              - off.trajectories["n_memory_tokens"].sum())
    assert tokens > calls * Baselines().search_base_tokens


# ---------------------------------------------------------------- TraceRetain's buffer


def test_traceretain_rates_its_short_term_buffer_in_batches() -> None:
    # The article §2.3 / §3.2: traces wait in a short-term buffer and are rated in
    # batches (one call per evaluation, not one per trace); a buffered trace is not
    # retrievable until it is evaluated.
    w = generate(WorldSpec(n_subtasks=(3, 4), n_actions=(4, 6)), seed=3, n=20)
    on = simulate(w, "traceretain_z", record_steps=20)
    off = simulate(w, "traceretain_z", baselines=Baselines(tr_buffer=0), record_steps=20)
    assert on.trajectories["n_llm_calls"].sum() < off.trajectories["n_llm_calls"].sum()
    # Evaluated only at the key moments (a subtask's answer, the final answer): at an
    # action step the trace just made is still in the buffer, never in context.
    late = simulate(w, "traceretain_z", baselines=Baselines(tr_buffer=1000,
                                                            tr_eval_every=1000),
                    record_steps=20)
    sel = late.steps.filter(pl.col("selected") & (pl.col("kind") == "action"))
    created = late.forest.created
    acts = sel.filter(pl.col("event") == "action")
    assert acts.height > 0
    for row in acts.iter_rows(named=True):
        assert created[row["trajectory"], row["slot"]] < row["step"]


# ---------------------------------------------------------------- GA's reflection


def test_generative_agents_reflects_when_poignancy_passes_the_threshold() -> None:
    # reflect.py: reflect when the poignancy since the last reflection reaches the
    # threshold; thoughts become memories (one summary per focal subtask) and every step
    # of it is an LLM call: focal points, insights, and two calls per thought.
    w = generate(WorldSpec(n_subtasks=(3, 4), n_actions=(4, 6)), seed=5, n=20)
    on = simulate(w, "generative_agents", baselines=Baselines(ga_reflect_threshold=20),
                  record_steps=20)
    off = simulate(w, "generative_agents", baselines=Baselines(ga_reflect_threshold=0),
                   record_steps=20)
    calls = on.trajectories["n_llm_calls"].sum() - off.trajectories["n_llm_calls"].sum()
    assert calls > 0
    kinds_on = set(on.steps["kind"].to_list())
    assert "summary" in kinds_on and "summary" not in set(off.steps["kind"].to_list())


def test_robustness_agreement_is_read_on_significance() -> None:
    """'agree' counts runs as significant as the headline (holds n.s. and tie are both
    not significant); a run that turns significant is named as the flip."""
    from wmtsim.core.inference import HOLDS, HOLDS_NS, TIE
    from wmtsim.studies.field.robustness import robustness_markdown

    frame = pl.DataFrame({
        "policy": ["a"] * 3, "budget": [1] * 3, "seed": [0, 1, 2],
        "setting": ["default"] * 3, "d_tsr": [-0.01, 0.0, -0.2], "low": [0.0] * 3,
        "high": [0.0] * 3, "p": [0.5, 1.0, 0.001], "p_adjusted": [0.5, 1.0, 0.001],
        "verdict": [HOLDS_NS, TIE, HOLDS]})
    text = robustness_markdown(frame, 0)
    assert f"| `a` | 1 | {HOLDS_NS} (-0.010) | 2/3 | default (seed 2: {HOLDS}) |" in text
    assert "Holm within the family" in text
