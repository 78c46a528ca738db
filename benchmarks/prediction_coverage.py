"""Coverage of the calibration's prediction interval on the simulator itself.

    python -m benchmarks.prediction_coverage            # 60 sets of 8 + 1 corpora
    python -m benchmarks.prediction_coverage --sets 200

Each set is R = 8 replicate corpora of 100 `paper_poisoning` scenarios (the shipped
replicate count of a held-out check) and one new corpus, all independent trajectories
(every configuration on the same ones); a cell's 95% prediction interval
(`wmtsim.studies.calibration.inference.predictive_cell`) is built from the 8 and checked against the
new corpus's value. Coverage is counted per (configuration, metric) cell and pooled over
the cells that are not constant; its Monte Carlo standard error is reported beside it
(binomial, treating the cell-sets as independent; the cells of one set share
trajectories, so it is somewhat too small).
The quantile interval used before is counted on the same sets for comparison.
Not a test: it takes minutes (tests/studies/test_prediction_coverage.py is the fast
check on synthetic corpora).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from wmtsim.core.policies import TABLE4_POLICIES
from wmtsim.studies.calibration.inference import predictive_cell, replicate
from wmtsim.studies.scenarios.scenario import load_scenario

R = 8
METRICS = ("asr", "prr", "br", "af", "tsr", "ccr", "avg_prompt_tokens")


def coverage(sets: int, seed: int = 1) -> dict[str, float]:
    sc = load_scenario("paper_poisoning")
    rep = replicate(sc, TABLE4_POLICIES, sets * (R + 1), seed=seed, metrics=METRICS)
    hits_t = hits_q = total = 0
    for p in TABLE4_POLICIES:
        for m in METRICS:
            v = rep.values[p][m].reshape(sets, R + 1)
            if np.nanstd(v) == 0:  # a constant cell (Linear's CCR): nothing to cover
                continue
            for row in v:
                new = float(row[R])
                # The model-discrepancy SD of token cells is left out: this is the Monte
                # Carlo part alone (the metric passed is a plain rate's).
                cell = predictive_cell(row[:R], new, "asr")
                hits_t += bool(cell["inside"])
                lo, hi = np.quantile(row[:R], [0.025, 0.975])
                hits_q += bool(lo <= new <= hi)
                total += 1
    t_cov, q_cov = hits_t / total, hits_q / total
    return {"cells": total, "t": t_cov, "t_se": math.sqrt(t_cov * (1 - t_cov) / total),
            "quantile": q_cov, "quantile_se": math.sqrt(q_cov * (1 - q_cov) / total)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", type=int, default=60)
    args = ap.parse_args()
    t0 = time.perf_counter()
    c = coverage(args.sets)
    print(f"prediction-interval coverage on paper_poisoning, R = {R}, {args.sets} sets, "
          f"{c['cells']} cell-sets: t interval {c['t']:.3f} ± {c['t_se']:.3f} (MC SE), "
          f"quantile interval {c['quantile']:.3f} ± {c['quantile_se']:.3f}; "
          f"{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
