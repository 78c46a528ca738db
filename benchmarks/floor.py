"""The floor: the leanest numba step that does Full WMT's memory work.

A yardstick for the engine, not a second engine. It plays a generated `World`'s script
under Full WMT and does, at every prompt-construction step, exactly the memory work of
docs/model.md §4 and docs/world.md's selector:

1. the candidate pool (§4 step 2: not the root, not the active path, nothing inside an
   obsolete branch, nothing hidden in a folded branch, summaries of folded branches);
2. the semantic selector's noisy utility (latent relevance + poison boost + noise +
   w_u·u + w_b·U_b), its relevance judgement (under ``selector_rule = "choose"`` a
   candidate enters only when utility − (w_u + w_b)·½ reaches ``select_threshold``) and
   its greedy pick under the budget B with the top-k cap, ties to the older memory;
3. selection feedback, Eqs. 3–5; branch priorities, Eq. 6, for every task branch (fresh
   before the selector, again after the feedback); suppression, Eq. 7;

plus what the tree needs between steps (node creation, Eq. 2 outcomes and revisions,
supersession, fold with its summary node, reopen). It skips what is not memory work:
the reasoner, summary leaks, the counters and every record. It was written from the
spec (docs/model.md, docs/world.md, docs/model_decisions.md), not from `wmtsim.engine`; its
only shared piece is the counter-based draw (`wmtsim.core.rng`), since the selector's
noise must be the same numbers. `tests/test_bench_floor.py` checks that it really does
the work: its selections at every step and its final scores, miss counts and states
equal the readable twin's (`wmtsim.twins.simulator`).

Lean by construction: one trajectory's arrays are allocated once per batch and reused;
ρ^k is a table; a node's branch (nearest task ancestor-or-self) is stored when it is
created; the step's hash prefix is computed once; the candidates are ordered by an
insertion sort into preallocated buffers. Eq. 6 keeps the twin's summation order (Σ u
over V_b in creation order) so the priorities, hence the selections, agree to the bit.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
from numba import njit

from wmtsim.core.codes import (
    ACTION,
    ACTIVE,
    COMPLETED,
    DRAW_SUMMARY,
    FAILURE,
    FOLDED,
    GLOBAL,
    OBSOLETE,
    ROOT,
    SUCCESS,
    SUMMARY,
    TASK,
)
from wmtsim.core.draws import PURPOSE_SELECTOR_NOISE
from wmtsim.core.jit import jit
from wmtsim.core.rng import _step_key, _uniform_at
from wmtsim.core.world_spec import (
    NO_TOPIC,
    OP_ACTION,
    OP_COMPLETE,
    OP_FINAL,
    OP_GLOBAL,
    OP_REOPEN,
    OP_REVISE,
    OP_SUPERSEDE,
    OP_TASK,
)

SQRT3 = math.sqrt(3.0)  # scales an Irwin–Hall sum of four uniforms to unit variance

# The floor's own knob vector (its layout, not the engine's).
(K_U_SUCCESS, K_U_FAILURE, K_U_ROOT, K_U_TASK, K_U_ACTION, K_U_GLOBAL, K_U_SUMMARY, K_RHO,
 K_RHO_G, K_M, K_ALPHA, K_BETA, K_GAMMA, K_DELTA, K_TAU, K_BUDGET, K_RESETS_M, K_GMC,
 K_NOISE, K_BOOST, K_W_U, K_W_B, K_TOP_K, K_C_SUM, K_WARN_TOKENS, K_STRUCT, K_CROSS,
 K_SUMMARY_REL, K_TWICE, K_CHOOSE, K_THRESHOLD) = range(31)
N_KNOBS = 31
# Profiling only (`benchmarks.phases`): K_TWICE is a mask of the phases a step runs twice,
# so a phase's cost is the time it adds; every doubled phase is idempotent (same result).
PH_POOL, PH_PRIORITIES, PH_SELECT, PH_DRAWS, PH_SUPPRESS = 1, 2, 4, 8, 16


class Tree(NamedTuple):
    """One trajectory's memory tree, flat, slots in creation order (docs/model.md §1)."""

    kind: np.ndarray
    parent: np.ndarray
    state: np.ndarray
    outcome: np.ndarray
    u: np.ndarray
    m: np.ndarray
    tokens: np.ndarray
    topic: np.ndarray
    rel: np.ndarray
    poisoned: np.ndarray
    draw_id: np.ndarray  # the identity its draws are keyed by (world id; summaries offset)
    branch: np.ndarray  # nearest task ancestor-or-self, -1: none
    summary_of: np.ndarray  # a task's summary slot, -1: not folded yet


