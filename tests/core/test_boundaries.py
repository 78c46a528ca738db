"""Hand-derived boundary cases for every threshold and budget rule.

Each test builds a case whose answer is worked out by hand in its docstring, with values
that are exact in binary floating point (halves, quarters, eighths, integers), and runs it
against both the numba kernels (`wmtsim.core.scoring`, `wmtsim.core.lifecycle`,
`wmtsim.engine.selector`) and the readable twin (`wmtsim.twins`). The expected value is
written in the test, never computed by the code under test, so a `<` that became `<=`
(or the reverse) at a threshold fails here even where random differential tests, which
almost never land exactly on a threshold, pass.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from wmtsim.core import codes
from wmtsim.core.draws import uniform_py
from wmtsim.core.lifecycle import _branch_of, _branch_priorities, _mark_active_path, _suppress
from wmtsim.core.metrics import N_COUNTERS
from wmtsim.core.params import Params
from wmtsim.core.policies import get_policy
from wmtsim.core.scoring import (
    _selection_feedback,
    cumulative_exponent,
    decay_multiplier,
)
from wmtsim.core.stubs import Stubs
from wmtsim.core.world_spec import WorldSpec
from wmtsim.engine.forest import Forest
from wmtsim.engine.loop import _trajectory
from wmtsim.engine.records import Knobs
from wmtsim.engine.selector import _select_branches, _select_items
from wmtsim.engine.simulation import simulate
from wmtsim.engine.world import generate
from wmtsim.twins.reference import MemoryTree
from wmtsim.twins.simulator import simulate_reference
from wmtsim.twins.stubs_reference import AgentStubs, Facts

# --------------------------------------------------------------------------- Eq. 7 at τ_obs

# A branch of one task node 'a' (u = 0.5) under the root:
#   U_b = α·max u + (β/|V_b|)·Σ u − γ·F_b − δ·O_b = 0.5·0.5 + (0.25/1)·0.5 − 0 − 0
#       = 0.25 + 0.125 = 0.375 (every term exact in binary).
ONE_TASK = Params(alpha=0.5, beta=0.25, gamma=0.0, delta=0.0, u_init_task=0.5, tau_obs=0.375)
U_ONE_TASK = 0.375

# A branch of task 'a' (u = 0.5) with one failed action 'x' (u_failure = 0.25):
#   |V_b| = 2, max u = 0.5, Σ u = 0.75, F_b = 1/2, O_b = 0
#   U_b = 0.5·0.5 + (0.5/2)·0.75 − 0.25·(1/2) − 0.5·0 = 0.25 + 0.1875 − 0.125 = 0.3125.
FAILED_ACTION = Params(alpha=0.5, beta=0.5, gamma=0.25, delta=0.5, u_init_task=0.5,
                       u_failure=0.25, tau_obs=0.3125)
U_FAILED_ACTION = 0.3125


def _kernel_suppress(params: Params, with_failed_action: bool) -> tuple[float, int]:
    """The kernels' Eq. 6 + Eq. 7 on the flat tree root(0) → task 'a'(1) [→ action(2)];
    the active task is the root, so 'a' is off the active path."""
    n = 3 if with_failed_action else 2
    parent = np.array([codes.NO_PARENT, 0, 1][:n], dtype=np.int64)
    kind = np.array([codes.ROOT, codes.TASK, codes.ACTION][:n], dtype=np.int64)
    state = np.full(n, codes.ACTIVE, dtype=np.int64)
    u = np.array([1.0, params.u_init_task, params.u_failure][:n])
    outcome = np.array([0, 0, codes.FAILURE][:n], dtype=np.int64)
    p = params.pack()
    priority = np.empty(n)
    _branch_priorities(parent, kind, state, u, outcome, n, p, priority)
    on_path = np.zeros(n, dtype=np.bool_)
    _mark_active_path(parent, 0, n, on_path)
    suppressed = _suppress(kind, state, on_path, priority, n, p)
    return float(priority[1]), int(suppressed)


def _twin_suppress(params: Params, with_failed_action: bool) -> tuple[float, list[str]]:
    """The readable twin on the same tree; 'a' (and 'x') are selected, so Eqs. 3–5 leave
    their u as it is (selected → m = 0, u kept)."""
    tree = MemoryTree(params)
    tree.add_task("a", "root")
    chosen = ["a"]
    if with_failed_action:
        tree.add_action("x", "a")
        tree.record_outcome("x", success=False)
        chosen.append("x")
    report = tree.select(chosen)
    return report.priorities["a"], report.suppressed


@pytest.mark.parametrize(("params", "u_b", "failed"), [
    (ONE_TASK, U_ONE_TASK, False), (FAILED_ACTION, U_FAILED_ACTION, True)])
def test_eq7_branch_exactly_at_tau_is_kept(params: Params, u_b: float, failed: bool) -> None:
    """Eq. 7 suppresses when U_b < τ_obs: a branch with U_b == τ_obs (0.375, or 0.3125 with
    a failed action, derived above) stays, in the kernels and in the twin."""
    priority, n_suppressed = _kernel_suppress(params, failed)
    assert priority == u_b
    assert n_suppressed == 0
    twin_priority, twin_suppressed = _twin_suppress(params, failed)
    assert twin_priority == u_b
    assert twin_suppressed == []


@pytest.mark.parametrize(("params", "u_b", "failed"), [
    (ONE_TASK, U_ONE_TASK, False), (FAILED_ACTION, U_FAILED_ACTION, True)])
def test_eq7_branch_just_below_tau_is_suppressed(params: Params, u_b: float,
                                                 failed: bool) -> None:
    """τ_obs one ulp above U_b: now U_b < τ_obs and the branch is made obsolete."""
    above = params.with_(tau_obs=math.nextafter(u_b, 1.0))
    assert _kernel_suppress(above, failed) == (u_b, 1)
    assert _twin_suppress(above, failed) == (u_b, ["a"])


def test_eq6_branch_of_is_the_nearest_task_ancestor_or_self() -> None:
    """root(0) → task(1) → task(2) → action(3), and a global memory(4) without a parent:
    the branch of the action is its nearest task, 2; of task 2 itself, 2; of task 1, 1;
    the root and the global memory belong to no task branch (−1). The twin's selector
    stubs read the same rule (`_Trajectory.branch_of`)."""
    parent = np.array([codes.NO_PARENT, 0, 1, 2, codes.NO_PARENT], dtype=np.int64)
    kind = np.array([codes.ROOT, codes.TASK, codes.TASK, codes.ACTION, codes.GLOBAL],
                    dtype=np.int64)
    assert [int(_branch_of(parent, kind, v)) for v in range(5)] == [-1, 1, 2, 2, -1]


# --------------------------------------------------------------------------- Eq. 4, Eq. 15 at M

# ρ = 0.5, M = 3: g(m) = ρ^min(m, 3), so g(2) = 0.25, g(3) = g(4) = g(9) = 0.125.
AT_M = Params(rho=0.5, M=3, u_init_task=1.0, tau_obs=-1.0)


def test_eq4_miss_count_at_and_past_M() -> None:
    """g(M−1) = 0.25, g(M) = 0.125 and every m > M gives ρ^M = 0.125 too (the cap)."""
    g = decay_multiplier([0, 1, 2, 3, 4, 9], False, AT_M)
    assert g.tolist() == [1.0, 0.5, 0.25, 0.125, 0.125, 0.125]


def test_eq15_cumulative_exponent_at_and_past_M() -> None:
    """h_3(r) = r(r+1)/2 for r ≤ 3 → 0, 1, 3, 6; then 3r − 3 → h(4) = 9, h(5) = 12."""
    assert cumulative_exponent(np.arange(6), 3).tolist() == [0, 1, 3, 6, 9, 12]


def test_eq5_repeated_misses_cross_M_in_kernel_and_twin() -> None:
    """A task 'a' (u = 1) missed r times: u = ρ^(1+2+3) after 3 misses (m = M), then each
    further miss multiplies by ρ^M = 1/8: u = 2^-1, 2^-3, 2^-6, 2^-9, 2^-12; m = r."""
    expected = [2.0**-1, 2.0**-3, 2.0**-6, 2.0**-9, 2.0**-12]
    p = AT_M.pack()
    u = np.array([1.0, 1.0])
    m = np.zeros(2, dtype=np.int64)
    eligible = np.array([False, True])  # the root is never a candidate
    none = np.zeros(2, dtype=np.bool_)
    tree = MemoryTree(AT_M)
    tree.add_task("a", "root")
    for r, want in enumerate(expected, start=1):
        _selection_feedback(u, m, eligible, none, none, p, 2)
        tree.select([], suppress=False)
        assert (u[1], int(m[1])) == (want, r)
        assert (tree.nodes["a"].u, tree.nodes["a"].m) == (want, r)


def test_eq4_global_memory_at_M_uses_rho_g() -> None:
    """A global memory decays by ρ_G whatever its miss count, also at and past M."""
    params = AT_M.with_(rho_g=0.75)
    assert decay_multiplier([3, 4], True, params).tolist() == [0.75, 0.75]


# --------------------------------------------------------------------------- the budget B

# The budget tests below pin the greedy fill under B, the previous selector rule: under it
# B is what binds (`Stubs.selector_rule = "fill"`, A3 bounded by B). The paper's rule (a
# candidate enters only when judged relevant, A3 unbounded) has its own cases further on.
FILL = {"selector_rule": "fill", "branch_retrieval": "fit"}


def _row(tokens: list[int], rel: list[float], kind: list[int] | None = None,
         parent: list[int] | None = None) -> Any:
    """One trajectory's forest row: slot 0 the root, then the given memories."""
    n = len(tokens)
    F = Forest.allocate(1, n, n).row(0)
    F.wid[:] = np.arange(n)
    F.parent[:] = parent if parent is not None else [codes.NO_PARENT] + [0] * (n - 1)
    F.kind[:] = kind if kind is not None else [codes.ROOT] + [codes.ACTION] * (n - 1)
    F.tokens[:] = tokens
    F.rel[:] = rel
    F.topic[:] = 0
    return F


