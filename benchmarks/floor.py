"""The floor: the leanest numba step that does Full WMT's memory work (issue 26).

A yardstick for the engine, not a second engine. It plays a generated `World`'s script
under Full WMT and does, at every prompt-construction step, exactly the memory work of
MODEL.md §4 and SIMULATION.md's selector:

1. the candidate pool (§4 step 2: not the root, not the active path, nothing inside an
   obsolete branch, nothing hidden in a folded branch, summaries of folded branches);
2. the semantic selector's noisy utility (latent relevance + poison boost + noise +
   w_u·u + w_b·U_b) and its greedy pick under the budget B with the top-k cap, ties to
   the older memory;
3. selection feedback, Eqs. 3–5; branch priorities, Eq. 6, for every task branch (fresh
   before the selector, again after the feedback); suppression, Eq. 7;

plus what the tree needs between steps (node creation, Eq. 2 outcomes and revisions,
supersession, fold with its summary node, reopen). It skips what is not memory work:
the reasoner, summary leaks, the counters and every record. It was written from the
spec (docs/model_decisions.md, MODEL.md, SIMULATION.md), not from `wmtsim.engine`; its
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
 K_SUMMARY_REL) = range(28)
N_KNOBS = 28


class Tree(NamedTuple):
    """One trajectory's memory tree, flat, slots in creation order (MODEL.md §1)."""

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


