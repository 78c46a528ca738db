"""Held-out validation of tuned settings: does the tuned gain survive out of sample?

A tuned setting is fitted on some scenarios and seeds (`wmtsim.studies.tune.tune`); here it is
simulated on others (held-out seeds, and optionally held-out scenarios) beside the
shipped setting (the scenario as written: the paper's values for WMT's constants), on
the same trajectories. For each chosen point, held-out scenario and objective:

* ``gain``: the mean over held-out trajectories of (tuned − shipped), signed so that
  positive is better (TSR up, ASR down, ...), with its paired test and interval
  (`wmtsim.core.inference.paired_effect`, the one estimator: exact when few trajectories
  differ; trajectories of every held-out seed pooled);
* ``fit_gain``: the same difference on the fit seeds (the in-sample gain the tuner saw),
  where the scenario was a fit scenario;
* ``kept``: gain / fit_gain, the share of the in-sample gain that survives;
* ``verdict``: the claim "the tuned setting is better on this objective" in the verdict
  vocabulary of `wmtsim.core.inference` (*holds (significant)*: better; *fails
  (significant)*: worse; otherwise not significant), from ``p_adjusted``: every cell of
  the table (chosen trials × scenarios × objectives) is one family, Holm-corrected
  (`CORRECTION`).

A setting *beats* the shipped setting out of sample (`beats`) when, in every held-out
scenario, it is significantly better on at least one objective (Holm-adjusted: the
claim of a gain is the one multiplicity must guard) and worse on none, where *worse* is
judged on each cell's own 95% interval, without Holm: a correction over many cells must
not excuse a loss that its own interval shows (a tuned point whose TSR interval is
[−0.067, −0.003] is worse, however many other cells were tested). One that does not, the
summary says so in those words.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from wmtsim.core.inference import (
    FAILS,
    HOLDS,
    adjust,
    directed_verdict,
    metric_bound,
    paired_effect,
)
from wmtsim.studies.tune.tune import Fit, Tuning, setting_of

CORRECTION = "holm"
"""The correction over a validation table's cells (one family)."""

if TYPE_CHECKING:
    import polars as pl

    from wmtsim.studies.scenarios.scenario import Scenario


def validate(tuning: Tuning, chosen: pl.DataFrame, seeds: Sequence[int],
             scenarios: Sequence[Scenario] | None = None, confidence: float = 0.95
             ) -> pl.DataFrame:
    """One row per (chosen trial, held-out scenario, objective)."""
    import polars as pl

    fit: Fit = tuning.fit
    scs = list(scenarios or fit.scenarios)
    rows = chosen.to_dicts()
    settings: list[dict[str, Any]] = [{}, *(setting_of(r, fit) for r in rows)]
    held = fit.outcomes(settings, seeds=seeds, scenarios=scs)
    base = held[0]
    out: list[dict[str, Any]] = []
    fit_names = {s.name for s in fit.scenarios}
    for row, res in zip(rows, held[1:], strict=True):
        for sc in scs:
            for o in fit.objectives:
                sign = 1.0 if o.maximize else -1.0
                tuned = np.concatenate([sign * t.metric(o.metric) for t in res[sc.name]])
                shipped = np.concatenate([sign * b.metric(o.metric) for b in base[sc.name]])
                e = paired_effect(tuned, shipped, alpha=1.0 - confidence, seed=fit.seeds[0],
                                  bound=metric_bound(o.metric))
                fit_gain = (sign * (row[f"{sc.name}.{o.metric}"]
                                    - tuning.baseline[f"{sc.name}.{o.metric}"])
                            if sc.name in fit_names else math.nan)
                out.append({"trial": row["trial"], "scenario": sc.name,
                            "held_out_scenario": sc.name not in fit_names,
                            "objective": o.label, "fit_gain": fit_gain, "gain": e["mean"],
                            "gain_low": e["low"], "gain_high": e["high"],
                            "kept": e["mean"] / fit_gain if fit_gain else math.nan,
                            "n": e["n"], "n_nonzero": e["n_nonzero"], "p": e["p"],
                            "test": e["test"]})
    p_adj = adjust([r["p"] for r in out], CORRECTION)
    alpha = 1.0 - confidence
    for r, pa in zip(out, p_adj, strict=True):
        r["p_adjusted"] = float(pa)
        r["verdict"] = directed_verdict(r["gain"], float(pa), alpha)
    return pl.DataFrame(out, infer_schema_length=None)


def beats(cells: pl.DataFrame, alpha: float = 0.05) -> tuple[bool, str]:
    """Whether one trial's cells (rows of `validate`'s table) beat the shipped setting, and
    why not when they do not (the module docstring's rule). A cell is worse when its own
    interval lies below 0 or, where it has no interval (a sparse unbounded metric), when
    its own test says so at ``alpha`` (uncorrected, like the interval)."""
    import polars as pl

    own_test = (pl.col("p") < alpha) & (pl.col("gain") < 0) if "p" in cells.columns else False
    worse = cells.filter((pl.col("verdict") == FAILS) | (pl.col("gain_high") < 0) | own_test)
    better = set(cells.filter(pl.col("verdict") == HOLDS)["scenario"].to_list())
    unbeaten = set(cells["scenario"].to_list()) - better
    if worse.height:
        named = ", ".join(f"{r['objective']} on {r['scenario']}"
                          for r in worse.iter_rows(named=True))
        return False, f"worse on {named} (on its own interval or test, uncorrected)"
    if unbeaten:
        return False, ("not significantly better on any objective in "
                       f"{', '.join(sorted(unbeaten))}")
    return True, ""


def summary(table: pl.DataFrame) -> list[str]:
    """One plain sentence per chosen trial."""
    import polars as pl

    lines = []
    for trial in table["trial"].unique(maintain_order=True).to_list():
        t = table.filter(pl.col("trial") == trial)
        cells = ", ".join(f"{r['objective']} on {r['scenario']}: {r['verdict']} "
                          f"(gain {r['gain']:.3g} [{r['gain_low']:.3g}, {r['gain_high']:.3g}])"
                          for r in t.iter_rows(named=True))
        won, why = beats(t)
        if won:
            lines.append(f"trial {trial} beats the shipped setting out of sample "
                         f"(significantly better on at least one objective, Holm over "
                         f"{table.height} cells; worse on none, each on its own interval; "
                         f"in every scenario): {cells}")
        else:
            lines.append(f"trial {trial} does NOT beat the shipped setting out of sample "
                         f"({why}): {cells}")
    return lines
