"""The shipped "why" study: ``python -m why_study.run`` (``make study``).

1. Mechanism attribution (`wmtsim.studies.attribution.attribution`) of Full WMT against Linear and
against
   A2 on ``paper_poisoning`` and ``gaia_like`` (n = 2000, seed 0, exact Shapley values).
2. Claims maps (`wmtsim.studies.compare.claims`) of Table 4's claims over detection × persuasiveness
   (why_study/claims_detection.toml) and selector noise × poison boost
   (why_study/claims_noise.toml), on the sweep machinery.

Writes every table to why_study/tables/ (Parquet), every figure to docs/figures/ (PNG,
and HTML beside the tables), and rewrites the generated blocks of docs/findings.md
(between ``<!-- generated:NAME -->`` and ``<!-- /generated:NAME -->``), so the numbers
in the findings are always the ones the current engine gives. Options: ``--n``,
``--claims-n`` (smaller sizes for a quick look), ``--workers``.
"""

from __future__ import annotations

import argparse
import math
import re
import shutil
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl

from wmtsim.core.inference import ALPHA, FAILS, HOLDS, SPARSE, VERDICTS

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "why_study" / "tables"
FIGURES = REPO / "docs" / "figures"
FINDINGS = REPO / "docs" / "findings.md"

ATTRIBUTIONS = (
    ("paper_poisoning", "linear", "wmt", ("asr", "prr", "br", "tsr", "prompt_tokens")),
    ("paper_poisoning", "a2_no_controller", "wmt", ("asr", "prr", "br", "tsr",
                                                    "prompt_tokens")),
    ("gaia_like", "linear", "wmt", ("tsr", "accuracy", "prompt_tokens")),
    ("gaia_like", "a2_no_controller", "wmt", ("tsr", "accuracy", "prompt_tokens")),
)
CLAIMS_MAPS = ("claims_detection", "claims_noise")


def _fmt(x: float) -> str:
    if x is None or not math.isfinite(x):
        return "–"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    return f"{x:.3f}"


def _fmt_signed(x: float) -> str:
    if x is None or not math.isfinite(x):
        return "–"
    if x == 0:
        return "0"
    return f"{x:+,.0f}" if abs(x) >= 100 else f"{x:+.3g}"


def attribution_markdown(table: pl.DataFrame) -> str:
    """Rows = mechanisms, columns = metrics: contribution [95% interval]."""
    metrics = table["metric"].unique(maintain_order=True).to_list()
    first = table.row(0, named=True)
    lines = ["| | " + " | ".join(metrics) + " |", "|---|" + "---|" * len(metrics)]
    by = {(r["metric"], r["mechanism"]): r for r in table.iter_rows(named=True)}
    ends = {m: table.filter(pl.col("metric") == m).row(0, named=True) for m in metrics}
    lines.append(f"| {first['from_policy']} (mean) | "
                 + " | ".join(_fmt(ends[m]["from_mean"]) for m in metrics) + " |")
    for mech in table["mechanism"].unique(maintain_order=True).to_list():
        cells = []
        for m in metrics:
            r = by[(m, mech)]
            if r.get("n_nonzero", 1) == 0:
                cells.append(f"0 (none of {r['n']} nonzero)")
                continue
            if math.isfinite(r["low"]) and math.isfinite(r["high"]):
                cell = (f"{_fmt_signed(r['contribution'])} "
                        f"[{_fmt_signed(r['low'])}, {_fmt_signed(r['high'])}]")
            else:  # a sparse effect on an unbounded metric: the exact test alone
                cell = f"{_fmt_signed(r['contribution'])} (no interval; exact test)"
            if r.get("n_nonzero", SPARSE) < SPARSE:
                cell += f" ({r['n_nonzero']} nonzero)"
            if _significant(r):
                cell = f"**{cell}**"
            cells.append(cell)
        lines.append(f"| {mech} | " + " | ".join(cells) + " |")
    lines.append(f"| {first['to_policy']} (mean) | "
                 + " | ".join(_fmt(ends[m]["to_mean"]) for m in metrics) + " |")
    return "\n".join(lines)


