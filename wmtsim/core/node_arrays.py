"""The per-node arrays of the world and of the forest, declared once (`NODE_ARRAYS`).

A generated world (`wmtsim.core.world_spec.World`) holds, per trajectory, one array per
property of its world nodes and the two arrays of its script; the flat forest
(`wmtsim.engine.forest.Forest`) holds one array per property of its slots. Each array is
declared here once: its name, its dtype, the value it holds before anything writes it
(a batch's padding, a slot not created yet), whether the world draws it and whether the
forest keeps it. An array of both is a static property of a world node, which its slot
takes on when it is created (`wmtsim.engine.forest._add_world_node`), unless it is
declared ``copied=False``.

Derived from the declaration: the named rows the kernels take (`rows_type`:
`wmtsim.engine.world.WorldRows`, `wmtsim.engine.forest.ForestRows`) and the allocations
(`allocate`). The containers `World` and `Forest` keep typed fields (mypy and readers see
them), and the writers `_add_node`, `_add_world_node` and `_add_summary` set each array
explicitly (what a new slot of each kind starts with is a rule); tests check each of them
against this list (tests/engine/test_node_arrays.py). The readable twin's `Facts` field of
the same name takes a world array's value (`wmtsim.twins.stubs_reference.WORLD_FACTS`).
"""

from __future__ import annotations

import collections
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from wmtsim.core.codes import NO_PARENT


@dataclass(frozen=True, kw_only=True)
class NodeArray:
    """One per-node array: ``name``, numpy ``dtype``, the ``empty`` value it holds before
    it is written; drawn per world node (``world``), kept per forest slot (``forest``),
    taken by a world node's slot from the world when both (``copied``); ``per_event``: a
    script array (one entry per event, not per node)."""

    name: str
    dtype: type[np.generic]
    empty: int | float | bool
    world: bool = False
    forest: bool = False
    copied: bool = True
    per_event: bool = False
    doc: str


NODE_ARRAYS: tuple[NodeArray, ...] = (
    NodeArray(name="wid", dtype=np.int32, empty=-1, forest=True,
              doc="the world node a slot holds (-1: a summary the policy wrote)"),
    NodeArray(name="parent", dtype=np.int32, empty=NO_PARENT, world=True, forest=True,
              copied=False, doc="parent world node / parent slot (-1: none)"),
    NodeArray(name="kind", dtype=np.int8, empty=0, world=True, forest=True,
              doc="`wmtsim.core.codes` kind (root, task, action, global, summary)"),
    NodeArray(name="state", dtype=np.int8, empty=0, forest=True,
              doc="lifecycle state (docs/model.md §1)"),
    NodeArray(name="u", dtype=np.float64, empty=0.0, forest=True, doc="the score u (Eq. 5)"),
    NodeArray(name="m", dtype=np.int64, empty=0, forest=True, doc="the miss count m (Eq. 3)"),
    NodeArray(name="tokens", dtype=np.int32, empty=0, world=True, forest=True,
              doc="token size"),
    NodeArray(name="created", dtype=np.int32, empty=0, forest=True,
              doc="prompt step at creation"),
    NodeArray(name="outcome", dtype=np.int8, empty=0, world=True, forest=True, copied=False,
              doc="an action's outcome (the slot's is recorded by its event, Eq. 2)"),
    NodeArray(name="poisoned", dtype=np.bool_, empty=False, world=True, forest=True,
              doc="poisoned (a summary: contaminated by what leaked into it)"),
    NodeArray(name="evidence", dtype=np.bool_, empty=False, world=True, forest=True,
              doc="carries its subtask's evidence"),
    NodeArray(name="topic", dtype=np.int32, empty=-1, world=True, forest=True,
              doc="the world subtask a memory is about (-1: none)"),
    NodeArray(name="rel", dtype=np.float64, empty=0.0, world=True, forest=True,
              doc="relevance to its topic as the selector sees it"),
    NodeArray(name="persuasiveness", dtype=np.float64, empty=0.0, world=True, forest=True,
              doc="multiplier on the reasoner's persuasion probability"),
    NodeArray(name="rider", dtype=np.bool_, empty=False, world=True, forest=True,
              doc="summary-riding poison (leaks with p_leak_rider)"),
    NodeArray(name="top", dtype=np.int32, empty=-1, world=True, forest=True,
              doc="the top-level subtask it belongs to (the final answer's results)"),
    NodeArray(name="summary", dtype=np.int32, empty=-1, forest=True,
              doc="a task: the slot of its fold summary (-1 until it folds)"),
    NodeArray(name="warnings", dtype=np.int32, empty=0, forest=True,
              doc="a summary: the failure warnings it keeps"),
    NodeArray(name="leak", dtype=np.int64, empty=0, forest=True,
              doc="bit d: leaked into the summary of its ancestor task at depth d (IP)"),
    NodeArray(name="folded_at", dtype=np.int32, empty=-1, forest=True,
              doc="a task: the prompt step of its latest fold (-1 before it folds)"),
    NodeArray(name="op", dtype=np.int8, empty=-1, world=True, per_event=True,
              doc="the script: each event's op code (`OP_NAMES`)"),
    NodeArray(name="arg", dtype=np.int32, empty=-1, world=True, per_event=True,
              doc="the script: each event's world node"),
)

WORLD_ARRAYS = tuple(a for a in NODE_ARRAYS if a.world)
"""A `World`'s arrays: its nodes' and its script's, in declaration order."""
FOREST_ARRAYS = tuple(a for a in NODE_ARRAYS if a.forest)
"""A `Forest`'s per-slot arrays, in declaration order."""
COPIED = tuple(a.name for a in NODE_ARRAYS if a.world and a.forest and a.copied)
"""What a world node's slot takes from the world when it is created (`_add_world_node`)."""


def rows_type(type_name: str, arrays: Sequence[NodeArray], module: str) -> Any:
    """A named tuple with one field per array, in order: the record a kernel takes
    (numba reads a named tuple natively; ``F.u[v]``)."""
    return collections.namedtuple(type_name, [a.name for a in arrays], module=module)


def allocate(arrays: Sequence[NodeArray], nodes: tuple[int, ...], events: tuple[int, ...] = ()
             ) -> dict[str, np.ndarray]:
    """Each array filled with its empty value: shape ``nodes``, or ``events`` for a script
    array."""
    return {a.name: np.full(events if a.per_event else nodes, a.empty, dtype=a.dtype)
            for a in arrays}
