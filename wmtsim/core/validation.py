"""Small checks shared by every validated dataclass: errors name the field and the range.

Numbers may arrive as Python or numpy scalars (sweeps build them with numpy); `as_real`
and `as_int` accept both and return plain Python numbers, refusing bools, NaN and
infinities.

Integers without a stated upper bound are still bounded by `MAX_INT` (2^53): every knob
is packed into a float64 vector for the kernels, and 2^53 is the largest range in which
a float64 holds every integer exactly (a larger integer would be silently rounded, and
one beyond 1.8e308 cannot be converted at all).
"""

from __future__ import annotations

import math
import numbers
from typing import Any

MAX_INT = 2**53  # the implicit upper bound of every integer knob (exact in a float64)


class KnobError(ValueError):
    """A knob's value out of its declared range: ``<owner>.<name>=<value> is invalid;
    allowed: <text>``, with the parts kept as attributes (`owner`, `name`, `value`,
    `allowed`) so callers need not parse the message."""

    def __init__(self, owner: str, name: str, value: object, allowed: str):
        self.owner = owner
        self.name = name
        self.value = value
        self.allowed = allowed
        super().__init__(f"{owner}.{name}={value!r} is invalid; allowed: {allowed}")


def fail(owner: str, name: str, value: object, allowed: str) -> None:
    raise KnobError(owner, name, value, allowed)


def as_real(owner: str, name: str, value: object, lo: float = -math.inf,
            hi: float = math.inf, *, lo_open: bool = False, hi_open: bool = False,
            allowed: str | None = None) -> float:
    """A finite real in [lo, hi] (``lo_open``/``hi_open`` leave out an end), as a float."""
    text = allowed or f"{'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        fail(owner, name, value, text)
    v = float(value)  # type: ignore[arg-type]
    if math.isnan(v):
        fail(owner, name, value, f"{text} (NaN is not allowed)")
    if (not math.isfinite(v) or v < lo or v > hi or (lo_open and v == lo)
            or (hi_open and v == hi)):
        fail(owner, name, value, text)
    return v


def as_int(owner: str, name: str, value: object, lo: int = 0, hi: int | None = None) -> int:
    """An integer (not a bool, not a float) in [lo, hi] (hi defaults to `MAX_INT`)."""
    hi = MAX_INT if hi is None else hi
    text = f"an integer in [{lo}, {hi}]" if hi != MAX_INT else f"an integer in [{lo}, 2^53]"
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        fail(owner, name, value, text)
    v = int(value)  # type: ignore[call-overload]
    if v < lo or v > hi:
        fail(owner, name, value, text)
    return v


def check_real(owner: str, name: str, value: object, lo: float = -math.inf,
               hi: float = math.inf, *, lo_open: bool = False, allowed: str | None = None
               ) -> None:
    as_real(owner, name, value, lo, hi, lo_open=lo_open, allowed=allowed)


def check_int(owner: str, name: str, value: object, lo: int = 0, hi: int | None = None
              ) -> None:
    as_int(owner, name, value, lo, hi)


def check_int_range(owner: str, name: str, value: object, lo: int = 0,
                    hi: int = MAX_INT) -> None:
    """A pair (min, max) of integers with lo <= min <= max <= hi."""
    text = f"a pair [min, max] of integers with {lo} <= min <= max <= {hi:,}"
    if not isinstance(value, tuple | list) or len(value) != 2:
        fail(owner, name, value, text)
    pair: tuple[Any, ...] = tuple(value)  # type: ignore[arg-type]
    if any(isinstance(x, bool) or not isinstance(x, numbers.Integral) for x in pair):
        fail(owner, name, value, text)
    if not lo <= pair[0] <= pair[1] <= hi:
        fail(owner, name, value, text)
