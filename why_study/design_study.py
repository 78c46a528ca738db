"""The shipped design study: ``python -m why_study.design_study`` (part of ``make study``).

1. The screening atlas: `wmtsim.studies.sweeps.screen` (Morris, Full WMT, every WMT parameter of
   `wmtsim.studies.sweeps.knob_ranges`) on every shipped scenario. Writes
   why_study/tables/atlas.parquet, docs/figures/atlas.png and the generated table of
   docs/atlas.md.
2. The transfer study (the paper's limitation: "hand-specified initialization values,
   update rules, branch coefficients, and obsolescence thresholds may not transfer"):
   in each world, `wmtsim.studies.tune.tune` (NSGA-II) searches every WMT parameter, and the
   chosen Pareto points are validated on held-out seeds against the shipped setting
   (the paper's values). Writes why_study/tables/transfer_*.parquet,
   docs/figures/transfer_<world>.png and the generated block ``transfer`` of
   docs/findings.md.

Sizes are modest (the machine is shared): ``--r``, ``--n``, ``--trials`` set them; the
sizes used are written into the generated text.
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path

import polars as pl

from why_study.run import FIGURES, FINDINGS, RESULTS, replace_block

REPO = Path(__file__).resolve().parents[1]
ATLAS = REPO / "docs" / "atlas.md"
ATLAS_METRICS = ("tsr", "accuracy", "asr", "prompt_tokens")
# world -> its objectives (TSR where it is not ~0, accuracy where it is; ASR with poison)
TRANSFER = {
    "decay_pressure": ("accuracy:max", "prompt_tokens:min"),
    "late_poison": ("asr:min", "accuracy:max", "prompt_tokens:min"),
    "paper_poisoning": ("asr:min", "tsr:max", "prompt_tokens:min"),
    "gaia_like": ("tsr:max", "prompt_tokens:min"),
    # The worlds built so that a mechanism bites: staleness, suppression and
    # obsolescence, conversation mode with promoted summaries.
    "stale_memory": ("accuracy:max", "prompt_tokens:min"),
    "brittle_tools": ("asr:min", "tsr:max"),
    "conversation": ("tsr:max", "asr:min"),
}


def _short(key: str) -> str:
    return key.split(".", 1)[1]


def atlas_markdown(table: pl.DataFrame, r: int, n: int) -> str:
    """One row per scenario: per metric, the knobs that matter (μ* [interval]), and the
    knobs that are inert or not read."""
    family = table["family"].drop_nulls()[0] if "family" in table.columns else "–"
    lines = [f"Morris screening of Full WMT (r = {r} trajectories, n = {n} simulated "
             "trajectories per point, seed 0; 95% bootstrap intervals over Morris "
             "trajectories). μ* is the metric's change per whole range of the knob. A "
             f"knob matters by `morris_test`, {family}.", "",
             "| scenario | metric | knobs that matter (μ* [95%]) | inert | not read |",
             "|---|---|---|---|---|"]
    for (sc, metric), t in table.group_by("scenario", "metric", maintain_order=True):
        m = t.filter(pl.col("verdict") == "matters").sort("mu_star", descending=True)
        fmt = ".3g"
        matters = "; ".join(f"{_short(x['parameter'])} {x['mu_star']:{fmt}} "
                            f"[{x['mu_star_low']:{fmt}}, {x['mu_star_high']:{fmt}}]"
                            for x in m.iter_rows(named=True)) or "none beyond noise"
        inert = ", ".join(_short(p) for p in t.filter(pl.col("verdict") == "inert")
                          ["parameter"]) or "–"
        unread = ", ".join(_short(p) for p in t.filter(pl.col("verdict") == "not read")
                           ["parameter"]) or "–"
        lines.append(f"| {sc} | {metric} | {matters} | {inert} | {unread} |")
    return "\n".join(lines)


def run_atlas(r: int, n: int, workers: int) -> pl.DataFrame:
    from wmtsim.studies.scenarios.scenario import load_scenario, shipped_scenarios
    from wmtsim.studies.sweeps.analysis import write_chart
    from wmtsim.studies.sweeps.screen import atlas_chart, screen

    scs = [load_scenario(name) for name in shipped_scenarios()]
    res = screen(scs, "wmt", r=r, n=n, metrics=ATLAS_METRICS, workers=workers)
    res.table.write_parquet(RESULTS / "atlas.parquet")
    write_chart(atlas_chart(res.table), FIGURES / "atlas")
    (FIGURES / "atlas.html").replace(RESULTS / "atlas.html")
    body = atlas_markdown(res.table, r, n) + (
        f"\n\n{res.points} points in {res.seconds:.0f} s.")
    ATLAS.write_text(replace_block(ATLAS.read_text(), "atlas", body))
    return res.table


def run_transfer(n: int, trials: int, workers: int) -> str:
    from wmtsim.studies.scenarios.scenario import load_scenario
    from wmtsim.studies.sweeps.analysis import write_chart
    from wmtsim.studies.tune.tune import Fit, chosen, parse_objective, tune
    from wmtsim.studies.tune.validate import beats, validate
    from wmtsim.studies.tune.write import pareto_chart

    lines = [f"NSGA-II over every WMT parameter of `wmtsim.studies.sweeps.knob_ranges` (18 knobs), "
             f"{trials} trials per world in generations of 8, n = {n} trajectories on fit "
             "seed 0; three Pareto points validated on held-out seeds 10000 and 10001 "
             "against the shipped setting; each number is a gain, tuned − shipped signed so "
             "that positive is better (lower ASR or tokens, higher TSR or accuracy), with "
             "its paired 95% interval. A point *beats* the "
             "shipped setting when, out of sample, it is significantly better on at least "
             "one objective (Holm over the world's cells) and worse on none (judged on "
             "each cell's own interval, uncorrected: `wmtsim.studies.tune.validate.beats`).",
             "",
             "| world | objectives | shipped setting (fit seed) | Pareto points that beat it "
             "out of sample | what they prefer |", "|---|---|---|---|---|"]
    for world, objectives in TRANSFER.items():
        sc = load_scenario(world)
        fit = Fit((sc,), (0,), n, tuple(parse_objective(o) for o in objectives),
                  workers=workers)
        with tempfile.TemporaryDirectory() as tmp:
            t = tune(fit, Path(tmp) / "s.journal", trials=trials, batch=8)
        pick = chosen(t, 3)
        table = validate(t, pick, seeds=[10_000, 10_001])
        t.trials.write_parquet(RESULTS / f"transfer_{world}_trials.parquet")
        table.write_parquet(RESULTS / f"transfer_{world}_validation.parquet")
        write_chart(pareto_chart(t), FIGURES / f"transfer_{world}")
        (FIGURES / f"transfer_{world}.html").replace(RESULTS / f"transfer_{world}.html")
        wins = []
        for trial, v in table.group_by("trial", maintain_order=True):
            if not beats(v)[0]:
                continue
            row = pick.filter(pl.col("trial") == trial[0]).row(0, named=True)
            gains = ", ".join(f"{x['objective']} {x['gain']:+.3g} [{x['gain_low']:+.3g}, "
                              f"{x['gain_high']:+.3g}]" for x in v.iter_rows(named=True))
            wins.append(f"trial {trial[0]} (ρ {row['params.rho']:.2f}, M "
                        f"{row['params.M']}, τ_obs {row['params.tau_obs']:.2f}, B × "
                        f"{row['params.budget']:.2f}): {gains}")
        front = t.pareto
        prefer = ", ".join(f"{_short(k)} {front[k].median():.3g}" for k in
                           ("params.rho", "params.M", "params.tau_obs", "params.alpha",
                            "params.budget"))
        shipped = ", ".join(f"{o} {t.baseline[o]:.3g}" for o in objectives)
        lines.append(f"| {world} | {', '.join(objectives)} | {shipped} | "
                     f"{'; '.join(wins) or 'none: the shipped setting is not beaten'} | "
                     f"Pareto medians: {prefer} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m why_study.design_study", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--r", type=int, default=6, help="Morris trajectories per world")
    ap.add_argument("--n", type=int, default=150, help="simulated trajectories per point")
    ap.add_argument("--trials", type=int, default=32, help="tuning trials per world")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--only", choices=("atlas", "transfer"), default=None)
    args = ap.parse_args(argv)
    RESULTS.mkdir(parents=True, exist_ok=True)
    FIGURES.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    if args.only in (None, "atlas"):
        run_atlas(args.r, args.n, args.workers)
        print(f"atlas: {time.perf_counter() - t0:.0f} s")
    if args.only in (None, "transfer"):
        t1 = time.perf_counter()
        body = run_transfer(args.n, args.trials, args.workers)
        took = time.perf_counter() - t1
        body += f"\n\nTuning and validation of the {len(TRANSFER)} worlds took {took:.0f} s."
        FINDINGS.write_text(replace_block(FINDINGS.read_text(), "transfer", body))
        print(f"transfer: {time.perf_counter() - t1:.0f} s")
    assert math.isfinite(time.perf_counter())


if __name__ == "__main__":
    main()
