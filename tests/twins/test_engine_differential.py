"""The batched numba engine against the readable simulator, exactly (==, not approx).

Every policy of docs/model.md §7 plays the same generated worlds in `wmtsim.engine` and in
`wmtsim.twins.simulator.simulate_reference`; the per-trajectory counters and every node of the
final trees (u, m, state, tokens, ...) must agree to the bit. The worlds below are small
but exercise nesting, resumed subtasks, global memories, all four poison kinds,
supersession, suppression, budgets and top-k caps that bind, ties in the selector, and
odd parameter corners.
"""

from __future__ import annotations

import dataclasses
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import counters

from wmtsim.core.codes import KIND_NAMES, OUTCOME_NAMES, STATE_NAMES
from wmtsim.core.metrics import COUNTERS, C
from wmtsim.core.node_arrays import FOREST_ARRAYS
from wmtsim.core.params import Params
from wmtsim.core.policies import POLICIES
from wmtsim.core.stubs import Stubs
from wmtsim.core.world_spec import (
    OP_PROMOTE,
    OP_REOPEN,
    OP_SUPERSEDE,
    POISON_KINDS,
    PoisonSpec,
    World,
    WorldSpec,
)
from wmtsim.engine.forest import Forest
from wmtsim.engine.simulation import SimResult, simulate
from wmtsim.engine.world import generate
from wmtsim.twins.reference import MemoryTree
from wmtsim.twins.simulator import simulate_reference
from wmtsim.twins.stubs_reference import Facts

N = 30

ALL_POISON = tuple(
    PoisonSpec(kind, p_supersede=0.5, persuasiveness=0.8,
               apparent_relevance=0.3 if kind == "summary" else 0.9)
    for kind in POISON_KINDS
)

