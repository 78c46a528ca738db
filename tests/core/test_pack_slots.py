"""Every ``pack()`` puts each knob in the slot its constant names (issue 15, point 3).

The kernels read packed vectors by constant (``p[P_BUDGET]``, ``st[ST_TOP_K]``, ...); a
field added, removed or reordered without its constant would shift every slot after it
silently. For each packed class: the slot constants are named after the fields, cover the
vector exactly once, and a change to one field moves that field's slot(s) only.
"""

from __future__ import annotations

import dataclasses
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import wmtsim.core.field_knobs as field_knobs
import wmtsim.core.params as params
import wmtsim.core.policies as policies
import wmtsim.core.stubs as stubs
import wmtsim.core.world_spec as world_spec
from wmtsim.engine.forest import Forest, ForestRows
from wmtsim.engine.world import WorldRows

# Fields packed under another name, or into two slots (a ``(min, max)`` range).
_RENAMED = {
    "n_subtasks": ("W_SUB_MIN", "W_SUB_MAX"),
    "nested_subtasks": ("W_NEST_MIN", "W_NEST_MAX"),
    "n_actions": ("W_ACT_MIN", "W_ACT_MAX"),
    "resume_actions": ("W_RESUME_MIN", "W_RESUME_MAX"),
    "apparent_relevance": ("PZ_APPARENT",),
    "persuasiveness": ("PZ_PERSUADE",),
}
# Fields that are not packed (names and labels; the injections travel as their own matrix).
_UNPACKED = {"name", "label", "poison"}
# Packed slots that are derived from the knobs, not knobs themselves.
_DERIVED = {"B_GA_STEP_DECAY", "B_MB_FORGET_AFTER"}
# Choice knobs packed as their index in a tuple of names.
_CHOICES = {"supersede_rule": world_spec.SUPERSEDE_RULES, "kind": world_spec.POISON_KINDS}


def _poison_pack(spec: Any) -> np.ndarray:
    return world_spec.WorldSpec(poison=(spec,)).pack()[1][0]


CASES = [
    (params.Params(), params, "P_", lambda o: o.pack()),
    (stubs.Stubs(), stubs, "ST_", lambda o: o.pack()),
    (world_spec.WorldSpec(), world_spec, "W_", lambda o: o.pack()[0]),
    (world_spec.PoisonSpec(kind=world_spec.POISON_KINDS[0]), world_spec, "PZ_", _poison_pack),
    (policies.POLICIES["wmt"], policies, "S_", lambda o: o.pack()),
    (field_knobs.Baselines(), field_knobs, "B_", lambda o: o.pack()),
]
IDS = ["Params", "Stubs", "WorldSpec", "PoisonSpec", "Policy", "Baselines"]


def _slots(obj: Any, module: ModuleType, prefix: str) -> dict[str, tuple[int, ...]]:
    """Field name → the slot constants' values, looked up by name in ``module``."""
    out = {}
    for f in dataclasses.fields(obj):
        if f.name in _UNPACKED:
            continue
        names = _RENAMED.get(f.name, (prefix + f.name.upper(),))
        for name in names:
            assert hasattr(module, name), f"{type(obj).__name__}.{f.name}: no {name}"
        out[f.name] = tuple(int(getattr(module, name)) for name in names)
    return out


def _packed_values(value: Any, name: str) -> list[float]:
    if isinstance(value, tuple):
        return [float(x) for x in value]
    if isinstance(value, str):
        return [float(_CHOICES[name].index(value))]
    return [float(value)]


def _nudged(value: Any) -> list[Any]:
    """Candidate other values for a knob (the first one validation accepts is used)."""
    if isinstance(value, bool | np.bool_):
        return [not value]
    if isinstance(value, int | np.integer):
        return [value + 1, value - 1]
    if isinstance(value, float):
        return [value * 0.9 + 0.05, value * 0.5, value + 1.0]
    if isinstance(value, tuple) and len(value) == 2:
        return [(value[0], value[1] + 1), (value[0] + 1, value[1] + 1)]
    return []


@pytest.mark.parametrize(("obj", "module", "prefix", "pack"), CASES, ids=IDS)
def test_pack_slots_match_field_names(obj: Any, module: ModuleType, prefix: str,
                                      pack: Any) -> None:
    slots = _slots(obj, module, prefix)
    vector = pack(obj)
    derived = [int(getattr(module, d)) for d in _DERIVED if prefix == "B_"]
    covered = sorted([s for ss in slots.values() for s in ss] + derived)
    assert covered == list(range(len(vector))), "slot constants must cover pack() once"
    for name, ss in slots.items():
        assert [float(vector[s]) for s in ss] == _packed_values(getattr(obj, name), name), name
    # A change to one knob shows in its own slot(s) only (defaults may coincide).
    for name, ss in slots.items():
        for value in _nudged(getattr(obj, name)):
            try:
                other = pack(dataclasses.replace(obj, **{name: value}))
            except (ValueError, TypeError):
                continue
            changed = {int(k) for k in np.flatnonzero(other != vector)} - set(derived)
            assert changed <= set(ss), f"{name} moved slots {sorted(changed)}, not {ss}"
            assert [float(other[s]) for s in ss] == _packed_values(value, name), name
            break


def test_named_rows_carry_the_container_field_names() -> None:
    forest = [f.name for f in dataclasses.fields(Forest)]
    assert list(ForestRows._fields) == forest[: len(ForestRows._fields)]
    assert set(forest) - set(ForestRows._fields) == {"slot_of", "n_slots", "active"}
    world = [f.name for f in dataclasses.fields(world_spec.World)]
    assert set(WorldRows._fields) <= set(world)
    assert set(world) - set(WorldRows._fields) == {
        "seed", "start", "spec", "n_nodes", "n_events", "n_injected"}
    # The positional constants the world module still exports agree with the named rows.
    for k, name in enumerate(WorldRows._fields):
        short = {"persuasiveness": "PERS"}.get(name, name.upper())
        assert getattr(world_spec, "WR_" + short) == k
