"""The batched engine: every trajectory of a `World` under one memory policy, in numba.

One compiled loop serves all ten configurations of MODEL.md §7: the policy's switches
(`wmtsim.policies`) decide which steps run. The memory math is not restated here: scoring
and lifecycle go through the kernels of `wmtsim.scoring` and `wmtsim.lifecycle`. Every
random draw is `wmtsim.rng._uniform` keyed by (seed, trajectory, step, node, purpose),
so results are the same for any thread count or chunking.

One prompt-construction cycle (MODEL.md §4, `_prompt_step`):

1. new nodes and outcome events are recorded (by the script event that precedes it);
2. the candidate pool is built (`_candidate_pool`);
3. the selector stub picks S_t under the budget B (items, whole branches, everything or
   nothing, by policy);
4. selection feedback, Eqs. 3–5 (policies with retention scores);
5. branch priorities, Eq. 6;
6. suppression, Eq. 7 (policies with lifecycle control);
then, at critical steps, the reasoner stub answers and, at a subtask's completion, the
summariser folds it (policies that fold).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import get_num_threads, njit, prange, set_num_threads

from wmtsim.core.codes import (
    ACTION,
    ACTIVE,
    COMPLETED,
    FAILURE,
    FOLDED,
    NO_PARENT,
    OBSOLETE,
    SUCCESS,
    SUMMARY,
    TASK,
)
from wmtsim.core.lifecycle import (
    _branch_of,
    _branch_priorities_into,
    _candidate_pool,
    _candidate_pool_into,
    _mark_active_path,
    _suppress,
)
from wmtsim.core.metrics import (
    C_CCR_STEPS,
    C_CCR_SUM,
    C_COMPROMISED_STEPS,
    C_CONTAMINATED_STEPS,
    C_CORRECT_STEPS,
    C_CRITICAL_STEPS,
    C_FINAL_CORRECT,
    C_FOLDS,
    C_H_C,
    C_H_P,
    C_LATENCY_MS,
    C_LLM_CALLS,
    C_NODES,
    C_P_I,
    C_P_R,
    C_PROMPT_STEPS,
    C_PROMPT_TOKENS,
    C_REVISIONS,
    C_SELECTOR_CALLS,
    C_SUCCESS,
    C_SUMMARISER_CALLS,
    C_SUPERSEDED,
    C_SUPPRESSED,
    N_COUNTERS,
)
from wmtsim.core.params import (
    P_BUDGET,
    P_EVENT_RESETS_M,
    P_U_INIT_ACTION,
    P_U_INIT_GLOBAL,
    P_U_INIT_ROOT,
    P_U_INIT_SUMMARY,
    P_U_INIT_TASK,
)
from wmtsim.core.policies import (
    S_CLUSTER,
    S_EVICTION,
    S_FAMILY,
    S_FOLD,
    S_LIFECYCLE,
    S_REOPEN,
    S_SCORES,
    S_SELECTION,
    S_SUPERSEDE,
    S_THRESHOLD,
    S_TREE,
    S_VARIANT,
    SEL_BASELINE,
    SEL_BRANCHES,
    SEL_EVERYTHING,
    SEL_ITEMS,
    SEL_NONE,
)
from wmtsim.core.rng import (
    PURPOSE_DILUTION,
    PURPOSE_GUESS,
    PURPOSE_LEAK,
    PURPOSE_MISLED,
    PURPOSE_PERSUADE,
    PURPOSE_SELECTOR_NOISE,
    _step_key,
    _uniform,
    _uniform_at,
)
from wmtsim.core.scoring import _event_score, _selection_feedback
from wmtsim.core.stubs import (
    ST_BASE_TOKENS,
    ST_C_SUM,
    ST_CALL_LATENCY_MS,
    ST_DILUTION_TOKENS,
    ST_OBS_IN_CONTEXT,
    ST_P_GUESS,
    ST_P_LEAK,
    ST_P_LEAK_RIDER,
    ST_P_MISLED,
    ST_P_PERSUADE,
    ST_P_PERSUADE_VS_EVIDENCE,
    ST_P_USE_MAX,
    ST_POISON_BOOST,
    ST_SELECTOR_BASE_TOKENS,
    ST_SELECTOR_NOISE,
    ST_SELECTOR_READ_FRACTION,
    ST_STRUCT_TOKENS,
    ST_SUMMARISER_BASE_TOKENS,
    ST_TOKEN_LATENCY_MS,
    ST_TOP_K,
    ST_W_B,
    ST_W_U,
    ST_WARNING_TOKENS,
)
from wmtsim.engine.field import (
    _baseline_eligible,
    _baseline_retrieve,
    _baseline_step,
    _baseline_supersede,
)
from wmtsim.engine.forest import (
    F_EVIDENCE,
    F_KIND,
    F_LEAK,
    F_M,
    F_OUTCOME,
    F_PARENT,
    F_PERS,
    F_POISONED,
    F_REL,
    F_RIDER,
    F_STATE,
    F_SUMMARY,
    F_TOKENS,
    F_TOP,
    F_TOPIC,
    F_U,
    F_WARNINGS,
    F_WID,
    Forest,
    _add_node,
    _add_summary,
    _draw_id,
    _task_depth,
)
from wmtsim.engine.world import (
    NO_TOPIC,
    OP_ACTION,
    OP_COMPLETE,
    OP_FINAL,
    OP_GLOBAL,
    OP_REOPEN,
    OP_REVISE,
    OP_SUPERSEDE,
    OP_TASK,
    WR_ARG,
    WR_EVIDENCE,
    WR_KIND,
    WR_OP,
    WR_OUTCOME,
    WR_PARENT,
    WR_PERS,
    WR_POISONED,
    WR_REL,
    WR_RIDER,
    WR_TOKENS,
    WR_TOP,
    WR_TOPIC,
    World,
)

# Per-step records kept for the first trajectories of a batch, in the order the kernels
# take them.
_RECORDED = ("u", "m", "state", "eligible", "selected", "poisoned", "n_slots", "event",
             "tokens", "node_tokens")

# sqrt(3): scales an Irwin–Hall sum of four uniforms (variance 1/3) to unit variance.
_SQRT3 = 1.7320508075688772


def run(world: World, policy_switches: np.ndarray, p: np.ndarray, st: np.ndarray,
        record: int = 0, threads: int | None = None, bl: np.ndarray | None = None
        ) -> tuple[np.ndarray, Forest, dict[str, np.ndarray]]:
    """Run every trajectory of ``world``; returns (counters, final forest, step records).

    ``record`` trajectories (the first ones of the batch) keep per-step u, m, state,
    eligible and selected for every slot. ``bl`` is `wmtsim.baselines.Baselines.pack()`
    (defaults when None), read by the field's policies only; their final per-slot state
    comes back in the records as ``baseline_place``, ``baseline_importance``,
    ``baseline_last``, ``baseline_freq`` and ``baseline_strength`` (all trajectories).
    """
    if policy_switches[S_SELECTION] != SEL_BASELINE:
        # WMT's own configurations pass no field knobs: numba prunes every branch into the
        # field's kernels (``X is None``), so a run of WMT's configurations never compiles
        # them (cold start, issue 14).
        bl = None
    elif bl is None:
        from wmtsim.core.field_knobs import Baselines

        bl = Baselines().pack()
    n = world.n
    capacity = int(world.n_nodes.max()) + int((world.kind == TASK).sum(axis=1).max())
    forest = Forest.allocate(n, capacity, world.parent.shape[1])
    n_steps = int(((world.op == OP_ACTION) | (world.op == OP_COMPLETE)
                   | (world.op == OP_FINAL)).sum(axis=1).max())
    r = min(record, n)
    rec: dict[str, np.ndarray] = {
        "u": np.zeros((r, n_steps, capacity)),
        "m": np.zeros((r, n_steps, capacity), dtype=np.int64),
        "state": np.zeros((r, n_steps, capacity), dtype=np.int8),
        "eligible": np.zeros((r, n_steps, capacity), dtype=np.bool_),
        "selected": np.zeros((r, n_steps, capacity), dtype=np.bool_),
        "poisoned": np.zeros((r, n_steps, capacity), dtype=np.bool_),
        "n_slots": np.zeros((r, n_steps), dtype=np.int64),
        "event": np.zeros((r, n_steps), dtype=np.int64),
        "tokens": np.zeros((r, n_steps)),
        "node_tokens": np.zeros((r, n_steps, capacity), dtype=np.int64),
    }
    counts = np.zeros((n, N_COUNTERS))
    B = (np.zeros((n, capacity), dtype=np.int8), np.zeros((n, capacity)),
         np.zeros((n, capacity), dtype=np.int64), np.zeros((n, capacity), dtype=np.int64),
         np.zeros((n, capacity)))
    previous = get_num_threads()
    if threads is not None:
        set_num_threads(threads)
    try:
        _run_batch(
            world.seed, world.start, world.n_events,
            (world.parent, world.kind, world.tokens, world.topic, world.rel,
             world.evidence, world.poisoned, world.persuasiveness, world.outcome,
             world.rider, world.top, world.op, world.arg),
            forest.rows(), forest.slot_of, forest.n_slots, forest.active,
            policy_switches, p, st,
            np.array([world.spec.cross_relevance, world.spec.summary_relevance]),
            tuple(rec[k] for k in _RECORDED), counts, B, bl)
    finally:
        set_num_threads(previous)
    for name, a in zip(("place", "importance", "last", "freq", "strength"), B, strict=True):
        rec[f"baseline_{name}"] = np.asarray(a)
    return counts, forest, rec


@njit(parallel=True, cache=True)
def _run_batch(seed, start, n_events, W, F, slot_of, n_slots, active, sw, p, st, wk, R,
               counts, B, bl):
    n = n_events.shape[0]
    for i in prange(n):
        # Row i of every array, in tuple order (the world's, the forest's).
        w_row = (W[0][i], W[1][i], W[2][i], W[3][i], W[4][i], W[5][i], W[6][i], W[7][i],
                 W[8][i], W[9][i], W[10][i], W[11][i], W[12][i])
        f_row = (F[0][i], F[1][i], F[2][i], F[3][i], F[4][i], F[5][i], F[6][i], F[7][i],
                 F[8][i], F[9][i], F[10][i], F[11][i], F[12][i], F[13][i], F[14][i],
                 F[15][i], F[16][i], F[17][i], F[18][i])
        # prange indices may be unsigned: make every index arithmetic signed.
        r = np.int64(i) if i < R[0].shape[0] else np.int64(-1)
        b_row = (B[0][i], B[1][i], B[2][i], B[3][i], B[4][i])
        traj = np.int64(start) + np.int64(i)
        n_slots[i], active[i] = _run_one(
            seed, traj, n_events[i], w_row, f_row, slot_of[i], sw, p, st, wk, r, R, counts[i],
            b_row, bl)


@njit(cache=True)
def _add_world_node(F, slot_of, Wr, v, w, parent_slot, u0, step):
    """Create slot ``v`` for world node ``w``, copying its static properties."""
    w_kind, w_tokens, w_topic, w_rel = Wr[WR_KIND], Wr[WR_TOKENS], Wr[WR_TOPIC], Wr[WR_REL]
    w_evidence, w_poisoned, w_pers = Wr[WR_EVIDENCE], Wr[WR_POISONED], Wr[WR_PERS]
    w_rider, w_top = Wr[WR_RIDER], Wr[WR_TOP]
    _add_node(F, v, w, parent_slot, w_kind[w], u0, step)
    tokens, poisoned, evidence, topic = F[F_TOKENS], F[F_POISONED], F[F_EVIDENCE], F[F_TOPIC]
    rel, pers, rider, top = F[F_REL], F[F_PERS], F[F_RIDER], F[F_TOP]
    tokens[v] = w_tokens[w]
    poisoned[v] = w_poisoned[w]
    evidence[v] = w_evidence[w]
    topic[v] = w_topic[w]
    rel[v] = w_rel[w]
    pers[v] = w_pers[w]
    rider[v] = w_rider[w]
    top[v] = w_top[w]
    slot_of[w] = v


@njit(cache=True)
def _run_one(seed, traj, n_ev, Wr, F, slot_of, sw, p, st, wk, r, R, out, Bs, bl):
    """Play one trajectory's script under the policy; write its counters into ``out``."""
    w_parent, w_kind, w_topic, w_outcome = Wr[WR_PARENT], Wr[WR_KIND], Wr[WR_TOPIC], Wr[WR_OUTCOME]
    op, arg = Wr[WR_OP], Wr[WR_ARG]
    f_wid, parent, kind, state = F[F_WID], F[F_PARENT], F[F_KIND], F[F_STATE]
    u, m, outcome, poisoned = F[F_U], F[F_M], F[F_OUTCOME], F[F_POISONED]
    cap = kind.shape[0]
    is_global = np.zeros(cap, np.bool_)
    eligible = np.zeros(cap, np.bool_)
    selected = np.zeros(cap, np.bool_)
    on_path = np.zeros(cap, np.bool_)
    priority = np.full(cap, np.nan)
    answered = np.zeros(w_kind.shape[0], np.bool_)  # subtask answered correctly (world id)
    # The field's policies (wmtsim.baselines): per-trajectory scratch beside ``Bs``; None
    # for WMT's configurations (``bl is None``: the field's branches are compiled out).
    if bl is None:
        X = None
    else:
        bwin = np.zeros(max(2, int(bl[3])))  # TraceRetain's window of ratings (B_Z_WINDOW)
        bmisc = np.zeros(4, np.int64)
        bmisc[3] = -1  # no running summary yet (M_SUMMARY)
        for v in range(cap):
            Bs[0][v] = 0
        X = (slot_of, Bs, bwin, bmisc, bl)
    # Scratch of the lifecycle kernels, reused at every step (no allocation in the loop).
    S = (np.empty(cap, np.bool_), np.empty(cap, np.bool_), np.empty(cap), np.empty(cap),
         np.empty(cap, np.int64), np.empty(cap, np.int64), np.empty(cap, np.int64))

    for k in range(out.shape[0]):
        out[k] = 0.0
    # Typed (not literal) values, so that each kernel below compiles once: numba would
    # otherwise specialise a callee for every literal argument (0, -1, True, False).
    # (``Any``: for mypy, which checks these bodies as plain Python.)
    zero: Any = np.int64(0)
    no_topic: Any = np.int64(NO_TOPIC)
    yes, no = np.bool_(True), np.bool_(False)
    _add_world_node(F, slot_of, Wr, zero, zero, np.int64(NO_PARENT), p[P_U_INIT_ROOT], zero)
    n: Any = np.int64(1)
    active: Any = np.int64(0)
    step: Any = np.int64(0)
    last_obs: Any = np.int64(-1)  # the action observed just before this prompt
    for e in range(n_ev):
        o = op[e]
        a = arg[e]
        if o == OP_GLOBAL:
            _add_world_node(F, slot_of, Wr, n, np.int64(a), np.int64(NO_PARENT),
                            p[P_U_INIT_GLOBAL], step)
            is_global[n] = True
            n += 1
        elif o == OP_TASK:
            _add_world_node(F, slot_of, Wr, n, np.int64(a), np.int64(slot_of[w_parent[a]]),
                            p[P_U_INIT_TASK],
                            step)
            active = n
            n += 1
        elif o == OP_ACTION:
            v = n
            _add_world_node(F, slot_of, Wr, v, np.int64(a), np.int64(slot_of[w_parent[a]]),
                            p[P_U_INIT_ACTION],
                            step)
            n += 1
            # Eq. 2: the outcome event sets the score.
            outcome[v] = w_outcome[a]
            u[v] = _event_score(w_outcome[a] == SUCCESS, p)
            if p[P_EVENT_RESETS_M] != 0.0:
                m[v] = 0
            last_obs = v
            n = _prompt_step(seed, traj, step, n, active, np.int64(w_topic[f_wid[active]]), no,
                             last_obs, F, is_global, eligible, selected, on_path, priority,
                             answered, sw, p, st, wk, out, X, S)
            _record(r, step, n, o, F, eligible, selected, R, out)
            step += 1
        elif o == OP_SUPERSEDE:
            # MODEL.md §3 "supersede / invalidate", for policies that act on the event
            # (`Policy.supersede`; the others keep the memory as it was).
            if sw[S_SUPERSEDE] != 0:
                in_store = False
                if bl is not None:  # compiled out for WMT's configurations
                    if sw[S_SELECTION] == SEL_BASELINE:
                        # A field policy with a contradiction rule deletes it from its store.
                        in_store = True
                        if _baseline_supersede(Bs[0], slot_of[a]):
                            out[C_SUPERSEDED] += 1
                if not in_store:
                    state[slot_of[a]] = OBSOLETE
                    out[C_SUPERSEDED] += 1
        elif o == OP_REVISE:
            # A later observation revises an action's outcome: Eq. 2 again, on the
            # opposite outcome (every policy records it; it is not a prompt step).
            v = slot_of[a]
            outcome[v] = FAILURE if outcome[v] == SUCCESS else SUCCESS
            u[v] = _event_score(outcome[v] == SUCCESS, p)
            if p[P_EVENT_RESETS_M] != 0.0:
                m[v] = 0
            out[C_REVISIONS] += 1
        elif o == OP_COMPLETE:
            s = slot_of[a]
            n = _prompt_step(seed, traj, step, n, active, np.int64(a), yes, last_obs, F,
                             is_global,
                             eligible, selected, on_path, priority, answered, sw, p, st, wk,
                             out, X, S)
            _record(r, step, n, o, F, eligible, selected, R, out)
            if sw[S_FOLD] != 0:
                n = _fold(seed, traj, step, s, n, F, eligible, p, st, wk, out)
            elif state[s] != OBSOLETE:
                state[s] = COMPLETED
            active = parent[s]
            last_obs = -1
            step += 1
        elif o == OP_REOPEN:
            s = slot_of[a]
            if state[s] == COMPLETED or (state[s] == FOLDED and sw[S_REOPEN] != 0):
                state[s] = ACTIVE
            active = s
            last_obs = -1
        elif o == OP_FINAL:
            active = 0
            n = _prompt_step(seed, traj, step, n, active, no_topic, yes, np.int64(-1), F,
                             is_global,
                             eligible, selected, on_path, priority, answered, sw, p, st, wk,
                             out, X, S)
            _record(r, step, n, o, F, eligible, selected, R, out)
            step += 1

    # IP (Eq. 10): injected poison still eligible once memory management is done.
    out[C_P_I] = 0.0
    out[C_P_R] = 0.0
    _mark_active_path(parent, active, n, on_path)
    field = False
    if bl is not None:  # compiled out for WMT's configurations
        if sw[S_SELECTION] == SEL_BASELINE:
            field = True
            _baseline_eligible(n, on_path, Bs[0], eligible)
    if not field:
        _candidate_pool(parent, kind, state, on_path, n, eligible)
    for v in range(n):
        if poisoned[v] and kind[v] != SUMMARY:
            out[C_P_I] += 1
            if sw[S_SELECTION] != SEL_NONE and _poison_remains(v, F, eligible, slot_of):
                out[C_P_R] += 1
    out[C_NODES] = n
    # Simulated LLM latency: a fixed cost per call plus a cost per prompt token.
    out[C_LATENCY_MS] = (st[ST_CALL_LATENCY_MS] * out[C_LLM_CALLS]
                         + st[ST_TOKEN_LATENCY_MS] * out[C_PROMPT_TOKENS])
    return n, active


