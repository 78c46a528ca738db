"""Regenerate the population-dynamics finding of docs/findings.md.

    python scripts/dynamics_findings.py            # n = 5000 per configuration
    python scripts/dynamics_findings.py --n 500    # a quick look (rewrites the block)

Runs Table 4's five configurations on ``paper_poisoning`` and ``global_poison`` with the
engine's population aggregates (`wmtsim.studies.dynamics.dynamics`, common random numbers) and
rewrites the generated block ``dynamics`` of docs/findings.md: when a poison leaves the
pool under each configuration (median lifetime with its interval), by which route (fate
shares, and how many steps after injection), and where over a task Full WMT's
contamination gap to A2 opens. The survival figure goes to
docs/figures/dynamics_survival_paper_poisoning.png.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))  # sibling: the one block writer
from doc_blocks import replace_block

ROOT = Path(__file__).resolve().parents[1]
FINDINGS = ROOT / "docs" / "findings.md"
FIGURE = ROOT / "docs" / "figures" / "dynamics_survival_paper_poisoning.png"
SCENARIOS = ("paper_poisoning", "global_poison")
ROUTES = ("superseded", "suppressed", "folded_clean", "laundered", "eligible_at_end",
          "dropped", "never_eligible")


def _steps(x: float) -> str:
    return "∞" if not math.isfinite(x) else f"{x:.0f}"


def _median(row: dict[str, float]) -> str:
    if not math.isfinite(row["median"]):
        return "never (S > 1/2 throughout)"
    return f"{_steps(row['median'])} [{_steps(row['median_low'])}, " \
           f"{_steps(row['median_high'])}]"


def scenario_section(rep: object, labels: dict[str, str]) -> list[str]:
    from wmtsim.studies.dynamics.dynamics import DynamicsReport

    assert isinstance(rep, DynamicsReport)
    life = rep.lifetimes.filter(pl.col("kind") == "all")
    fates = rep.fates.filter(pl.col("kind") == "all")
    spread = rep.spread
    lines = [f"**{rep.scenario}** (n = {rep.n:,} per configuration, seed {rep.seed}):", "",
             "| configuration | median lifetime, steps [95%] | "
             + " | ".join(r.replace("_", " ") for r in ROUTES)
             + " | contaminated prompts | … only through a summary |",
             "|---|---|" + "---|" * len(ROUTES) + "---|---|"]
    for p in rep.policies:
        f = {r["fate"]: r for r in fates.filter(pl.col("policy") == p).iter_rows(named=True)}
        cells = []
        for route in ROUTES:
            r = f.get(route)
            if r is None or r["poisons"] == 0:
                cells.append("–")
            else:
                cells.append(f"{r['share']:.0%} (k̄ {r['mean_k']:.1f})")
        s = spread.filter(pl.col("policy") == p).row(0, named=True)
        m = life.filter(pl.col("policy") == p).row(0, named=True)
        lines.append(f"| {labels[p]} | {_median(m)} | " + " | ".join(cells)
                     + f" | {s['contaminated_share']:.1%} | {s['summary_only_share']:.1%} |")
    # Where the gap to A2 opens: contaminated share per step index.
    steps = rep.steps
    if {"wmt", "a2_no_controller"} <= set(rep.policies):
        w = steps.filter(pl.col("policy") == "wmt")
        a = steps.filter(pl.col("policy") == "a2_no_controller")
        joined = w.join(a, on="step", suffix="_a2").filter(pl.col("prompts") >= 0.05 * rep.n)
        gap = joined.with_columns((pl.col("contaminated_share_a2")
                                   - pl.col("contaminated_share")).alias("gap"))
        shown = gap.filter(pl.col("step") % 2 == 0).head(8)
        lines += ["", "Contaminated prompts per step index (steps that ≥ 5% of trajectories "
                      "reach), Full WMT vs A2:", "",
                  "| step | " + " | ".join(str(s) for s in shown["step"]) + " |",
                  "|---|" + "---|" * shown.height,
                  "| A2 | " + " | ".join(f"{x:.0%}" for x in shown["contaminated_share_a2"])
                  + " |",
                  "| Full WMT | " + " | ".join(f"{x:.0%}" for x in shown["contaminated_share"])
                  + " |"]
        lines += ["", *bullets(rep, gap, labels)]
    return lines


def bullets(rep: object, gap: pl.DataFrame, labels: dict[str, str]) -> list[str]:
    """The statements the numbers support, written from them."""
    from wmtsim.studies.dynamics.dynamics import DynamicsReport

    assert isinstance(rep, DynamicsReport)
    f = rep.fates.filter((pl.col("kind") == "all") & (pl.col("policy") == "wmt")
                         & (pl.col("poisons") > 0)).sort("share", descending=True)
    out = []
    routes = "; ".join(f"{r['fate'].replace('_', ' ')} {r['share']:.0%} "
                       f"[{r['low']:.0%}, {r['high']:.0%}], on average {r['mean_k']:.1f} "
                       f"steps after injection" for r in f.iter_rows(named=True))
    out.append(f"* Full WMT's routes out, most common first: {routes}.")
    remains = rep.fates.filter((pl.col("kind") == "all")
                               & pl.col("fate").is_in(["eligible_at_end", "laundered"]))
    keep = {p: remains.filter(pl.col("policy") == p)["share"].sum() for p in rep.policies}
    out.append("* Poison still present at the end (eligible, or carried by an eligible "
               "summary: IP's P_r): " + ", ".join(f"{labels[p]} {keep[p]:.0%}"
                                                 for p in rep.policies) + ".")
    first = gap.filter(pl.col("gap") > 0.05)
    if first.height:
        g = first.row(0, named=True)
        peak = gap.sort("gap", descending=True).row(0, named=True)
        why = ("the advantage comes with the first removals, not at injection"
               if g["step"] <= 5 else "only late, in the long trajectories")
        out.append(f"* Full WMT's contaminated share per step falls more than 5 points below "
                   f"A2's first at step {g['step']} ({100 * g['gap']:.0f} points lower), "
                   f"most at step {peak['step']} ({100 * peak['gap']:.0f} points lower): "
                   f"{why}.")
    else:
        out.append("* Full WMT's contaminated share never falls more than 5 points below "
                   "A2's at any step index.")
    later = gap.filter(pl.col("gap") < -0.05)
    if later.height:
        g = later.row(0, named=True)
        worst = gap.sort("gap").row(0, named=True)
        s = rep.spread.filter(pl.col("policy") == "wmt").row(0, named=True)
        out.append(f"* Later it reverses: from step {g['step']} Full WMT's share is more "
                   f"than 5 points above A2's (most at step {worst['step']}, "
                   f"{-100 * worst['gap']:.0f} points higher); {s['summary_only_share']:.0%} "
                   "of Full WMT's "
                   "contaminated prompts come only through a summary, which A2 (no fold) "
                   "never has.")
    return out


def main(argv: list[str] | None = None) -> None:
    from wmtsim import __version__
    from wmtsim.core.output import atomic_write_bytes, atomic_write_text
    from wmtsim.core.policies import POLICIES, TABLE4_POLICIES
    from wmtsim.studies.dynamics.charts import survival_chart
    from wmtsim.studies.dynamics.dynamics import population_dynamics
    from wmtsim.studies.scenarios.scenario import load_scenario

    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=5000)
    args = ap.parse_args(argv)
    labels = {p: POLICIES[p].label for p in TABLE4_POLICIES}
    t0 = time.perf_counter()
    lines = [f"Generated by `python scripts/dynamics_findings.py --n {args.n}` with wmtsim "
             f"{__version__} (Table 4's configurations, seed 0; k̄: mean steps after "
             "injection at which the fate happened, for a poison still present, the end).",
             ""]
    for name in SCENARIOS:
        rep = population_dynamics(load_scenario(name), TABLE4_POLICIES, args.n, 0)
        lines += [*scenario_section(rep, labels), ""]
        if name == "paper_poisoning":
            import vl_convert as vlc

            chart = survival_chart(rep.survival, f"{name}: P(poison still remains)",
                                   kinds=["all", "failed", "plausible"])
            FIGURE.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(FIGURE, vlc.vegalite_to_png(chart.to_json(), scale=1.5))
    lines.append(f"Run time {time.perf_counter() - t0:.0f} s.")
    text = replace_block(FINDINGS.read_text(encoding="utf-8"), "dynamics",
                         "\n".join(lines) + "\n")
    atomic_write_text(FINDINGS, text)
    print(f"wrote {FINDINGS} (block dynamics) and {FIGURE}")


if __name__ == "__main__":
    main()