class Scratch(NamedTuple):
    """Per-step work arrays, allocated once per batch."""

    on_path: np.ndarray
    hidden: np.ndarray  # inside an obsolete branch
    anc_folded: np.ndarray  # a strict ancestor is folded
    cand: np.ndarray
    chosen: np.ndarray
    order: np.ndarray
    neg: np.ndarray
    u_max: np.ndarray
    u_sum: np.ndarray
    size: np.ndarray
    n_failed: np.ndarray
    n_obs: np.ndarray
    prio: np.ndarray
    rho_pow: np.ndarray  # ρ^j as a product of j factors (the project's rounding)


def floor_knobs(world: Any, params: Any = None, stubs: Any = None, twice: int = 0
                ) -> np.ndarray:
    """The knobs the floor reads, from `Params`, `Stubs` and the world's spec; ``twice``:
    the ``PH_*`` phases to run twice (profiling)."""
    from wmtsim.core.params import Params
    from wmtsim.core.stubs import Stubs

    p = params if params is not None else Params()
    st = stubs if stubs is not None else Stubs()
    k = np.zeros(N_KNOBS)
    k[:K_NOISE] = [p.u_success, p.u_failure, p.u_init_root, p.u_init_task, p.u_init_action,
                   p.u_init_global, p.u_init_summary, p.rho, p.rho_g, p.M, p.alpha, p.beta,
                   p.gamma, p.delta, p.tau_obs, p.budget, float(p.event_resets_m),
                   p.global_miss_count]
    k[K_NOISE:] = [st.selector_noise, st.poison_boost, st.w_u, st.w_b, st.top_k, st.c_sum,
                   st.warning_tokens, st.struct_tokens, world.spec.cross_relevance,
                   world.spec.summary_relevance, twice,
                   float(st.selector_rule == "choose"), st.select_threshold]
    return k


def run_floor(world: Any, knobs: np.ndarray | None = None, record: bool = False
              ) -> dict[str, np.ndarray]:
    """Play every trajectory of ``world`` under Full WMT's memory work, one thread.

    Returns ``steps`` (prompt steps per trajectory), ``selected`` (selections summed over
    steps), the final ``u``, ``m``, ``state`` per slot (creation order, as the twin's
    `MemoryTree.nodes`), ``n_slots``, and with ``record`` the selected slots of every step
    (``log``: ``(n, steps, slots)`` bool); without it ``log`` is a 1×1×1 placeholder.
    """
    k = floor_knobs(world) if knobs is None else knobs
    n, nodes = world.kind.shape
    cap = 2 * nodes + 1  # world nodes + at most one summary per task
    max_steps = int((world.op == OP_ACTION).sum(axis=1).max()
                    + (world.op == OP_COMPLETE).sum(axis=1).max() + 1)
    out = {"steps": np.zeros(n, np.int64), "selected": np.zeros(n, np.int64),
           "u": np.zeros((n, cap)), "m": np.zeros((n, cap), np.int64),
           "state": np.zeros((n, cap), np.int8), "n_slots": np.zeros(n, np.int64),
           "log": np.zeros((n, max_steps, cap) if record else (1, 1, 1), np.bool_)}
    _floor_batch(world.parent, world.kind, world.tokens, world.topic, world.rel,
                 world.poisoned, world.outcome, world.op, world.arg, world.n_events,
                 np.int64(world.seed), np.int64(world.start), k, record, out["steps"],
                 out["selected"], out["u"], out["m"], out["state"], out["n_slots"],
                 out["log"])
    return out


