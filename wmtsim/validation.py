"""Small checks shared by every validated dataclass: errors name the field and the range."""

from __future__ import annotations

import math


def fail(owner: str, name: str, value: object, allowed: str) -> None:
    raise ValueError(f"{owner}.{name}={value!r} is invalid; allowed: {allowed}")


def check_real(owner: str, name: str, value: object, lo: float = -math.inf,
               hi: float = math.inf, *, lo_open: bool = False, allowed: str | None = None
               ) -> None:
    """A finite real in [lo, hi] (or (lo, hi] with ``lo_open``)."""
    text = allowed or f"{'(' if lo_open else '['}{lo:g}, {hi:g}]"
    if isinstance(value, bool) or not isinstance(value, int | float):
        fail(owner, name, value, text)
    v = float(value)  # type: ignore[arg-type]
    if math.isnan(v) or math.isinf(v) or v < lo or v > hi or (lo_open and v == lo):
        fail(owner, name, value, text)


def check_int(owner: str, name: str, value: object, lo: int = 0, hi: int | None = None
              ) -> None:
    """An integer (not a bool, not a float) in [lo, hi]."""
    text = f"an integer >= {lo}" if hi is None else f"an integer in [{lo}, {hi}]"
    if isinstance(value, bool) or not isinstance(value, int):
        fail(owner, name, value, text)
    if value < lo or (hi is not None and value > hi):  # type: ignore[operator]
        fail(owner, name, value, text)


def check_int_range(owner: str, name: str, value: object, lo: int = 0) -> None:
    """A pair (min, max) of integers with lo <= min <= max."""
    text = f"a pair [min, max] of integers with {lo} <= min <= max"
    if not isinstance(value, tuple | list) or len(value) != 2:
        fail(owner, name, value, text)
    a, b = value  # type: ignore[misc]
    if any(isinstance(x, bool) or not isinstance(x, int) for x in (a, b)) or not lo <= a <= b:
        fail(owner, name, value, text)
