"""The batched engine: every trajectory of a `World` under one memory policy, in numba.

One compiled loop serves all ten configurations of MODEL.md §7: the policy's switches
(`wmtsim.core.policies`) decide which steps run. The memory math is not restated here: scoring
and lifecycle go through the kernels of `wmtsim.core.scoring` and `wmtsim.core.lifecycle`. Every
random draw is `wmtsim.core.rng._uniform` keyed by (seed, trajectory, step, node, purpose),
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

from typing import Any

import numpy as np
from numba import get_num_threads, prange, set_num_threads

from wmtsim.core.codes import (
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
from wmtsim.core.jit import jit
from wmtsim.core.lifecycle import (
    _candidate_pool,
    _mark_active_path,
)
from wmtsim.core.metrics import (
    C_LATENCY_MS,
    C_LLM_CALLS,
    C_NODES,
    C_P_I,
    C_P_R,
    C_PROMPT_TOKENS,
    C_REVISIONS,
    C_SUPERSEDED,
    N_COUNTERS,
)
from wmtsim.core.params import (
    P_EVENT_RESETS_M,
    P_U_INIT_ACTION,
    P_U_INIT_GLOBAL,
    P_U_INIT_ROOT,
    P_U_INIT_TASK,
)
from wmtsim.core.policies import (
    S_FOLD,
    S_REOPEN,
    S_SELECTION,
    S_SUPERSEDE,
    SEL_BASELINE,
    SEL_NONE,
)
from wmtsim.core.scoring import _event_score
from wmtsim.core.stubs import (
    ST_CALL_LATENCY_MS,
    ST_TOKEN_LATENCY_MS,
)
from wmtsim.engine.agent import _fold, _prompt_step, _reason  # noqa: F401 (old names)
from wmtsim.engine.dynamics import DynamicsAcc, _dyn_end, _dyn_prompt, _poison_remains
from wmtsim.engine.field import (
    _baseline_eligible,
    _baseline_supersede,
)
from wmtsim.engine.forest import (
    Forest,
    _add_node,
    _forest_row,
)
from wmtsim.engine.selector import (  # noqa: F401 (the old module's names)
    _SQRT3,
    _in_unit,
    _noise,
    _query_utility,
    _relevance,
    _select_branches,
    _select_items,
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
    World,
    _world_row,
    world_rows,
)

# Per-step records kept for the first trajectories of a batch, in the order the kernels
# take them.
_RECORDED = ("u", "m", "state", "eligible", "selected", "poisoned", "n_slots", "event",
             "tokens", "node_tokens")


def run(world: World, policy_switches: np.ndarray, p: np.ndarray, st: np.ndarray,
        record: int = 0, threads: int | None = None, bl: np.ndarray | None = None,
        dynamics: bool = False) -> tuple[np.ndarray, Forest, dict[str, np.ndarray]]:
    """Run every trajectory of ``world``; returns (counters, final forest, step records).

    ``record`` trajectories (the first ones of the batch) keep per-step u, m, state,
    eligible and selected for every slot. ``bl`` is `wmtsim.engine.field.Baselines.pack()`
    (defaults when None), read by the field's policies only; their final per-slot state
    comes back in the records as ``baseline_place``, ``baseline_importance``,
    ``baseline_last``, ``baseline_freq`` and ``baseline_strength`` (all trajectories).
    ``dynamics`` accumulates the population aggregates of `wmtsim.engine.dynamics`; they
    come back in the records as ``dyn_<name>`` (`DynamicsAcc.totals`).
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
    D = DynamicsAcc.allocate(n_steps, capacity) if dynamics else None
    previous = get_num_threads()
    if threads is not None:
        set_num_threads(threads)
    try:
        _run_batch(
            world.seed, world.start, world.n_events,
            world_rows(world), forest.rows(), forest.slot_of, forest.n_slots, forest.active,
            policy_switches, p, st,
            np.array([world.spec.cross_relevance, world.spec.summary_relevance,
                      world.spec.final_share, world.spec.p_recover]),
            tuple(rec[k] for k in _RECORDED), counts, B, bl, D)
    finally:
        set_num_threads(previous)
    if D is not None:
        rec.update({f"dyn_{k}": v for k, v in D.totals().items()})
    for name, a in zip(("place", "importance", "last", "freq", "strength"), B, strict=True):
        rec[f"baseline_{name}"] = np.asarray(a)
    return counts, forest, rec


@jit(parallel=True)
def _run_batch(seed, start, n_events, W, F, slot_of, n_slots, active, sw, p, st, wk, R,
               counts, B, bl, D):
    n = n_events.shape[0]
    for i in prange(n):
        # Row i of the world's and the forest's arrays (`WorldRows`, `ForestRows`).
        w_row = _world_row(W, i)
        f_row = _forest_row(F, i)
        # prange indices may be unsigned: make every index arithmetic signed.
        r = np.int64(i) if i < R[0].shape[0] else np.int64(-1)
        b_row = (B[0][i], B[1][i], B[2][i], B[3][i], B[4][i])
        traj = np.int64(start) + np.int64(i)
        n_slots[i], active[i] = _run_one(
            seed, traj, n_events[i], w_row, f_row, slot_of[i], sw, p, st, wk, r, R, counts[i],
            b_row, bl, D)


