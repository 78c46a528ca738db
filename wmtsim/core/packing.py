"""Knob classes packed for the kernels: one numpy record per dataclass, built from its fields.

numba reads a numpy record natively and passes it by reference, so a kernel reads
``p.rho``, ``sw.scores`` or ``bl.recall_k`` and the fields of the record are the
dataclass's fields, in their order, written once, in the dataclass: there is no slot
constant to keep in step with it. Every value is packed as one numpy scalar type
(``float64`` for knobs, ``int64`` for switches). (A named tuple would read the same, but
numba passes a tuple by value: copying some hundred knobs into every kernel call made
the step loop 20-50% slower.)

- a ``(lo, hi)`` range knob packs as two values, ``<name>_min`` and ``<name>_max``;
- a choice knob packs as its index in the knob's ``choices``;
- a string field that is not a knob (a name, a label) and a field named in ``skip`` are
  not packed.

`slots` numbers a list of names for an array the kernels index (the counters:
``out[C.h_p]``), so its positions too are derived from the one list.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable, Sequence
from dataclasses import fields
from typing import Any

import numpy as np

from wmtsim.core.knobs import Knob


def _spec(f: Any) -> Knob | None:
    spec = f.metadata.get("knob")
    return spec if isinstance(spec, Knob) else None


def _packed_fields(cls: type, skip: Iterable[str]) -> list[tuple[str, Knob | None]]:
    """(field name, knob declaration) of every packed field of ``cls``, in field order."""
    skipped = set(skip)
    out = []
    for f in fields(cls):
        spec = _spec(f)
        if f.name in skipped or (spec is None and f.type in ("str", str)):
            continue
        out.append((f.name, spec))
    return out


def packed_names(cls: type, skip: Iterable[str] = (), extra: Sequence[str] = ()
                 ) -> tuple[str, ...]:
    """The names of ``cls``'s packed values, in field order (then ``extra``: derived)."""
    names: list[str] = []
    for name, spec in _packed_fields(cls, skip):
        if spec is not None and spec.kind == "int_range":
            names += [f"{name}_min", f"{name}_max"]
        else:
            names.append(name)
    return (*names, *extra)


def packed_type(cls: type, skip: Iterable[str] = (), extra: Sequence[str] = (),
                scalar: Any = np.float64) -> np.dtype:
    """The record type ``cls.pack()`` returns: one ``scalar`` field per packed value."""
    return np.dtype([(name, scalar) for name in packed_names(cls, skip, extra)])


def pack_values(obj: Any, record: np.dtype, skip: Iterable[str] = (),
                extra: Sequence[Any] = ()) -> Any:
    """``obj``'s packed values as a numpy record of type ``record`` (`packed_type`);
    ``extra``: the derived values, last."""
    values: list[Any] = []
    for name, spec in _packed_fields(type(obj), skip):
        value = getattr(obj, name)
        if spec is not None and spec.kind == "int_range":
            values += [value[0], value[1]]
        elif spec is not None and spec.kind == "choice":
            values.append(spec.choices.index(value))
        else:
            values.append(value)
    row = np.array([(*values, *extra)], dtype=record)
    return np.rec.array(row)[0]


def as_array(record: Any) -> np.ndarray:
    """A packed record as a one-element array, for a parallel kernel (numba's parallel
    loop takes arrays, not records: the loop body reads ``a[0]``, a record again)."""
    return np.array([record.item()], dtype=record.dtype)


def slots(type_name: str, names: Sequence[str], module: str) -> Any:
    """``names`` numbered 0, 1, ... as a named tuple (``C.h_p == 2``): the positions of
    an array's columns, derived from the one list of names."""
    return collections.namedtuple(type_name, names, module=module)(*range(len(names)))
