"""Issue 49's procedures measured against known truths (docs/statistics.md, "Round four:
measured"). Run: ``nice -n 10 python -m benchmarks.stats_round_four [--runs N]``; prints
a markdown table, each rate with its Monte Carlo standard error and run count."""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from wmtsim.studies.coverage import cases


def _rate(hits: list[bool] | np.ndarray) -> str:
    h = np.asarray(hits, dtype=float)
    if h.size == 0:
        return "– (0 runs)"
    p = float(h.mean())
    return f"{p:.3f} (SE {math.sqrt(max(p * (1 - p), 1e-12) / h.size):.3f}, {h.size})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=800)
    ap.add_argument("--seed", type=int, default=4949)
    args = ap.parse_args()
    runs, seed = args.runs, args.seed
    t0 = time.perf_counter()
    rows = []
    for share in (0.01, 0.02, 0.05):
        for tail in ("two-point", "lognormal"):
            h, k = cases.sparse_tails(runs // 4, share, tail, seed, n=1000)
            rows.append((f"AF-like, {share:.0%} differ, {tail}, n = 1000",
                         f"{k} of {runs // 4} runs report an interval", _rate(h)))
    for share in (0.2, 0.3):
        for tail in ("two-point", "lognormal"):
            h, k = cases.sparse_tails(runs // 2, share, tail, seed, n=400)
            rows.append((f"AF-like, {share:.0%} differ, {tail}, n = 400",
                         f"{k} of {runs // 2} report", _rate(h)))
    for narrow in (False, True):
        hits, _, _, flat = cases.sobol_crn(runs // 10, seed, narrow=narrow)
        rows.append((f"Sobol (CRN, R = 4, N = 64, n = 500), "
                     f"{'TSR 0.176–0.220' if narrow else 'smooth'}",
                     f"flat {_rate(flat)}", f"S1/ST coverage when defined {_rate(hits)}"))
    from wmtsim.studies.calibration.plausible import toy_coverage

    for misfit in (0.0, 139.0):
        for r in (8, 20):
            out = toy_coverage(runs, r, misfit, seed)
            world = "misspecified φ≈140" if misfit else "correct"
            rows.append((f"plausible set, toy world, {world}, R = {r}",
                         f"χ² {_rate(out['chi2'])}; χ²·φ {_rate(out['chi2_phi'])}",
                         _rate(out["r_aware"])))
    for ratio in (1.5, 2.0, 3.0):
        zero, some = cases.zero_bound_conditional(runs, ratio, seed)
        rows.append((f"zero bound, mean of 0/1, n = 100, truth {ratio} × 3/n",
                     f"k = 0: {_rate(zero)}", f"k > 0: {_rate(some)}"))
    for kind in ("binary", "normal", "rate", "skewed"):
        p = cases.grid_pvalues(runs // 2, kind, seed)
        rows.append((f"grid_test size, 8 flat points, n = 50, {kind}",
                     f"5%: {_rate(p <= 0.05)}", f"20%: {_rate(p <= 0.2)}"))
    p = cases.grid_pvalues(runs // 4, "binary", seed, k=25)
    rows.append(("grid_test size, 25 flat points, n = 50, binary", f"5%: {_rate(p <= 0.05)}",
                 f"20%: {_rate(p <= 0.2)}"))
    rows.append(("grid_test power, binary, one point +0.3 on its own draws", "–",
                 f"{cases.grid_power(runs // 4, seed):.3f} ({runs // 4} runs)"))
    print(f"{time.perf_counter() - t0:.0f} s, --runs {runs} --seed {seed}\n")
    print("| case | reported / before | measured |\n|---|---|---|")
    for a, b, c in rows:
        print(f"| {a} | {b} | {c} |")


if __name__ == "__main__":
    main()