@jit
def _add_world_node(F, slot_of, W, v, w, parent_slot, u0, step):
    """Create slot ``v`` for world node ``w``, copying its static properties."""
    _add_node(F, v, w, parent_slot, W.kind[w], u0, step)
    F.tokens[v] = W.tokens[w]
    F.poisoned[v] = W.poisoned[w]
    F.evidence[v] = W.evidence[w]
    F.topic[v] = W.topic[w]
    F.rel[v] = W.rel[w]
    F.persuasiveness[v] = W.persuasiveness[w]
    F.rider[v] = W.rider[w]
    F.top[v] = W.top[w]
    slot_of[w] = v


@jit
def _run_one(seed, traj, n_ev, W, F, slot_of, sw, p, st, wk, r, R, out, Bs, bl, D):
    """Play one trajectory's script under the policy; write its counters into ``out``
    (and, when ``D`` is not None, its population aggregates, `wmtsim.engine.dynamics`)."""
    w_parent, w_kind, w_topic, w_outcome = W.parent, W.kind, W.topic, W.outcome
    op, arg = W.op, W.arg
    f_wid, parent, kind, state = F.wid, F.parent, F.kind, F.state
    u, m, outcome, poisoned = F.u, F.m, F.outcome, F.poisoned
    cap = kind.shape[0]
    is_global = np.zeros(cap, np.bool_)
    eligible = np.zeros(cap, np.bool_)
    selected = np.zeros(cap, np.bool_)
    on_path = np.zeros(cap, np.bool_)
    priority = np.full(cap, np.nan)
    answered = np.zeros(w_kind.shape[0], np.bool_)  # subtask answered correctly (world id)
    # The field's policies (wmtsim.engine.field): per-trajectory scratch beside ``Bs``; None
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
    _add_world_node(F, slot_of, W, zero, zero, np.int64(NO_PARENT), p[P_U_INIT_ROOT], zero)
    n: Any = np.int64(1)
    active: Any = np.int64(0)
    step: Any = np.int64(0)
    last_obs: Any = np.int64(-1)  # the action observed just before this prompt
    for e in range(n_ev):
        o = op[e]
        a = arg[e]
        if o == OP_GLOBAL:
            _add_world_node(F, slot_of, W, n, np.int64(a), np.int64(NO_PARENT),
                            p[P_U_INIT_GLOBAL], step)
            is_global[n] = True
            n += 1
        elif o == OP_TASK:
            _add_world_node(F, slot_of, W, n, np.int64(a), np.int64(slot_of[w_parent[a]]),
                            p[P_U_INIT_TASK],
                            step)
            active = n
            n += 1
        elif o == OP_ACTION:
            v = n
            _add_world_node(F, slot_of, W, v, np.int64(a), np.int64(slot_of[w_parent[a]]),
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
            _dyn_prompt(D, step, n, last_obs, F, eligible, selected, slot_of, sw, st, out)
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
            _dyn_prompt(D, step, n, last_obs, F, eligible, selected, slot_of, sw, st, out)
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
            active = zero  # typed, not literal: one _prompt_step specialisation
            n = _prompt_step(seed, traj, step, n, active, no_topic, yes, np.int64(-1), F,
                             is_global,
                             eligible, selected, on_path, priority, answered, sw, p, st, wk,
                             out, X, S)
            _record(r, step, n, o, F, eligible, selected, R, out)
            _dyn_prompt(D, step, n, np.int64(-1), F, eligible, selected, slot_of, sw, st, out)
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
    _dyn_end(D, n, step, F, eligible, slot_of, Bs[0], sw)
    out[C_NODES] = n
    # Simulated LLM latency: a fixed cost per call plus a cost per prompt token.
    out[C_LATENCY_MS] = (st[ST_CALL_LATENCY_MS] * out[C_LLM_CALLS]
                         + st[ST_TOKEN_LATENCY_MS] * out[C_PROMPT_TOKENS])
    return n, active


@jit
def _record(r, step, n, o, F, eligible, selected, R, out):
    """Keep this step's u, m, state, ε, s, poisoned flags and tokens for a recorded trajectory
    (``R``: the arrays of `_RECORDED`, in that order)."""
    if r < 0:
        return
    (rec_u, rec_m, rec_state, rec_elig, rec_sel, rec_pois, rec_n, rec_event, rec_tokens,
     rec_node_tokens) = R
    u, m, state, poisoned, tokens = F.u, F.m, F.state, F.poisoned, F.tokens
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