SCENARIOS: dict[str, tuple[WorldSpec, Params, Stubs, int]] = {
    # Deep nesting, resumes, globals, every poison kind; top-k binds before the budget.
    "nested_resume_topk": (
        WorldSpec(n_subtasks=(2, 4), max_depth=3, p_nested=0.6, n_actions=(1, 4),
                  p_resume=0.6, n_globals=2, poison=ALL_POISON),
        Params(budget=400), Stubs(top_k=3, p_guess=0.3, p_misled=0.5), 11),
    # A tight budget, failures and a high τ_obs: selection binds and Eq. 7 suppresses;
    # zero selector noise makes utility ties that the stable order must break alike.
    "tight_budget_suppression": (
        WorldSpec(n_subtasks=(3, 4), n_actions=(2, 5), p_success=0.5, p_resume=0.5,
                  n_globals=1, poison=(*ALL_POISON, PoisonSpec("failed", count=2))),
        Params(budget=60, tau_obs=0.45),
        # The previous mechanism rules (docs/model_decisions.md): a selector that fills B,
        # A3 bounded by B (so its missed selections decay and suppress), persuasion by the
        # step's own subtask's poison, IP through summaries; the other worlds take the
        # paper-text defaults.
        Stubs(selector_noise=0.0, p_leak=0.6, selector_rule="fill", branch_retrieval="fit",
              persuade_scope="topic", ip_rule="carried", branch_folded="summary",
              selector_read_fraction=0.25), 22),
    # The default world with the paper's two action-level poisons.
    "defaults": (
        WorldSpec(poison=(PoisonSpec("plausible", p_supersede=0.7), PoisonSpec("failed"))),
        Params(), Stubs(), 33),
    # Corners: subtasks without actions, nothing fits the budget, no event reset of m,
    # global miss count 0, M = 1, full-size summaries, no structure tokens.
    "corners": (
        WorldSpec(n_subtasks=(1, 3), n_actions=(0, 2), n_globals=3, p_resume=1.0,
                  max_depth=2, p_nested=1.0, poison=ALL_POISON),
        Params(budget=1, event_resets_m=False, global_miss_count=0, M=1, rho=0.5),
        Stubs(c_sum=1.0, struct_tokens=0, selector_read_fraction=0.33), 44),
    # The rules of issue 11: outcome revisions, detection at the first later clean action
    # only, the opt-in review, poison injected into nested subtasks and resumed visits,
    # failure warnings with tokens, the observation not read by the reasoner, m reset by
    # events (the other reading of Eq. 3).
    "revisions_nested_resumed": (
        WorldSpec(n_subtasks=(2, 4), max_depth=3, p_nested=0.8, n_actions=(1, 4),
                  p_resume=0.7, p_revise=0.4, supersede_rule="first",
                  supersede_review=True, n_globals=2,
                  poison=(*ALL_POISON, PoisonSpec("plausible", depth=2, p_supersede=0.6),
                          PoisonSpec("failed", depth=3, p_supersede=0.6),
                          PoisonSpec("plausible", on_resume=True, p_supersede=0.6))),
        Params(budget=300, event_resets_m=True),
        Stubs(warning_tokens=7, obs_in_context=False, p_leak=0.8), 55),
    # Issue 19's rules: the final answer needs a share of the results, each missing one
    # recovered with p_recover; compromised steps misled with p_misled < 1; a poisoned
    # observation counts for BR; resumed subtasks under fold-without-reopen.
    "final_rule_share_recover": (
        WorldSpec(n_subtasks=(2, 4), n_actions=(1, 4), p_resume=0.8, resume_actions=(1, 3),
                  final_share=0.6, p_recover=0.4,
                  poison=(PoisonSpec("plausible", count=2, p_supersede=0.3),
                          PoisonSpec("failed", p_supersede=0.3))),
        Params(budget=120), Stubs(p_misled=0.4, p_guess=0.5), 66),
    # The other two readings of a resumed subtask under fold-without-reopen
    # (`WorldSpec.resume_folded`; the default "new" is every world above).
    "resume_unfold": (
        WorldSpec(n_subtasks=(2, 4), max_depth=2, p_nested=0.5, n_actions=(1, 4),
                  p_resume=0.9, resume_actions=(1, 3), resume_folded="unfold",
                  poison=(PoisonSpec("plausible", on_resume=True, p_supersede=0.3),
                          PoisonSpec("failed"))),
        Params(budget=150), Stubs(p_leak=0.7), 77),
    "resume_hidden": (
        WorldSpec(n_subtasks=(2, 4), max_depth=2, p_nested=0.5, n_actions=(1, 4),
                  p_resume=0.9, resume_actions=(1, 3), resume_folded="hidden",
                  poison=(PoisonSpec("plausible", on_resume=True, p_supersede=0.3),
                          PoisonSpec("failed"))),
        Params(budget=150), Stubs(p_leak=0.7), 88),
    # Issue 24's adaptive attack rules: poison that waits for the subtask's evidence, and
    # poison re-injected once its supersession takes effect (detected by a later clean
    # action or by the review); copies that the policy never lets in must never appear.
    "adaptive_attacks": (
        WorldSpec(n_subtasks=(2, 4), n_actions=(2, 5), p_resume=0.6, resume_actions=(1, 3),
                  p_evidence=0.8, supersede_review=True,
                  poison=(PoisonSpec("plausible", adaptive="reinject", p_supersede=0.8,
                                     count=2),
                          PoisonSpec("failed", adaptive="reinject", p_supersede=1.0),
                          PoisonSpec("summary", adaptive="after_evidence",
                                     apparent_relevance=0.3, p_supersede=0.4),
                          PoisonSpec("plausible", adaptive="after_evidence", on_resume=True,
                                     p_supersede=0.5))),
        Params(budget=200), Stubs(p_leak=0.6, p_misled=0.7), 99),
    # Staleness (`WorldSpec.p_stale`): a later clean success outdates an earlier one (its
    # evidence passes on, a supersede event marks it), beside revisions and poison, with
    # the obsolete fraction weighed heavily so that suppression acts on it.
    "stale": (
        WorldSpec(n_subtasks=(2, 4), max_depth=2, p_nested=0.5, n_actions=(2, 6),
                  p_success=0.7, p_resume=0.6, resume_actions=(1, 3), p_stale=0.5,
                  p_revise=0.2, poison=(PoisonSpec("plausible", p_supersede=0.5),
                                        PoisonSpec("failed"))),
        Params(budget=150, delta=1.5, tau_obs=0.3), Stubs(), 99),
    # Conversation mode (issue 19 item 6): several tasks per trajectory, each with its own
    # root; a finished task's summary promoted to a global memory (policies that fold),
    # later subtasks that need an earlier result, every poison kind in the first task.
    "conversation_promote": (
        WorldSpec(n_subtasks=(2, 3), max_depth=2, p_nested=0.4, n_actions=(1, 4),
                  p_resume=0.4, n_globals=1, tasks=4, p_related=0.8, poison=ALL_POISON),
        Params(budget=300, rho_g=0.7), Stubs(p_leak=0.8, p_guess=0.2), 99),
    # The same without promotion: the finished trees are retired and nothing carries over
    # (for WMT's configurations); a tight budget, suppression and resumes.
    "conversation_no_promote": (
        WorldSpec(n_subtasks=(1, 3), n_actions=(0, 3), p_resume=0.7, tasks=3, p_related=1.0,
                  poison=(PoisonSpec("plausible", p_supersede=0.4), PoisonSpec("failed"))),
        Params(budget=90, tau_obs=0.4, promote_summaries=False), Stubs(p_leak=0.9), 111),
}