@jit
def _floor_batch(w_parent, w_kind, w_tokens, w_topic, w_rel, w_poisoned, w_outcome, ops,
                 args, n_events, seed, start, k, record, steps_out, selected_out, u_out,
                 m_out, state_out, slots_out, log):
    n, nodes = w_kind.shape
    cap = 2 * nodes + 1
    T = Tree(kind=np.zeros(cap, np.int8), parent=np.zeros(cap, np.int64),
             state=np.zeros(cap, np.int8), outcome=np.zeros(cap, np.int8), u=np.zeros(cap),
             m=np.zeros(cap, np.int64), tokens=np.zeros(cap, np.int64),
             topic=np.zeros(cap, np.int64), rel=np.zeros(cap),
             poisoned=np.zeros(cap, np.bool_), draw_id=np.zeros(cap, np.int64),
             branch=np.zeros(cap, np.int64), summary_of=np.zeros(cap, np.int64))
    big_m = int(k[K_M])
    S = Scratch(on_path=np.zeros(cap, np.bool_), hidden=np.zeros(cap, np.bool_),
                anc_folded=np.zeros(cap, np.bool_), cand=np.zeros(cap, np.int64),
                chosen=np.zeros(cap, np.bool_), order=np.zeros(cap, np.int64),
                neg=np.zeros(cap), u_max=np.zeros(cap), u_sum=np.zeros(cap),
                size=np.zeros(cap), n_failed=np.zeros(cap), n_obs=np.zeros(cap),
                prio=np.zeros(cap), rho_pow=np.ones(big_m + 1))
    for j in range(1, big_m + 1):
        S.rho_pow[j] = S.rho_pow[j - 1] * k[K_RHO]
    slot_of = np.zeros(nodes, np.int64)  # world id -> slot

    for i in range(n):
        traj = start + i
        # The root: the user query (world node 0), u = u_init_root.
        n_slots = _add(T, 0, ROOT, -1, k[K_U_ROOT], w_tokens[i, 0], w_topic[i, 0],
                       w_rel[i, 0], False, 0, -1)
        slot_of[0] = 0
        active = 0
        step = 0
        n_selected = 0
        fresh = -1  # Eq. 6 totals hold for slots < fresh (-1: recompute them all)
        for e in range(n_events[i]):
            op = ops[i, e]
            w = args[i, e]
            topic_now = NO_TOPIC
            prompt = False
            if op == OP_GLOBAL:
                slot_of[w] = n_slots
                n_slots = _add(T, n_slots, GLOBAL, -1, k[K_U_GLOBAL], w_tokens[i, w],
                               w_topic[i, w], w_rel[i, w], w_poisoned[i, w], w, -1)
            elif op == OP_TASK:
                slot_of[w] = n_slots
                active = n_slots
                n_slots = _add(T, n_slots, TASK, slot_of[w_parent[i, w]], k[K_U_TASK],
                               w_tokens[i, w], w_topic[i, w], w_rel[i, w], w_poisoned[i, w],
                               w, n_slots)
            elif op == OP_ACTION:
                v = n_slots
                slot_of[w] = v
                n_slots = _add(T, v, ACTION, slot_of[w_parent[i, w]], k[K_U_ACTION],
                               w_tokens[i, w], w_topic[i, w], w_rel[i, w], w_poisoned[i, w],
                               w, -2)
                _outcome(T, v, w_outcome[i, w] == SUCCESS, k)  # Eq. 2
                topic_now = T.topic[active]
                prompt = True
            elif op == OP_SUPERSEDE:
                T.state[slot_of[w]] = OBSOLETE  # regardless of score (docs/model.md §3)
                fresh = -1
            elif op == OP_REVISE:
                v = slot_of[w]
                _outcome(T, v, T.outcome[v] != SUCCESS, k)  # Eq. 2 again
                fresh = -1
            elif op == OP_COMPLETE:
                topic_now = w
                prompt = True
            elif op == OP_REOPEN:
                v = slot_of[w]
                if T.state[v] == FOLDED or T.state[v] == COMPLETED:
                    T.state[v] = ACTIVE  # reopen: the branch re-enters the pool
                active = v
            elif op == OP_FINAL:
                active = 0
                prompt = True
            if prompt:
                row = log[i, step] if record else log[0, 0]
                taken, fresh = _prompt_step(T, S, k, topic_now, active, n_slots, fresh,
                                            seed, traj, step, record, row)
                n_selected += taken
                if op == OP_COMPLETE:
                    v = slot_of[w]
                    n_slots = _fold(T, v, w, n_slots, k)
                    active = T.parent[v]
                    fresh = -1
                step += 1
        steps_out[i] = step
        selected_out[i] = n_selected
        slots_out[i] = n_slots
        for v in range(n_slots):
            u_out[i, v] = T.u[v]
            m_out[i, v] = T.m[v]
            state_out[i, v] = T.state[v]


