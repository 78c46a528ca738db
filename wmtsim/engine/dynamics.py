"""Population dynamics of poison, accumulated inside the engine.

The step records of `wmtsim.engine.loop` cost O(trajectories · steps · slots); these
aggregates cost O(steps) per thread, so a run of any size can say how poison lives,
spreads and dies without recording a single step. The step loop makes two calls,
`_dyn_prompt` after every prompt-construction cycle and `_dyn_end` once a trajectory is
done; a plain run passes ``D = None`` and numba prunes both (``if D is None: return``).

Every count is an integer added into the row of the thread that ran the trajectory
(``numba.get_thread_id``); integer sums do not depend on the order of addition, so the
totals are identical for any thread count or chunking. The readable twin is
`wmtsim.twins.dynamics_reference`; the statistics over these counts (survival, fates,
spread) are `wmtsim.studies.dynamics.dynamics`. The definitions (docs/model_decisions.md,
"Population dynamics"):

* an injected poison is a poisoned memory that is not a summary (IP's P_i, Eq. 10); its
  kind (``failed``, ``plausible``, ``global``, ``summary``) is read when it is first seen
  (a global memory; else a summary rider; else by the outcome it was recorded with);
* at a prompt step a poison **remains** when it is in the candidate pool ε_t
  (``eligible``) or is carried by an eligible summary (`_poison_remains`: IP's P_r rule
  applied at every step, not only at the end); ``carried`` counts the second case only;
* its **lifetime** L is (its last prompt step at which it remains) − (its creation step)
  + 1, an event when it does not remain at the end, censored at the trajectory's last
  prompt step when it does (it was seen remaining ``c = last step − creation`` steps on);
* it is **compromising** at a critical step when its persuasion draw succeeded there
  (`_reason` records the step with `_dyn_persuaded`); several poisons can compromise one
  step, and a persuading summary is counted by the step's ``compromised`` only;
* its **fate**, decided at the end: still eligible (`F_ELIGIBLE`), carried by an eligible
  summary (`F_LAUNDERED`), else by its final state: its own memory obsolete or deleted
  (`F_SUPERSEDED`), an obsolete ancestor branch (`F_SUPPRESSED`), a folded ancestor branch
  (`F_FOLDED_CLEAN`: folded away without riding into a summary that is still eligible),
  any other rule of a field policy's store (`F_DROPPED`: eviction, decay, forgetting,
  overwrite); a poison that never remained at any prompt step is `F_NEVER_ELIGIBLE`.
  Whether it was ever selected is kept beside its fate (``never_selected``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import polars as pl
from numba import config, get_thread_id

from wmtsim.core.codes import FAILURE, FOLDED, GLOBAL, NO_PARENT, OBSOLETE, SUMMARY
from wmtsim.core.field_knobs import B_DELETED
from wmtsim.core.jit import jit
from wmtsim.core.metrics import C
from wmtsim.core.policies import SEL_BASELINE, SEL_NONE
from wmtsim.core.world_spec import POISON_KINDS
from wmtsim.engine.forest import _task_depth

# Per prompt step index t (``steps`` columns).
STEP_COLUMNS = (
    "prompts",  # trajectories that make a prompt at step t
    "contaminated",  # ... whose context holds contaminated memory (BR's T_c, docs/model.md §5)
    "via_original",  # ... an injected poison is selected, or is the observation just made
    "via_summary",  # ... a contaminated summary is selected
    "critical",  # critical reasoning steps at t
    "compromised",  # ... compromised (a poisoned memory persuaded the reasoner)
    "poisons",  # injected poisons that exist at t
    "eligible",  # ... in the candidate pool ε_t
    "carried",  # ... not in the pool, carried by an eligible summary
    "selected",  # ... selected into the context
    "compromising",  # ... that persuaded the reasoner at a critical step (compromised it)
)
(T_PROMPTS, T_CONTAMINATED, T_VIA_ORIGINAL, T_VIA_SUMMARY, T_CRITICAL, T_COMPROMISED,
 T_POISONS, T_ELIGIBLE, T_CARRIED, T_SELECTED, T_COMPROMISING) = range(len(STEP_COLUMNS))

# Per poison kind and step since injection k (``since`` columns).
SINCE_COLUMNS = ("poisons", "eligible", "carried", "selected", "compromising")
K_POISONS, K_ELIGIBLE, K_CARRIED, K_SELECTED, K_COMPROMISING = range(len(SINCE_COLUMNS))

FATES = ("superseded", "suppressed", "folded_clean", "laundered", "eligible_at_end",
         "dropped", "never_eligible")
(F_SUPERSEDED, F_SUPPRESSED, F_FOLDED_CLEAN, F_LAUNDERED, F_ELIGIBLE, F_DROPPED,
 F_NEVER_ELIGIBLE) = range(len(FATES))

# Per-thread scratch, one row per slot: kind + 1 (0: not seen yet), last step remaining
# + 1 (0: never), ever selected, the last step + 1 it persuaded the reasoner (0: never).
_X_KIND, _X_LAST, _X_SELECTED, _X_PERSUADED = range(4)


class DynamicsAcc(NamedTuple):
    """The accumulators, one leading row per numba thread (summed by `totals`).

    steps ``(threads, T, STEP_COLUMNS)``; since ``(threads, kinds, T, SINCE_COLUMNS)``;
    fate_k / fate_t ``(threads, kinds, FATES, T + 1)``: poisons by fate and the step since
    injection / the step index at which it happened (for a poison still remaining, the
    end); never_selected ``(threads, kinds, FATES)``; survival ``(threads, kinds, T + 1, 2)``:
    lifetimes ending (column 0) or censored (column 1) at k; scratch and prev: per-thread
    working state of the trajectory being played.
    """

    steps: np.ndarray
    since: np.ndarray
    fate_k: np.ndarray
    fate_t: np.ndarray
    never_selected: np.ndarray
    survival: np.ndarray
    scratch: np.ndarray
    prev: np.ndarray

    @classmethod
    def allocate(cls, n_steps: int, capacity: int) -> DynamicsAcc:
        threads = int(config.NUMBA_NUM_THREADS)  # type: ignore[attr-defined]
        k, t, f = len(POISON_KINDS), max(n_steps, 1), len(FATES)
        return cls(
            steps=np.zeros((threads, t, len(STEP_COLUMNS)), np.int64),
            since=np.zeros((threads, k, t, len(SINCE_COLUMNS)), np.int64),
            fate_k=np.zeros((threads, k, f, t + 1), np.int64),
            fate_t=np.zeros((threads, k, f, t + 1), np.int64),
            never_selected=np.zeros((threads, k, f), np.int64),
            survival=np.zeros((threads, k, t + 1, 2), np.int64),
            scratch=np.zeros((threads, max(capacity, 1), 4), np.int64),
            # 16 doubles a thread: each thread's row on its own cache lines (written at
            # every prompt step; two threads on one line would slow each other down).
            prev=np.zeros((threads, 16)),
        )

    def totals(self) -> dict[str, np.ndarray]:
        """The counts summed over threads (integers: the same for any thread count)."""
        return {name: getattr(self, name).sum(axis=0) for name in _TOTALS}


@jit
def _poison_remains(v, F, eligible, slot_of):
    """IP's P_r (Eq. 10, docs/model.md §5): poisoned memory ``v`` is still eligible at the
    end, or is carried by an eligible contaminated summary.

    ``leak`` bit ``d`` of a memory says it leaked into the summary of the task at depth
    ``d`` above its home (an action's home is its task; a global memory's is the subtask
    it concerns, or the root); a summary that leaked into an outer summary carries what
    it absorbed on. Tasks are visited nearest first, so one walk follows every chain.
    The step loop reads it at the end (IP); `_dyn_prompt` at every prompt step.
    """
    if eligible[v]:
        return True
    parent, summary, leak, topic = F.parent, F.summary, F.leak, F.topic
    carried = leak[v]
    if carried == 0:  # it leaked into no summary: nothing can carry it (bits only grow
        return False  # from a summary it leaked into)
    a = parent[v]
    if a < 0:  # a global memory
        a = slot_of[topic[v]] if topic[v] >= 0 and slot_of[topic[v]] >= 0 else 0
    d = _task_depth(parent, a)  # each step up is one level shallower
    while a >= 0:
        z = summary[a]
        if z >= 0 and (carried >> d) & 1:
            if eligible[z]:
                return True
            carried |= leak[z]
        a = parent[a]
        d -= 1
    return False


@jit(inline=True)
def _poison_kind(v, F):
    """The index in POISON_KINDS of injected poison ``v`` (read when it is first seen,
    before any revision of its outcome)."""
    if F.kind[v] == GLOBAL:
        return 2
    if F.rider[v]:
        return 3
    return 0 if F.outcome[v] == FAILURE else 1


@jit(inline=True)
def _dyn_persuaded(D, v, step):
    """The reasoner's hook (`wmtsim.engine.agent._reason`): memory ``v`` persuaded it at
    prompt step ``step`` (a plain run passes ``D = None``: compiled out)."""
    if D is None:
        return
    D.scratch[get_thread_id(), v, _X_PERSUADED] = step + 1


@jit(inline=True)
def _dyn_prompt(D, T, K, step, n, last_obs):
    """Count prompt step ``step`` of the trajectory ``T`` being played (after
    `_prompt_step`, before a fold; ``K``: the `Knobs`): its context's contamination and
    where it came from, and every injected poison's state at this step."""
    if D is None:
        return
    F, eligible, selected, slot_of, out = T.F, T.eligible, T.selected, T.slot_of, T.out
    tid = get_thread_id()
    row = D.steps[tid, step]
    Z = D.scratch[tid]
    poisoned, kind = F.poisoned, F.kind
    memory = K.sw.selection != SEL_NONE
    via_original = (last_obs >= 0 and poisoned[last_obs] and K.st.obs_in_context != 0.0
                    and not selected[last_obs])
    via_summary = False
    # One pass over the slots: the context's contamination and every poison's state.
    for v in range(n):
        if not poisoned[v]:
            continue
        if kind[v] == SUMMARY:
            via_summary = via_summary or selected[v]
            continue
        if Z[v, _X_KIND] == 0:
            Z[v, _X_KIND] = _poison_kind(v, F) + 1
        since = D.since[tid, Z[v, _X_KIND] - 1, step - F.created[v]]
        row[T_POISONS] += 1
        since[K_POISONS] += 1
        if eligible[v]:
            row[T_ELIGIBLE] += 1
            since[K_ELIGIBLE] += 1
        # (a poison that leaked into no summary remains only while eligible: no call)
        if memory and (eligible[v] or (F.leak[v] != 0
                                       and _poison_remains(v, F, eligible, slot_of))):
            Z[v, _X_LAST] = step + 1
            if not eligible[v]:
                row[T_CARRIED] += 1
                since[K_CARRIED] += 1
        if selected[v]:
            via_original = True
            row[T_SELECTED] += 1
            since[K_SELECTED] += 1
            Z[v, _X_SELECTED] = 1
        if Z[v, _X_PERSUADED] == step + 1:  # it persuaded the reasoner at this step
            row[T_COMPROMISING] += 1
            since[K_COMPROMISING] += 1
    row[T_PROMPTS] += 1
    if via_original or via_summary:
        row[T_CONTAMINATED] += 1
    if via_original:
        row[T_VIA_ORIGINAL] += 1
    if via_summary:
        row[T_VIA_SUMMARY] += 1
    # Critical and compromised steps from the engine's own counters (`_reason`).
    prev = D.prev[tid]
    if out[C.critical_steps] > prev[0]:
        row[T_CRITICAL] += 1
    if out[C.compromised_steps] > prev[1]:
        row[T_COMPROMISED] += 1
    prev[0] = out[C.critical_steps]
    prev[1] = out[C.compromised_steps]