@cache
def scenario_world(name: str) -> World:
    spec, _, _, seed = SCENARIOS[name]
    return generate(spec, seed=seed, n=N, start=5)


@cache
def engine_run(name: str, policy: str) -> SimResult:
    _, params, stubs, _ = SCENARIOS[name]
    return simulate(scenario_world(name), policy, params=params, stubs=stubs)


# The per-slot arrays the twin keeps in its `Facts` (wid, topic, rel, evidence, ...):
# every one is compared, so a new per-node property is checked without a line here.
FACT_ARRAYS = tuple(f.name for f in dataclasses.fields(Facts)
                    if f.name in {a.name for a in FOREST_ARRAYS})


def assert_same_trees(forest: Forest, trees: list[MemoryTree], world: World,
                      facts: list[dict[str, Facts]]) -> None:
    """Engine slot v of trajectory i is the v-th node (creation order) of its tree, with
    the same `Facts`."""
    for i, tree in enumerate(trees):
        ids = list(tree.nodes)
        assert int(forest.n_slots[i]) == len(ids), f"trajectory {i}: node count"
        for v, id in enumerate(ids):
            node = tree.nodes[id]
            wid = int(forest.wid[i, v])
            parent = int(forest.parent[i, v])
            expected_id = f"w{wid}" if wid >= 0 else f"w{forest.wid[i, parent]}/summary"
            where = f"trajectory {i}, slot {v} ({id})"
            assert id == expected_id, where
            assert node.parent == (None if parent < 0 else ids[parent]), where
            assert node.kind == KIND_NAMES[forest.kind[i, v]], where
            assert node.state == STATE_NAMES[forest.state[i, v]], where
            assert node.u == forest.u[i, v], where  # exact
            assert node.m == forest.m[i, v], where
            assert node.tokens == forest.tokens[i, v], where
            assert node.created == forest.created[i, v], where
            assert node.folded_at == forest.folded_at[i, v], where
            assert node.poisoned == forest.poisoned[i, v], where
            if node.kind == "action":
                assert node.outcome == OUTCOME_NAMES[forest.outcome[i, v]], where
            for name in FACT_ARRAYS:
                assert getattr(facts[i][id], name) == getattr(forest, name)[i, v], (where, name)
            promoted = bool(((world.op[i] == OP_PROMOTE) & (world.arg[i] == wid)).any())
            if wid >= 0 and not promoted:  # a promoted summary absorbs poison like a fold
                assert bool(world.poisoned[i, wid]) == node.poisoned or node.kind == "summary"
        assert ids.index(tree.active) == forest.active[i]


@pytest.mark.parametrize("policy", list(POLICIES))
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_engine_equals_simulator(scenario: str, policy: str) -> None:
    _, params, stubs, _ = SCENARIOS[scenario]
    world = scenario_world(scenario)
    res = engine_run(scenario, policy)
    facts: list[dict[str, Facts]] = []
    counts, trees = simulate_reference(world, policy, params, stubs, facts=facts)
    eng = counters(res)
    for k, name in enumerate(COUNTERS):
        np.testing.assert_array_equal(eng[:, k], counts[:, k], err_msg=name)
    assert_same_trees(res.forest, trees, world, facts)


