"""How numbers and counts are written, everywhere: CLI tables, reports, the dashboard.

One precision policy: three significant digits. An interval is written with the
resolution of its mean (``0.0989 [0.0907, 0.1080]``), so the columns of a table line up;
a missing or undefined value is a dash, never ``NaN``.

>>> interval(0.09888, 0.09068, 0.108)
'0.0989 [0.0907, 0.1080]'
>>> interval(5528.0, 5311.0, 5741.0)
'5,530 [5,310, 5,740]'
>>> interval(float("nan"), float("nan"), float("nan"))
'–'
>>> plural(1, "point"), plural(3, "point")
('1 point', '3 points')
"""

from __future__ import annotations

import math
from collections.abc import Iterable

DIGITS = 3
"""Significant digits of every number shown."""
MISSING = "–"
"""What a missing or undefined (NaN) value is shown as."""


def _finite(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def _exponent(x: float, digits: int) -> int:
    """The power of ten of the last significant digit of ``x`` (after rounding)."""
    rounded = float(f"{x:.{digits - 1}e}")  # 0.09996 -> 0.1, so the exponent is -3
    return math.floor(math.log10(abs(rounded))) - (digits - 1)


def _at(x: float, exponent: int, sign: bool) -> str:
    """``x`` rounded to ``10**exponent``, with thousands separators."""
    decimals = max(-exponent, 0)
    value = round(x, -exponent) if exponent > 0 else x
    text = f"{value:{'+' if sign else ''},.{decimals}f}"
    if float(text.replace(",", "")) == 0:  # no "-0.00" or "+0.00"
        text = f"{0.0:.{decimals}f}"
    return text


def num(x: float | int | None, digits: int = DIGITS, sign: bool = False) -> str:
    """``x`` to ``digits`` significant digits (``sign``: always a + or − sign)."""
    if not _finite(x):
        return MISSING
    assert isinstance(x, int | float)
    if x == 0:
        return "0"
    if abs(x) < 1e-4:  # too small for decimals to stay readable
        return f"{x:{'+' if sign else ''}.{digits - 1}e}"
    return _at(float(x), _exponent(float(x), digits), sign)


def interval(mean: float | None, low: float | None, high: float | None,
             digits: int = DIGITS, sign: bool = False) -> str:
    """``mean [low, high]``, the bounds at the mean's resolution; the mean alone when the
    interval is missing or a single point, a dash when the mean is missing."""
    if not _finite(mean):
        return MISSING
    assert isinstance(mean, int | float)
    if not (_finite(low) and _finite(high)) or low == high == mean:
        return num(mean, digits, sign)
    assert isinstance(low, int | float) and isinstance(high, int | float)
    scale = max((abs(v) for v in (mean, low, high) if v != 0), default=0.0)
    if scale == 0 or (mean != 0 and abs(mean) < 1e-4):
        return f"{num(mean, digits, sign)} [{num(low, digits, sign)}, {num(high, digits, sign)}]"
    e = _exponent(float(mean if mean != 0 else scale), digits)
    return f"{_at(mean, e, sign)} [{_at(low, e, sign)}, {_at(high, e, sign)}]"


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """``" (did you mean 'wmt'?)"`` for the closest of ``choices`` to a mistyped ``word``,
    or ``""`` when none is close (difflib's ratio ≥ 0.6).

    >>> did_you_mean("paper_poisonin", ["gaia_like", "paper_poisoning"])
    " (did you mean 'paper_poisoning'?)"
    >>> did_you_mean("zzz", ["wmt"])
    ''
    """
    import difflib

    close = difflib.get_close_matches(str(word), list(choices), n=2, cutoff=0.6)
    if not close:
        return ""
    return " (did you mean " + " or ".join(repr(c) for c in close) + "?)"


def plural(n: int, word: str, many: str | None = None) -> str:
    """``"1 point"``, ``"2 points"`` (``many``: the plural when it is not word + s)."""
    return f"{n} {word if n == 1 else (many or word + 's')}"


D3_FORMAT = f",.{DIGITS}~r"
"""The same policy as a d3 format string, for chart axes and legends (Vega-Lite): three
significant digits, thousands separators, no trailing zeros, so an all-zero axis reads
``0``, never ``0.000000``."""