def floor_knobs(world: Any, params: Any = None, stubs: Any = None) -> np.ndarray:
    """The knobs the floor reads, from `Params`, `Stubs` and the world's spec."""
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
                   world.spec.summary_relevance]
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
                T.state[slot_of[w]] = OBSOLETE  # regardless of score (MODEL.md §3)
            elif op == OP_REVISE:
                v = slot_of[w]
                _outcome(T, v, T.outcome[v] != SUCCESS, k)  # Eq. 2 again
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
                n_selected += _prompt_step(T, S, k, topic_now, active, n_slots, seed, traj,
                                           step, record, row)
                if op == OP_COMPLETE:
                    v = slot_of[w]
                    n_slots = _fold(T, v, w, n_slots, k)
                    active = T.parent[v]
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
    """Fold task ``v`` on completion (MODEL.md §3): z ← folded (an obsolete task stays
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
def _priorities(T, S, n_slots, k):
    """Eq. 6 for every task branch: U_b = α·max u + (β/|V_b|)·Σ u − γ·F_b − δ·O_b.

    One walk up from each node, in creation order, adds it to every task branch it lies
    in (so Σ u runs over V_b in creation order, root first); a node is obsolete within a
    branch when it or an ancestor up to the branch root is obsolete.
    """
    for b in range(n_slots):
        if T.kind[b] == TASK:
            S.u_max[b] = T.u[b]
            S.u_sum[b] = 0.0
            S.size[b] = 0.0
            S.n_failed[b] = 0.0
            S.n_obs[b] = 0.0
    for v in range(n_slots):
        u = T.u[v]
        failed = T.kind[v] == ACTION and T.outcome[v] == FAILURE
        obsolete = False
        a = v
        while a >= 0:
            obsolete = obsolete or T.state[a] == OBSOLETE
            if T.kind[a] == TASK:
                if u > S.u_max[a]:
                    S.u_max[a] = u
                S.u_sum[a] += u
                S.size[a] += 1.0
                if failed:
                    S.n_failed[a] += 1.0
                if obsolete:
                    S.n_obs[a] += 1.0
            a = T.parent[a]
    for b in range(n_slots):
        if T.kind[b] == TASK:
            sz = S.size[b]
            S.prio[b] = (k[K_ALPHA] * S.u_max[b] + (k[K_BETA] / sz) * S.u_sum[b]
                         - k[K_GAMMA] * (S.n_failed[b] / sz) - k[K_DELTA] * (S.n_obs[b] / sz))


@jit
def _pool(T, S, n_slots, active):
    """MODEL.md §4 step 2: the candidate pool into ``S.cand`` (creation order); its size.

    Never the root, the active path P_t or anything inside an obsolete branch; a folded
    task hides its branch except its summary; a summary hides when its task lies inside
    another folded branch. A parent precedes its children, so one forward pass does it.
    """
    for v in range(n_slots):
        S.on_path[v] = False
        S.chosen[v] = False
    a = active
    while a >= 0:
        S.on_path[a] = True
        a = T.parent[a]
    n_cand = 0
    for v in range(n_slots):
        p = T.parent[v]
        S.hidden[v] = T.state[v] == OBSOLETE or (p >= 0 and S.hidden[p])
        S.anc_folded[v] = p >= 0 and (T.state[p] == FOLDED or S.anc_folded[p])
        if T.kind[v] == ROOT or S.on_path[v] or S.hidden[v]:
            continue
        if T.kind[v] == SUMMARY:
            ok = not S.anc_folded[p]
        elif T.kind[v] == TASK:
            ok = T.state[v] != FOLDED and not S.anc_folded[v]
        else:
            ok = not S.anc_folded[v]
        if ok:
            S.cand[n_cand] = v
            n_cand += 1
    return n_cand


@jit
def _select(T, S, k, n_cand, topic_now, seed, traj, step):
    """The selector stub: utility = relevance + poison boost + noise + w_u·u + w_b·U_b,
    best first (ties to the older memory), greedy under B with the top-k cap."""
    key = _step_key(seed, traj, step)  # the hash prefix shared by the step's draws
    for j in range(n_cand):
        v = S.cand[j]
        if topic_now == NO_TOPIC:
            x = T.rel[v] if (T.kind[v] == TASK or T.kind[v] == SUMMARY) else T.rel[v] * k[K_CROSS]
        else:
            x = T.rel[v] if T.topic[v] == topic_now else T.rel[v] * k[K_CROSS]
        if T.poisoned[v] and T.kind[v] != SUMMARY:
            x += k[K_BOOST]
        d = 4 * T.draw_id[v]
        s = 0.0
        for r in range(4):
            s += _uniform_at(key, d + r, PURPOSE_SELECTOR_NOISE)
        x += k[K_NOISE] * ((s - 2.0) * SQRT3)
        x += k[K_W_U] * T.u[v]
        if T.branch[v] >= 0:
            x += k[K_W_B] * S.prio[T.branch[v]]
        q = j  # insertion sort on -x; a later candidate goes after its equals (stable)
        while q > 0 and S.neg[q - 1] > -x:
            S.neg[q] = S.neg[q - 1]
            S.order[q] = S.order[q - 1]
            q -= 1
        S.neg[q] = -x
        S.order[q] = v
    used = 0.0
    taken = 0
    top_k = int(k[K_TOP_K])
    for j in range(n_cand):
        v = S.order[j]
        cost = T.tokens[v] + k[K_STRUCT]
        if used + cost <= k[K_BUDGET]:
            S.chosen[v] = True
            used += cost
            taken += 1
            if top_k > 0 and taken >= top_k:
                break
    return taken


@jit
def _prompt_step(T, S, k, topic_now, active, n_slots, seed, traj, step, record, log_row):
    """One prompt-construction cycle of Full WMT (MODEL.md §4 steps 2–6); returns how
    many memories were selected."""
    n_cand = _pool(T, S, n_slots, active)
    _priorities(T, S, n_slots, k)  # fresh priorities for the selector
    taken = _select(T, S, k, n_cand, topic_now, seed, traj, step) if n_cand > 0 else 0
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
    _priorities(T, S, n_slots, k)
    for b in range(n_slots):
        if (T.kind[b] == TASK and not S.on_path[b] and T.state[b] != OBSOLETE
                and S.prio[b] < k[K_TAU]):
            T.state[b] = OBSOLETE
    return taken