def _kernel_items(tokens: list[int], rel: list[float], budget: int, struct: float,
                  top_k: int = 0) -> list[int]:
    """The engine's item selector with no noise: utility = rel (all memories on topic 0)."""
    F = _row(tokens, rel)
    n = len(tokens)
    eligible = np.array([False] + [True] * (n - 1))
    priority = np.full(n, np.nan)
    return _select(F, eligible, priority, False, struct, Params(budget=budget),
                   Stubs(**FILL, selector_noise=0.0, top_k=top_k))


def _select(F: Any, eligible: np.ndarray, priority: np.ndarray, weighted: bool,
            struct: float, params: Params, stubs: Stubs) -> list[int]:
    """`_select_items` at step 0 on subtask 0 (cross relevance 0.5): the selected slots."""
    n = len(eligible)
    T = _trajectory(np.int64(0), np.int64(0), F, np.full(n, -1, np.int32), n,
                    np.zeros(N_COUNTERS))
    T.eligible[:] = eligible
    T.priority[:] = priority
    K = Knobs(sw=get_policy("wmt").pack(), p=params.pack(), st=stubs.pack(),
              wk=WorldSpec(cross_relevance=0.5).pack()[0])
    _select_items(T, K, np.int64(0), n, np.int64(0), weighted, struct)
    return [int(v) for v in np.flatnonzero(T.selected)]