@njit(cache=True)
def _poison_remains(v, F, eligible, slot_of):
    """IP's P_r (Eq. 10, MODEL.md §5): poisoned memory ``v`` is still eligible at the
    end, or is carried by an eligible contaminated summary.

    ``F_LEAK`` bit ``d`` of a memory says it leaked into the summary of the task at depth
    ``d`` above its home (an action's home is its task; a global memory's is the subtask
    it concerns, or the root); a summary that leaked into an outer summary carries what
    it absorbed on. Tasks are visited nearest first, so one walk follows every chain.
    """
    if eligible[v]:
        return True
    parent, summary, leak, topic = F[F_PARENT], F[F_SUMMARY], F[F_LEAK], F[F_TOPIC]
    carried = leak[v]
    a = parent[v]
    if a < 0:  # a global memory
        a = slot_of[topic[v]] if topic[v] >= 0 and slot_of[topic[v]] >= 0 else 0
    while a >= 0:
        d = _task_depth(parent, a)
        z = summary[a]
        if z >= 0 and (carried >> d) & 1:
            if eligible[z]:
                return True
            carried |= leak[z]
        a = parent[a]
    return False


@njit(cache=True)
def _record(r, step, n, o, F, eligible, selected, R, out):
    """Keep this step's u, m, state, ε, s, poisoned flags and tokens for a recorded trajectory
    (``R``: the arrays of `_RECORDED`, in that order)."""
    if r < 0:
        return
    (rec_u, rec_m, rec_state, rec_elig, rec_sel, rec_pois, rec_n, rec_event, rec_tokens,
     rec_node_tokens) = R
    u, m, state, poisoned, tokens = F[F_U], F[F_M], F[F_STATE], F[F_POISONED], F[F_TOKENS]
    for v in range(n):
        rec_u[r, step, v] = u[v]
        rec_m[r, step, v] = m[v]
        rec_state[r, step, v] = state[v]
        rec_elig[r, step, v] = eligible[v]
        rec_sel[r, step, v] = selected[v]
        rec_pois[r, step, v] = poisoned[v]  # a summary's contamination can change
        rec_node_tokens[r, step, v] = tokens[v]  # a summary's size can change
    rec_n[r, step] = n
    rec_event[r, step] = o
    rec_tokens[r, step] = out[C_PROMPT_TOKENS]


