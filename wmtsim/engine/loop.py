"""The batched engine: every trajectory of a `World` under one memory policy, in numba.

One compiled loop serves all ten configurations of docs/model.md §7: the policy's switches
(`wmtsim.core.policies`) decide which steps run. The memory math is not restated here: scoring
and lifecycle go through the kernels of `wmtsim.core.scoring` and `wmtsim.core.lifecycle`. Every
random draw is `wmtsim.core.rng._uniform` keyed by (seed, trajectory, step, node, purpose),
so results are the same for any thread count or chunking.

One prompt-construction cycle (docs/model.md §4, `_prompt_step`):

1. new nodes and outcome events are recorded (by the script event that precedes it);
2. the candidate pool is built (`agent._context_pool`);
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
from wmtsim.core.field_knobs import N_MISC, M
from wmtsim.core.jit import jit
from wmtsim.core.lifecycle import (
    _lifecycle_scratch,
    _mark_active_path,
)
from wmtsim.core.metrics import N_COUNTERS, C
from wmtsim.core.packing import as_array
from wmtsim.core.policies import SEL_BASELINE, SEL_NONE
from wmtsim.core.rows import _row_of
from wmtsim.core.scoring import _event_score
from wmtsim.core.stubs import IP_CARRIED
from wmtsim.core.world_spec import (
    NO_TOPIC,
    OP_ACTION,
    OP_COMPLETE,
    OP_FINAL,
    OP_GLOBAL,
    OP_PROMOTE,
    OP_REINJECT,
    OP_REOPEN,
    OP_REVISE,
    OP_ROOT,
    OP_SUPERSEDE,
    OP_TASK,
    RESUME_UNFOLD,
    World,
    max_prompt_steps,
)
from wmtsim.engine.agent import _context_pool, _fold, _promote, _prompt_step
from wmtsim.engine.dynamics import DynamicsAcc, _dyn_end, _dyn_prompt, _poison_remains
from wmtsim.engine.field.dispatch import (
    _baseline_eligible,
    _baseline_supersede,
)
from wmtsim.engine.forest import (
    Forest,
    _add_world_node,
)
from wmtsim.engine.records import (
    Batch,
    FieldScratch,
    FieldState,
    Knobs,
    StepRecords,
    Trajectory,
)
from wmtsim.engine.world import world_rows


def run(world: World, policy_switches: Any, p: Any, st: Any,
        record: int = 0, threads: int | None = None, bl: Any = None,
        dynamics: bool = False) -> tuple[np.ndarray, Forest, dict[str, np.ndarray]]:
    """Run every trajectory of ``world``; returns (counters, final forest, step records).

    ``record`` trajectories (the first ones of the batch) keep per-step u, m, state,
    eligible and selected for every slot. ``bl`` is `wmtsim.core.field_knobs.Baselines.pack()`
    (defaults when None), read by the field's policies only; their final per-slot state
    comes back in the records as ``baseline_place``, ``baseline_importance``,
    ``baseline_last``, ``baseline_freq`` and ``baseline_strength`` (all trajectories).
    ``dynamics`` accumulates the population aggregates of `wmtsim.engine.dynamics`; they
    come back in the records as ``dyn_<name>`` (`DynamicsAcc.totals`).
    """
    if policy_switches.selection != SEL_BASELINE:
        # WMT's own configurations pass no field knobs: numba prunes every branch into the
        # field's kernels (``X is None``), so a run of WMT's configurations never compiles
        # them (cold start).
        bl = None
    elif bl is None:
        from wmtsim.core.field_knobs import Baselines

        bl = Baselines().pack()
    n = world.n
    capacity = int(world.n_nodes.max()) + int((world.kind == TASK).sum(axis=1).max())
    forest = Forest.allocate(n, capacity, world.parent.shape[1])
    n_steps = max_prompt_steps(world.op)
    r = min(record, n)
    R = StepRecords(
        u=np.zeros((r, n_steps, capacity)),
        m=np.zeros((r, n_steps, capacity), dtype=np.int64),
        state=np.zeros((r, n_steps, capacity), dtype=np.int8),
        eligible=np.zeros((r, n_steps, capacity), dtype=np.bool_),
        selected=np.zeros((r, n_steps, capacity), dtype=np.bool_),
        poisoned=np.zeros((r, n_steps, capacity), dtype=np.bool_),
        n_slots=np.zeros((r, n_steps), dtype=np.int64),
        event=np.zeros((r, n_steps), dtype=np.int64),
        tokens=np.zeros((r, n_steps)),
        node_tokens=np.zeros((r, n_steps, capacity), dtype=np.int64),
    )
    counts = np.zeros((n, N_COUNTERS))
    store = FieldState(
        place=np.zeros((n, capacity), dtype=np.int8), importance=np.zeros((n, capacity)),
        last=np.zeros((n, capacity), dtype=np.int64),
        freq=np.zeros((n, capacity), dtype=np.int64), strength=np.zeros((n, capacity)),
        archival=np.zeros((n, capacity), dtype=np.bool_))
    D = DynamicsAcc.allocate(n_steps, capacity) if dynamics else None
    previous = get_num_threads()
    if threads is not None:
        set_num_threads(threads)
    try:
        B = Batch(seed=world.seed, start=world.start, n_events=world.n_events,
                  slot_of=forest.slot_of, n_slots=forest.n_slots, active=forest.active,
                  counts=counts)
        K1 = Knobs(sw=as_array(policy_switches), p=as_array(p), st=as_array(st),
                   wk=as_array(world.spec.pack()[0]))
        _run_batch(B, world_rows(world), forest.rows(), K1, R, store,
                   None if bl is None else as_array(bl), D)
    finally:
        set_num_threads(previous)
    rec: dict[str, np.ndarray] = R._asdict()
    if D is not None:
        rec.update({f"dyn_{k}": v for k, v in D.totals().items()})
    for name, a in store._asdict().items():
        rec[f"baseline_{name}"] = np.asarray(a)
    return counts, forest, rec


@jit(parallel=True)
def _run_batch(B, W, F, K1, R, store, bl, D):
    """Every trajectory of a batch: ``B`` (`Batch`: seed, start, script lengths, and the
    per-trajectory outputs), the world's rows ``W`` (`WorldRows`), the forest ``F``
    (`ForestRows`), the `Knobs` ``K1`` as one-element arrays, the `StepRecords` ``R``
    and the field's `FieldState` ``store``; ``bl``: the packed `Baselines` of a field
    policy (a one-element array), None for WMT's configurations; ``D``: the population
    aggregates (`wmtsim.engine.dynamics.DynamicsAcc`) or None.

    numba's parallel loop takes arrays, scalars and flat records of them, not records
    nested in records, nor packed knobs (they come as one-element arrays,
    `wmtsim.core.packing.as_array`); its body builds the records (`Knobs`, `Trajectory`,
    `FieldScratch`) every other kernel takes. ``bl`` and ``D`` stay arguments of their
    own: numba prunes ``is None`` branches on arguments only.
    """
    # Writes go to locals: numba (0.68) loses a store into a record's array made
    # directly in a prange body (``B.n_slots[i] = ...``).
    n_events, slot_of, counts = B.n_events, B.slot_of, B.counts
    n_slots, active = B.n_slots, B.active
    n = n_events.shape[0]
    for i in prange(n):
        # prange indices may be unsigned: make every index arithmetic signed.
        r = np.int64(i) if i < R.u.shape[0] else np.int64(-1)
        traj = np.int64(B.start) + np.int64(i)
        # Row i of the world's and the forest's arrays (`WorldRows`, `ForestRows`).
        f_row = _row_of(F, np.int64(i))
        w_row = _row_of(W, np.int64(i))
        cap = f_row.kind.shape[0]
        T = _trajectory(B.seed, traj, f_row, slot_of[i], w_row.kind.shape[0], counts[i])
        X = _field_scratch(store, np.int64(i), cap, bl)
        K = Knobs(sw=K1.sw[0], p=K1.p[0], st=K1.st[0], wk=K1.wk[0])
        n_slots[i], active[i] = _run_one(T, K, X, w_row, n_events[i], r, R, D)


@jit
def _trajectory(seed, traj, F, slot_of, world_nodes, out):
    """A fresh `Trajectory` around the forest row ``F``: its flags cleared, priorities
    NaN, no subtask answered (``world_nodes`` of them, by world id), counters ``out``,
    a new `LifecycleScratch`. (Callable from Python too, to run one kernel by hand.)"""
    cap = F.kind.shape[0]
    return Trajectory(
        seed=seed, traj=traj, F=F, slot_of=slot_of,
        is_global=np.zeros(cap, np.bool_), eligible=np.zeros(cap, np.bool_),
        selected=np.zeros(cap, np.bool_), on_path=np.zeros(cap, np.bool_),
        priority=np.full(cap, np.nan), answered=np.zeros(world_nodes, np.bool_),
        out=out, S=_lifecycle_scratch(cap))


@jit
def _field_scratch(store, i, cap, bl):
    """Trajectory ``i``'s `FieldScratch` (its `FieldState` row cleared to unseen), or
    None for WMT's configurations (``bl is None``: the field's branches compile out)."""
    if bl is None:
        return None
    row = FieldState(store.place[i], store.importance[i], store.last[i], store.freq[i],
                     store.strength[i], store.archival[i])
    for v in range(cap):
        row.place[v] = 0
        row.archival[v] = False
    misc = np.zeros(N_MISC, np.int64)
    misc[M.summary] = -1  # no running summary yet
    return FieldScratch(store=row, window=np.zeros(max(2, int(bl[0].z_window))), misc=misc,
                        knobs=bl)


@jit
def _run_one(T, K, X, W, n_ev, r, R, D):
    """Play one trajectory's script (``W``, ``n_ev`` events) under the policy; write its
    counters into ``T.out`` and, for a recorded trajectory (``r >= 0``), its steps into
    ``R``. ``X``: the field policy's `FieldScratch` (None for WMT's configurations);
    ``D``: the population aggregates (`wmtsim.engine.dynamics`; None: compiled out)."""
    w_parent, w_topic, w_outcome = W.parent, W.topic, W.outcome
    op, arg = W.op, W.arg
    F, slot_of, out = T.F, T.slot_of, T.out
    is_global, eligible, on_path = T.is_global, T.eligible, T.on_path
    f_wid, parent, kind, state = F.wid, F.parent, F.kind, F.state
    u, m, outcome, poisoned = F.u, F.m, F.outcome, F.poisoned
    sw, p, st = K.sw, K.p, K.st

    for k in range(out.shape[0]):
        out[k] = 0.0
    # Typed (not literal) values, so that each kernel below compiles once: numba would
    # otherwise specialise a callee for every literal argument (0, -1, True, False).
    # (``Any``: for mypy, which checks these bodies as plain Python.)
    zero: Any = np.int64(0)
    no_topic: Any = np.int64(NO_TOPIC)
    yes, no = np.bool_(True), np.bool_(False)
    _add_world_node(F, slot_of, W, zero, zero, np.int64(NO_PARENT), p.u_init_root, zero)
    n: Any = np.int64(1)
    active: Any = np.int64(0)
    root: Any = np.int64(0)  # the current task's root (conversation mode: one per task)
    step: Any = np.int64(0)
    last_obs: Any = np.int64(-1)  # the action observed just before this prompt
    took = False  # the last supersession took effect (attack rule reinject, OP_REINJECT)
    # The prompt step's arguments, set by the event that makes one.
    topic_now: Any = no_topic
    critical: Any = no
    obs: Any = last_obs
    # Eq. 6's statistics (``T.S``) hold for the first ``fresh[0]`` slots while slots are
    # only appended; an event that changes an older slot's score, outcome or obsolete
    # flag sets it to -1 (recompute them all).
    fresh = T.S.fresh
    fresh[0] = -1
    for e in range(n_ev):
        o = op[e]
        a = arg[e]
        if o == OP_REINJECT:
            # The attacker's copy of a superseded poison (docs/attack.md), played as an
            # action when that supersession took effect for this policy; else never made.
            if not took:
                continue
            o = OP_ACTION
        if o == OP_SUPERSEDE and slot_of[a] < 0:
            # The detection of a copy that was never made (a revision is always about
            # an action of the visit's own order, which every policy plays).
            took = False
            continue
        # The prompt step has one call site below, where numba inlines it (a call that
        # takes the trajectory's records counts a reference to each of their arrays);
        # node creation has one site too.
        prompt = False
        if o == OP_GLOBAL or o == OP_TASK or o == OP_ACTION or o == OP_ROOT:
            v = n
            if o == OP_GLOBAL or o == OP_ROOT:
                up = np.int64(NO_PARENT)
            else:
                up = np.int64(slot_of[w_parent[a]])
            if o == OP_GLOBAL:
                u0 = p.u_init_global
            elif o == OP_TASK:
                u0 = p.u_init_task
            elif o == OP_ACTION:
                u0 = p.u_init_action
            else:
                u0 = p.u_init_root
            _add_world_node(F, slot_of, W, v, np.int64(a), up, u0, step)
            n += 1
            if o == OP_GLOBAL:
                is_global[v] = True
            elif o == OP_TASK:
                active = v
            elif o == OP_ACTION:
                # Eq. 2: the outcome event sets the score.
                outcome[v] = w_outcome[a]
                u[v] = _event_score(w_outcome[a] == SUCCESS, p)
                if p.event_resets_m != 0.0:
                    m[v] = 0
                last_obs = v
                prompt = True
                topic_now = np.int64(w_topic[f_wid[active]])
                critical = no
                obs = last_obs
            else:  # OP_ROOT
                root = v
                active = v
                last_obs = -1
        elif o == OP_SUPERSEDE:
            # docs/model.md §3 "supersede / invalidate", for policies that act on the event
            # (`Policy.supersede`; the others keep the memory as it was).
            took = False
            fresh[0] = -1  # an obsolete flag may change
            if sw.supersede != 0:
                in_store = False
                if X is not None:  # compiled out for WMT's configurations
                    if sw.selection == SEL_BASELINE:
                        # A field policy with a contradiction rule deletes it from its store.
                        in_store = True
                        if _baseline_supersede(X.store.place, slot_of[a]):
                            out[C.superseded] += 1
                            took = True
                if not in_store:
                    state[slot_of[a]] = OBSOLETE
                    out[C.superseded] += 1
                    took = True
        elif o == OP_REVISE:
            # A later observation revises an action's outcome: Eq. 2 again, on the
            # opposite outcome (every policy records it; it is not a prompt step).
            v = slot_of[a]
            fresh[0] = -1  # an older slot's outcome and score change
            outcome[v] = FAILURE if outcome[v] == SUCCESS else SUCCESS
            u[v] = _event_score(outcome[v] == SUCCESS, p)
            if p.event_resets_m != 0.0:
                m[v] = 0
            out[C.revisions] += 1
        elif o == OP_COMPLETE:
            prompt = True
            topic_now = np.int64(a)
            critical = yes
            obs = last_obs
        elif o == OP_REOPEN:
            s = np.int64(slot_of[a])
            # A configuration without reopen leaves a folded subtask folded, unless the
            # world's rule undoes the fold (`WorldSpec.resume_folded` = ``unfold``).
            if state[s] == COMPLETED or (state[s] == FOLDED and (
                    sw.reopen != 0 or K.wk.resume_folded == RESUME_UNFOLD)):
                state[s] = ACTIVE
            active = s
            last_obs = -1
        elif o == OP_FINAL:
            active = root
            prompt = True
            topic_now = no_topic
            critical = yes
            obs = np.int64(-1)
        elif o == OP_PROMOTE:
            # Conversation mode (docs/world.md): the task is over. A field policy's store
            # carries over as it is; WMT's configurations retire the finished tree (it
            # leaves the pool, stays stored), after promoting its summary where they fold.
            if sw.selection != SEL_BASELINE:
                fresh[0] = -1  # the finished tree becomes obsolete
                if sw.fold != 0 and p.promote_summaries != 0:
                    n = _promote(T, K, step - 1, root, n, W, np.int64(a))
                _retire(parent, kind, state, root, n)
        if prompt:
            n = _prompt_step(T, K, X, step, n, active, topic_now, critical, obs, D)
            if r >= 0:  # a call passes two records: only for a recorded trajectory
                _record(T, r, R, step, n, o)
            _dyn_prompt(D, T, K, step, n, obs)
            if o == OP_COMPLETE:
                s = np.int64(slot_of[a])
                if sw.fold != 0:
                    if F.summary[s] >= 0:
                        fresh[0] = -1  # a re-fold resets its summary's score
                    n = _fold(T, K, step, s, n)
                elif state[s] != OBSOLETE:
                    state[s] = COMPLETED
                active = parent[s]
                last_obs = -1
            step += 1

    # IP (Eq. 10): injected poison still eligible once memory management is done (and,
    # under `Stubs.ip_rule` = carried, poison an eligible summary absorbed).
    out[C.p_i] = 0.0
    out[C.p_r] = 0.0
    _mark_active_path(parent, active, n, on_path)
    field = False
    if X is not None:  # compiled out for WMT's configurations
        if sw.selection == SEL_BASELINE:
            field = True
            _baseline_eligible(n, on_path, X.store.place, eligible)
    if not field:
        _context_pool(T, K, n)  # the pool context construction reaches, as at every step
    for v in range(n):
        if poisoned[v] and kind[v] != SUMMARY and W.poisoned[f_wid[v]]:  # injected
            out[C.p_i] += 1
            if sw.selection != SEL_NONE and (eligible[v] or (
                    st.ip_rule == IP_CARRIED and F.leak[v] != 0
                    and _poison_remains(v, F, eligible, slot_of))):
                out[C.p_r] += 1
    _dyn_end(D, T, K, X, n, step)
    out[C.nodes] = n
    # Simulated LLM latency: a fixed cost per call plus a cost per prompt token.
    out[C.latency_ms] = (st.call_latency_ms * out[C.llm_calls]
                         + st.token_latency_ms * out[C.prompt_tokens])
    return n, active


@jit
def _retire(parent, kind, state, r, n):
    """Conversation mode: the finished task's tree (root slot ``r``) leaves the candidate
    pool: its root and tasks become obsolete (nothing is deleted; Eq. 7 skips them)."""
    in_tree = np.zeros(n, np.bool_)
    for v in range(n):
        in_tree[v] = v == r or (parent[v] >= 0 and in_tree[parent[v]])
        if in_tree[v] and kind[v] != SUMMARY and (v == r or kind[v] == TASK):
            state[v] = OBSOLETE


@jit
def _record(T, r, R, step, n, o):
    """Keep this step's u, m, state, ε, s, poisoned flags and tokens for a recorded trajectory
    (``r >= 0``; ``R``: `StepRecords`)."""
    if r < 0:
        return
    F, eligible, selected, out = T.F, T.eligible, T.selected, T.out
    u, m, state, poisoned, tokens = F.u, F.m, F.state, F.poisoned, F.tokens
    for v in range(n):
        R.u[r, step, v] = u[v]
        R.m[r, step, v] = m[v]
        R.state[r, step, v] = state[v]
        R.eligible[r, step, v] = eligible[v]
        R.selected[r, step, v] = selected[v]
        R.poisoned[r, step, v] = poisoned[v]  # a summary's contamination can change
        R.node_tokens[r, step, v] = tokens[v]  # a summary's size can change
    R.n_slots[r, step] = n
    R.event[r, step] = o
    R.tokens[r, step] = out[C.prompt_tokens]