class _TwinSelector(AgentStubs):
    """The twin's selector stubs on a hand-built tree (only what `select_items` and
    `select_branches` read; the draws are the trajectory's, keyed like the engine's)."""

    def __init__(self, policy: str, tree: MemoryTree, topics: dict[str, float],
                 budget: int, struct: float, top_k: int = 0) -> None:
        self.pol = get_policy(policy)
        self.st = Stubs(**FILL, selector_noise=0.0, top_k=top_k)
        self.tree = tree
        self.slot = {v: k for k, v in enumerate(tree.nodes)}
        self.facts = {v: Facts(wid=self.slot[v], topic=0, rel=topics.get(v, 0.0), top=-1)
                      for v in tree.nodes}
        self.cross = 0.5
        self.struct = struct
        self.budget = float(budget)

    def draw(self, node: int, purpose: int) -> float:
        return uniform_py(0, 0, 0, node, purpose)

    def draw_id(self, id: str) -> int:
        return self.slot[id]

    def branch_of(self, id: str) -> str | None:
        return None


def _twin_items(tokens: list[int], rel: list[float], budget: int, struct: float,
                top_k: int = 0) -> list[int]:
    tree = MemoryTree(Params(budget=budget), root_id="r", root_tokens=tokens[0])
    ids = ["r"]
    for k in range(1, len(tokens)):
        tree.add_action(f"x{k}", "r", tokens=tokens[k])
        ids.append(f"x{k}")
    sel = _TwinSelector("tree_selection", tree, dict(zip(ids, rel, strict=True)), budget,
                        struct, top_k)
    chosen = sel.select_items(ids[1:], 0, {})
    return sorted(ids.index(v) for v in chosen)