@jit
def _add(T, v, kind, parent, u, tokens, topic, rel, poisoned, draw_id, branch):
    """Create node ``v`` (active, m = 0, no outcome); ``branch`` -2: its parent's."""
    T.kind[v] = kind
    T.parent[v] = parent
    T.state[v] = ACTIVE
    T.outcome[v] = 0
    T.u[v] = u
    T.m[v] = 0
    T.tokens[v] = tokens
    T.topic[v] = topic
    T.rel[v] = rel
    T.poisoned[v] = poisoned
    T.draw_id[v] = draw_id
    T.branch[v] = T.branch[parent] if branch == -2 else branch
    T.summary_of[v] = -1
    return v + 1


@jit
def _outcome(T, v, success, k):
    """Eq. 2: the event sets ũ = u_success or u_failure (no blend with the old score)."""
    T.outcome[v] = SUCCESS if success else FAILURE
    T.u[v] = k[K_U_SUCCESS] if success else k[K_U_FAILURE]
    if k[K_RESETS_M] != 0.0:
        T.m[v] = 0


@jit
def _fold(T, v, w, n_slots, k):
    """Fold task ``v`` on completion (docs/model.md §3): z ← folded (an obsolete task stays
    obsolete) and its summary of ceil(c_sum · raw tokens) + warnings tokens is created, or
    on a re-fold refreshed (u = u_init_summary, m = 0, new size). Returns the slot count."""
    raw = 0.0
    warnings = 0
    for x in range(v, n_slots):  # the branch: v and its descendants, all created after v
        a = x
        while a > v:
            a = T.parent[a]
        if a != v:
            continue
        if T.kind[x] != SUMMARY:
            raw += T.tokens[x]
        if T.kind[x] == ACTION and T.outcome[x] == FAILURE:
            warnings += 1
    size_tokens = math.ceil(k[K_C_SUM] * raw) + warnings * int(k[K_WARN_TOKENS])
    if T.state[v] != OBSOLETE:
        T.state[v] = FOLDED
    s = T.summary_of[v]
    if s < 0:  # the first fold creates the summary; it is about subtask w
        s = n_slots
        n_slots = _add(T, s, SUMMARY, v, 0.0, 0, w, k[K_SUMMARY_REL], False,
                       DRAW_SUMMARY + T.draw_id[v], v)
        T.summary_of[v] = s
    T.u[s] = k[K_U_SUMMARY]
    T.m[s] = 0
    T.tokens[s] = size_tokens
    return n_slots


