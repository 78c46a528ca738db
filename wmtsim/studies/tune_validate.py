"""Held-out validation of tuned settings: does the tuned gain survive out of sample?

A tuned setting is fitted on some scenarios and seeds (`wmtsim.studies.tune`); here it is
simulated on others (held-out seeds, and optionally held-out scenarios) beside the
shipped setting (the scenario as written: the paper's values for WMT's constants), on
the same trajectories. For each chosen point, held-out scenario and objective:

* ``gain``: the mean over held-out trajectories of (tuned − shipped), signed so that
  positive is better (TSR up, ASR down, ...), with a paired percentile-bootstrap interval
  (`wmtsim.core.bootstrap.mean_ci`, trajectories of every held-out seed pooled);
* ``fit_gain``: the same difference on the fit seeds (the in-sample gain the tuner saw),
  where the scenario was a fit scenario;
* ``kept``: gain / fit_gain, the share of the in-sample gain that survives;
* ``verdict``: ``better`` (interval above 0), ``worse`` (below 0) or ``no difference``.

A setting *beats* the shipped setting out of sample when, in every held-out scenario, it
is ``better`` on at least one objective and ``worse`` on none (significant Pareto
dominance). One that does not, the summary says so in those words.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from wmtsim.core.bootstrap import mean_ci
from wmtsim.studies.tune import Fit, Tuning, setting_of

if TYPE_CHECKING:
    import polars as pl

    from wmtsim.studies.scenario import Scenario


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
                d = np.concatenate([sign * (t.metric(o.metric) - b.metric(o.metric))
                                    for t, b in zip(res[sc.name], base[sc.name], strict=True)])
                ci = mean_ci(d, confidence, seed=fit.seeds[0])
                fit_gain = (sign * (row[f"{sc.name}.{o.metric}"]
                                    - tuning.baseline[f"{sc.name}.{o.metric}"])
                            if sc.name in fit_names else math.nan)
                verdict = ("better" if ci["low"] > 0 else "worse" if ci["high"] < 0
                           else "no difference")
                out.append({"trial": row["trial"], "scenario": sc.name,
                            "held_out_scenario": sc.name not in fit_names,
                            "objective": o.label, "fit_gain": fit_gain, "gain": ci["mean"],
                            "gain_low": ci["low"], "gain_high": ci["high"],
                            "kept": ci["mean"] / fit_gain if fit_gain else math.nan,
                            "verdict": verdict, "n": ci["n"]})
    return pl.DataFrame(out, infer_schema_length=None)


def summary(table: pl.DataFrame) -> list[str]:
    """One plain sentence per chosen trial."""
    import polars as pl

    lines = []
    for trial in table["trial"].unique(maintain_order=True).to_list():
        t = table.filter(pl.col("trial") == trial)
        worse = t.filter(pl.col("verdict") == "worse")
        better = t.filter(pl.col("verdict") == "better")["scenario"].unique().to_list()
        unbeaten = set(t["scenario"].to_list()) - set(better)
        cells = ", ".join(f"{r['objective']} on {r['scenario']}: {r['verdict']} "
                          f"(gain {r['gain']:.3g} [{r['gain_low']:.3g}, {r['gain_high']:.3g}])"
                          for r in t.iter_rows(named=True))
        if worse.height == 0 and not unbeaten:
            lines.append(f"trial {trial} beats the shipped setting out of sample (better on "
                         f"at least one objective, worse on none, in every scenario): {cells}")
        else:
            why = (f"worse on {worse.height} cell(s)" if worse.height else
                   f"not better on any objective in {', '.join(sorted(unbeaten))}")
            lines.append(f"trial {trial} does NOT beat the shipped setting out of sample "
                         f"({why}): {cells}")
    return lines
