"""The flat forest: many memory trees as one structure of arrays, shape (trajectories, slots).

A slot is a node of one trajectory's memory tree, numbered in creation order (so
``parent < slot``); summaries are created by the policy when a branch folds, so a tree
holds up to ``world nodes + subtasks`` slots. There are no Python objects per node: the
engine walks these arrays with the lifecycle kernels. `Forest.tree(i)` turns one
trajectory back into readable records for the dashboard and for debugging.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
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

# Positions of the per-slot arrays in the tuple the kernels take (`Forest.rows`).
(F_WID, F_PARENT, F_KIND, F_STATE, F_U, F_M, F_TOKENS, F_CREATED, F_OUTCOME, F_POISONED,
 F_EVIDENCE, F_TOPIC, F_REL, F_PERS, F_RIDER, F_TOP, F_SUMMARY, F_WARNINGS,
 F_LEAK) = range(19)


@dataclass
class Forest:
    """Per-slot arrays ``(n, capacity)`` and per-trajectory counters ``(n,)``.

    wid: the world node a slot holds (-1 for a fold summary); parent: parent slot;
    kind, state, u, m: MODEL.md §1; tokens; created: prompt step at creation; outcome;
    poisoned (for a summary: contaminated); evidence; topic: the world subtask a memory is
    about (-1: none); rel: relevance to its topic; persuasiveness; rider; top: top-level
    subtask; summary: for a task, the slot of its fold summary (-1 until it folds);
    warnings: for a summary, the failure warnings it keeps (failed actions of its branch);
    leak: bit ``d`` set when the memory leaked into the summary of its ancestor task at
    depth ``d`` (root 0), the provenance IP (Eq. 10) follows through summaries.
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
    slot_of: np.ndarray
    n_slots: np.ndarray
    active: np.ndarray

    @classmethod
    def allocate(cls, n: int, capacity: int, world_nodes: int) -> Forest:
        def full(dtype: Any, value: Any = 0) -> np.ndarray:
            return np.full((n, capacity), value, dtype=dtype)

        return cls(
            wid=full(np.int32, -1), parent=full(np.int32, NO_PARENT), kind=full(np.int8),
            state=full(np.int8), u=full(np.float64), m=full(np.int64),
            tokens=full(np.int32), created=full(np.int32), outcome=full(np.int8),
            poisoned=full(np.bool_), evidence=full(np.bool_), topic=full(np.int32, -1),
            rel=full(np.float64), persuasiveness=full(np.float64), rider=full(np.bool_),
            top=full(np.int32, -1), summary=full(np.int32, -1), warnings=full(np.int32),
            leak=full(np.int64),
            slot_of=np.full((n, world_nodes), -1, dtype=np.int32),
            n_slots=np.zeros(n, dtype=np.int64), active=np.zeros(n, dtype=np.int64),
        )

    def rows(self) -> tuple[np.ndarray, ...]:
        """The per-slot arrays in declaration order (what the engine kernel takes)."""
        return tuple(getattr(self, f.name) for f in fields(self))[:-2]

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
    """Create slot ``v`` (the next one) with its initial score (MODEL.md §2).

    ``F`` is the tuple of one trajectory's per-slot arrays (`Forest.rows`, row i). The
    static properties (tokens, topic, ...) are the caller's to set.
    """
    F[F_WID][v] = wid
    F[F_PARENT][v] = parent_slot
    F[F_KIND][v] = kind_
    F[F_STATE][v] = ACTIVE
    F[F_U][v] = u0
    F[F_M][v] = 0
    F[F_CREATED][v] = step
    F[F_OUTCOME][v] = 0
    F[F_SUMMARY][v] = -1
    F[F_WARNINGS][v] = 0
    F[F_LEAK][v] = 0


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
    w = F[F_WID][v]
    if w >= 0:
        return np.int64(w)
    return np.int64(DRAW_SUMMARY) + np.int64(F[F_WID][F[F_PARENT][v]])


@jit
def _add_summary(F, z, parent_slot, topic, top, rel, u0, step):
    """Create slot ``z`` as a summary node under ``parent_slot`` (MODEL.md §1: the compact
    node standing for a folded branch), clean, without evidence and with no tokens yet."""
    _add_node(F, z, -1, parent_slot, SUMMARY, u0, step)
    F[F_TOKENS][z] = 0
    F[F_POISONED][z] = False
    F[F_EVIDENCE][z] = False
    F[F_TOPIC][z] = topic
    F[F_TOP][z] = top
    F[F_REL][z] = rel
    F[F_PERS][z] = 0.0
    F[F_RIDER][z] = False