def _significant(r: dict[str, Any]) -> bool:
    """Holm-corrected over the table's (metric, mechanism) rows, two-sided 5%."""
    return bool(r["p_holm"] <= ALPHA)


def attribution_sentences(table: pl.DataFrame) -> str:
    """Per metric: the difference, and the mechanisms whose contribution is significant
    (`_significant`: Holm over the table, 5%), largest first, each with whether it
    improves or worsens the metric."""
    from wmtsim.studies.attribution.attribution import _effect

    out = []
    for m in table["metric"].unique(maintain_order=True).to_list():
        t = table.filter(pl.col("metric") == m)
        r0 = t.row(0, named=True)
        diff = r0["to_mean"] - r0["from_mean"]
        sig = sorted((r for r in t.iter_rows(named=True) if _significant(r)),
                     key=lambda r: -abs(r["contribution"]))
        parts = [f"{r['mechanism']} {_fmt_signed(r['contribution'])} "
                 f"({_effect(m, r['contribution'])})" for r in sig]
        out.append(f"- **{m}**: {r0['from_policy']} {_fmt(r0['from_mean'])} → "
                   f"{r0['to_policy']} {_fmt(r0['to_mean'])} ({_fmt_signed(diff)}); "
                   + ("; ".join(parts) if parts else "no mechanism is significant "
                      "(Holm, 5%)")
                   + ".")
    return "\n".join(out)


def claims_markdown(table: pl.DataFrame, x: str, y: str) -> str:
    """Per claim: cells per verdict, and the knob levels at which it holds (or fails)
    significantly in every cell."""
    lines = ["| claim | " + " | ".join(VERDICTS) + " | holds (significant) at every "
             "level of | fails (significant) at every level of |",
             "|---|" + "---|" * (len(VERDICTS) + 2)]
    for claim in table["claim"].unique(maintain_order=True).to_list():
        t = table.filter(pl.col("claim") == claim)
        counts = [str(int((t["status"] == v).sum())) for v in VERDICTS]
        lines.append(f"| {claim} | " + " | ".join(counts)
                     + f" | {_where(t, x, y, HOLDS)} | {_where(t, x, y, FAILS)} |")
    return "\n".join(lines)


def _where(t: pl.DataFrame, x: str, y: str, status: str) -> str:
    """``x = a, b`` / ``y = c``: the knob levels where every cell has ``status``."""
    if (t["status"] == status).all():
        return "every cell"
    parts = []
    for knob in (x, y):
        levels = (t.group_by(knob).agg(pl.col("status").eq(status).all().alias("all"))
                  .filter(pl.col("all")).sort(knob)[knob].to_list())
        if levels:
            parts.append(f"{knob} = {', '.join(f'{v:.3g}' for v in levels)}")
    return "; ".join(parts) or "–"


def replace_block(text: str, name: str, body: str) -> str:
    """Replace the generated block ``name`` of ``text`` (it must exist)."""
    pattern = re.compile(rf"(<!-- generated:{re.escape(name)} -->\n).*?(<!-- /generated:"
                         rf"{re.escape(name)} -->)", re.S)
    if not pattern.search(text):
        raise SystemExit(f"{FINDINGS}: no generated block {name!r}")
    return pattern.sub(lambda m: m.group(1) + body.rstrip() + "\n" + m.group(2), text)