# Three memories ranked 1, 2, 3 by utility (rel 0.75, 0.5, 0.25), tokens 30, 20, 10 and
# 5 structure tokens each: costs 35, 25, 15, total 75.
TOKENS = [0, 30, 20, 10]
REL = [0.0, 0.75, 0.5, 0.25]


@pytest.mark.parametrize(("budget", "expected"), [
    (75, [1, 2, 3]),  # 35 + 25 + 15 = 75 = B: exactly filled, all kept (≤ B)
    (74, [1, 2]),  # the third would bring 75 = B + 1: skipped
    (60, [1, 2]),  # 35 + 25 = 60 = B; the third (15) does not fit in 0
    (59, [1, 3]),  # 35 + 25 = 60 = B + 1: skip the second; 35 + 15 = 50 fits
    (35, [1]),  # the first alone fills B exactly
    (34, [2]),  # the first is one over B; the second (25) fits, then 25 + 15 = 40 does not
])
def test_item_selector_budget_exactly_filled_and_one_over(budget: int,
                                                          expected: list[int]) -> None:
    """Greedy under B (`used + cost ≤ B`): a selection exactly filling B is kept, one
    token over is not, and a skipped item lets the next one be tried."""
    assert _kernel_items(TOKENS, REL, budget, 5.0) == expected
    assert _twin_items(TOKENS, REL, budget, 5.0) == expected


def test_item_selector_tie_goes_to_the_older_memory() -> None:
    """Equal utility (0.5, 0.5) and room for one (B = 35, cost 35 each): the tie-break is
    creation order, so slot 1 is taken, slot 2 not; with the ranking's tie reversed by a
    hair (0.5 vs 0.5 + 2^-20), slot 2 wins."""
    tokens, rel = [0, 30, 30], [0.0, 0.5, 0.5]
    assert _kernel_items(tokens, rel, 35, 5.0) == [1]
    assert _twin_items(tokens, rel, 35, 5.0) == [1]
    rel = [0.0, 0.5, 0.5 + 2.0**-20]
    assert _kernel_items(tokens, rel, 35, 5.0) == [2]
    assert _twin_items(tokens, rel, 35, 5.0) == [2]


@pytest.mark.parametrize(("top_k", "expected"), [(1, [1]), (2, [1, 2]), (3, [1, 2, 3])])
def test_item_selector_top_k_cap_exactly(top_k: int, expected: list[int]) -> None:
    """top_k = k keeps exactly the k best when B leaves room for all (B = 1000)."""
    assert _kernel_items(TOKENS, REL, 1000, 5.0, top_k) == expected
    assert _twin_items(TOKENS, REL, 1000, 5.0, top_k) == expected


def _kernel_branches(budget: int, whole: bool = False) -> list[int]:
    """A3's branch selector on root(0) → task(1, 10 tokens) → action(2, 20 tokens),
    struct 5: the unit B(task 1) costs (10 + 5) + (20 + 5) = 40 tokens."""
    F = _row([0, 10, 20], [0.0, 0.5, 0.5], kind=[codes.ROOT, codes.TASK, codes.ACTION],
             parent=[codes.NO_PARENT, 0, 1])
    eligible = np.array([False, True, True])
    selected = np.zeros(3, dtype=np.bool_)
    priority = np.array([np.nan, 0.5, np.nan])
    is_global = np.zeros(3, dtype=np.bool_)
    _select_branches(3, F, is_global, eligible, selected, priority, 5.0,
                     Params(budget=budget).pack(), whole)
    return [int(v) for v in np.flatnonzero(selected)]