@njit(cache=True)
def _relevance(v, topic_now, kind, topic, rel, cross):
    """A memory's latent relevance to the current subtask (or to the final answer)."""
    if topic_now == NO_TOPIC:
        if kind[v] == TASK or kind[v] == SUMMARY:
            return rel[v]
        return rel[v] * cross
    if topic[v] == topic_now:
        return rel[v]
    return rel[v] * cross


@njit(cache=True)
def _prompt_step(seed, traj, step, n, active, topic_now, critical, last_obs, F,
                 is_global, eligible, selected, on_path, priority, answered, sw, p, st,
                 wk, out, X, S):
    """One prompt-construction cycle (MODEL.md §4) and, at critical steps, the reasoner.

    Returns the slot count (a field policy may create a summary). ``X`` carries the
    field policies' state: (slot_of, per-slot arrays, window, scratch, knobs).
    """
    parent, kind, state, u = F[F_PARENT], F[F_KIND], F[F_STATE], F[F_U]
    m, tokens, outcome, poisoned = F[F_M], F[F_TOKENS], F[F_OUTCOME], F[F_POISONED]
    mode = sw[S_SELECTION]
    struct = st[ST_STRUCT_TOKENS] if sw[S_TREE] != 0 else 0.0

    # 2. Candidate pool.
    _mark_active_path(parent, active, n, on_path)
    field = False
    if X is not None:  # compiled out for WMT's configurations (X is None)
        if mode == SEL_BASELINE:
            # The one dispatch point of the field's policies: they set ε and s.
            field = True
            slot_of, Bs, bwin, bmisc, bl = X
            n = _baseline_step(seed, traj, step, n, F, slot_of, on_path, wk[0], wk[1], Bs[0],
                               Bs[1], Bs[2], Bs[3], Bs[4], bwin, bmisc, sw[S_FAMILY],
                               sw[S_VARIANT], sw[S_EVICTION], sw[S_THRESHOLD], sw[S_CLUSTER],
                               p, st, bl, out)
            util = np.empty(n)
            key = _step_key(seed, traj, step)
            for v in range(n):
                util[v] = _query_utility(key, v, topic_now, wk[0], F, st)
            _baseline_retrieve(step, n, critical, on_path, util, Bs[0], Bs[1], Bs[2],
                               Bs[3], Bs[4], bmisc, eligible, selected, sw[S_FAMILY],
                               sw[S_VARIANT], F, p, st, bl)
    if not field:
        if mode == SEL_NONE:
            for v in range(n):
                eligible[v] = False
        else:
            _candidate_pool_into(parent, kind, state, on_path, n, eligible, S[0], S[1])
        for v in range(n):
            selected[v] = False
    pool_tokens = 0.0
    n_pool = 0
    for v in range(n):
        if eligible[v]:
            pool_tokens += tokens[v]
            n_pool += 1

    # Fresh branch priorities for the selector (Eq. 6 on the current tree).
    if sw[S_SCORES] != 0:
        _branch_priorities_into(parent, kind, state, u, outcome, n, p, priority, S[2], S[3],
                                S[4], S[5], S[6])

    # 3. Selection.
    prompt = st[ST_BASE_TOKENS]
    if mode == SEL_EVERYTHING:
        for v in range(n):
            selected[v] = eligible[v]
    elif mode == SEL_ITEMS and n_pool > 0:
        _select_items(seed, traj, step, n, topic_now, wk[0], F, eligible, selected, priority,
                      sw[S_SCORES] != 0, struct, p, st)
        prompt += (st[ST_SELECTOR_BASE_TOKENS] + st[ST_SELECTOR_READ_FRACTION] * pool_tokens
                   + struct * n_pool)
        out[C_SELECTOR_CALLS] += 1
        out[C_LLM_CALLS] += 1
    elif mode == SEL_BRANCHES and n_pool > 0:
        _select_branches(n, F, is_global, eligible, selected, priority, struct, p)

    # Context accounting (Eqs. 9, 11, 13).
    ctx_tokens = 0.0
    contaminated = False
    for v in range(n):
        if selected[v]:
            ctx_tokens += tokens[v] + struct
            if poisoned[v]:
                out[C_H_P] += 1
                contaminated = True
            else:
                out[C_H_C] += 1
        if on_path[v]:
            prompt += tokens[v]
    if contaminated:
        out[C_CONTAMINATED_STEPS] += 1
    if pool_tokens > 0:
        sel_raw = 0.0
        for v in range(n):
            if selected[v]:
                sel_raw += tokens[v]
        out[C_CCR_SUM] += sel_raw / pool_tokens
        out[C_CCR_STEPS] += 1
    # The observation just made is fed to the agent with the prompt (SIMULATION.md,
    # "or was just observed"): charged its tokens unless the selector already put it in.
    obs_tokens = 0.0
    if last_obs >= 0 and not selected[last_obs]:
        obs_tokens = tokens[last_obs]
    prompt += ctx_tokens + obs_tokens
    out[C_PROMPT_TOKENS] += prompt
    out[C_PROMPT_STEPS] += 1
    out[C_LLM_CALLS] += 1

    # 4.–6. Selection feedback (Eqs. 3–5), priorities (Eq. 6), suppression (Eq. 7).
    if sw[S_SCORES] != 0:
        _selection_feedback(u, m, eligible, selected, is_global, p, n)
        _branch_priorities_into(parent, kind, state, u, outcome, n, p, priority, S[2], S[3],
                                S[4], S[5], S[6])
        if sw[S_LIFECYCLE] != 0:
            out[C_SUPPRESSED] += _suppress(kind, state, on_path, priority, n, p)

    if critical:
        _reason(seed, traj, step, n, topic_now, last_obs, ctx_tokens + obs_tokens, F,
                selected, answered, st, out)
    return n


