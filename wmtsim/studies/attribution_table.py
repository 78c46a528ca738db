"""The table `wmtsim attribute` prints: per metric and mechanism, the Shapley
contribution, its interval and its test (`wmtsim.studies.attribution`)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import polars as pl

if TYPE_CHECKING:
    from wmtsim.studies.attribution import Attribution


def render_table(att: Attribution) -> Any:
    """A rich table: per metric and mechanism, the contribution and its interval."""
    from rich.table import Table

    t = Table(title=f"{att.scenario}: {att.from_policy} → {att.to_policy}, n={att.n}, "
                    f"seed={att.seed}, {att.method} Shapley over {len(att.players)} "
                    f"switches ({att.runs} configurations run)", title_justify="left")
    t.caption = ("p (Holm): is the contribution nonzero? paired t-test, or the exact "
                 "permutation test when few trajectories carry a nonzero one; Holm over "
                 "every (metric, mechanism) row, two-sided 5%")
    for col in ("metric", "mechanism", "contribution", "95% interval", "p (Holm)", "n"):
        t.add_column(col, justify="left" if col in ("metric", "mechanism") else "right")
    for metric in att.table["metric"].unique(maintain_order=True).to_list():
        rows = att.table.filter(pl.col("metric") == metric)
        first = rows.row(0, named=True)
        t.add_row(metric, f"{att.from_policy} (mean)", _g(first["from_mean"]), "", "",
                  str(first["n"]), style="dim")
        for r in rows.iter_rows(named=True):
            se = "" if math.isnan(r["perm_se"]) else f" ±{_g(r['perm_se'])} (orders)"
            k = r["n_nonzero"]
            ci = (_none_nonzero(r) if k == 0 else
                  f"[{_g(r['low'])}, {_g(r['high'])}]{se}" + (f" ({k} nonzero)" if k < 10
                                                              else ""))
            p = r["p_holm"]
            t.add_row("", r["mechanism"], f"{r['contribution']:+.4g}", ci,
                      ("[bold]" + _g(p) + "[/bold]") if p <= 0.05 else _g(p), "")
        t.add_row("", f"{att.to_policy} (mean)", _g(first["to_mean"]), "", "",
                  "", style="dim", end_section=True)
    return t


def _g(x: float) -> str:
    return "–" if x is None or not math.isfinite(x) else f"{x:.4g}"


def _none_nonzero(r: dict[str, Any]) -> str:
    """A contribution no trajectory carries: its upper bound, labelled as one (the rule of
    three: ``high`` for a bounded metric, else the share of trajectories), no interval."""
    if r["high"] is not None and math.isfinite(r["high"]) and r["high"] > 0:
        return f"none of {r['n']} nonzero; 95% upper bound {_g(r['high'])} (rule of three)"
    return (f"none of {r['n']} nonzero; ≤ {3 / r['n']:.2g} of them would be at 95% (rule "
            "of three)")