def _twin_branches(budget: int, whole: bool = False) -> list[int]:
    tree = MemoryTree(Params(budget=budget), root_id="r")
    tree.add_task("t", "r", tokens=10)
    tree.add_action("x", "t", tokens=20)
    sel = _TwinSelector("a3_no_semantic", tree, {}, budget, 5.0)
    if whole:
        sel.st = replace(sel.st, branch_retrieval="whole")
    chosen = sel.select_branches(["t", "x"], {"t": 0.5})
    return sorted(list(tree.nodes).index(v) for v in chosen)


@pytest.mark.parametrize(("budget", "expected"), [(40, [1, 2]), (39, [])])
def test_branch_selector_budget_exactly_filled_and_one_over(budget: int,
                                                            expected: list[int]) -> None:
    """A whole branch costing exactly B (40) is taken; at B = 39 it is one token over and
    nothing is taken (a branch is all or nothing)."""
    assert _kernel_branches(budget) == expected
    assert _twin_branches(budget) == expected


# ---------------------------------------------------------------- a fold at the last step

# Three top-level subtasks of two actions each, every outcome a success, no resumes and
# no poison: the script is (task, action, action, complete) × 3, then the final answer.
# Prompt steps: 2 actions + 1 completion per subtask, plus the final answer = 3·3 + 1 = 10.
# Full WMT folds every completed subtask, the third one at its completion — the last
# step before the final answer — so 3 folds and 3 summaries (nodes: root + 3 tasks +
# 6 actions + 3 summaries = 13).
FLAT = WorldSpec(n_subtasks=(3, 3), n_actions=(2, 2), p_success=1.0, p_resume=0.0,
                 n_globals=0, p_nested=0.0, poison=())


def test_fold_at_the_last_step_is_counted_in_engine_and_twin() -> None:
    world = generate(FLAT, seed=3, n=4)
    res = simulate(world, "wmt")
    t = res.trajectories
    assert t["n_prompt_steps"].to_list() == [10] * 4
    assert t["n_folds"].to_list() == [3] * 4
    assert t["n_nodes"].to_list() == [13] * 4
    counts, trees = simulate_reference(world, "wmt", Params(), Stubs())
    assert counts[:, 16].tolist() == [3.0] * 4  # C.folds
    for tree in trees:
        tasks = [v for v, node in tree.nodes.items() if node.kind == "task"]
        assert len(tasks) == 3
        last = tasks[-1]  # the subtask completed at the last step before the final answer
        assert tree.nodes[last].state == "folded"
        assert tree.nodes[last].summary is not None


# ---------------------------------------------------------------- Eq. 6, all four terms at τ


def test_eq6_all_four_terms_at_tau_kernel_and_twin() -> None:
    """Task 'a' (u 0.5) with actions x (success, u 0.75), y (failure, u 0.25) and w
    (failure, u 0.25, superseded: obsolete). |V_b| = 4, max u = 0.75, Σ u = 1.75,
    F_b = 2/4 (x succeeded: not counted), O_b = 1/4. With α 0.5, β 0.5, γ 0.25, δ 0.5:
    U_b = 0.375 + 0.125·1.75 − 0.25·0.5 − 0.5·0.25 = 0.375 + 0.21875 − 0.125 − 0.125
    = 0.34375 = τ_obs: kept."""
    params = Params(alpha=0.5, beta=0.5, gamma=0.25, delta=0.5, u_init_task=0.5,
                    u_success=0.75, u_failure=0.25, tau_obs=0.34375)
    n = 5
    parent = np.array([codes.NO_PARENT, 0, 1, 1, 1], dtype=np.int64)
    kind = np.array([codes.ROOT, codes.TASK, codes.ACTION, codes.ACTION, codes.ACTION],
                    dtype=np.int64)
    state = np.array([codes.ACTIVE] * 4 + [codes.OBSOLETE], dtype=np.int64)
    u = np.array([1.0, 0.5, 0.75, 0.25, 0.25])
    outcome = np.array([0, 0, codes.SUCCESS, codes.FAILURE, codes.FAILURE], dtype=np.int64)
    p = params.pack()
    priority = np.empty(n)
    _branch_priorities(parent, kind, state, u, outcome, n, p, priority)
    assert priority[1] == 0.34375
    on_path = np.zeros(n, dtype=np.bool_)
    _mark_active_path(parent, 0, n, on_path)
    assert _suppress(kind, state, on_path, priority, n, p) == 0
    tree = MemoryTree(params)
    tree.add_task("a", "root")
    for v, ok in (("x", True), ("y", False), ("w", False)):
        tree.add_action(v, "a")
        tree.record_outcome(v, success=ok)
    tree.supersede("w")
    report = tree.select(["a", "x", "y"])
    assert report.priorities["a"] == 0.34375
    assert report.suppressed == []