@njit(cache=True)
def _query_utility(key, v, topic_now, cross, F, st):
    """The selector stub's unweighted utility of memory ``v``: relevance + poison boost +
    noise (``key``: the step's `_step_key`). The field policies use it as their
    similarity to the current query, as an embedding retriever would see it."""
    kind, poisoned, topic, rel = F[F_KIND], F[F_POISONED], F[F_TOPIC], F[F_REL]
    x = _relevance(v, topic_now, kind, topic, rel, cross)
    if poisoned[v] and kind[v] != SUMMARY:
        x += st[ST_POISON_BOOST]
    return x + st[ST_SELECTOR_NOISE] * _noise(key, _draw_id(F, v))


@njit(cache=True)
def _noise(key, d):
    """≈ N(0, 1): an Irwin–Hall sum of four uniforms, rescaled (exact in any language).

    ``key`` is the step's `_step_key`, ``d`` the memory's `_draw_id`; the draws are those
    of ``_uniform(seed, traj, step, 4·d + k, PURPOSE_SELECTOR_NOISE)``, k = 0..3.
    """
    s = 0.0
    for k in range(4):
        s += _uniform_at(key, 4 * d + k, PURPOSE_SELECTOR_NOISE)
    return (s - 2.0) * _SQRT3


@njit(cache=True)
def _select_items(seed, traj, step, n, topic_now, cross, F, eligible, selected, priority,
                  weighted, struct, p, st):
    """The selector stub: greedy by utility under the budget B (and the top-k cap).

    utility = relevance + poison boost + noise (+ w_u·u + w_b·U_b when weighted); ties go
    to the older memory. An item that does not fit is skipped and the next one tried.
    """
    parent, kind, u, tokens = F[F_PARENT], F[F_KIND], F[F_U], F[F_TOKENS]
    cands = np.empty(n, np.int64)
    neg_util = np.empty(n)
    key = _step_key(seed, traj, step)
    k = 0
    for v in range(n):
        if not eligible[v]:
            continue
        x = _query_utility(key, v, topic_now, cross, F, st)
        if weighted:
            x += st[ST_W_U] * u[v]
            b = _branch_of(parent, kind, v)
            if b >= 0 and not np.isnan(priority[b]):
                x += st[ST_W_B] * priority[b]
        cands[k] = v
        neg_util[k] = -x
        k += 1
    order = np.argsort(neg_util[:k], kind="mergesort")  # stable: ties keep slot order
    budget = p[P_BUDGET]
    top_k = int(st[ST_TOP_K])
    used = 0.0
    count = 0
    for j in range(k):
        v = cands[order[j]]
        cost = tokens[v] + struct
        if used + cost <= budget:
            selected[v] = True
            used += cost
            count += 1
            if top_k > 0 and count >= top_k:
                break


