"""Declarative knobs: each field of a knob dataclass declares its default, range and doc once.

    x: float = knob(0.15, lo=0.0, hi=10.0, doc="...")

`knob` returns a `dataclasses.field` whose metadata holds a `Knob`. From that one
declaration come the per-knob validation (`check_knobs`, with the error texts of
`wmtsim.core.validation`), the ``allowed:`` text of errors, and the knob's JSON Schema
(`Knob.schema`, with its numeric ranges). Rules between knobs stay explicit code in each
class's ``__post_init__``, after `check_knobs`.

The kind of a knob follows its default: a bool is ``true or false``, an int an integer in
[lo, hi], a float a finite real in [lo, hi], a pair of ints a range ``(min, max)``; a knob
with ``choices`` is one of those strings.
"""

from __future__ import annotations

import math
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, TypeVar

from wmtsim.core.validation import MAX_INT, as_int, as_real, check_int_range, fail

T = TypeVar("T")

KINDS = ("bool", "int", "real", "int_range", "choice")


@dataclass(frozen=True)
class Knob:
    """One knob's declaration: its kind, range (ends included unless open) and doc.

    ``allowed`` replaces the generated ``allowed:`` text of errors where the range reads
    better in words (e.g. ``[0, inf), finite``).
    """

    kind: str
    lo: float = -math.inf
    hi: float = math.inf
    lo_open: bool = False
    hi_open: bool = False
    allowed: str | None = None
    choices: tuple[str, ...] = ()
    doc: str = ""
    reads: tuple[str, ...] = ()

    def check(self, owner: str, name: str, value: object) -> object:
        """The value, validated (numbers come back as plain Python numbers)."""
        if self.kind == "bool":
            if not isinstance(value, bool):
                fail(owner, name, value, self.allowed or "true or false")
            return value
        if self.kind == "choice":
            if value not in self.choices:
                fail(owner, name, value, " | ".join(self.choices))
            return value
        if self.kind == "int":
            return as_int(owner, name, value, int(self.lo), int(self.hi))
        if self.kind == "int_range":
            check_int_range(owner, name, value, int(self.lo), int(self.hi))
            return value
        return as_real(owner, name, value, self.lo, self.hi, lo_open=self.lo_open,
                       hi_open=self.hi_open, allowed=self.allowed)

    def schema(self) -> dict[str, Any]:
        """The range as JSON Schema keywords (``minimum``, ``maximum``, ``enum``, ...)."""
        if self.kind == "choice":
            return {"enum": list(self.choices)}
        if self.kind == "bool":
            return {}
        bounds: dict[str, Any] = {}
        number: type = float if self.kind == "real" else int
        if math.isfinite(self.lo):
            bounds["exclusiveMinimum" if self.lo_open else "minimum"] = number(self.lo)
        if math.isfinite(self.hi):
            bounds["exclusiveMaximum" if self.hi_open else "maximum"] = number(self.hi)
        return bounds


def knob(default: Any = MISSING, *, lo: float | None = None, hi: float | None = None,
         lo_open: bool = False, hi_open: bool = False, allowed: str | None = None,
         choices: tuple[str, ...] = (), doc: str = "", reads: tuple[str, ...] = ()) -> Any:
    """A dataclass field declaring a knob (no ``default``: a required knob).

    Integers default to [0, `MAX_INT`], reals to the finite numbers. ``reads`` names the
    policies that read the knob, where it is declared (a field policy's own knob:
    `wmtsim.core.knob_readers` takes it from here; the other knobs' readers are traits
    of the policies' switches, declared in that module's table).
    """
    if choices:
        kind = "choice"
    elif isinstance(default, bool):
        kind = "bool"
    elif isinstance(default, int):
        kind = "int"
    elif isinstance(default, float):
        kind = "real"
    elif isinstance(default, tuple) and len(default) == 2:
        kind = "int_range"
    else:
        raise TypeError(f"no knob kind for default {default!r}")
    integral = kind in ("int", "int_range")
    spec = Knob(kind=kind,
                lo=(0 if integral else -math.inf) if lo is None else lo,
                hi=(MAX_INT if integral else math.inf) if hi is None else hi,
                lo_open=lo_open, hi_open=hi_open, allowed=allowed, choices=choices,
                doc=doc, reads=reads)
    return field(default=default, metadata={"knob": spec})


def knob_of(cls: type, name: str) -> Knob | None:
    """The declaration of field ``name`` of dataclass ``cls`` (None: not a knob)."""
    for f in fields(cls):
        if f.name == name:
            spec = f.metadata.get("knob")
            return spec if isinstance(spec, Knob) else None
    return None


def check_knobs(owner: str, obj: object) -> dict[str, object]:
    """Check every knob of dataclass instance ``obj`` in field order; the checked values.

    The first knob out of its range raises `KnobError` (a ValueError).
    """
    checked: dict[str, object] = {}
    for f in fields(obj):  # type: ignore[arg-type]
        spec = f.metadata.get("knob")
        if isinstance(spec, Knob):
            checked[f.name] = spec.check(owner, f.name, getattr(obj, f.name))
    return checked