@jit
def _priorities(kind, parent, state, outcome, u, branch, s_max, s_sum, s_size, s_failed,
                s_obs, prio, n_slots, k):
    """Eq. 6 for every task branch: U_b = α·max u + (β/|V_b|)·Σ u − γ·F_b − δ·O_b.

    V_b is the branch root and all its descendants; Σ u runs over V_b in creation order,
    root first (the project's rounding convention), and a node counts as obsolete in a
    branch when it or an ancestor up to the branch root is obsolete. One forward pass:
    a node adds itself to its own branch (``branch``: its nearest task) through running
    totals kept in locals while consecutive nodes share that branch (the same additions
    in the same order as a walk, without a store and reload per node), and to the outer
    branches of nested subtasks, if any, by a walk up.
    """
    cur = -1  # the branch whose running totals are in the locals below
    u_max = u_sum = size = n_failed = n_obs = 0.0
    for v in range(n_slots):
        b = branch[v]
        if b < 0:
            continue  # the root and global memories belong to no task branch
        if b != cur:
            if cur >= 0:
                s_max[cur], s_sum[cur], s_size[cur] = u_max, u_sum, size
                s_failed[cur], s_obs[cur] = n_failed, n_obs
            cur = b
            if b == v:  # the branch root comes first: fresh totals
                u_max, u_sum, size, n_failed, n_obs = u[b], 0.0, 0.0, 0.0, 0.0
            else:
                u_max, u_sum, size = s_max[b], s_sum[b], s_size[b]
                n_failed, n_obs = s_failed[b], s_obs[b]
        x = u[v]
        failed = (kind[v] == ACTION) & (outcome[v] == FAILURE)
        # v's parent is b itself unless v is b (actions and summaries hang under a task)
        obsolete = (state[v] == OBSOLETE) | (state[b] == OBSOLETE)
        u_max = max(u_max, x)  # branch-free forms: the data decide, not the predictor
        u_sum += x
        size += 1.0
        n_failed += 1.0 if failed else 0.0
        n_obs += 1.0 if obsolete else 0.0
        a = parent[b]
        while a > 0:  # outer branches (nested subtasks only; the root, slot 0, is none)
            obsolete = obsolete or state[a] == OBSOLETE
            if kind[a] == TASK:
                if x > s_max[a]:
                    s_max[a] = x
                s_sum[a] += x
                s_size[a] += 1.0
                if failed:
                    s_failed[a] += 1.0
                if obsolete:
                    s_obs[a] += 1.0
            a = parent[a]
    if cur >= 0:
        s_max[cur], s_sum[cur], s_size[cur] = u_max, u_sum, size
        s_failed[cur], s_obs[cur] = n_failed, n_obs
    for b in range(n_slots):
        if kind[b] == TASK:
            sz = s_size[b]
            prio[b] = (k[K_ALPHA] * s_max[b] + (k[K_BETA] / sz) * s_sum[b]
                         - k[K_GAMMA] * (s_failed[b] / sz) - k[K_DELTA] * (s_obs[b] / sz))


@jit
def _extend_priorities(kind, parent, state, outcome, u, branch, s_max, s_sum, s_size,
                       s_failed, s_obs, prio, first, n_slots, k):
    """Eq. 6 after slots ``first`` .. ``n_slots - 1`` were appended to a tree whose totals
    are current: each new node is the last of every branch it joins in creation order, so
    adding it to the totals gives the bits of a full `_priorities` pass."""
    for v in range(first, n_slots):
        if branch[v] < 0:
            continue
        if branch[v] == v:  # a new task: its own branch starts
            s_max[v] = u[v]
            s_sum[v] = s_size[v] = s_failed[v] = s_obs[v] = 0.0
        x = u[v]
        failed = (kind[v] == ACTION) & (outcome[v] == FAILURE)
        obsolete = False
        a = v
        while a > 0:
            obsolete = obsolete or state[a] == OBSOLETE
            if kind[a] == TASK:
                s_max[a] = max(s_max[a], x)
                s_sum[a] += x
                s_size[a] += 1.0
                s_failed[a] += 1.0 if failed else 0.0
                s_obs[a] += 1.0 if obsolete else 0.0
                sz = s_size[a]
                prio[a] = (k[K_ALPHA] * s_max[a] + (k[K_BETA] / sz) * s_sum[a]
                           - k[K_GAMMA] * (s_failed[a] / sz) - k[K_DELTA] * (s_obs[a] / sz))
            a = parent[a]