@njit(cache=True)
def _select_branches(n, F, is_global, eligible, selected, priority, struct, p):
    """A3's selector: whole branches B(v) ranked by priority U_b, greedy under the budget B.

    A unit is a task branch B(v), the subtree rooted at task v (MODEL.md §1), or a single
    global memory. Units are ranked by U_b (a global by its u; ties to the older unit);
    taking a unit takes every candidate of its subtree not taken yet, at the tokens of
    those, if they fit. So a nested branch taken first leaves its enclosing branch the
    rest. No semantic relevance is used.
    """
    parent, kind, u, tokens = F[F_PARENT], F[F_KIND], F[F_U], F[F_TOKENS]
    unit_score = np.full(n, np.inf)
    for v in range(n):
        if not eligible[v]:
            continue
        if is_global[v]:
            unit_score[v] = -u[v]
            continue
        # Every task on the way up is a branch that holds v (the root is not a branch).
        b = v if kind[v] == TASK else parent[v]
        while b > 0:
            if kind[b] == TASK and unit_score[b] == np.inf:
                unit_score[b] = -priority[b] if not np.isnan(priority[b]) else 0.0
            b = parent[b]
    order = np.argsort(unit_score, kind="mergesort")
    budget = p[P_BUDGET]
    used = 0.0
    for j in range(n):
        b = order[j]
        if unit_score[b] == np.inf:
            break
        cost = 0.0
        rest = 0  # candidates of the unit not taken yet
        for v in range(n):
            if eligible[v] and not selected[v] and _in_unit(parent, is_global, v, b):
                cost += tokens[v] + struct
                rest += 1
        if rest > 0 and used + cost <= budget:
            used += cost
            for v in range(n):
                if eligible[v] and not selected[v] and _in_unit(parent, is_global, v, b):
                    selected[v] = True


