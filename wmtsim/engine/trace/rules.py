"""The named rules of the scoring math, and which of them a trace replay fired.

`RULES` is the registry: one `Rule` per branch of Eqs. 2–7 and 15, per pool rule of
docs/model.md §4, per lifecycle operation of §3 and per toolkit decision of docs/guide.md's
table that a trace can reach. `RuleRecorder` is handed to the trace replayer
(`wmtsim.engine.trace.replay._Replayer`); at every op the replayer calls it with the
tree's arrays before and after the kernels ran, and the recorder decides which branch of
which equation applied to each node. Coverage therefore comes from the replay itself,
never from a trace's own tags.

Two things the registry leaves out on purpose: the clip of Eq. 5 (with valid parameters
u and g lie in [0, 1], so ``u · g`` never leaves [0, 1]: the branch cannot fire), and the
selector's ties and token budget (a trace names its selections; no selector runs).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from wmtsim.core.codes import (
    ACTION,
    FAILURE,
    FOLDED,
    GLOBAL,
    NO_PARENT,
    OBSOLETE,
    ROOT,
    SUMMARY,
    TASK,
)
from wmtsim.core.params import Params

LARGE_K = 20
"""ρ^k counts as "large k" (rule ``eq4.large_k``) from this exponent on."""


@dataclass(frozen=True)
class Rule:
    """One named rule: ``name`` (stable, dotted), where it comes from, what it says."""

    name: str
    source: str  # "Eq. 4", "§4 pool", "guide: toolkit decision", ...
    text: str


RULES: tuple[Rule, ...] = (
    # Eq. 2: the event update
    Rule("eq2.success", "Eq. 2", "an outcome recorded as success sets u = u_success"),
    Rule("eq2.failure", "Eq. 2", "an outcome recorded as failure sets u = u_failure"),
    Rule("eq2.revised", "Eq. 2", "a repeated outcome revises the score (replaces, no blend)"),
    Rule("decision.event_keeps_m", "guide: event_resets_m=False",
         "an outcome on a node with m > 0 leaves m unchanged"),
    Rule("decision.event_resets_m", "guide: event_resets_m=True",
         "an outcome on a node with m > 0 resets m to 0"),
    # Eq. 3: the miss count
    Rule("eq3.selected_resets_m", "Eq. 3", "a selected node with m > 0 gets m = 0"),
    Rule("eq3.missed_increments_m", "Eq. 3", "a candidate not selected gets m = m + 1"),
    Rule("eq3.outside_pool_unchanged", "Eq. 3, Eq. 5",
         "a node outside the pool keeps u and m"),
    Rule("eq3.global_miss_count", "Eq. 3 (globals)",
         "a missed global memory stores m = global_miss_count"),
    Rule("decision.global_miss_count_variant", "guide: global_miss_count",
         "a missed global memory with global_miss_count other than 1"),
    # Eq. 4: the decay multiplier
    Rule("eq4.below_cap", "Eq. 4", "a miss with m_new < M decays by ρ^m_new"),
    Rule("eq4.at_cap", "Eq. 4", "a miss with m_new = M decays by ρ^M"),
    Rule("eq4.past_cap", "Eq. 4", "a miss with m_new > M decays by ρ^M (the cap)"),
    Rule("eq4.large_k", "Eq. 4", f"a miss decays by ρ^k with k = min(m, M) >= {LARGE_K}"),
    Rule("eq4.global_rho_g", "Eq. 4 (globals)", "a missed global memory decays by ρ_G"),
    Rule("decision.rho_power_product", "guide: ρ^k",
         "ρ^k with k >= 2 (a product of k factors ρ)"),
    # Eq. 5: the final score
    Rule("eq5.missed_decays", "Eq. 5", "a missed selection sets u = clip(u · g(m_new))"),
    Rule("eq5.selected_keeps_u", "Eq. 5", "a selected node keeps its score"),
    # Eq. 15: the closed form
    Rule("eq15.run_within_cap", "Eq. 15", "r >= 2 consecutive misses with r <= M: "
                                          "u = ũ · ρ^(r(r+1)/2)"),
    Rule("eq15.run_past_cap", "Eq. 15", "r consecutive misses with r > M: "
                                        "u = ũ · ρ^(M·r − M(M−1)/2)"),
    # §4 step 2: the candidate pool
    Rule("pool.root_excluded", "§4 pool", "the root is never a candidate"),
    Rule("pool.active_path_excluded", "§4 pool", "a task on the active path is no candidate"),
    Rule("pool.global", "§4 pool", "a global memory is a candidate"),
    Rule("pool.task", "§4 pool", "a task off the active path is a candidate"),
    Rule("pool.action", "§4 pool", "an action outside folded and obsolete branches is a "
                                   "candidate"),
    Rule("pool.obsolete_excluded", "§4 pool", "an obsolete node is no candidate"),
    Rule("pool.inside_obsolete_excluded", "§4 pool",
         "a node inside an obsolete branch is no candidate"),
    Rule("pool.folded_task_excluded", "§4 pool",
         "a folded task is no candidate (its summary stands for it)"),
    Rule("pool.hidden_in_fold", "§4 pool", "a node inside a folded branch is no candidate"),
    Rule("pool.fold_inside_fold", "§4 pool",
         "a node hidden by two or more folded ancestors (folds inside folds)"),
    Rule("pool.summary", "§4 pool", "the summary of a folded branch is a candidate"),
    Rule("pool.summary_after_reopen", "guide: pool membership of a summary",
         "the summary of a reopened branch stays a candidate"),
    Rule("pool.summary_hidden_by_outer_fold", "guide: pool membership of a summary",
         "a summary inside a folded ancestor branch is no candidate"),
    Rule("select.explicit_candidates", "trace format", "a select names its own pool"),
    Rule("select.nothing_selected", "Eq. 3", "a select with candidates and no selection"),
    Rule("select.no_candidates", "Eq. 3", "a select with an empty candidate pool"),
    # Eq. 6: branch priority
    Rule("eq6.priority", "Eq. 6", "U_b of a task branch"),
    Rule("eq6.nested_branch", "Eq. 6", "V_b holds another task's branch"),
    Rule("eq6.failed_fraction", "Eq. 6", "F_b > 0: V_b holds a failed action"),
    Rule("eq6.obsolete_fraction", "Eq. 6", "O_b > 0: V_b holds an obsolete node"),
    Rule("eq6.obsolete_by_ancestor", "Eq. 6",
         "O_b counts a node whose ancestor inside the branch is obsolete"),
    Rule("eq6.summary_member", "guide: summary node of a fold",
         "a folded branch's summary belongs to V_b"),
    Rule("decision.sum_in_creation_order", "guide: order of Σu",
         "Σu over a branch of three or more nodes, in creation order"),
    # Eq. 7: suppression
    Rule("eq7.suppressed", "Eq. 7", "U_b < τ_obs: the branch root becomes obsolete"),
    Rule("eq7.at_threshold_kept", "Eq. 7", "U_b = τ_obs exactly: the branch is kept"),
    Rule("eq7.above_threshold_kept", "Eq. 7", "U_b > τ_obs: the branch is kept"),
    Rule("eq7.active_path_exempt", "guide: who is eligible for Eq. 7",
         "U_b < τ_obs on the active path: not suppressed"),
    Rule("eq7.obsolete_skipped", "guide: who is eligible for Eq. 7",
         "an already obsolete branch is not evaluated again"),
    # §3: lifecycle operations
    Rule("fold.first", "§3 fold", "complete folds a task and creates its summary"),
    Rule("fold.refold", "guide: summary node of a fold",
         "a re-fold after reopen resets the summary (u_init_summary, m = 0)"),
    Rule("fold.moves_active_task", "guide: complete of the active task",
         "completing a task on the active path moves the active task to its parent"),
    Rule("fold.nested", "§3 fold", "a fold inside, or around, a folded branch"),
    Rule("reopen.folded", "§3 reopen", "a folded task becomes active again"),
    Rule("supersede.memory", "§3 supersede", "an action, global or summary becomes obsolete"),
    Rule("supersede.task", "§3 supersede", "a task (branch root) becomes obsolete"),
    Rule("supersede.folded", "§3 supersede", "a folded task becomes obsolete"),
    Rule("params.variant", "Params", "the query line overrides parameters"),
)
"""Every named rule, in the order of the math."""

RULE_NAMES: tuple[str, ...] = tuple(r.name for r in RULES)
_KNOWN = frozenset(RULE_NAMES)


class RuleRecorder:
    """Counts the rules a replay fires and remembers, per node, the rules that last
    decided its values (so a divergence can be grouped by the rule behind it)."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.last: dict[int, tuple[str, ...]] = {}  # node -> rules that last acted on it
        self._run: dict[int, int] = {}  # node -> consecutive misses since select/event/creation

    def fire(self, name: str, v: int | None = None, n: int = 1) -> None:
        assert name in _KNOWN, name
        self.counts[name] += n
        if v is not None:
            self.last[v] = (*self.last.get(v, ()), name)

    def _set(self, v: int, *names: str) -> None:
        self.last[v] = ()
        for name in names:
            self.fire(name, v)

    # -- ops ------------------------------------------------------------------------

    def query(self, overrides: bool) -> None:
        if overrides:
            self.fire("params.variant")

    def created(self, v: int) -> None:
        self._run[v] = 0
        self.last[v] = ()

    def outcome(self, v: int, success: bool, had_outcome: bool, m_before: int,
                resets: bool) -> None:
        names = ["eq2.success" if success else "eq2.failure"]
        if had_outcome:
            names.append("eq2.revised")
        if m_before > 0:
            names.append("decision.event_resets_m" if resets else "decision.event_keeps_m")
        self._set(v, *names)
        self._run[v] = 0

    def complete(self, parent: np.ndarray, kind: np.ndarray, state: np.ndarray, n: int,
                 v: int, first: bool, on_path: bool, summary: int) -> None:
        names = ["fold.first" if first else "fold.refold"]
        if on_path:
            names.append("fold.moves_active_task")
        folded_near = any(state[a] == FOLDED for a in _ancestors(parent, v)) or any(
            kind[w] == TASK and state[w] == FOLDED and v in _ancestors(parent, w)
            for w in range(n) if w != v)
        if folded_near:
            names.append("fold.nested")
        self._set(v, *names)
        self.last[summary] = tuple(names[:1])
        self._run[summary] = 0

    def reopen(self, v: int) -> None:
        self._set(v, "reopen.folded")

    def supersede(self, kind: int, was_folded: bool, v: int) -> None:
        names = ["supersede.task" if kind == TASK else "supersede.memory"]
        if was_folded:
            names.append("supersede.folded")
        self._set(v, *names)

    def select(self, t: Any, n: int, explicit: bool, u0: np.ndarray, m0: np.ndarray,
               state0: np.ndarray, priority: np.ndarray, p: Params) -> None:
        """One select step; ``t`` is the replayer's tree after Eqs. 3–7, ``u0``, ``m0``
        the values before Eqs. 3–5, ``state0`` the states before Eq. 7 and ``priority``
        Eq. 6 before suppression."""
        parent, kind, outcome, m = t.parent, t.kind, t.outcome, t.m
        eligible, selected, on_path = t.eligible, t.selected, t.on_path
        if explicit:
            self.fire("select.explicit_candidates")
        if not eligible[:n].any():
            self.fire("select.no_candidates")
        elif not selected[:n].any():
            self.fire("select.nothing_selected")
        for v in range(n):
            names = self._pool_rules(parent, kind, state0, on_path, v, explicit)
            names += self._feedback_rules(v, bool(eligible[v]), bool(selected[v]),
                                          int(kind[v]) == GLOBAL, int(m0[v]), int(m[v]), p)
            self._set(v, *names)
        for b in range(n):
            if kind[b] == TASK:
                for name in self._branch_rules(parent, kind, state0, outcome, on_path,
                                               priority, b, n, p):
                    self.fire(name, b)

    # -- classification ---------------------------------------------------------------

    @staticmethod
    def _pool_rules(parent: np.ndarray, kind: np.ndarray, state: np.ndarray,
                    on_path: np.ndarray, v: int, explicit: bool) -> list[str]:
        """Which §4 pool rule decided ε for node ``v`` (none for an explicit pool)."""
        if explicit:
            return []
        k = int(kind[v])
        ancestors = _ancestors(parent, v)
        folded = sum(1 for a in ancestors if state[a] == FOLDED)
        if k == ROOT:
            return ["pool.root_excluded"]
        if on_path[v]:
            return ["pool.active_path_excluded"]
        if state[v] == OBSOLETE:
            return ["pool.obsolete_excluded"]
        if any(state[a] == OBSOLETE for a in ancestors):
            return ["pool.inside_obsolete_excluded"]
        if k == GLOBAL:
            return ["pool.global"]
        if k == SUMMARY:
            task = int(parent[v])
            if folded > (1 if state[task] == FOLDED else 0):
                return ["pool.summary_hidden_by_outer_fold"]
            return ["pool.summary" if state[task] == FOLDED else "pool.summary_after_reopen"]
        if folded >= 2:
            return ["pool.hidden_in_fold", "pool.fold_inside_fold"]
        if folded == 1:
            return ["pool.hidden_in_fold"]
        if k == TASK and state[v] == FOLDED:
            return ["pool.folded_task_excluded"]
        return ["pool.task" if k == TASK else "pool.action"]

    def _feedback_rules(self, v: int, eligible: bool, selected: bool, is_global: bool,
                        m0: int, m_new: int, p: Params) -> list[str]:
        """Which branches of Eqs. 3–5 (and Eq. 15) applied to node ``v``."""
        if selected:
            self._run[v] = 0
            return ["eq5.selected_keeps_u", *(["eq3.selected_resets_m"] if m0 > 0 else [])]
        if not eligible:
            return ["eq3.outside_pool_unchanged"]
        if is_global:
            names = ["eq3.global_miss_count", "eq4.global_rho_g", "eq5.missed_decays"]
            if p.global_miss_count != 1:
                names.append("decision.global_miss_count_variant")
            return names
        names = ["eq3.missed_increments_m", "eq5.missed_decays"]
        names.append("eq4.below_cap" if m_new < p.M else
                     "eq4.at_cap" if m_new == p.M else "eq4.past_cap")
        k = min(m_new, p.M)
        if k >= 2:
            names.append("decision.rho_power_product")
        if k >= LARGE_K:
            names.append("eq4.large_k")
        r = self._run.get(v, 0) + 1
        self._run[v] = r
        if r >= 2 and m_new == r:  # the closed form's premise: the count started at 0
            names.append("eq15.run_within_cap" if r <= p.M else "eq15.run_past_cap")
        return names

    @staticmethod
    def _branch_rules(parent: np.ndarray, kind: np.ndarray, state: np.ndarray,
                      outcome: np.ndarray, on_path: np.ndarray, priority: np.ndarray,
                      b: int, n: int, p: Params) -> list[str]:
        """Eq. 6 and Eq. 7 for the branch rooted at task ``b``."""
        names = ["eq6.priority"]
        members = [w for w in range(b, n) if w == b or b in _ancestors(parent, w)]
        if len(members) >= 3:
            names.append("decision.sum_in_creation_order")
        if any(kind[w] == TASK for w in members if w != b):
            names.append("eq6.nested_branch")
        if any(kind[w] == SUMMARY for w in members):
            names.append("eq6.summary_member")
        if any(kind[w] == ACTION and outcome[w] == FAILURE for w in members):
            names.append("eq6.failed_fraction")
        if any(state[w] == OBSOLETE for w in members):
            names.append("eq6.obsolete_fraction")
        if any(state[w] != OBSOLETE and _obsolete_above(parent, state, w, b)
               for w in members if w != b):
            names.append("eq6.obsolete_by_ancestor")
        u_b, tau = float(priority[b]), p.tau_obs
        if state[b] == OBSOLETE:
            names.append("eq7.obsolete_skipped")
        elif on_path[b]:
            if u_b < tau:
                names.append("eq7.active_path_exempt")
        elif u_b < tau:
            names.append("eq7.suppressed")
        elif u_b == tau:
            names.append("eq7.at_threshold_kept")
        else:
            names.append("eq7.above_threshold_kept")
        return names


def _ancestors(parent: np.ndarray, v: int) -> list[int]:
    """Strict ancestors of ``v``, nearest first."""
    out = []
    a = int(parent[v])
    while a != NO_PARENT:
        out.append(a)
        a = int(parent[a])
    return out


def _obsolete_above(parent: np.ndarray, state: np.ndarray, w: int, b: int) -> bool:
    """A strict ancestor of ``w`` up to and including ``b`` is obsolete."""
    a = int(parent[w])
    while a != NO_PARENT:
        if state[a] == OBSOLETE:
            return True
        if a == b:
            return False
        a = int(parent[a])
    return False