@jit
def _pool(kind, parent, state, on_path, hidden, anc_folded, cand, chosen, n_slots, active):
    """docs/model.md §4 step 2: the candidate pool into ``cand`` (creation order); its size.

    Never the root, the active path P_t or anything inside an obsolete branch; a folded
    task hides its branch except its summary; a summary hides when its task lies inside
    another folded branch. A parent precedes its children, so one forward pass does it.
    """
    for v in range(n_slots):
        on_path[v] = False
        chosen[v] = False
    a = active
    while a >= 0:
        on_path[a] = True
        a = parent[a]
    n_cand = 0
    for v in range(n_slots):
        p = parent[v]
        hidden[v] = state[v] == OBSOLETE or (p >= 0 and hidden[p])
        anc_folded[v] = p >= 0 and (state[p] == FOLDED or anc_folded[p])
        if kind[v] == ROOT or on_path[v] or hidden[v]:
            continue
        if kind[v] == SUMMARY:
            ok = not anc_folded[p]
        elif kind[v] == TASK:
            ok = state[v] != FOLDED and not anc_folded[v]
        else:
            ok = not anc_folded[v]
        if ok:
            cand[n_cand] = v
            n_cand += 1
    return n_cand


@jit
def _select(kind, topic, rel, poisoned, u, tokens, draw_id, branch, prio, cand, chosen,
            order, neg, n_cand, k, topic_now, seed, traj, step):
    """The selector stub: utility = relevance + poison boost + noise + w_u·u + w_b·U_b,
    only the candidates judged relevant under the choosing rule, best first (ties to the
    older memory), greedy under B with the top-k cap."""
    key = _step_key(seed, traj, step)  # the hash prefix shared by the step's draws
    choose = k[K_CHOOSE] != 0.0
    m = 0  # candidates judged relevant, in `order`
    for j in range(n_cand):
        v = cand[j]
        if topic_now == NO_TOPIC:
            x = rel[v] if (kind[v] == TASK or kind[v] == SUMMARY) else rel[v] * k[K_CROSS]
        else:
            x = rel[v] if topic[v] == topic_now else rel[v] * k[K_CROSS]
        if poisoned[v] and kind[v] != SUMMARY:
            x += k[K_BOOST]
        d = 4 * draw_id[v]
        s = 0.0
        for r in range(4):
            s += _uniform_at(key, d + r, PURPOSE_SELECTOR_NOISE)
        if int(k[K_TWICE]) & PH_DRAWS:  # profiling: the draws again (x + 0.0 = x)
            t = 0.0
            for r in range(4):
                t += _uniform_at(key, d + r, PURPOSE_SELECTOR_NOISE)
            x += 0.0 * t
        x += k[K_NOISE] * ((s - 2.0) * SQRT3)
        x += k[K_W_U] * u[v]
        centre = 0.5 * k[K_W_U]  # the score terms are judged from a neutral ½
        if branch[v] >= 0:
            x += k[K_W_B] * prio[branch[v]]
            centre += 0.5 * k[K_W_B]
        if choose and x - centre < k[K_THRESHOLD]:
            continue  # judged not relevant
        q = m  # insertion sort on -x; a later candidate goes after its equals (stable)
        m += 1
        while q > 0 and neg[q - 1] > -x:
            neg[q] = neg[q - 1]
            order[q] = order[q - 1]
            q -= 1
        neg[q] = -x
        order[q] = v
    used = 0.0
    taken = 0
    top_k = int(k[K_TOP_K])
    for j in range(m):
        v = order[j]
        cost = tokens[v] + k[K_STRUCT]
        if used + cost <= k[K_BUDGET]:
            chosen[v] = True
            used += cost
            taken += 1
            if top_k > 0 and taken >= top_k:
                break
    return taken