# ---------------------------------------------------------------- what the selector ranks by


def _kernel_select(F: Any, eligible: list[bool], budget: int, stubs: Stubs,
                   priority: list[float] | None = None, weighted: bool = False) -> list[int]:
    prio = np.array(priority if priority is not None else [np.nan] * len(eligible))
    return _select(F, np.array(eligible), prio, weighted, 0.0, Params(budget=budget), stubs)


class _TwinTreeSelector(_TwinSelector):
    def branch_of(self, id: str) -> str | None:
        v: str | None = id
        while v is not None:
            if self.tree.nodes[v].kind == "task":
                return v
            v = self.tree.nodes[v].parent
        return None


def test_poison_boost_raises_a_poisoned_memory() -> None:
    """x1 relevance 0.5; x2 relevance 0.25 but poisoned, boost 0.5 → 0.75: with room for
    one (B = 10, 10 tokens each) x2 is taken."""
    stubs = Stubs(**FILL, selector_noise=0.0, poison_boost=0.5)
    F = _row([0, 10, 10], [0.0, 0.5, 0.25])
    F.poisoned[2] = True
    assert _kernel_select(F, [False, True, True], 10, stubs) == [2]
    tree = MemoryTree(Params(budget=10), root_id="r")
    tree.add_action("x1", "r", tokens=10)
    tree.add_action("x2", "r", tokens=10, poisoned=True)
    sel = _TwinSelector("tree_selection", tree, {"x1": 0.5, "x2": 0.25}, 10, 0.0)
    sel.st = stubs
    assert sel.select_items(["x1", "x2"], 0, {}) == {"x2"}


@pytest.mark.parametrize(("u", "priority", "winner"), [
    ((0.25, 0.25), (0.0, 0.5), 4),  # 0.5 + 0.125 + 0 vs 0.5 + 0.125 + 0.25: U_b decides
    ((0.25, 0.75), (0.0, 0.0), 4),  # 0.5 + 0.125 vs 0.5 + 0.375: u decides
    ((0.75, 0.25), (0.5, 0.0), 2),  # 0.5 + 0.375 + 0.25 vs 0.5 + 0.125: both favour x2
])
def test_weighted_utility_adds_w_u_u_and_w_b_priority(u: tuple[float, float],
                                                      priority: tuple[float, float],
                                                      winner: int) -> None:
    """root(0) → task 1 → action 2, root → task 3 → action 4; only the actions are
    candidates, both relevance 0.5, 10 tokens, B = 10 (room for one). Utility =
    rel + w_u·u + w_b·U_b(branch) with w_u = w_b = 0.5 (sums by hand beside each case)."""
    stubs = Stubs(**FILL, selector_noise=0.0, w_u=0.5, w_b=0.5)
    F = _row([0, 10, 10, 10, 10], [0.0, 0.5, 0.5, 0.5, 0.5],
             kind=[codes.ROOT, codes.TASK, codes.ACTION, codes.TASK, codes.ACTION],
             parent=[codes.NO_PARENT, 0, 1, 0, 3])
    F.u[:] = [1.0, 0.5, u[0], 0.5, u[1]]
    prio = [np.nan, priority[0], np.nan, priority[1], np.nan]
    assert _kernel_select(F, [False, False, True, False, True], 10, stubs, prio,
                          weighted=True) == [winner]
    tree = MemoryTree(Params(budget=10), root_id="r")
    tree.add_task("t1", "r", tokens=10)
    tree.add_action("x2", "t1", tokens=10)
    tree.add_task("t3", "r", tokens=10)
    tree.add_action("x4", "t3", tokens=10)
    tree.nodes["x2"].u, tree.nodes["x4"].u = u
    sel = _TwinTreeSelector("wmt", tree, {"x2": 0.5, "x4": 0.5}, 10, 0.0)
    sel.st = stubs
    chosen = sel.select_items(["x2", "x4"], 0, {"t1": priority[0], "t3": priority[1]})
    assert chosen == {f"x{winner}"}


