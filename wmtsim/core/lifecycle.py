"""Lifecycle kernels over one memory tree stored as flat arrays (docs/model.md §3–4).

A tree is a set of parallel 1-D arrays indexed by node (creation order, so
``parent[v] < v``): ``parent``, ``kind``, ``state``, ``u``, ``outcome``. The batched
engine passes one row of its forest; trace replay passes its single tree. These are the
only implementations of the candidate pool, the branch priorities and suppression.
"""

from __future__ import annotations

from typing import Any, NamedTuple

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
from wmtsim.core.jit import jit
from wmtsim.core.scoring import _branch_priority_core


class LifecycleScratch(NamedTuple):
    """Caller-owned scratch of the ``*_into`` kernels, one entry per node: the candidate
    pool's ``in_folded`` / ``in_obsolete`` flags and Eq. 6's per-branch statistics
    (max u, Σ u, |V_b|, failed and obsolete counts); ``fresh[0]``: the statistics are
    those of the tree's first ``fresh[0]`` slots, and slots were only appended since
    (-1: an older slot's score, outcome or obsolete flag may have changed; whoever
    changes one sets it). The engine allocates it once per trajectory
    (`_lifecycle_scratch`) and reuses it at every step."""

    in_folded: np.ndarray
    in_obsolete: np.ndarray
    u_max: np.ndarray
    u_sum: np.ndarray
    size: np.ndarray
    n_failed: np.ndarray
    n_obs: np.ndarray
    fresh: np.ndarray


@jit
def _lifecycle_scratch(n: int) -> LifecycleScratch:
    """A `LifecycleScratch` for ``n`` nodes (contents undefined: the kernels set them)."""
    return LifecycleScratch(
        np.empty(n, np.bool_), np.empty(n, np.bool_), np.empty(n), np.empty(n),
        np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int64),
        np.full(1, -1, np.int64))


@jit
def _mark_active_path(parent: np.ndarray, active: int, n: int, on_path: np.ndarray) -> None:
    """P_t = Path(root, v*_t): mark the task hierarchy from the query to the active task."""
    for i in range(n):
        on_path[i] = False
    v = active
    while v != NO_PARENT:
        on_path[v] = True
        v = parent[v]


@jit
def _candidate_pool(parent: np.ndarray, kind: np.ndarray, state: np.ndarray,
                    on_path: np.ndarray, n: int, eligible: np.ndarray) -> None:
    """docs/model.md §4 step 2: which nodes the selector may choose from (ε_i).

    * global memories that are not obsolete;
    * task and action nodes off the active path, not obsolete, not inside an obsolete
      branch, and not hidden inside a folded branch (a folded task is itself represented
      by its summary);
    * summary nodes, unless obsolete, inside an obsolete branch, or inside a folded
      branch above their own (a summary stays available after its branch is reopened).
    Root nodes and active-path nodes are never candidates: the path is always serialised.
    """
    _candidate_pool_into(parent, kind, state, on_path, n, eligible, _lifecycle_scratch(n))


@jit
def _candidate_pool_into(parent: np.ndarray, kind: np.ndarray, state: np.ndarray,
                         on_path: np.ndarray, n: int, eligible: np.ndarray,
                         S: LifecycleScratch) -> None:
    """`_candidate_pool` with caller-owned scratch ``S`` (the engine reuses it every step)."""
    in_folded, in_obsolete = S.in_folded, S.in_obsolete
    # in_folded[v]: a strict ancestor of v is folded; in_obsolete[v]: v or an ancestor is.
    # A parent precedes its children (creation order), so one forward pass sets both
    # flags and decides v.
    for v in range(n):
        a = parent[v]
        if a != NO_PARENT:
            in_folded[v] = in_folded[a] or state[a] == FOLDED
            in_obsolete[v] = in_obsolete[a] or state[v] == OBSOLETE
        else:
            in_folded[v] = False
            in_obsolete[v] = state[v] == OBSOLETE
        k = kind[v]
        if k == ROOT or on_path[v] or in_obsolete[v]:
            eligible[v] = False
        elif k == GLOBAL:
            eligible[v] = True
        elif k == SUMMARY:
            eligible[v] = not in_folded[parent[v]]
        elif k == TASK:
            eligible[v] = state[v] != FOLDED and not in_folded[v]
        else:  # ACTION
            eligible[v] = not in_folded[v]


