"""The per-node arrays come from one declaration (`wmtsim.core.node_arrays`): the
containers, the named rows, the allocations and every writer of a slot follow it."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from wmtsim.core.codes import SUMMARY
from wmtsim.core.node_arrays import COPIED, FOREST_ARRAYS, WORLD_ARRAYS, NodeArray
from wmtsim.core.world_spec import World
from wmtsim.engine.forest import Forest, ForestRows, _add_summary, _add_world_node
from wmtsim.engine.world import WorldRows, _empty_arrays
from wmtsim.twins.reference import Node
from wmtsim.twins.stubs_reference import Facts


def names(arrays: tuple[NodeArray, ...]) -> list[str]:
    return [a.name for a in arrays]


def test_containers_and_rows_follow_the_declaration() -> None:
    forest = [f.name for f in dataclasses.fields(Forest)]
    assert forest == [*names(FOREST_ARRAYS), "slot_of", "n_slots", "active"]
    assert list(ForestRows._fields) == names(FOREST_ARRAYS)
    world = [f.name for f in dataclasses.fields(World)]
    assert world == ["seed", "start", "spec", *names(WORLD_ARRAYS),
                     "n_nodes", "n_events", "n_injected"]
    assert list(WorldRows._fields) == names(WORLD_ARRAYS)


def test_allocations_hold_each_arrays_dtype_and_empty_value() -> None:
    forest = Forest.allocate(2, 5, 3)
    for a in FOREST_ARRAYS:
        x = getattr(forest, a.name)
        assert x.shape == (2, 5) and x.dtype == a.dtype and (x == a.empty).all(), a.name
    world = _empty_arrays(2, 4, 6)
    for a in WORLD_ARRAYS:
        x = getattr(world, a.name)
        assert x.shape == ((2, 6) if a.per_event else (2, 4)), a.name
        assert x.dtype == a.dtype and (x == a.empty).all(), a.name


def test_the_twin_holds_every_per_slot_property() -> None:
    """Each forest array is a field of the twin's `Node` or `Facts` (``leak``: the twin
    keeps a summary's absorbed memories instead, `Facts.absorbed`)."""
    twin = {f.name for f in dataclasses.fields(Node)} | {f.name for f in dataclasses.fields(Facts)}
    assert set(names(FOREST_ARRAYS)) - twin == {"leak"}


def _sentinel(a: NodeArray, which: int) -> Any:
    """Two different values per dtype: a slot a writer sets holds the same value after
    it whatever the slot held before; one it leaves out keeps the sentinel."""
    if a.dtype is np.bool_:
        return bool(which)
    return (7, 9)[which] + (0.5 if a.dtype is np.float64 else 0)


def _forest(which: int) -> Any:
    F = Forest.allocate(1, 4, 4).row(0)
    for a in FOREST_ARRAYS:
        getattr(F, a.name)[:] = _sentinel(a, which)
    return F


def _world() -> Any:
    """One trajectory's world row whose node 2 differs from both sentinels everywhere."""
    W = _empty_arrays(1, 4, 4)
    for k, a in enumerate(WORLD_ARRAYS):
        value = True if a.dtype is np.bool_ else 20 + k + (0.25 if a.dtype is np.float64 else 0)
        getattr(W, a.name)[0, 2] = value
    return WorldRows._make(x[0] for x in W)


WRITERS: dict[str, Callable[[Any, Any], None]] = {
    "_add_world_node": lambda F, W: _add_world_node(
        F, np.full(4, -1, np.int32), W, np.int64(3), np.int64(2), np.int64(0), 0.5,
        np.int64(1)),
    "_add_summary": lambda F, W: _add_summary(
        F, np.int64(3), np.int64(0), np.int64(1), np.int64(1), 0.7, 0.5, np.int64(1)),
}


@pytest.mark.parametrize("writer", list(WRITERS))
def test_every_writer_sets_every_forest_array(writer: str) -> None:
    """A writer of a new slot (a world node's, also a promoted conversation summary's;
    a policy's summary) sets every declared per-slot array: a new array left out of a
    writer fails here."""
    W = _world()
    first, second = _forest(0), _forest(1)
    WRITERS[writer](first, W)
    WRITERS[writer](second, W)
    unset = [a.name for a in FOREST_ARRAYS
             if getattr(first, a.name)[3] != getattr(second, a.name)[3]]
    assert unset == [], f"{writer} leaves these arrays as they were: {unset}"


def test_a_world_nodes_slot_takes_its_static_properties() -> None:
    W = _world()
    F = _forest(0)
    WRITERS["_add_world_node"](F, W)
    for name in COPIED:
        assert getattr(F, name)[3] == getattr(W, name)[2], name
    assert F.wid[3] == 2 and F.kind[3] == W.kind[2]


def test_a_summary_starts_clean() -> None:
    F = _forest(1)
    WRITERS["_add_summary"](F, _world())
    assert F.kind[3] == SUMMARY and F.wid[3] == -1
    assert not F.poisoned[3] and not F.evidence[3] and not F.rider[3]
    assert F.persuasiveness[3] == 0.0 and F.tokens[3] == 0 and F.leak[3] == 0