@jit(inline=True)
def _dyn_end(D, T, K, X, n, n_steps):
    """Decide the fate and lifetime of every injected poison of the finished trajectory
    ``T`` (``T.eligible``: the end's ε, as IP reads it; ``n_steps``: its prompt steps;
    ``X``: a field policy's `FieldScratch`, None for WMT's configurations) and clear the
    thread's scratch."""
    if D is None:
        return
    F, eligible, slot_of = T.F, T.eligible, T.slot_of
    tid = get_thread_id()
    Z = D.scratch[tid]
    parent, state, poisoned, kind = F.parent, F.state, F.poisoned, F.kind
    memory = K.sw.selection != SEL_NONE
    for v in range(n):
        Z[v, _X_PERSUADED] = 0  # any memory may have persuaded (a summary too)
        if not poisoned[v] or kind[v] == SUMMARY:
            continue
        if Z[v, _X_KIND] == 0:  # never seen by a prompt (made after the last one)
            Z[v, _X_KIND] = _poison_kind(v, F) + 1
        k = Z[v, _X_KIND] - 1
        created = F.created[v]
        remains = memory and (eligible[v] or (F.leak[v] != 0
                                              and _poison_remains(v, F, eligible, slot_of)))
        if remains:
            fate = F_ELIGIBLE if eligible[v] else F_LAUNDERED
            at = n_steps
        elif Z[v, _X_LAST] == 0:
            fate = F_NEVER_ELIGIBLE
            at = created
        else:
            at = Z[v, _X_LAST]
            fate = F_DROPPED
            field = False
            if X is not None:  # compiled out for WMT's configurations
                if K.sw.selection == SEL_BASELINE:
                    field = True
                    if X.store.place[v] == B_DELETED:  # a contradiction rule's delete
                        fate = F_SUPERSEDED
            if not field:
                if state[v] == OBSOLETE:
                    fate = F_SUPERSEDED
                else:
                    a = parent[v]
                    while a != NO_PARENT:
                        if state[a] == OBSOLETE:
                            fate = F_SUPPRESSED
                            break
                        if state[a] == FOLDED and fate == F_DROPPED:
                            fate = F_FOLDED_CLEAN
                        a = parent[a]
        D.fate_k[tid, k, fate, at - created] += 1
        D.fate_t[tid, k, fate, at] += 1
        if Z[v, _X_SELECTED] == 0:
            D.never_selected[tid, k, fate] += 1
        if remains:
            if n_steps - 1 - created >= 0:
                D.survival[tid, k, n_steps - 1 - created, 1] += 1
        elif created < n_steps:
            D.survival[tid, k, at - created, 0] += 1
        Z[v, _X_KIND] = 0
        Z[v, _X_LAST] = 0
        Z[v, _X_SELECTED] = 0
    D.prev[tid, 0] = 0.0
    D.prev[tid, 1] = 0.0


