"""The spec-true model (issue 11): one test per rule that used to bend a result.

Each test would have caught one row of the issue's findings: supersession without a later
clean action, policies acting on supersede events silently, compromised answers counted
as successes, draws keyed by slot, IP blind to summaries, the field's knobs dropped by
sweeps, m reset by outcome events. The rest check the new world rules (nested and resumed
injections, revisions, failure warnings), and the metrics (pooled ratios,
latency).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from conftest import REPO

import wmtsim.twins.simulator as simulator_module
from wmtsim.core.codes import ACTION, DRAW_SUMMARY, SUMMARY, TASK
from wmtsim.core.field_knobs import Baselines
from wmtsim.core.inference import metric_ci
from wmtsim.core.metrics import RATIOS, C
from wmtsim.core.params import Params
from wmtsim.core.policies import POLICIES
from wmtsim.core.rng import PURPOSE_SELECTOR_NOISE
from wmtsim.core.stubs import Stubs
from wmtsim.core.world_spec import (
    OP_ACTION,
    OP_COMPLETE,
    OP_REOPEN,
    OP_REVISE,
    OP_SUPERSEDE,
    OP_TASK,
    PoisonSpec,
    World,
    WorldSpec,
)
from wmtsim.engine.forest import Forest
from wmtsim.engine.selector import _select_branches
from wmtsim.engine.simulation import simulate
from wmtsim.engine.world import generate
from wmtsim.studies.scenarios.scenario import load_scenario
from wmtsim.studies.sweeps.sweep import content_hash
from wmtsim.twins.simulator import simulate_reference


def _events(w: World, i: int) -> list[tuple[int, int]]:
    n = int(w.n_events[i])
    return list(zip(w.op[i, :n].tolist(), w.arg[i, :n].tolist(), strict=True))


SHIPPED = ("paper_poisoning", "gaia_like", "global_poison", "long_horizon")


# --- 1. supersession only after a later clean action of the same subtask ----------------


@pytest.mark.parametrize("name", SHIPPED)
def test_every_supersession_follows_a_later_clean_action(name: str) -> None:
    sc = load_scenario(name)
    w = generate(sc.world, seed=sc.seed, n=300)
    seen = 0
    for i in range(w.n):
        ev = _events(w, i)
        for k, (op, q) in enumerate(ev):
            if op != OP_SUPERSEDE:
                continue
            seen += 1
            # The nearest action event before it is a clean action of q's subtask,
            # recorded after q.
            j = k - 1
            while ev[j][0] == OP_SUPERSEDE:
                j -= 1
            assert ev[j][0] == OP_ACTION, (name, i, ev[j])
            a = ev[j][1]
            assert not w.poisoned[i, a] and w.parent[i, a] == w.parent[i, q]
            assert ev.index((OP_ACTION, q)) < j
    assert name != "paper_poisoning" or seen > 0


def test_no_later_clean_action_no_supersession_unless_review() -> None:
    last = PoisonSpec("plausible", subtask=0, position=99, p_supersede=1.0)
    spec = WorldSpec(n_subtasks=(1, 1), n_actions=(3, 3), p_resume=0.0, poison=(last,))
    w = generate(spec, seed=3, n=50)
    assert not (w.op == OP_SUPERSEDE).any()
    reviewed = generate(replace(spec, supersede_review=True), seed=3, n=50)
    assert ((reviewed.op == OP_SUPERSEDE).sum(axis=1) == 1).all()


def test_first_rule_detects_at_most_at_the_first_later_clean_action() -> None:
    early = PoisonSpec("plausible", subtask=0, position=0, p_supersede=0.5)
    spec = WorldSpec(n_subtasks=(1, 1), n_actions=(6, 6), p_resume=0.0, poison=(early,))
    each = generate(spec, seed=1, n=400)
    first = generate(replace(spec, supersede_rule="first"), seed=1, n=400)
    rate_each = (each.op == OP_SUPERSEDE).any(axis=1).mean()
    rate_first = (first.op == OP_SUPERSEDE).any(axis=1).mean()
    assert 0.4 < rate_first < 0.6  # one chance at 0.5
    assert rate_each > 0.9  # six chances: 1 - 0.5^6
    for i in range(first.n):
        ev = _events(first, i)
        for k, (op, q) in enumerate(ev):
            if op == OP_SUPERSEDE:
                # Poison first (position 0), then the first clean action: the only chance.
                assert ev[k - 2] == (OP_ACTION, q) and ev[k - 1][0] == OP_ACTION


# --- 2. only the policies that act on supersede events do so ----------------------------


def test_only_policies_with_supersede_act_on_the_event() -> None:
    sc = load_scenario("paper_poisoning")
    world = generate(sc.world, seed=0, n=200)
    assert (world.op == OP_SUPERSEDE).any()
    for name, pol in POLICIES.items():
        res = simulate(world, name, params=sc.params, stubs=sc.stubs)
        acted = res.trajectories["n_superseded"].sum()
        assert (acted > 0) == pol.supersede, name
    # WMT's lifecycle configurations, and the field's two contradiction rules (issue 12):
    # mem0's DELETE and TraceRetain's conflict resolution.
    assert {n for n, p in POLICIES.items() if p.supersede} == {
        "wmt", "a3_no_semantic", "mem0", "traceretain_conflict"}


def test_policies_table_in_docs_has_the_supersede_column() -> None:

    text = REPO.joinpath("docs", "model_decisions.md").read_text()
    assert "acts on supersede" in text
    for name, pol in POLICIES.items():
        row = next(line for line in text.splitlines() if line.startswith(f"| `{name}` |"))
        assert row.rstrip().endswith("| yes |" if pol.supersede else "| – |"), row


# --- 3. TSR needs the final answer correct and uncompromised ---------------------------


def test_a_compromised_final_answer_can_succeed() -> None:
    """Issue 19 reversed issue 11's rule: TSR counts tasks whose final answer is correct
    (the paper's Appendix A.1); with p_misled = 0 compromise never changes an answer, so
    fully compromised trajectories can succeed (tests/engine/test_paper_success.py)."""
    sc = load_scenario("paper_poisoning")
    # Every persuasion succeeds, so that fully compromised trajectories are common. (Full
    # WMT and A1 have none here: their selectors keep poison out of the final answer's
    # context, so the case cannot arise for them.)
    stubs = replace(sc.stubs, p_misled=0.0, p_persuade=1.0, p_persuade_vs_evidence=1.0)
    for name in ("linear", "a2_no_controller"):
        t = simulate(sc.world, name, n=400, seed=0, params=sc.params, stubs=stubs).trajectories
        all_bad = (t["n_compromised_steps"] == t["n_critical_steps"]).to_numpy()
        assert all_bad.any()
        assert (t["tsr"].to_numpy()[all_bad] == 1).any(), name
        assert (t["tsr"] == t["final_correct"]).all()


# --- 4. common random numbers by memory identity ---------------------------------------


def test_a_memory_gets_the_same_draws_under_every_policy(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """The selector-noise draws are keyed by (step, world memory), never by slot: a fold
    summary that takes a slot under one policy shifts nothing under the others."""
    sc = load_scenario("gaia_like")
    world = generate(sc.world, seed=4, n=6)
    log: dict[str, set[tuple[int, int, int]]] = {}
    current: list[str] = []
    real = simulator_module.uniform_py

    def spy(seed: int, traj: int, step: int, node: int, purpose: int) -> float:
        if purpose == PURPOSE_SELECTOR_NOISE and node % 4 == 0:
            log.setdefault(current[0], set()).add((traj, step, node // 4))
        return real(seed, traj, step, node, purpose)

    monkeypatch.setattr(simulator_module, "uniform_py", spy)
    for name in ("tree_selection", "wmt"):
        current[:] = [name]
        simulate_reference(world, name, sc.params, sc.stubs)
    plain = log["tree_selection"]
    world_keys = {k for k in log["wmt"] if k[2] < DRAW_SUMMARY}
    # World memories are keyed by world id under both, so a memory that is a candidate
    # at the same step under both policies has the same key in both.
    ids_plain = {(t, s, d) for t, s, d in plain}
    assert world_keys & ids_plain
    for _traj, _step, d in world_keys & ids_plain:
        assert d < world.parent.shape[1]  # a world id, not a slot beyond the world
    # Summaries draw with DRAW_SUMMARY + their task's world id.
    assert any(k[2] >= DRAW_SUMMARY for k in log["wmt"])


def test_engine_slots_draw_with_their_world_identity() -> None:
    from wmtsim.engine.forest import _draw_id

    sc = load_scenario("gaia_like")
    res = simulate(sc.world, "wmt", n=50, seed=1, params=sc.params, stubs=sc.stubs)
    f = res.forest
    for i in range(5):
        row = f.row(i)
        for v in range(int(f.n_slots[i])):
            d = _draw_id(row, v)
            if f.kind[i, v] == SUMMARY:
                assert d == DRAW_SUMMARY + int(f.wid[i, f.parent[i, v]])
            else:
                assert d == f.wid[i, v]


# --- 5. IP follows poison into summaries --------------------------------------------------


def test_ip_counts_poison_carried_by_an_eligible_summary_under_the_carried_rule() -> None:
    poison = (PoisonSpec("plausible", count=2, apparent_relevance=0.9),)
    spec = WorldSpec(n_subtasks=(2, 3), p_resume=0.0, poison=poison)
    stubs = Stubs(p_leak=1.0, ip_rule="carried")
    t = simulate(spec, "tree_summary", n=300, seed=2, stubs=stubs).trajectories
    # Every poisoned action is hidden in its folded branch but leaked into its summary,
    # which stays eligible: under `ip_rule = "carried"` all of it persists.
    assert t["ip"].drop_nans().mean() == 1.0
    none = simulate(spec, "tree_summary", n=300, seed=2,
                    stubs=Stubs(p_leak=0.0, ip_rule="carried"))
    assert none.trajectories["ip"].drop_nans().mean() == 0.0
    # Eq. 10 as the paper writes it (`ip_rule = "own"`, the default): the injected memory
    # itself is not eligible (folded away), whatever its summary carries.
    own = simulate(spec, "tree_summary", n=300, seed=2, stubs=Stubs(p_leak=1.0))
    assert own.trajectories["ip"].drop_nans().mean() == 0.0
    # The leak still contaminates what the summary shows (BR sees through the fold).
    assert (own.trajectories["br"] == t["br"]).all()


# --- 6. one run path: the field's knobs reach sweeps and the point key --------------------


def test_point_key_covers_the_field_knobs_and_results_follow() -> None:
    sc = load_scenario("gaia_like")
    a = content_hash(sc.world, sc.params, sc.stubs, Baselines(ga_top_k=1))
    b = content_hash(sc.world, sc.params, sc.stubs, Baselines(ga_top_k=30))
    assert a != b


def test_sweep_over_a_field_knob_stores_distinct_points(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import polars as pl

    from wmtsim.studies.sweeps.store import load_results
    from wmtsim.studies.sweeps.sweep import load_sweep, run_sweep

    path = tmp_path / "ga.toml"
    path.write_text('name = "ga_k"\nscenario = "gaia_like"\npolicies = '
                    '["generative_agents_code"]\n[parameters."baselines.ga_top_k"]\n'
                    'values = [1, 30]\n[design]\nkind = "grid"\ntrajectories = 200\n'
                    'seed = 0\n', encoding="utf-8")
    run_sweep(load_sweep(path), tmp_path / "out", progress=False)
    points = load_results(tmp_path / "out").points
    assert points.height == 2 and points["key"].n_unique() == 2
    tsr = points["tsr_mean"].to_list() if "tsr_mean" in points.columns else None
    traj = load_results(tmp_path / "out").trajectories().collect()
    by_key = traj.group_by("key").agg(pl.col("prompt_tokens").mean())
    assert by_key["prompt_tokens"].n_unique() == 2, (tsr, by_key)


# --- 7. Eq. 3: an outcome event leaves m unchanged by default ------------------------------


def test_outcome_events_leave_m_by_default() -> None:
    assert Params().event_resets_m is False


# --- A3 takes whole subtrees B(v) ---------------------------------------------------------


def test_a3_takes_whole_subtrees_hand_case() -> None:
    """root(0) → A(1) [a1(2), A1(3) → a2(4)], B(5) → b1(6); U_A = 0.9, U_B = 0.7,
    U_A1 = 0.5; every memory 10 tokens. B(A) is {A, a1, A1, a2} (40 tokens)."""
    f = Forest.allocate(1, 7, 7)
    parent = [-1, 0, 1, 1, 3, 0, 5]
    kind = [0, TASK, ACTION, TASK, ACTION, TASK, ACTION]
    for v in range(7):
        f.parent[0, v], f.kind[0, v], f.tokens[0, v], f.u[0, v] = parent[v], kind[v], 10, 0.5
    row = f.row(0)
    eligible = np.array([False] + [True] * 6)
    is_global = np.zeros(7, np.bool_)
    priority = np.array([np.nan, 0.9, np.nan, 0.5, np.nan, 0.7, np.nan])

    def take(budget: float) -> list[int]:
        selected = np.zeros(7, np.bool_)
        p = Params(budget=int(budget)).pack()
        _select_branches(7, row, is_global, eligible, selected, priority, 0.0, p, whole)
        return np.flatnonzero(selected).tolist()

    # The paper's whole-branch retrieval (`branch_retrieval = "whole"`): every unit, any B.
    whole = True
    assert take(19) == take(60) == [1, 2, 3, 4, 5, 6]
    # Bounded by B (the previous rule, "fit"):
    whole = False
    assert take(60) == [1, 2, 3, 4, 5, 6]
    assert take(50) == [1, 2, 3, 4]  # B(A) whole; B(B) does not fit; A1 is already in
    assert take(25) == [5, 6]  # B(A) does not fit, B(B) does, then B(A1) would exceed
    assert take(20) == [5, 6]
    assert take(19) == []


# --- the observation is charged and read ------------------------------------------------


def test_observation_is_charged_its_tokens() -> None:
    """no_memory: each action step's prompt = base + active path + the observation."""
    spec = WorldSpec(n_subtasks=(1, 1), n_actions=(3, 3), p_resume=0.0)
    st = Stubs()
    w = generate(spec, seed=9, n=20)
    t = simulate(w, "no_memory", stubs=st).trajectories
    for i in range(w.n):
        expected = 0.0
        last = -1
        for op, a in _events(w, i):
            if op == OP_ACTION:
                expected += st.base_tokens + w.tokens[i, 0] + w.tokens[i, 1] + w.tokens[i, a]
                last = a
            elif op == OP_COMPLETE:
                expected += st.base_tokens + w.tokens[i, 0] + w.tokens[i, 1] + w.tokens[i, last]
        expected += st.base_tokens + w.tokens[i, 0]  # the final answer
        assert t["n_prompt_tokens"][i] == expected


# --- nested and resumed injections, revisions, warnings ----------------------------------


def test_injections_reach_nested_and_resumed_subtasks() -> None:
    nested = PoisonSpec("plausible", subtask=0, depth=2)
    resumed = PoisonSpec("failed", subtask=0, on_resume=True)  # 0 is resumed after 1
    spec = WorldSpec(n_subtasks=(3, 3), max_depth=2, p_nested=1.0, p_resume=1.0,
                     poison=(nested, resumed))
    w = generate(spec, seed=5, n=50)
    for i in range(w.n):
        ev = _events(w, i)
        poisoned = [v for v in range(int(w.n_nodes[i])) if w.poisoned[i, v]]
        assert len(poisoned) == 2
        nested_v = next(v for v in poisoned if w.outcome[i, v] == 1)
        resumed_v = next(v for v in poisoned if v != nested_v)
        s = w.parent[i, nested_v]
        assert w.parent[i, s] == 1  # a child of top-level subtask 0 (world id 1)
        k = ev.index((OP_ACTION, resumed_v))
        back = w.parent[i, resumed_v]
        reopen = max(j for j, e in enumerate(ev[:k]) if e[0] == OP_REOPEN)
        assert ev[reopen][1] == back
        assert ev.index((OP_TASK, back)) < reopen


def test_revisions_are_a_second_eq2_event() -> None:
    spec = WorldSpec(n_subtasks=(2, 2), n_actions=(3, 3), p_resume=0.0, p_revise=1.0)
    w = generate(spec, seed=6, n=10)
    # Every action but the last of its subtask is revised, just before the next one.
    assert ((w.op == OP_REVISE).sum(axis=1) == 4).all()
    res = simulate(w, "wmt")
    f = res.forest
    for i in range(w.n):
        for v in range(int(f.n_slots[i])):
            wid = f.wid[i, v]
            if f.kind[i, v] == ACTION:
                flipped = (OP_REVISE, wid) in _events(w, i)
                assert (f.outcome[i, v] != w.outcome[i, wid]) == flipped
    assert (res.trajectories["n_revisions"] == 4).all()


def test_fold_summary_keeps_failure_warnings() -> None:
    spec = WorldSpec(n_subtasks=(2, 3), n_actions=(3, 5), p_success=0.5, p_resume=0.0)
    res = simulate(spec, "tree_summary", n=30, seed=7, stubs=Stubs(warning_tokens=5))
    f = res.forest
    checked = 0
    for i in range(f.n):
        for z in range(int(f.n_slots[i])):
            if f.kind[i, z] != SUMMARY:
                continue
            task = f.parent[i, z]
            failed = sum(1 for v in range(int(f.n_slots[i]))
                         if f.parent[i, v] == task and f.kind[i, v] == ACTION
                         and f.outcome[i, v] == 2)
            assert f.warnings[i, z] == failed
            checked += failed
    assert checked > 0


# --- metrics: pooled ratios, latency ------------------------------------------------------


def test_pooled_ratio_is_ratio_of_sums() -> None:
    sc = load_scenario("paper_poisoning")
    t = simulate(sc.world, "wmt", n=300, seed=0, params=sc.params, stubs=sc.stubs).trajectories
    for m, (num, den) in RATIOS.items():
        cell = metric_ci(t, m, n_resamples=200)
        n = sum(t[f"n_{c}"].sum() for c in num)
        d = sum(t[f"n_{c}"].sum() for c in den)
        assert cell["pooled"] == pytest.approx(n / d)
        assert cell["pooled_low"] <= cell["pooled"] <= cell["pooled_high"]


def test_latency_is_calls_and_tokens() -> None:
    st = Stubs(call_latency_ms=100.0, token_latency_ms=0.5)
    t = simulate(WorldSpec(), "wmt", n=20, seed=0, stubs=st).trajectories
    expected = (100.0 * t["n_llm_calls"] + 0.5 * t["n_prompt_tokens"]) / t["n_prompt_steps"]
    assert np.allclose(t["latency_ms"].to_numpy(), expected.to_numpy())


def test_counter_layout_is_named() -> None:
    assert C.final_correct > C.nodes
    # `RATIOS` is pinned by hand once, as a golden check of the declaration:
    # tests/core/test_metric_counters.py::test_the_pooled_ratios_are_exactly_these
