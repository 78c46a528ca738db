"""The table `wmtsim attribute` prints: per metric and mechanism, the Shapley
contribution, its interval and its test (`wmtsim.studies.attribution.attribution`)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import polars as pl

if TYPE_CHECKING:
    from wmtsim.studies.attribution.attribution import Attribution


def render_table(att: Attribution) -> Any:
    """A rich table: per metric and mechanism, the contribution and its interval, each
    metric's contributions at one resolution (three significant digits of its largest:
    `wmtsim.core.formatting`), an interval never broken across lines, a mechanism's name
    never cut, p below 0.0001 as "< 0.0001"."""
    from rich.table import Table

    from wmtsim.core.formatting import num

    t = Table(title=f"{att.scenario}: {att.from_policy} → {att.to_policy}, n={att.n}, "
                    f"seed={att.seed}, {att.method} Shapley over {len(att.players)} "
                    f"switches ({att.runs} configurations run)", title_justify="left")
    t.caption = ("p (Holm): is the contribution nonzero? paired t-test, or the exact "
                 "permutation test when few trajectories carry a nonzero one; Holm over "
                 "every (metric, mechanism) row, two-sided 5%")
    rows_out: list[tuple[str, ...]] = []
    styles: list[tuple[str | None, bool]] = []
    for metric in att.table["metric"].unique(maintain_order=True).to_list():
        rows = att.table.filter(pl.col("metric") == metric)
        first = rows.row(0, named=True)
        e = _resolution(rows["contribution"].to_list())
        rows_out.append((metric, f"{att.from_policy} (mean)", num(first["from_mean"]), "",
                         "", str(first["n"])))
        styles.append(("dim", False))
        for r in rows.iter_rows(named=True):
            se = "" if math.isnan(r["perm_se"]) else f" ±{_at(r['perm_se'], e, False)} (orders)"
            k = r["n_nonzero"]
            ci = (_none_nonzero(r) if k == 0 else
                  f"[{_at(r['low'], e)}, {_at(r['high'], e)}]{se}"
                  + (f" ({k} nonzero)" if k < 10 else ""))
            p = _p(r["p_holm"])
            rows_out.append(("", r["mechanism"], _at(r["contribution"], e), ci,
                             f"[bold]{p}[/bold]" if r["p_holm"] <= 0.05 else p, ""))
            styles.append((None, False))
        rows_out.append(("", f"{att.to_policy} (mean)", num(first["to_mean"]), "", "", ""))
        styles.append(("dim", True))
    # Held whole when the terminal is narrow: a metric, an interval, every word of a name.
    intervals = [len(c[3].split("]")[0]) + 1 for c in rows_out if c[3].startswith("[")]
    words = [len(w) for c in rows_out for w in c[1].split()]
    # "Shapley" heads the contributions: at 80 columns every header fits whole.
    for k, col in enumerate(("metric", "mechanism", "Shapley", "95% interval",
                             "p (Holm)", "n")):
        t.add_column(col, justify="left" if col in ("metric", "mechanism") else "right",
                     min_width={0: max((len(c[0]) for c in rows_out), default=None),
                                1: max(words, default=None),
                                3: max(intervals, default=None)}.get(k))
    for cells, (style, end) in zip(rows_out, styles, strict=True):
        t.add_row(*cells, style=style, end_section=end)
    return t


def _resolution(values: list[float]) -> int | None:
    """The power of ten of the last of three significant digits of the largest finite
    value (None when every value is 0 or undefined)."""
    from wmtsim.core.formatting import DIGITS, _exponent

    top = max((abs(v) for v in values if v is not None and math.isfinite(v)), default=0.0)
    return _exponent(top, DIGITS) if top > 0 else None


def _at(x: float | None, exponent: int | None, sign: bool = True) -> str:
    """``x`` at a metric's resolution: exactly 0 as "0", "–" when undefined."""
    from wmtsim.core.formatting import _at as at
    from wmtsim.core.formatting import num

    if x is None or not math.isfinite(x):
        return "–"
    if x == 0:
        return "0"
    return num(x, sign=sign) if exponent is None else at(x, exponent, sign)


def _p(p: float | None) -> str:
    """A p-value: two significant digits, "< 0.0001" below that (no 6.4e-37)."""
    from wmtsim.core.formatting import num

    if p is None or not math.isfinite(p):
        return "–"
    return "< 0.0001" if p < 1e-4 else num(p, 2)


def _none_nonzero(r: dict[str, Any]) -> str:
    """A contribution no trajectory carries: its upper bound, labelled as one (the rule of
    three: ``high`` for a bounded metric, else the share of trajectories), no interval."""
    from wmtsim.core.formatting import num

    if r["high"] is not None and math.isfinite(r["high"]) and r["high"] > 0:
        return f"none of {r['n']} nonzero; 95% upper bound {num(r['high'])} (rule of three)"
    return (f"none of {r['n']} nonzero; ≤ {3 / r['n']:.2g} of them would be at 95% (rule "
            "of three)")
