"""Every ``pack()`` is a numpy record built from its dataclass's fields (issue 15 point 3,
issue 29 point 5).

The kernels read packed knobs by name (``p.budget``, ``st.top_k``, ``sw.scores``,
``bl.recall_k``); the names and their order come from the dataclass fields, so a field
added, removed or reordered cannot shift another. For each packed class: the record's
names are the fields (a range knob as ``_min`` / ``_max``), each holds its field's value,
all of one numpy type, and a change to one knob shows in its own values only.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

import wmtsim.core.field_knobs as field_knobs
import wmtsim.core.metrics as metrics
import wmtsim.core.params as params
import wmtsim.core.policies as policies
import wmtsim.core.stubs as stubs
import wmtsim.core.world_spec as world_spec
from wmtsim.core.knobs import knob_of

# Packed values derived from the knobs, not knobs themselves.
_DERIVED = {"ga_step_decay", "mb_forget_after"}
# Fields that are not packed (names and labels; the injections travel as their own matrix).
_UNPACKED = {"name", "label", "poison", "n_subtasks_p"}  # n_subtasks_p: an array of its own


def _poison_pack(spec: Any) -> Any:
    row = world_spec.WorldSpec(poison=(spec,)).pack()[1][0]
    names = world_spec.PZ._fields  # the columns, by name
    return np.rec.array(np.array([tuple(row)], dtype=[(n, np.float64) for n in names]))[0]


CASES = [
    (params.Params(), lambda o: o.pack(), np.float64),
    (stubs.Stubs(), lambda o: o.pack(), np.float64),
    (world_spec.WorldSpec(), lambda o: o.pack()[0], np.float64),
    (world_spec.PoisonSpec(kind=world_spec.POISON_KINDS[0]), _poison_pack, np.float64),
    (policies.POLICIES["wmt"], lambda o: o.pack(), np.int64),
    (field_knobs.Baselines(), lambda o: o.pack(), np.float64),
]
IDS = ["Params", "Stubs", "WorldSpec", "PoisonSpec", "Policy", "Baselines"]


def _names(obj: Any) -> dict[str, tuple[str, ...]]:
    """Field name -> the packed names that hold it."""
    out = {}
    for f in dataclasses.fields(obj):
        if f.name in _UNPACKED:
            continue
        spec = knob_of(type(obj), f.name)
        ranged = spec is not None and spec.kind == "int_range"
        out[f.name] = (f"{f.name}_min", f"{f.name}_max") if ranged else (f.name,)
    return out


def _packed_values(obj: Any, name: str) -> list[float]:
    value = getattr(obj, name)
    if isinstance(value, tuple):
        return [float(x) for x in value]
    if isinstance(value, str):
        spec = knob_of(type(obj), name)
        assert spec is not None
        return [float(spec.choices.index(value))]
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


@pytest.mark.parametrize(("obj", "pack", "dtype"), CASES, ids=IDS)
def test_pack_is_named_after_the_fields(obj: Any, pack: Any, dtype: Any) -> None:
    names = _names(obj)
    record = pack(obj)
    packed = [n for ns in names.values() for n in ns]
    fields = record.dtype.names
    assert [n for n in fields if n not in _DERIVED] == packed, "field order"
    assert all(record.dtype[n] == dtype for n in fields), "one numpy type"
    for name, ns in names.items():
        assert [float(getattr(record, n)) for n in ns] == _packed_values(obj, name), name
    # A change to one knob shows in its own value(s) only (derived values may follow).
    for name, ns in names.items():
        for value in _nudged(getattr(obj, name)):
            try:
                changed_obj = dataclasses.replace(obj, **{name: value})
                other = pack(changed_obj)
            except (ValueError, TypeError):
                continue
            changed = {n for n in fields
                       if getattr(other, n) != getattr(record, n)} - _DERIVED
            assert changed <= set(ns), f"{name} moved {sorted(changed)}, not {ns}"
            assert ([float(getattr(other, n)) for n in ns]
                    == _packed_values(changed_obj, name)), name
            break


def test_counter_columns_are_the_counter_list() -> None:
    assert metrics.C._fields == metrics.COUNTERS
    assert list(metrics.C) == list(range(metrics.N_COUNTERS))
    # Every metric's counters are declared counters.
    for m in metrics.DECLARED:
        assert set(m.num) | set(m.den) <= set(metrics.COUNTERS), m.name