def test_scenarios_exercise_the_mechanisms() -> None:
    """The worlds above really contain what the differential test claims to cover."""
    worlds = [scenario_world(s) for s in SCENARIOS]
    assert any((w.op == OP_REOPEN).any() for w in worlds)
    assert any((w.op == OP_SUPERSEDE).any() for w in worlds)
    assert any(w.spec.max_depth > 1 and (w.kind == 1).sum() > 4 * w.n for w in worlds)
    assert any(w.rider.any() for w in worlds)
    assert any((w.poisoned & (w.kind == 3)).any() for w in worlds)  # poisoned globals
    assert any((w.poisoned & (w.outcome == 2)).any() for w in worlds)  # failed poison

    def total(name: str, policy: str, counter: str) -> float:
        return float(counters(engine_run(name, policy))[:, getattr(C, counter)].sum())

    assert total("tight_budget_suppression", "wmt", "suppressed") > 0
    assert total("tight_budget_suppression", "a3_no_semantic", "suppressed") > 0
    assert total("nested_resume_topk", "wmt", "superseded") > 0
    assert total("nested_resume_topk", "wmt", "folds") > 0
    # Staleness outdates memories (more supersessions than injections) and moves evidence.
    stale = scenario_world("stale")
    assert total("stale", "wmt", "superseded") > stale.n_injected.sum()
    assert total("stale", "wmt", "suppressed") > 0
    # Selection binds: some selector step takes less than the whole pool.
    for name in ("nested_resume_topk", "tight_budget_suppression"):
        c = counters(engine_run(name, "tree_selection"))
        assert (c[:, C.ccr_sum] < c[:, C.ccr_steps]).any()
    # Conversation mode: promoted summaries exist, some carry poison, some are needed later.
    w = scenario_world("conversation_promote")
    f = engine_run("conversation_promote", "wmt").forest
    promoted = (f.kind == 3) & (f.wid >= 0) & ~np.take_along_axis(
        w.poisoned, np.maximum(f.wid, 0), axis=1)
    assert (promoted & f.poisoned).any() and (promoted & f.evidence).any()
    assert (counters(engine_run("conversation_promote", "wmt"))[:, C.tasks] == 4).all()
    # Some fold summary absorbed poison (p_leak / p_leak_rider).
    f = engine_run("tight_budget_suppression", "tree_selection_summary").forest
    assert (f.poisoned & (f.kind == 4)).any()


def random_scenario(seed: int) -> tuple[WorldSpec, Params, Stubs]:
    """A random small world and parameter point (corners included on purpose)."""
    rng = np.random.default_rng(seed)

    def pick(*options: object) -> Any:
        return options[int(rng.integers(len(options)))]

    def pair(lo: int, hi: int) -> tuple[int, int]:
        a = int(rng.integers(lo, hi + 1))
        return a, int(rng.integers(a, hi + 1))

    def injection() -> PoisonSpec:
        kind = pick(*POISON_KINDS)
        placed = kind != "global"
        depth = pick(1, 2) if placed else 1
        return PoisonSpec(kind, subtask=pick(-1, 0, 3), position=pick(-1, 0, 9),
                          count=pick(1, 2), p_inject=pick(1.0, 0.5),
                          apparent_relevance=float(rng.random()),
                          persuasiveness=float(rng.random()),
                          p_supersede=pick(0.0, 0.5, 1.0), tokens=pick(0, 30), depth=depth,
                          on_resume=placed and depth == 1 and bool(pick(False, True)))

    poison = tuple(injection() for _ in range(int(rng.integers(0, 4))))
    spec = WorldSpec(n_subtasks=pair(1, 3), max_depth=pick(1, 2), p_nested=pick(0.0, 0.5),
                     n_actions=pair(0, 4), p_success=pick(0.3, 0.8, 1.0),
                     n_globals=pick(0, 2), p_resume=pick(0.0, 0.7), poison=poison,
                     tokens_sigma=pick(0.0, 0.8), p_revise=pick(0.0, 0.3),
                     supersede_rule=pick("each", "first"),
                     supersede_review=bool(pick(False, True)))
    params = Params(budget=pick(30, 150, 100_000), tau_obs=pick(-1.0, 0.1, 0.4),
                    event_resets_m=pick(True, False), global_miss_count=pick(0, 1, 2),
                    M=pick(1, 3), rho=pick(0.6, 0.9, 1.0))
    stubs = Stubs(top_k=pick(0, 2), selector_noise=pick(0.0, 0.15, 1.0),
                  p_guess=float(rng.random()), c_sum=pick(0.0, 0.3),
                  struct_tokens=pick(0, 4), p_leak=float(rng.random()),
                  w_u=pick(0.0, 0.5), w_b=pick(0.0, 2.0), p_misled=pick(1.0, 0.4),
                  obs_in_context=bool(pick(True, False)), warning_tokens=pick(0, 5))
    # Drawn last, so that the draws above (and the points they made) stay as they were.
    spec = replace(spec, resume_folded=pick("new", "unfold", "hidden"))
    spec = replace(spec, poison=tuple(
        p if p.kind == "global" else replace(p, adaptive=pick("none", "after_evidence",
                                                               "reinject"))
        for p in spec.poison))
    spec = replace(spec, p_stale=pick(0.0, 0.5, 1.0))
    # The mechanism rules, each either way (drawn after the rest: earlier points unchanged).
    stubs = replace(stubs, selector_rule=pick("choose", "fill"),
                    select_threshold=pick(-1.0, 0.3, 0.6), branch_retrieval=pick("whole", "fit"),
                    persuade_scope=pick("any", "topic"), ip_rule=pick("own", "carried"))
    if seed >= 400:  # conversation mode (its own seeds: the points above stay as they were)
        spec = replace(spec, tasks=pick(2, 3), p_related=pick(0.5, 1.0))
        params = replace(params, promote_summaries=pick(True, False), rho_g=pick(0.5, 0.98))
    # A3's reach into folded branches and the selector's read (drawn last, as above).
    stubs = replace(stubs, branch_folded=pick("nodes", "summary", "both"),
                    selector_read_fraction=pick(1.0, 0.25))
    return spec, params, stubs