@jit
def _replay_folded(parent: np.ndarray, kind: np.ndarray, state: np.ndarray,
                   on_path: np.ndarray, n: int, eligible: np.ndarray, S: LifecycleScratch,
                   keep_summary: bool) -> None:
    """A3's whole-branch retrieval of folded branches (`Stubs.branch_folded`, docs/world.md).

    Run after `_candidate_pool_into` (it reads the scratch flags that call set). A node that
    only a fold hides (a strict ancestor is folded; nothing on its way up is obsolete) is a
    candidate: a folded branch is retrieved as the memories it holds, its task node
    included. Its fold summary stays a candidate with ``keep_summary`` (``both``) and is
    dropped without it (``nodes``: the branch replaces the summary that stood for it).
    Obsolete nodes and branches stay out, as in every pool; the active path is never a
    candidate.
    """
    in_obsolete = S.in_obsolete
    for v in range(n):
        k = kind[v]
        if k == ROOT or k == GLOBAL or on_path[v] or in_obsolete[v]:
            continue
        # Every other node is reached, except the summary of a folded task without
        # ``keep_summary`` (a reopened task's summary stays, as in every pool).
        eligible[v] = keep_summary or k != SUMMARY or state[parent[v]] != FOLDED


@jit
def _reveal_resumed(parent: np.ndarray, kind: np.ndarray, state: np.ndarray,
                    on_path: np.ndarray, created: np.ndarray, folded_at: np.ndarray,
                    n: int, eligible: np.ndarray, S: LifecycleScratch) -> None:
    """`WorldSpec.resume_folded` = ``new`` (docs/world.md): a fold covers what it folded.

    A subtask resumed without a reopen (a configuration that folds but does not reopen)
    stays folded while execution is back in it; its summary stands for what the fold
    summarised, and a memory created after that fold is a candidate like any other, until
    the subtask folds again. So a node hidden by `_candidate_pool_into` (``S.in_folded``,
    the scratch it just set) is a candidate after all when every folded strict ancestor
    that hides it is on the active path and folded before the node was created (for a
    summary: the strict ancestors of its task). Nothing changes where no folded task is on
    the path.
    """
    in_folded, in_obsolete = S.in_folded, S.in_obsolete
    resumed = False
    for v in range(n):
        if on_path[v] and state[v] == FOLDED:
            resumed = True
    if not resumed:
        return
    for v in range(n):
        k = kind[v]
        if eligible[v] or on_path[v] or in_obsolete[v] or k == ROOT or k == GLOBAL:
            continue
        if k == TASK and state[v] == FOLDED:
            continue  # a folded task is represented by its summary
        a = parent[parent[v]] if k == SUMMARY else parent[v]
        if k == SUMMARY and not in_folded[parent[v]]:
            continue
        covered = False
        while a != NO_PARENT:
            if state[a] == FOLDED and not (on_path[a] and created[v] > folded_at[a]):
                covered = True
            a = parent[a]
        eligible[v] = not covered


@jit
def _branch_priorities(parent: np.ndarray, kind: np.ndarray, state: np.ndarray,
                       u: np.ndarray, outcome: np.ndarray, n: int, p: Any,
                       priority: np.ndarray) -> None:
    """Eq. 6 for every task branch; NaN for nodes that do not root a task branch.

    V_b is the branch root and all its descendants (a folded branch's summary included).
    A node counts in O_b if it or an ancestor inside the branch is obsolete. Each node is
    added to the statistics of every task ancestor-or-self in creation order, so Σ u runs
    over V_b root first, as in the reference.
    """
    _branch_priorities_into(parent, kind, state, u, outcome, n, p, priority,
                            _lifecycle_scratch(n))