@njit(cache=True)
def _in_unit(parent, is_global, v, b):
    """Is slot ``v`` in A3's unit ``b`` (v itself, or a descendant of task ``b``)?"""
    if is_global[b] or is_global[v]:
        return v == b
    x = v
    while x >= 0:
        if x == b:
            return True
        x = parent[x]
    return False


@njit(cache=True)
def _reason(seed, traj, step, n, topic_now, last_obs, ctx_tokens, F, selected, answered,
            st, out):
    """The reasoner stub at a critical step (a subtask's answer, or the final answer)."""
    f_wid, parent, kind, poisoned = F[F_WID], F[F_PARENT], F[F_KIND], F[F_POISONED]
    evidence, topic, pers, top = F[F_EVIDENCE], F[F_TOPIC], F[F_PERS], F[F_TOP]
    # The context the reasoner reads: the selected memories and the observation just made.
    seen_obs = last_obs >= 0 and st[ST_OBS_IN_CONTEXT] != 0.0 and not selected[last_obs]
    # What the answer needs: the subtask's evidence, or (final) every top-level result.
    # ``has_evidence``: the clean evidence is in context (or just observed), not guessed.
    needs_met = True
    has_evidence = True
    if topic_now != NO_TOPIC:
        has_evidence = last_obs >= 0 and evidence[last_obs] and topic[last_obs] == topic_now
        for v in range(n):
            if selected[v] and evidence[v] and topic[v] == topic_now:
                has_evidence = True
        needs_met = has_evidence
        if not has_evidence:
            needs_met = _uniform(seed, traj, step, topic_now, PURPOSE_GUESS) < st[ST_P_GUESS]
    else:
        for v in range(n):
            if kind[v] != TASK or parent[v] != 0:
                continue
            s_w = f_wid[v]
            if not answered[s_w]:
                needs_met = False
                has_evidence = False
                continue
            present = selected[v]
            for x in range(n):
                if selected[x] and top[x] == s_w and (kind[x] == SUMMARY or evidence[x]):
                    present = True
            if not present:
                has_evidence = False
                if _uniform(seed, traj, step, s_w, PURPOSE_GUESS) >= st[ST_P_GUESS]:
                    needs_met = False
    # Persuasion by poisoned memory in context that concerns this answer; the clean
    # evidence in context resists it (a lucky guess does not).
    p_hit = st[ST_P_PERSUADE_VS_EVIDENCE] if has_evidence else st[ST_P_PERSUADE]
    compromised = False
    for v in range(n):
        if not (selected[v] or (seen_obs and v == last_obs)):
            continue
        if poisoned[v] and (topic_now == NO_TOPIC or topic[v] == topic_now):
            if _uniform(seed, traj, step, _draw_id(F, v), PURPOSE_PERSUADE) < pers[v] * p_hit:
                compromised = True
    # Context dilution: longer contexts lower the chance of using what is there.
    half = st[ST_DILUTION_TOKENS]
    p_use = st[ST_P_USE_MAX] * half / (half + ctx_tokens)
    used = _uniform(seed, traj, step, 0, PURPOSE_DILUTION) < p_use
    # A compromised step gives a wrong answer with probability p_misled.
    misled = compromised and _uniform(seed, traj, step, 0, PURPOSE_MISLED) < st[ST_P_MISLED]
    correct = needs_met and not misled and used
    out[C_CRITICAL_STEPS] += 1
    if compromised:
        out[C_COMPROMISED_STEPS] += 1
    if correct:
        out[C_CORRECT_STEPS] += 1
    if topic_now != NO_TOPIC:
        answered[topic_now] = correct
    else:
        # TSR (Eq. 14): the final answer is correct *and* uncompromised (MODEL.md §5).
        out[C_FINAL_CORRECT] = 1.0 if correct else 0.0
        out[C_SUCCESS] = 1.0 if correct and not compromised else 0.0