@pytest.mark.parametrize("seed", [101, 202, 303, 404, 505])
def test_engine_equals_simulator_on_random_points(seed: int) -> None:
    spec, params, stubs = random_scenario(seed)
    world = generate(spec, seed=seed, n=10, start=seed)
    for policy in POLICIES:
        res = simulate(world, policy, params=params, stubs=stubs)
        facts: list[dict[str, Facts]] = []
        counts, trees = simulate_reference(world, policy, params, stubs, facts=facts)
        np.testing.assert_array_equal(counters(res), counts, err_msg=policy)
        assert_same_trees(res.forest, trees, world, facts)


def test_simulator_uses_no_engine_code() -> None:
    """The readable twin shares constants and the draw, never numba or the kernels."""
    import ast

    import wmtsim.twins.simulator
    import wmtsim.twins.stubs_reference

    imported = set()
    trees = [ast.parse(Path(m.__file__).read_text(encoding="utf-8"))
             for m in (wmtsim.twins.simulator, wmtsim.twins.stubs_reference)]
    for node in (n for tree in trees for n in ast.walk(tree)):
        if isinstance(node, ast.Import):
            imported |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module or "")
            if node.module == "wmtsim.core.draws":
                assert {a.name for a in node.names} <= {
                    "uniform_py", "PURPOSE_DILUTION", "PURPOSE_GUESS", "PURPOSE_LEAK",
                    "PURPOSE_MISLED", "PURPOSE_PERSUADE", "PURPOSE_SELECTOR_NOISE"}
    assert imported <= {"__future__", "math", "dataclasses", "numpy", "wmtsim.core.codes",
                        "wmtsim.core.metrics", "wmtsim.core.params", "wmtsim.core.policies",
                        "wmtsim.twins.reference", "wmtsim.twins.field_reference",
                        "wmtsim.twins.stubs_reference", "wmtsim.core.draws", "wmtsim.core.stubs",
                        "wmtsim.core.world_spec"}


def test_reference_switches_used_by_the_simulator() -> None:
    """MemoryTree.select(feedback=, suppress=) and complete(strict=) (policy ablations)."""
    t = MemoryTree(Params(tau_obs=2.0))
    t.add_task("t1", "root")
    t.add_action("a1", "t1")
    t.complete("t1", fold=False)
    rep = t.select([], feedback=False, suppress=False)
    assert (t.nodes["a1"].u, t.nodes["a1"].m, t.nodes["t1"].state) == (0.5, 0, "completed")
    assert rep.suppressed == [] and rep.priorities["t1"] < 2.0
    t.select([], suppress=False)  # Eqs. 3-5 only
    assert (t.nodes["a1"].u, t.nodes["a1"].m, t.nodes["t1"].state) == (0.45, 1, "completed")
    assert t.select([], feedback=False).suppressed == ["t1"]
    assert t.nodes["a1"].m == 1
    # Execution returns to a suppressed task without reopening it, then completes it.
    t.activate("t1")
    with pytest.raises(ValueError, match="obsolete"):
        t.complete("t1")
    sid = t.complete("t1", summary_tokens=3, strict=False)
    assert sid == "t1/summary" and t.nodes["t1"].state == "obsolete" and t.active == "root"
    # A folded task completed again without reopen (no-reopen policies): refolded.
    t.add_task("t2", "root")
    t.complete("t2", summary_tokens=1)
    t.nodes["t2/summary"].u = 0.1
    t.activate("t2")
    t.complete("t2", summary_tokens=5, strict=False)
    s = t.nodes["t2/summary"]
    assert (t.nodes["t2"].state, s.u, s.tokens) == ("folded", 0.8, 5)
