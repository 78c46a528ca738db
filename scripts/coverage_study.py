"""The coverage study cited by docs/statistics.md: how often the intervals cover the true
value and how often the tests reject a true null, on synthetic cases with a known answer.

    python scripts/coverage_study.py [--runs 400] [--out docs/statistics.md]

Cases (n = 400 paired trajectories each):

* null: a and b identically distributed (normal, shared base): coverage of 0, rejections;
* known effect: a = b + 0.2 + noise: coverage of 0.2, power;
* rare effect: 1% of trajectories differ by U(0, 1) (true mean 0.005): coverage, and how
  often a percentile bootstrap alone would have excluded 0 (the old reading);
* rare null: 1% of trajectories differ by ±U(0, 1) with a random sign: rejections;
* no effect at all: a = b: the rule of three's interval, never [0, 0];
* pooled ratio: Σ/Σ of binomial counts with a known difference of rates;
* Holm over 50 null tests: family-wise false "holds";
* Sobol on Ishigami, R = 10 scramblings of 2^8 points: coverage of the analytic indices.

Then issue 38's procedures, each before (the rule it replaced) and after, on the cases of
`wmtsim.studies.coverage.cases` (which the tests run small): the pooled ratio's zero
bound, sparse unbounded effects, grid_test at n = 50, Morris at r = 6, Sobol under common
random numbers, attack's worst case, the claims margin under ties.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np

from wmtsim.core.inference import adjust, paired_effect
from wmtsim.core.verdicts import effect_text
from wmtsim.studies.sweeps.sobol import ishigami, ishigami_indices, sobol_replicated

N = 400


def _rate(hits: list[bool]) -> str:
    k, n = sum(hits), len(hits)
    se = math.sqrt(max(k * (n - k), 1) / n) / n  # sqrt(p (1 − p) / n)
    return f"{k / n:.3f} (± {1.96 * se:.3f}, {n} runs)"


def _rate_of(rate: float, runs: int) -> str:
    """`_rate` of a rate already estimated from ``runs`` runs."""
    k = round(rate * runs)
    return _rate([True] * k + [False] * (runs - k))


def case_rows(runs: int, seed: int) -> list[tuple[str, str, str]]:
    rng = np.random.default_rng(seed)
    rows = []
    cov, rej = [], []
    for _ in range(runs):
        base = rng.normal(size=N)
        e = paired_effect(base + rng.normal(size=N), base + rng.normal(size=N),
                          n_resamples=2000)
        cov.append(e["low"] <= 0 <= e["high"])
        rej.append(e["p"] <= 0.05)
    rows.append(("null (normal)", f"coverage {_rate(cov)}", f"rejections {_rate(rej)}"))
    cov, rej = [], []
    for _ in range(runs):
        b = rng.normal(size=N)
        e = paired_effect(b + 0.2 + rng.normal(size=N), b, n_resamples=2000)
        cov.append(e["low"] <= 0.2 <= e["high"])
        rej.append(e["p"] <= 0.05)
    rows.append(("known effect 0.2", f"coverage {_rate(cov)}", f"power {_rate(rej)}"))
    cov, boot_sig, rej = [], [], []
    for _ in range(runs):
        d = (rng.random(N) < 0.01) * rng.random(N)
        e = paired_effect(d, np.zeros(N), bound=1.0)
        cov.append(e["low"] <= 0.005 <= e["high"])
        rej.append(e["p"] <= 0.05)
        if 0 < e["n_nonzero"]:
            idx = rng.integers(0, N, size=(2000, N))
            lo = np.quantile(d[idx].mean(axis=1), 0.025)
            boot_sig.append(bool(lo > 0))
    rows.append(("rare effect (1% differ, mean 0.005)", f"coverage {_rate(cov)}",
                 f"exact test rejects {_rate(rej)}; a percentile bootstrap alone would "
                 f"call it significant {_rate(boot_sig)}"))
    rej = []
    for _ in range(runs):
        d = (rng.random(N) < 0.01) * rng.random(N) * rng.choice([-1, 1], N)
        rej.append(paired_effect(d, np.zeros(N), bound=1.0)["p"] <= 0.05)
    rows.append(("rare null (1% differ, random sign)", "–", f"rejections {_rate(rej)}"))
    e = paired_effect(np.zeros(N), np.zeros(N), bound=1.0)
    rows.append(("no difference at all", effect_text(e), e["interval"]))
    cov, rej = [], []
    for _ in range(runs):
        den = rng.integers(1, 6, N).astype(float)
        u = rng.random((N, 5))  # one uniform per step: common random numbers
        steps = np.arange(5)[None, :] < den[:, None]
        num_a = ((u < 0.35) & steps).sum(axis=1).astype(float)
        num_b = ((u < 0.30) & steps).sum(axis=1).astype(float)
        # A rate is bounded (0 to 1 per step): the bound compare passes for such metrics.
        e = paired_effect(num_a, num_b, den, den, bound=1.0, n_resamples=2000)
        cov.append(e["low"] <= 0.05 <= e["high"])
        rej.append(e["p"] <= 0.05)
    rows.append(("pooled ratio, rates 0.35 vs 0.30 (CRN)", f"coverage {_rate(cov)}",
                 f"power {_rate(rej)}"))
    fwer = []
    for _ in range(max(runs // 4, 20)):
        p = [paired_effect(rng.normal(size=N), rng.normal(size=N), interval=False)["p"]
             for _ in range(50)]
        fwer.append(bool(np.any(adjust(p, "holm") <= 0.05)))
    rows.append(("50 null tests, Holm", "–", f"family-wise false rejections {_rate(fwer)}"))
    s1, st = ishigami_indices()
    hits = []
    for s in range(max(runs // 10, 10)):
        r = sobol_replicated(ishigami, 3, 8, replicates=10, seed=seed + s)
        hits += list((r["S1_low"] <= s1) & (s1 <= r["S1_high"]))
        hits += list((r["ST_low"] <= st) & (st <= r["ST_high"]))
    rows.append(("Sobol, Ishigami, R = 10 × 2^8", f"coverage {_rate(hits)}",
                 "replicate t intervals over independent scramblings"))
    return rows


def _bias(errors: list[float]) -> str:
    e = np.asarray(errors)
    return f"{e.mean():+.4f} (± {1.96 * e.std() / math.sqrt(e.size):.4f}, {e.size} runs)"


def issue38_rows(runs: int, seed: int) -> list[tuple[str, str, str, str]]:
    """(case, nominal, before, after) for each procedure issue 38 changed."""
    from wmtsim.studies.coverage import cases

    rows = []
    for p in (0.05, 0.15):
        before, after = (cases.pooled_zero_bound(runs, p, seed, old=o) for o in (True, False))
        rows.append((f"pooled ratio, none differ: denominators 90 (×20) and 20 (×180), "
                     f"p = {p}", "coverage 0.95", _rate(before), _rate(after)))
    (hb, _), (ha, ra) = (cases.sparse_unbounded(runs, seed, old=o) for o in (True, False))
    rows.append(("sparse effect on tokens (1% differ, lognormal)", "coverage 0.95",
                 _rate(hb), f"no interval ({len(ha)} reported); exact test size "
                 f"{_rate(ra)}"))
    for kind in ("skewed", "rate", "normal"):
        before, after = (cases.grid_size(runs, kind, seed, old=o) for o in (True, False))
        rows.append((f"grid_test, 8 flat points, n = 50, {kind}", "size 0.05",
                     _rate(before), _rate(after)))
    m_runs = max(runs // 2, 50)
    before, after = (cases.morris_false_matters(m_runs, seed, old=o) for o in (True, False))
    for i, what in ((1, "read, moves only the noise"), (2, "not in f")):
        rows.append((f"Morris at r = 6, n = 150: null knob {what}",
                     "false 'matters' ≤ 0.05",
                     _rate_of(before[i], m_runs), _rate_of(after[i], m_runs)))
    s_runs = max(runs // 10, 20)
    (hb, nb, _, _), (ha, na, sa, _) = (cases.sobol_crn(s_runs, seed, old=o)
                                       for o in (True, False))
    rows.append(("Sobol on CRN, R = 4 × N = 64, 500 trajectories: S1 and ST (6 intervals a run)",
                 "coverage 0.95", _rate(hb), _rate(ha) + f"; noise_share {np.mean(sa):.3f}"))
    rows.append(("… the read-but-inert knob's ST called non-zero", "≤ 0.05", _rate(nb),
                 _rate(na)))
    before, after = (cases.attack_bias(runs, seed, old=o) for o in (True, False))
    rows.append(("attack's worst case, nothing beats the script (1 − TSR)", "bias 0",
                 _bias(before), _bias(after)))
    before, after = (cases.margin_ties(runs, seed, old=o) for o in (True, False))
    rows.append(("claims margin, five configurations tie, n = 30", "coverage 0.95",
                 _rate(before), _rate(after)))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=400)
    ap.add_argument("--seed", type=int, default=2024)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    t0 = time.perf_counter()
    rows = case_rows(args.runs, args.seed)
    rows38 = issue38_rows(args.runs, args.seed)
    lines = [f"Coverage study: `python scripts/coverage_study.py --runs {args.runs} "
             f"--seed {args.seed}` (n = {N} trajectories per case, nominal 95%, "
             f"{time.perf_counter() - t0:.0f} s).", "",
             "| case | interval | test |", "|---|---|---|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    lines += ["", "The procedures the second coverage round replaced, before (the rule "
              "replaced) and after, on the cases of `wmtsim.studies.coverage.cases` "
              "(± is the Monte Carlo half-width):", "",
              "| case | nominal | before | after |", "|---|---|---|---|"]
    lines += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows38]
    text = "\n".join(lines) + "\n"
    if args.out:  # the generated block of docs/statistics.md
        doc = args.out.read_text(encoding="utf-8")
        start, end = "<!-- generated:coverage -->\n", "<!-- /generated:coverage -->"
        head, _, rest = doc.partition(start)
        _, _, tail = rest.partition(end)
        args.out.write_text(head + start + text + end + tail, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