def test_branch_selector_ranks_a_global_by_its_u() -> None:
    """A3: unit B(task 1) with U_b = 0.5 against a global memory with u = 0.75, 10 tokens
    each, no structure tokens, B = 10: the global (higher) is taken, the branch is not."""
    F = _row([0, 10, 10], [0.0, 0.5, 0.5], kind=[codes.ROOT, codes.TASK, codes.GLOBAL],
             parent=[codes.NO_PARENT, 0, codes.NO_PARENT])
    F.u[:] = [1.0, 0.5, 0.75]
    selected = np.zeros(3, dtype=np.bool_)
    _select_branches(3, F, np.array([False, False, True]), np.array([False, True, True]),
                     selected, np.array([np.nan, 0.5, np.nan]), 0.0,
                     Params(budget=10).pack(), False)
    assert np.flatnonzero(selected).tolist() == [2]
    tree = MemoryTree(Params(budget=10, u_init_global=0.75), root_id="r")
    tree.add_task("t", "r", tokens=10)
    tree.add_global("g", tokens=10)
    sel = _TwinSelector("a3_no_semantic", tree, {}, 10, 0.0)
    assert sel.select_branches(["t", "g"], {"t": 0.5}) == {"g"}


def test_weighted_utility_global_has_no_branch_term() -> None:
    """A global memory belongs to no task branch, so no w_b·U_b is added to it (not some
    other slot's U_b). root(0), global 1 (rel 0.5), task 2 (U_b 0) → action 3 (rel 0.75),
    task 4 (U_b 1, not a candidate); u = 0, w_b = 0.5, room for one: the action
    (0.75 + 0.5·0 = 0.75) beats the global (0.5)."""
    stubs = Stubs(**FILL, selector_noise=0.0, w_u=0.5, w_b=0.5)
    F = _row([0, 10, 10, 10, 10], [0.0, 0.5, 0.5, 0.75, 0.5],
             kind=[codes.ROOT, codes.GLOBAL, codes.TASK, codes.ACTION, codes.TASK],
             parent=[codes.NO_PARENT, codes.NO_PARENT, 0, 2, 0])
    F.u[:] = 0.0
    prio = [np.nan, np.nan, 0.0, np.nan, 1.0]
    assert _kernel_select(F, [False, True, False, True, False], 10, stubs, prio,
                          weighted=True) == [3]


def test_branch_selector_ranks_branches_by_priority() -> None:
    """A3: two sibling task branches, t1 with U_b = 0.25 and t2 with U_b = 0.5, 10 tokens
    each, B = 10: the higher-priority t2 is taken (not the older t1)."""
    F = _row([0, 10, 10], [0.0, 0.5, 0.5], kind=[codes.ROOT, codes.TASK, codes.TASK],
             parent=[codes.NO_PARENT, 0, 0])
    selected = np.zeros(3, dtype=np.bool_)
    _select_branches(3, F, np.zeros(3, dtype=np.bool_), np.array([False, True, True]),
                     selected, np.array([np.nan, 0.25, 0.5]), 0.0, Params(budget=10).pack(),
                     False)
    assert np.flatnonzero(selected).tolist() == [2]
    tree = MemoryTree(Params(budget=10), root_id="r")
    tree.add_task("t1", "r", tokens=10)
    tree.add_task("t2", "r", tokens=10)
    sel = _TwinSelector("a3_no_semantic", tree, {}, 10, 0.0)
    assert sel.select_branches(["t1", "t2"], {"t1": 0.25, "t2": 0.5}) == {"t2"}


# ------------------------------------------------- the paper's selector: it chooses (Γ_sel)