def main(argv: list[str] | None = None) -> None:
    from wmtsim import __version__
    from wmtsim.studies.attribution.attribution import attribute, waterfall_chart
    from wmtsim.studies.compare.claims import claims_map, heatmap_chart, table4_claims
    from wmtsim.studies.scenarios.scenario import load_scenario
    from wmtsim.studies.sweeps.analysis import write_chart
    from wmtsim.studies.sweeps.sweep import load_sweep

    ap = argparse.ArgumentParser(prog="python -m why_study.run", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=2000, help="trajectories per attribution")
    ap.add_argument("--claims-n", type=int, default=None,
                    help="trajectories per claims-map cell (default: the sweep file's)")
    ap.add_argument("--workers", type=int, default=1, help="sweep worker processes")
    ap.add_argument("--only", choices=("attribution", "claims"), default=None,
                    help="regenerate one half of the study (default: both)")
    args = ap.parse_args(argv)

    RESULTS.mkdir(parents=True, exist_ok=True)
    FIGURES.mkdir(parents=True, exist_ok=True)
    text = FINDINGS.read_text(encoding="utf-8")
    timings = []
    for scenario, p, q, metrics in ATTRIBUTIONS if args.only != "claims" else ():
        name = f"why_{scenario}_{p}_{q}"
        att = attribute(load_scenario(scenario), p, q, metrics=metrics, n=args.n, seed=0)
        att.table.write_parquet(RESULTS / f"{name}.parquet")
        att.coalitions.write_parquet(RESULTS / f"{name}_coalitions.parquet")
        write_chart(waterfall_chart(att.table, f"{scenario}: {p} → {q} (n={att.n})"),
                    FIGURES / name)
        (FIGURES / f"{name}.html").replace(RESULTS / f"{name}.html")
        body = (f"![{scenario}: {p} → {q}](figures/{name}.png)\n\n"
                f"{attribution_markdown(att.table)}\n\n{attribution_sentences(att.table)}")
        text = replace_block(text, name, body)
        timings.append(f"| attribute {scenario} {p} → {q} | {len(att.players)} | "
                       f"{att.coalitions.height} | {att.runs} | {att.seconds:.1f} s |")
        print(f"{name}: {att.runs} configurations, {att.seconds:.1f} s")
    for name in CLAIMS_MAPS if args.only != "attribution" else ():
        sweep = load_sweep(REPO / "why_study" / f"{name}.toml")
        if args.claims_n is not None:
            sweep = replace(sweep, trajectories=args.claims_n)
        out = REPO / "results" / "studies" / name
        shutil.rmtree(out, ignore_errors=True)  # the study always runs the current engine
        t0 = time.perf_counter()
        cm = claims_map(sweep, out, table4_claims(), workers=args.workers)
        seconds = time.perf_counter() - t0
        cm.table.write_parquet(RESULTS / f"{name}.parquet")
        x, y = cm.parameters
        write_chart(heatmap_chart(cm.table, x, y, f"{cm.scenario}: where Table 4's claims "
                                  f"hold (n={sweep.trajectories} per cell)"),
                    FIGURES / name)
        (FIGURES / f"{name}.html").replace(RESULTS / f"{name}.html")
        body = (f"![{name}](figures/{name}.png)\n\n{claims_markdown(cm.table, x, y)}")
        text = replace_block(text, name, body)
        cells = cm.table["row"].n_unique()
        timings.append(f"| claims {name} ({cells} cells × {len(sweep.policies)} "
                       f"configurations, n = {sweep.trajectories}) | – | – | "
                       f"{cells * len(sweep.policies)} | {seconds:.1f} s |")
        print(f"{name}: {cells} cells, {seconds:.1f} s")
    timing_table = ("| run | switches | coalitions | configurations run | time |\n"
                    "|---|---|---|---|---|\n" + "\n".join(timings))
    if args.only is None:  # a partial run leaves the record of the last whole one
        text = replace_block(text, "provenance", (
            f"Generated by `make study` (`python -m why_study.run --n {args.n}`) with wmtsim "
            f"{__version__}, seed 0, attribution n = {args.n}.\n\n{timing_table}"))
    FINDINGS.write_text(text, encoding="utf-8")
    print(f"wrote {FINDINGS.relative_to(REPO)}, {FIGURES.relative_to(REPO)}/, "
          f"{RESULTS.relative_to(REPO)}/")


if __name__ == "__main__":
    main()
