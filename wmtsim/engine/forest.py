"""The flat forest: many memory trees as one structure of arrays, shape (trajectories, slots).

A slot is a node of one trajectory's memory tree, numbered in creation order (so
``parent < slot``); summaries are created by the policy when a branch folds, so a tree
holds up to ``world nodes + subtasks`` slots. There are no Python objects per node: the
engine walks these arrays with the lifecycle kernels. `Forest.tree(i)` turns one
trajectory back into readable records for the dashboard and for debugging.

The per-slot arrays are declared once, in `wmtsim.core.node_arrays`. This module also
holds what writes a slot: `_add_node`, `_add_world_node` (a world node, also a promoted
conversation summary) and `_add_summary` (a policy's summary), and the one rule by which a
summary absorbs what it summarises (`_absorb`, `_carry`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from wmtsim.core.codes import (
    ACTIVE,
    DRAW_SUMMARY,
    KIND_NAMES,
    NO_PARENT,
    OUTCOME_NAMES,
    STATE_NAMES,
    SUMMARY,
)
from wmtsim.core.jit import jit
from wmtsim.core.node_arrays import FOREST_ARRAYS, allocate, rows_type
from wmtsim.core.rng import PURPOSE_LEAK, _uniform

ForestRows = rows_type("ForestRows", FOREST_ARRAYS, __name__)
"""The per-slot arrays of a `Forest`, as the kernels take them (`Forest.rows`): one field
per array of `wmtsim.core.node_arrays.FOREST_ARRAYS` (numba reads a named tuple natively,
like pynndescent's ``FlatTree``, ``F.u[v]``); each is ``(n, capacity)`` for the whole
batch, or ``(capacity,)`` for one trajectory (`row`, `wmtsim.core.rows._row_of`)."""


@dataclass
class Forest:
    """Per-slot arrays ``(n, capacity)`` and per-trajectory counters ``(n,)``.

    The per-slot arrays are `wmtsim.core.node_arrays.FOREST_ARRAYS`, in its order (each
    declared there with its dtype and empty value; a test checks the fields).
    wid: the world node a slot holds (-1 for a fold summary); parent: parent slot;
    kind, state, u, m: docs/model.md §1; tokens; created: prompt step at creation; outcome;
    poisoned (for a summary: contaminated); evidence; topic: the world subtask a memory is
    about (-1: none); rel: relevance to its topic; persuasiveness; rider; top: top-level
    subtask; summary: for a task, the slot of its fold summary (-1 until it folds);
    warnings: for a summary, the failure warnings it keeps (failed actions of its branch);
    leak: bit ``d`` set when the memory leaked into the summary of its ancestor task at
    depth ``d`` (root 0), the provenance IP (Eq. 10) follows through summaries.
    folded_at: for a task, the prompt step of its latest fold (-1 before it folds; read by
    `WorldSpec.resume_folded`: what its fold covers when it is resumed without a reopen).
    slot_of: ``(n, world nodes)`` map from world node to slot (-1 before creation).
    """

    wid: np.ndarray
    parent: np.ndarray
    kind: np.ndarray
    state: np.ndarray
    u: np.ndarray
    m: np.ndarray
    tokens: np.ndarray
    created: np.ndarray
    outcome: np.ndarray
    poisoned: np.ndarray
    evidence: np.ndarray
    topic: np.ndarray
    rel: np.ndarray
    persuasiveness: np.ndarray
    rider: np.ndarray
    top: np.ndarray
    summary: np.ndarray
    warnings: np.ndarray
    leak: np.ndarray
    folded_at: np.ndarray
    slot_of: np.ndarray
    n_slots: np.ndarray
    active: np.ndarray

    @classmethod
    def allocate(cls, n: int, capacity: int, world_nodes: int) -> Forest:
        """Every per-slot array at its empty value (`wmtsim.core.node_arrays`)."""
        return cls(**allocate(FOREST_ARRAYS, (n, capacity)),
                   slot_of=np.full((n, world_nodes), -1, dtype=np.int32),
                   n_slots=np.zeros(n, dtype=np.int64), active=np.zeros(n, dtype=np.int64))

    def rows(self) -> Any:
        """The per-slot arrays ``(n, capacity)`` as the engine kernel takes them."""
        return ForestRows(**{name: getattr(self, name) for name in ForestRows._fields})

    def row(self, i: int) -> Any:
        """Trajectory ``i``'s per-slot arrays (views), as the lifecycle kernels take them."""
        return ForestRows._make(a[i] for a in self.rows())

    @property
    def n(self) -> int:
        return int(self.n_slots.shape[0])

    def tree(self, i: int) -> list[dict[str, Any]]:
        """Trajectory ``i``'s final memory tree as one readable record per node."""
        out = []
        for v in range(int(self.n_slots[i])):
            kind = KIND_NAMES[self.kind[i, v]]
            out.append({
                "slot": v,
                "world_id": int(self.wid[i, v]),
                "kind": kind,
                "parent": int(self.parent[i, v]),
                "state": STATE_NAMES[self.state[i, v]],
                "u": float(self.u[i, v]),
                "m": int(self.m[i, v]),
                "tokens": int(self.tokens[i, v]),
                "created": int(self.created[i, v]),
                "outcome": OUTCOME_NAMES[self.outcome[i, v]] if kind == "action" else None,
                "poisoned": bool(self.poisoned[i, v]),
                "evidence": bool(self.evidence[i, v]),
                "topic": int(self.topic[i, v]),
                "warnings": int(self.warnings[i, v]),
            })
        return out

    def render(self, i: int) -> str:
        """Trajectory ``i``'s tree as indented text (for debugging)."""
        records = self.tree(i)
        children: dict[int, list[int]] = {}
        for r in records:
            children.setdefault(r["parent"], []).append(r["slot"])
        lines: list[str] = []

        def walk(v: int, depth: int) -> None:
            r = records[v]
            flag = " POISON" if r["poisoned"] else ""
            lines.append(f"{'  ' * depth}{r['kind']}#{v} [{r['state']}] "
                         f"u={r['u']:.4f} m={r['m']}{flag}")
            for c in children.get(v, []):
                walk(c, depth + 1)

        for root in children.get(NO_PARENT, []):
            walk(root, 0)
        return "\n".join(lines)


@jit
def _add_node(F, v, wid, parent_slot, kind_, u0, step):
    """Create slot ``v`` (the next one) with its initial score (docs/model.md §2).

    ``F`` is one trajectory's `ForestRows` (`Forest.row`). The
    static properties (tokens, topic, ...) are the caller's to set.
    """
    F.wid[v] = wid
    F.parent[v] = parent_slot
    F.kind[v] = kind_
    F.state[v] = ACTIVE
    F.u[v] = u0
    F.m[v] = 0
    F.created[v] = step
    F.outcome[v] = 0
    F.summary[v] = -1
    F.warnings[v] = 0
    F.leak[v] = 0
    F.folded_at[v] = -1


@jit
def _add_world_node(F, slot_of, W, v, w, parent_slot, u0, step):
    """Create slot ``v`` for world node ``w`` of the world row ``W`` (`WorldRows`), copying
    its static properties: every per-node array the forest shares with the world."""
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
def _task_depth(parent, s):
    """Depth of task slot ``s`` (the root query 0, a top-level subtask 1, ...)."""
    d = 0
    while parent[s] >= 0:
        s = parent[s]
        d += 1
    return d


@jit
def _draw_id(F, v):
    """The identity slot ``v``'s stub draws are keyed by: its world id, or for a summary
    ``DRAW_SUMMARY`` + the world id of the task it hangs under."""
    return _draw_id_of(F.wid, F.parent, v)


@jit
def _draw_id_of(wid, parent, v):
    """`_draw_id` on the forest's ``wid`` and ``parent`` arrays."""
    w = wid[v]
    if w >= 0:
        return np.int64(w)
    return np.int64(DRAW_SUMMARY) + np.int64(wid[parent[v]])


@jit
def _add_summary(F, z, parent_slot, topic, top, rel, u0, step):
    """Create slot ``z`` as a summary node under ``parent_slot`` (docs/model.md §1: the compact
    node standing for a folded branch), clean, without evidence and with no tokens yet."""
    # Typed as `_add_world_node`'s arguments, so that `_add_node` compiles once.
    _add_node(F, z, np.int64(-1), parent_slot, np.int8(SUMMARY), u0, step)
    F.tokens[z] = 0
    F.poisoned[z] = False
    F.evidence[z] = False
    F.topic[z] = topic
    F.top[z] = top
    F.rel[z] = rel
    F.persuasiveness[z] = 0.0
    F.rider[z] = False


@jit
def _absorb(seed, traj, step, F, st, read, k, host, z):
    """The summarise-and-absorb rule (docs/model.md §3), the one rule of every summary: a
    fold, a promoted conversation summary and the field's running, cluster, reflection
    and daily summaries. Of the memories the summariser reads, ``read[:k]``, each poisoned
    one leaks into summary ``z`` of task slot ``host`` with p_leak (p_leak_rider for a
    summary rider), one draw keyed by the memory's identity (`PURPOSE_LEAK`); a leaked
    memory records it in its ``leak`` provenance at the bit of ``host``'s depth (IP,
    Eq. 10) and ``z`` takes on its properties (`_carry`). Every draw is made before ``z``
    takes anything: a re-fold reads its own summary as it was. ``read`` is scratch (it
    ends holding the leaked memories). Returns whether any memory leaked."""
    bit = np.int64(1) << np.int64(_task_depth(F.parent, host))
    leaked = 0
    for j in range(k):
        v = read[j]
        if not F.poisoned[v]:
            continue
        p_leak = st.p_leak_rider if F.rider[v] else st.p_leak
        if _uniform(seed, traj, step, _draw_id(F, v), PURPOSE_LEAK) < p_leak:
            F.leak[v] |= bit
            read[leaked] = v
            leaked += 1
    for j in range(leaked):
        _carry(F, read[j], z)
    return leaked > 0


@jit
def _carry(F, v, z):
    """What summary ``z`` takes from memory ``v`` that leaked into it: the poison, at the
    highest persuasiveness of what leaked (a property that follows poison into summaries
    is one line here and one in the twin's `AgentStubs.absorb`)."""
    F.poisoned[z] = True
    F.persuasiveness[z] = max(F.persuasiveness[z], F.persuasiveness[v])