_TOTALS = ("steps", "since", "fate_k", "fate_t", "never_selected", "survival")
_STEP_AXIS = {"steps": 0, "since": 1, "fate_k": 2, "fate_t": 2, "survival": 1}


def aggregates_of(rec: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The ``dyn_*`` arrays of the engine's records, by name (`DynamicsAcc.totals`)."""
    return {name: rec[f"dyn_{name}"] for name in _TOTALS}


@dataclass
class Dynamics:
    """One configuration's population aggregates (integer counts, `DynamicsAcc.totals`).

    Batches of the same configuration add up (`merge`): the step axes are padded to the
    longer batch, so chunks give the counts of one run. The statistics over these counts
    (survival, fate shares, spread) are `wmtsim.studies.dynamics.dynamics`.
    """

    policy: str
    counts: dict[str, np.ndarray]

    def merge(self, other: Dynamics) -> Dynamics:
        """The counts of both batches (same configuration, disjoint trajectories)."""
        if other.policy != self.policy:
            raise ValueError(f"cannot merge the dynamics of {other.policy!r} into "
                             f"{self.policy!r}; allowed: the same policy")
        out = {}
        for name in _TOTALS:
            a, b = self.counts[name], other.counts[name]
            axis = _STEP_AXIS.get(name)
            if axis is not None and a.shape[axis] != b.shape[axis]:
                size = max(a.shape[axis], b.shape[axis])
                a, b = (_pad(x, axis, size) for x in (a, b))
            out[name] = a + b
        return Dynamics(self.policy, out)

    def steps_frame(self) -> pl.DataFrame:
        """Per prompt step index: one row per step, the `STEP_COLUMNS` counts."""
        s = self.counts["steps"]
        return pl.DataFrame({"policy": [self.policy] * s.shape[0],
                             "step": np.arange(s.shape[0], dtype=np.int64),
                             **{c: s[:, j] for j, c in enumerate(STEP_COLUMNS)}})

    def since_frame(self) -> pl.DataFrame:
        """Per poison kind and step since injection k: the `SINCE_COLUMNS` counts."""
        s = self.counts["since"]
        k, t, _ = s.shape
        return pl.DataFrame({
            "policy": [self.policy] * (k * t),
            "kind": [POISON_KINDS[i] for i in range(k) for _ in range(t)],
            "k": np.tile(np.arange(t, dtype=np.int64), k),
            **{c: s[:, :, j].reshape(-1) for j, c in enumerate(SINCE_COLUMNS)}})

    def fates_frame(self) -> pl.DataFrame:
        """One row per (kind, fate, step since injection, step index) with poisons > 0."""
        rows = []
        fk, ft, ns = self.counts["fate_k"], self.counts["fate_t"], self.counts["never_selected"]
        for i, kind in enumerate(POISON_KINDS):
            for j, fate in enumerate(FATES):
                rows.append({"policy": self.policy, "kind": kind, "fate": fate,
                             "poisons": int(fk[i, j].sum()),
                             "never_selected": int(ns[i, j]),
                             "mean_k": _mean_index(fk[i, j]),
                             "mean_step": _mean_index(ft[i, j])})
        return pl.DataFrame(rows, schema={"policy": pl.Utf8, "kind": pl.Utf8,
                                          "fate": pl.Utf8, "poisons": pl.Int64,
                                          "never_selected": pl.Int64, "mean_k": pl.Float64,
                                          "mean_step": pl.Float64})


def _pad(a: np.ndarray, axis: int, size: int) -> np.ndarray:
    width = [(0, 0)] * a.ndim
    width[axis] = (0, size - a.shape[axis])
    return np.pad(a, width)


def _mean_index(h: np.ndarray) -> float:
    """The mean position of a histogram (NaN when empty)."""
    total = h.sum()
    return float((np.arange(h.shape[0]) * h).sum() / total) if total else float("nan")