@jit
def _branch_priorities_into(parent: np.ndarray, kind: np.ndarray, state: np.ndarray,
                            u: np.ndarray, outcome: np.ndarray, n: int, p: Any,
                            priority: np.ndarray, S: LifecycleScratch) -> None:
    """`_branch_priorities` with caller-owned scratch ``S`` (the engine reuses it every
    step)."""
    _branch_statistics_from(parent, kind, state, u, outcome, np.int64(0), n, S)
    u_max, u_sum, size, n_failed, n_obs = S.u_max, S.u_sum, S.size, S.n_failed, S.n_obs
    for b in range(n):
        if kind[b] == TASK:
            priority[b] = _branch_priority_core(u_max[b], u_sum[b], size[b], n_failed[b],
                                                n_obs[b], p)
        else:
            priority[b] = np.nan
    S.fresh[0] = n


@jit
def _branch_priorities_update(parent: np.ndarray, kind: np.ndarray, state: np.ndarray,
                              u: np.ndarray, outcome: np.ndarray, n: int, p: Any,
                              priority: np.ndarray, S: LifecycleScratch) -> None:
    """Eq. 6 on the current tree, from the statistics of the last pass where they still
    hold: `_branch_priorities_into` when ``S.fresh[0]`` is -1, else the slots appended
    since (``S.fresh[0]`` .. ``n - 1``) are added to them.

    Each new node is the last of every branch it joins in creation order, so adding it
    to its task ancestors' statistics gives the bits of a full pass; only those tasks'
    priorities change.
    """
    first = S.fresh[0]
    if first < 0:
        _branch_priorities_into(parent, kind, state, u, outcome, n, p, priority, S)
        return
    _branch_statistics_from(parent, kind, state, u, outcome, first, n, S)
    u_max, u_sum, size, n_failed, n_obs = S.u_max, S.u_sum, S.size, S.n_failed, S.n_obs
    for v in range(first, n):
        priority[v] = np.nan
        a = v
        while a != NO_PARENT:
            if kind[a] == TASK:
                priority[a] = _branch_priority_core(u_max[a], u_sum[a], size[a],
                                                    n_failed[a], n_obs[a], p)
            a = parent[a]
    S.fresh[0] = n


@jit
def _branch_statistics_from(parent: np.ndarray, kind: np.ndarray, state: np.ndarray,
                            u: np.ndarray, outcome: np.ndarray, first: int, n: int,
                            S: LifecycleScratch) -> None:
    """Eq. 6's per-branch statistics (max u, Σ u, |V_b|, failed and obsolete counts in
    ``S``) with slots ``first`` .. ``n - 1`` added, in creation order: each slot's own
    statistics start empty, then it is added to every task ancestor-or-self (Σ u over
    V_b root first, as in the reference). From ``first`` = 0 that is the full pass; from
    a later slot it extends statistics that hold for the slots before it."""
    u_max, u_sum, size, n_failed, n_obs = S.u_max, S.u_sum, S.size, S.n_failed, S.n_obs
    for v in range(first, n):
        u_max[v] = -np.inf
        u_sum[v] = 0.0
        size[v] = 0
        n_failed[v] = 0
        n_obs[v] = 0
        failed = kind[v] == ACTION and outcome[v] == FAILURE
        obs = False  # is any node on the path from v up to the current ancestor obsolete?
        a = v
        while a != NO_PARENT:
            obs = obs or state[a] == OBSOLETE
            if kind[a] == TASK:
                u_max[a] = max(u_max[a], u[v])
                u_sum[a] += u[v]
                size[a] += 1
                n_failed[a] += 1 if failed else 0
                n_obs[a] += 1 if obs else 0
            a = parent[a]


@jit
def _suppress(kind: np.ndarray, state: np.ndarray, on_path: np.ndarray,
              priority: np.ndarray, n: int, p: Any) -> int:
    """Eq. 7: z_root ← obsolete when U_b < τ_obs, for every eligible branch.

    Eligible for lifecycle evaluation: task branches off the active path that are not
    already obsolete. Returns how many branches were suppressed.
    """
    count = 0
    for b in range(n):
        if kind[b] == TASK and not on_path[b] and state[b] != OBSOLETE:
            if priority[b] < p.tau_obs:
                state[b] = OBSOLETE
                count += 1
    return count


@jit
def _branch_of(parent: np.ndarray, kind: np.ndarray, v: int) -> int:
    """The task branch a node belongs to (nearest task ancestor-or-self), or -1."""
    a = v
    while a != NO_PARENT:
        if kind[a] == TASK:
            return a
        a = parent[a]
    return NO_PARENT