@njit(cache=True)
def _fold(seed, traj, step, s, n, F, eligible, p, st, wk, out):
    """Fold branch ``s`` on completion (MODEL.md §3) with the summariser stub.

    The root becomes folded and its summary node (created on the first fold, refreshed on
    a re-fold) gets ceil(c_sum · branch tokens) tokens, the branch's evidence, its failure
    warnings (one per failed action, ``warning_tokens`` each), and each poisoned memory
    that was eligible at this step with probability p_leak (p_leak_rider for
    summary-riding poison), recorded in the absorbed memory's ``F_LEAK`` provenance.
    Returns the new slot count.
    """
    f_wid, parent, kind, state = F[F_WID], F[F_PARENT], F[F_KIND], F[F_STATE]
    u, m, tokens, poisoned = F[F_U], F[F_M], F[F_TOKENS], F[F_POISONED]
    evidence, topic, pers = F[F_EVIDENCE], F[F_TOPIC], F[F_PERS]
    rider, top, summary = F[F_RIDER], F[F_TOP], F[F_SUMMARY]
    outcome, warnings, leak = F[F_OUTCOME], F[F_WARNINGS], F[F_LEAK]
    raw = 0.0
    has_evidence = False
    leaked = False
    leak_pers = 0.0
    n_warnings = 0
    bit = np.int64(1) << np.int64(_task_depth(parent, s))
    in_branch = np.zeros(n, np.bool_)
    for v in range(n):
        in_branch[v] = v == s or (parent[v] >= 0 and in_branch[parent[v]])
        if not in_branch[v]:
            continue
        if kind[v] != SUMMARY:
            raw += tokens[v]
        if kind[v] == ACTION and outcome[v] == FAILURE:
            n_warnings += 1
        if evidence[v] and topic[v] == f_wid[s]:
            has_evidence = True
        if poisoned[v] and eligible[v]:
            p_leak = st[ST_P_LEAK_RIDER] if rider[v] else st[ST_P_LEAK]
            if _uniform(seed, traj, step, _draw_id(F, v), PURPOSE_LEAK) < p_leak:
                leaked = True
                leak_pers = max(leak_pers, pers[v])
                leak[v] |= bit
    z = summary[s]
    if z < 0:
        z = n
        n += 1
        _add_summary(F, z, s, f_wid[s], top[s], wk[1], p[P_U_INIT_SUMMARY], step)
        summary[s] = z
    else:
        u[z] = p[P_U_INIT_SUMMARY]
        m[z] = 0
    warnings[z] = n_warnings
    tokens[z] = math.ceil(st[ST_C_SUM] * raw) + n_warnings * int(st[ST_WARNING_TOKENS])
    evidence[z] = evidence[z] or has_evidence
    if leaked:
        poisoned[z] = True
        pers[z] = max(pers[z], leak_pers)
    if state[s] != OBSOLETE:
        state[s] = FOLDED
    out[C_FOLDS] += 1
    out[C_SUMMARISER_CALLS] += 1
    out[C_LLM_CALLS] += 1
    out[C_PROMPT_TOKENS] += st[ST_SUMMARISER_BASE_TOKENS] + raw
    return n