@pytest.mark.parametrize(("threshold", "expected"), [
    (0.5, [1, 2]),  # 0.75 and 0.5 reach 0.5 (≥); 0.25 does not
    (0.5 + 2.0**-20, [1]),  # a hair above 0.5: only 0.75
    (0.0, [1, 2, 3]),  # everything judged relevant, B = 1000 leaves room
    (0.75 + 2.0**-20, []),  # nothing judged relevant: an empty context, B unused
])
def test_choose_rule_takes_only_what_it_judges_relevant(threshold: float,
                                                        expected: list[int]) -> None:
    """`selector_rule = "choose"`: REL 0.75, 0.5, 0.25, no noise, B = 1000 (never binds):
    a candidate enters when its utility reaches `select_threshold`, so B is a ceiling."""
    stubs = Stubs(selector_noise=0.0, select_threshold=threshold)
    F = _row(TOKENS, REL)
    eligible = np.array([False, True, True, True])
    assert _select(F, eligible, np.full(4, np.nan), False, 5.0, Params(budget=1000),
                   stubs) == expected
    tree = MemoryTree(Params(budget=1000), root_id="r")
    ids = ["r"]
    for k in range(1, 4):
        tree.add_action(f"x{k}", "r", tokens=TOKENS[k])
        ids.append(f"x{k}")
    sel = _TwinSelector("tree_selection", tree, dict(zip(ids, REL, strict=True)), 1000, 5.0)
    sel.st = stubs
    assert sorted(ids.index(v) for v in sel.select_items(ids[1:], 0, {})) == expected


def test_choose_rule_still_stops_at_the_ceiling() -> None:
    """Everything judged relevant (threshold 0), B = 60: the fill rule's answer [1, 2]
    (35 + 25 = 60 = B), the third (15) no longer fits."""
    stubs = Stubs(selector_noise=0.0, select_threshold=0.0)
    F = _row(TOKENS, REL)
    assert _select(F, np.array([False, True, True, True]), np.full(4, np.nan), False, 5.0,
                   Params(budget=60), stubs) == [1, 2]


@pytest.mark.parametrize(("threshold", "chosen"), [(0.375, True), (0.375 + 2.0**-20, False)])
def test_choose_rule_counts_score_terms_from_a_neutral_half(threshold: float,
                                                            chosen: bool) -> None:
    """Weighted (Full WMT): root(0) → task 1 (U_b 0.5) → action 2 (rel 0.5, u 0.25),
    w_u = w_b = 0.5. Judged utility = 0.5 + 0.5·(0.25 − ½) + 0.5·(0.5 − ½) = 0.375 (the
    raw utility 0.5 + 0.125 + 0.25 = 0.875 less (w_u + w_b)·½ = 0.5): in at 0.375, out
    a hair above."""
    stubs = Stubs(selector_noise=0.0, w_u=0.5, w_b=0.5, select_threshold=threshold)
    F = _row([0, 10, 10], [0.0, 0.5, 0.5], kind=[codes.ROOT, codes.TASK, codes.ACTION],
             parent=[codes.NO_PARENT, 0, 1])
    F.u[:] = [1.0, 0.5, 0.25]
    got = _kernel_select(F, [False, False, True], 1000, stubs, [np.nan, 0.5, np.nan],
                         weighted=True)
    assert got == ([2] if chosen else [])
    tree = MemoryTree(Params(budget=1000), root_id="r")
    tree.add_task("t1", "r", tokens=10)
    tree.add_action("x2", "t1", tokens=10)
    tree.nodes["x2"].u = 0.25
    sel = _TwinTreeSelector("wmt", tree, {"x2": 0.5}, 1000, 0.0)
    sel.st = stubs
    assert sel.select_items(["x2"], 0, {"t1": 0.5}) == ({"x2"} if chosen else set())


@pytest.mark.parametrize("budget", [40, 39, 1])
def test_whole_branch_retrieval_ignores_the_budget(budget: int) -> None:
    """A3 under `branch_retrieval = "whole"`: the unit B(task 1) (40 tokens with
    structure) is taken whole whatever B is, at 40 = B, 39 = B − 1 and 1."""
    assert _kernel_branches(budget, whole=True) == [1, 2]
    assert _twin_branches(budget, whole=True) == [1, 2]