@njit(inline="always", cache=True)  # no call with two records per step
def _prompt_step(T, S, k, topic_now, active, n_slots, fresh, seed, traj, step, record,
                 log_row):
    """One prompt-construction cycle of Full WMT (docs/model.md §4 steps 2–6).

    ``fresh``: the Eq. 6 totals in ``S`` hold for the tree's first ``fresh`` slots, and
    only nodes were appended since (-1: recompute). Returns how many memories were
    selected and the ``fresh`` of the next step (-1 when Eq. 7 suppressed a branch).
    """
    twice = int(k[K_TWICE])
    n_cand = _pool(T.kind, T.parent, T.state, S.on_path, S.hidden, S.anc_folded, S.cand,
                   S.chosen, n_slots, active)
    if twice & PH_POOL:
        n_cand = _pool(T.kind, T.parent, T.state, S.on_path, S.hidden, S.anc_folded, S.cand,
                       S.chosen, n_slots, active)
    # Fresh priorities for the selector: the totals of the last step's Eq. 6 plus the
    # nodes created since, when nothing else changed in between.
    if fresh < 0:
        _priorities(T.kind, T.parent, T.state, T.outcome, T.u, T.branch, S.u_max, S.u_sum,
                    S.size, S.n_failed, S.n_obs, S.prio, n_slots, k)
    else:
        _extend_priorities(T.kind, T.parent, T.state, T.outcome, T.u, T.branch, S.u_max,
                           S.u_sum, S.size, S.n_failed, S.n_obs, S.prio, fresh, n_slots, k)
    taken = 0
    if n_cand > 0:
        taken = _select(T.kind, T.topic, T.rel, T.poisoned, T.u, T.tokens, T.draw_id,
                        T.branch, S.prio, S.cand, S.chosen, S.order, S.neg, n_cand, k,
                        topic_now, seed, traj, step)
        if twice & PH_SELECT:
            taken = _select(T.kind, T.topic, T.rel, T.poisoned, T.u, T.tokens, T.draw_id,
                            T.branch, S.prio, S.cand, S.chosen, S.order, S.neg, n_cand, k,
                            topic_now, seed, traj, step)
    if record:
        for v in range(n_slots):
            log_row[v] = S.chosen[v]
    # 4. Selection feedback, Eqs. 3–5 (only candidates change).
    big_m = int(k[K_M])
    for j in range(n_cand):
        v = S.cand[j]
        if S.chosen[v]:
            T.m[v] = 0  # selected: m reset, u kept
        else:  # a missed selection: Eq. 3, then g of Eq. 4, then Eq. 5
            if T.kind[v] == GLOBAL:
                T.m[v] = int(k[K_GMC])
                g = k[K_RHO_G]
            else:
                T.m[v] += 1
                g = S.rho_pow[min(T.m[v], big_m)]
            x = T.u[v] * g
            T.u[v] = 0.0 if x < 0.0 else (1.0 if x > 1.0 else x)
    # 5. Eq. 6 after feedback; 6. Eq. 7: off-path, not obsolete, U_b < τ_obs → obsolete.
    for _ in range(2 if twice & PH_PRIORITIES else 1):
        _priorities(T.kind, T.parent, T.state, T.outcome, T.u, T.branch, S.u_max, S.u_sum,
                    S.size, S.n_failed, S.n_obs, S.prio, n_slots, k)
    fresh = n_slots
    for _ in range(2 if twice & PH_SUPPRESS else 1):
        for b in range(n_slots):
            if (T.kind[b] == TASK and not S.on_path[b] and T.state[b] != OBSOLETE
                    and S.prio[b] < k[K_TAU]):
                T.state[b] = OBSOLETE
                fresh = -1  # the O_b of this branch and its ancestors changed
    return taken, fresh
