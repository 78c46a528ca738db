"""Tests and verdicts: the one place that decides whether an effect is significant
(docs/statistics.md).

**The estimand** of every comparison of two configurations ``a`` and ``b`` run on the
same trajectories (common random numbers) is a difference of pooled ratios,

    D = Σ_t num_a,t / Σ_t den_a,t − Σ_t num_b,t / Σ_t den_b,t,

where a per-trajectory mean is the case ``den = 1`` (``D = mean(a − b)``) and a pooled
ratio metric (Σ/Σ, `wmtsim.core.metrics.RATIOS`) the general one, so a table that ranks on
pooled values tests the pooled values.

**The test** (`paired_effect`) depends on ``k``, the number of trajectories on which the
two configurations differ (``n_nonzero``):

* ``k = 0``: no difference seen; the interval is ``± bound · share`` when the
  per-trajectory difference is bounded (``bound``; rates: 1), else undefined; never
  ``[0, 0]``. ``share`` is the weighted rule of three (`zero_difference_share`): the
  share of the denominator that trajectories which differ could hold at 95%, the sum of
  the three largest shares den_t / Σ den (3/n for a mean or equal denominators).
* ``k ≤ EXACT_MAX``: the exact paired permutation test — under the null the two
  configurations are exchangeable within each trajectory, so all 2^k swaps of the
  differing trajectories are enumerated and ``D`` recomputed (for a mean this is the
  exact sign-flip test; with every difference of one sign it is the sign test,
  p = 2 · 2^−k two-sided).
* ``k > EXACT_MAX``: a t-test on the linearised (delta-method) per-trajectory
  contributions ``z_t`` of ``D``, with n − 1 degrees of freedom (for a mean: the paired
  t-test). Normal theory holds here: at least `EXACT_MAX` + 1 differing trajectories and
  n in the hundreds.

**The interval** (``low``, ``high``) at level ``1 − alpha``: a paired percentile bootstrap
of ``D`` with at least `MIN_TAIL` resamples beyond each quantile (`resamples_for`) when
``k ≥ SPARSE``; below that, for a bounded metric, a conservative bound (Clopper–Pearson
upper limits of the shares of positive and negative differences, times the largest
contribution the metric allows: ``bound`` for a mean, ``bound · max(den) / mean(den_a)``
for a ratio) that always contains 0 and ``D`` — a sparse effect is never shown
significant on an interval alone; its verdict comes from the exact test. A sparse effect
on an unbounded metric (tokens, AF) gets no interval (NaN, ``interval`` says so) while
fewer than `SPARSE` or fewer than a share `DENSE` of the trajectories differ: one rare
large difference can carry its mean, so nothing built from sparse observed differences
bounds it (Bahadur & Savage 1956: no interval for a mean covers over every distribution);
the test is its whole reading. **Heavy tails**: where an unbounded metric does get its
bootstrap interval, it is the hull of the percentile interval and the studentised one
[D − t*_(1−α/2) se, D − t*_(α/2) se] (t* = (D* − D) / se*, se* from each resample's
linearised contributions; a resample without spread has no t*), each end then moved out
by the largest contribution one trajectory made on that side (max w_t / n above,
max −w_t / n below). The percentile interval errs with a one-signed skew, the studentised
one with mixed signs, and the mean of a heavy-tailed difference can be carried by a value
as large as the largest seen, which the sample holds once or missed: the percentile
interval alone covered 0.88–0.93 with lognormal σ = 1.5 tails (docs/statistics.md,
"Heavy tails"). The rule has no parameter; a bounded metric (rates) keeps the plain
percentile interval. The differences
are ``D``'s exact per-trajectory contributions, 0 where the two sides agree: for a
pooled ratio, with δn_t, δd_t the differences of numerator and denominator and
r_b = Σ num_b / Σ den_b,
``D = Σ_t (δn_t − r_b δd_t) / Σ den_a`` (exactly: A/D_a − B/D_b = (ΔN − r_b ΔD)/D_a), so
``D`` is the mean of w_t = n (δn_t − r_b δd_t) / Σ den_a; for a mean, w_t = a_t − b_t.

**Verdicts** (`VERDICTS`, `verdict`): *holds (significant)*, *holds (not significant)*,
*tie*, *fails (significant)*, from a claim's p-values after the family's correction
(`adjust`: Holm by default, Benjamini–Hochberg for exploratory maps, or none).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from wmtsim.core.bootstrap import mean_cis, pooled_cis
from wmtsim.core.metrics import RATIOS, UNIT, frame_parts

if TYPE_CHECKING:
    import polars as pl

ALPHA = 0.05
"""The default level of every test and interval (two-sided)."""
MIN_TAIL = 50
"""Bootstrap resamples beyond each quantile of an interval, at least (`resamples_for`)."""
SPARSE = 10
"""Below this many differing trajectories an interval is the conservative bound."""
DENSE = 0.2
"""An unbounded metric gets an interval only when at least this share of the trajectories
differ (and at least `SPARSE`): sparser differences of an unbounded metric (AF, tokens)
can have their mean carried by a rare large one that the sample did not see, and no
interval built from them covered (measured: percentile bootstrap 0.65–0.89, studentised
0.84–0.96 at 1–5% differing; docs/statistics.md)."""
EXACT_MAX = 16
"""Up to this many differing trajectories the permutation test is exact (2^k swaps)."""
CORRECTIONS = ("holm", "bh", "none")
"""Multiplicity corrections: Holm (family-wise error), Benjamini–Hochberg (false
discovery rate), none."""
CORRECTION_NAMES = {"holm": "Holm", "bh": "Benjamini–Hochberg", "none": "no correction"}

HOLDS, HOLDS_NS, TIE, FAILS = ("holds (significant)", "holds (not significant)", "tie",
                               "fails (significant)")
VERDICTS = (HOLDS, HOLDS_NS, TIE, FAILS)
"""The one vocabulary of verdicts, in every command, table and chart."""
VERDICT_COLORS = ("#2e7d32", "#a5d6a7", "#bab0ac", "#e45756")
SIGNIFICANT = (HOLDS, FAILS)


def metric_bound(metric: str) -> float | None:
    """The largest |difference| per trajectory of ``metric``, when it is bounded: 1 for a
    metric in [0, 1] (`wmtsim.core.metrics.UNIT`)."""
    return 1.0 if metric in UNIT else None


def resamples_for(alpha: float, minimum: int = 2000) -> int:
    """Bootstrap resamples enough for the ``alpha/2`` and ``1 − alpha/2`` quantiles:
    at least `MIN_TAIL` resamples beyond each (2,000 at alpha = 0.05)."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha={alpha!r}: allowed 0 < alpha < 1")
    return max(minimum, math.ceil(MIN_TAIL / (alpha / 2)))


def rule_of_three(n: int) -> float:
    """The 95% upper bound on a share never seen in ``n`` trials: 3/n (rule of three)."""
    return 3.0 / n if n > 0 else math.nan


def clopper_pearson_upper(k: int, n: int, alpha: float) -> float:
    """One-sided ``1 − alpha`` Clopper–Pearson upper limit of a share of ``k`` in ``n``."""
    from scipy import stats

    if k >= n:
        return 1.0
    return float(stats.beta.ppf(1 - alpha, k + 1, n - k))


def zero_difference_share(den: np.ndarray, alpha: float = ALPHA) -> float:
    """The weighted rule of three: an upper ``1 − alpha`` bound on the share of a pooled
    denominator held by trajectories that differ, when none of the ``n`` seen does.

    Conditional on the denominators (a mean: all 1), let trajectory t differ with an
    unknown probability p_t, independently. Seeing none has probability Π(1 − p_t), so
    the p that keep it ≥ alpha form a ``1 − alpha`` confidence set, inside which
    Σ p_t ≤ Σ −log(1 − p_t) ≤ −log(alpha) (≈ 3 at 5%: the rule of three). The expected
    share of the denominator on differing trajectories, Σ p_t w_t with w_t = den_t / Σ den,
    is then at most the sum of the L = max(3, −log alpha) largest shares (the last one
    fractionally): 3/n with equal denominators, more when a few trajectories hold much of
    the denominator (3/n covered 69-91% when denominators were 20 and 90)."""
    w = np.sort(np.asarray(den, dtype=np.float64))[::-1]
    total = float(w.sum())
    if w.size == 0 or total <= 0:
        return math.nan
    w = w / total
    budget = max(3.0, -math.log(alpha))
    whole = int(budget)
    share = float(w[:whole].sum()) + (budget - whole) * (float(w[whole]) if whole < w.size
                                                          else 0.0)
    return min(1.0, share)


def _ratio_diff(na: np.ndarray, da: np.ndarray, nb: np.ndarray, db: np.ndarray,
                axis: int = -1) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(na.sum(axis=axis) / da.sum(axis=axis)
                          - nb.sum(axis=axis) / db.sum(axis=axis))


def _linearised(na: np.ndarray, da: np.ndarray, nb: np.ndarray, db: np.ndarray
                ) -> np.ndarray:
    """The linearised (delta-method) contributions of D along the last axis (one row per
    resample): D ≈ mean(z), z_t = (num_t − R den_t) / mean(den) per side, R its pooled
    ratio; for a mean (den = 1), z_t = a_t − b_t − D."""
    ra = na.sum(axis=-1, keepdims=True) / da.sum(axis=-1, keepdims=True)
    rb = nb.sum(axis=-1, keepdims=True) / db.sum(axis=-1, keepdims=True)
    return ((na - ra * da) / da.mean(axis=-1, keepdims=True)
            - (nb - rb * db) / db.mean(axis=-1, keepdims=True))


def _contributions(na: np.ndarray, da: np.ndarray, nb: np.ndarray, db: np.ndarray,
                   rb: float) -> np.ndarray:
    """D's exact per-trajectory contributions w_t of a pooled ratio (module docstring):
    D = mean(w), w_t = n (δn_t − r_b δd_t) / Σ den_a."""
    return na.size * ((na - nb) - rb * (da - db)) / da.sum()


def _exact_p(na: np.ndarray, da: np.ndarray, nb: np.ndarray, db: np.ndarray,
             differ: np.ndarray, observed: float) -> tuple[float, float]:
    """(P(D* ≥ D), P(D* ≤ D)) over every swap of a and b on the differing trajectories."""
    idx = np.flatnonzero(differ)
    k = idx.size
    swaps = ((np.arange(1 << k)[:, None] >> np.arange(k)) & 1).astype(np.float64)
    base = [float(x.sum()) for x in (na, da, nb, db)]
    dn = nb[idx] - na[idx]  # swapping t moves num_b,t into a and num_a,t into b
    dd = db[idx] - da[idx]
    sa_n, sa_d = base[0] + swaps @ dn, base[1] + swaps @ dd
    sb_n, sb_d = base[2] - swaps @ dn, base[3] - swaps @ dd
    with np.errstate(invalid="ignore", divide="ignore"):
        stat = sa_n / sa_d - sb_n / sb_d
    stat = stat[np.isfinite(stat)]
    tol = 1e-12 * max(1.0, abs(observed))  # the identity must count as "as extreme"
    return (float(np.mean(stat >= observed - tol)), float(np.mean(stat <= observed + tol)))


def paired_effect(num_a: np.ndarray, num_b: np.ndarray, den_a: np.ndarray | None = None,
                  den_b: np.ndarray | None = None, alpha: float = ALPHA,
                  n_resamples: int | None = None, seed: int = 0,
                  bound: float | None = None, interval: bool = True) -> dict[str, Any]:
    """The difference ``D`` of ``a`` and ``b`` (pooled ratios; means when ``den`` is
    None) on paired trajectories, with its test and interval (module docstring).

    Trajectories where a value is not finite are left out; one whose denominators are
    both 0 stays in (it adds nothing to either pooled ratio, but counts in ``n``, as a
    trajectory that offered the metric no chance does). ``bound``: the largest possible
    |difference| per trajectory (1 for rates), used by the intervals of sparse and null
    effects. Returns ``mean`` (= D), ``low``,
    ``high``, ``n``, ``n_nonzero``, ``p`` (two-sided), ``p_greater`` / ``p_less``
    (one-sided, D > 0 / D < 0), ``se``, ``test``, ``interval`` (its method), ``resamples``.
    """
    na = np.asarray(num_a, dtype=np.float64)
    nb = np.asarray(num_b, dtype=np.float64)
    ratio = den_a is not None
    da = np.ones_like(na) if den_a is None else np.asarray(den_a, dtype=np.float64)
    db = np.ones_like(nb) if den_b is None else np.asarray(den_b, dtype=np.float64)
    ok = np.isfinite(na) & np.isfinite(nb) & np.isfinite(da) & np.isfinite(db)
    na, nb, da, db = na[ok], nb[ok], da[ok], db[ok]
    n = int(na.size)
    out: dict[str, Any] = {"mean": math.nan, "low": math.nan, "high": math.nan, "n": n,
                           "n_nonzero": 0, "p": math.nan, "p_greater": math.nan,
                           "p_less": math.nan, "se": math.nan, "test": "none",
                           "interval": "none", "resamples": 0}
    if n == 0 or da.sum() <= 0 or db.sum() <= 0:
        return out
    differ = (na != nb) | (da != db)
    k = int(differ.sum())
    d = float(_ratio_diff(na, da, nb, db))
    out.update(mean=d, n_nonzero=k)
    rb = nb.sum() / db.sum()
    z = _linearised(na, da, nb, db)
    se = float(z.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan
    out["se"] = se
    if k == 0:
        # the weighted rule of three: a trajectory moves D by at most bound times its
        # share of the denominator (1/n for a mean), so the bound is the share the
        # differing trajectories could hold (`zero_difference_share`)
        share = zero_difference_share(da, alpha)
        half = (bound * share) if bound is not None else math.nan
        what = ("of trajectories differ" if not ratio or np.all(da == da[0])
                else "of the denominator is on trajectories that differ")
        out.update(mean=0.0, low=-half, high=half, p=1.0, p_greater=1.0, p_less=1.0,
                   test="none (no trajectory differs)",
                   interval=f"rule of three: ≤ {share:.3g} {what}")
        return out
    if k <= EXACT_MAX:
        pg, pl_ = _exact_p(na, da, nb, db, differ, d)
        out["test"] = f"exact permutation (2^{k} swaps)"
    else:
        from scipy import stats

        t = d / se if se > 0 else math.copysign(math.inf, d)
        pg, pl_ = float(stats.t.sf(t, n - 1)), float(stats.t.cdf(t, n - 1))
        out["test"] = "paired t (linearised)" if ratio else "paired t"
    out.update(p_greater=pg, p_less=pl_, p=min(1.0, 2 * min(pg, pl_)))
    if not interval:
        return out
    if bound is None and (k < SPARSE or k < DENSE * n):
        # an unbounded metric with sparse differences: one rare, large difference can
        # carry the mean, and no interval built from them bounds it (scaling by the
        # largest seen covered 18-79%; a percentile or studentised bootstrap of 1-5%
        # differing trajectories with heavy tails 0.65-0.96); the test decides
        # alone
        out["interval"] = (f"none: {k} of {n} differ, unbounded metric (exact test)"
                           if k <= EXACT_MAX else
                           f"none: {k} of {n} differ (under {DENSE:.0%}), unbounded "
                           "metric (t-test)")
        return out
    if k < SPARSE and bound is not None:  # (bound None returned above)
        # each contribution w_t (module docstring) is at most the largest one the metric
        # allows: bound for a mean; bound · den_t / mean(den_a) for a ratio (a rate's
        # |δn − r_b δd| ≤ max(den_a,t, den_b,t)), never the largest one observed
        scale = (bound * float(np.maximum(da, db).max()) / float(da.mean()) if ratio
                 else bound)
        zk = (_contributions(na, da, nb, db, rb) if ratio else na - nb)[differ]
        k_pos, k_neg = int((zk > 0).sum()), int((zk < 0).sum())
        out.update(low=-scale * clopper_pearson_upper(k_neg, n, alpha / 2),
                   high=scale * clopper_pearson_upper(k_pos, n, alpha / 2),
                   interval=f"conservative bound ({k} of {n} differ)")
        return out
    b = max(n_resamples or 0, resamples_for(alpha))
    rng = np.random.default_rng([seed, n, 21])
    # an unbounded metric is also read studentised (its t* = (D* − D) / se*)
    studentise = bound is None and se > 0
    stats_, t_ = np.empty(b), np.full(b, math.nan)
    step = max(1, 2_000_000 // n)
    for start in range(0, b, step):
        m = min(step, b - start)
        idx = rng.integers(0, n, size=(m, n))
        parts = (na[idx], da[idx], nb[idx], db[idx])
        stats_[start:start + m] = (_ratio_diff(*parts, axis=1) if ratio
                                   else (parts[0] - parts[2]).mean(axis=1))
        if studentise:
            se_star = _linearised(*parts).std(axis=1, ddof=1) / math.sqrt(n)
            with np.errstate(invalid="ignore", divide="ignore"):
                t_[start:start + m] = (stats_[start:start + m] - d) / se_star
    lo, hi = np.quantile(stats_[np.isfinite(stats_)], [alpha / 2, 1 - alpha / 2])
    method = f"paired percentile bootstrap ({b} resamples)"
    if bound is None:
        # an unbounded metric (module docstring, "heavy tails"): the hull of the
        # percentile and the studentised intervals (each errs where the other holds: a
        # one-signed skew, mixed signs), each end moved out by the largest contribution
        # one trajectory made on its side, a value the sample holds once or missed
        t_ = t_[np.isfinite(t_)]  # a resample without spread (se* = 0) has no t*
        if t_.size:
            t_lo, t_hi = np.quantile(t_, [alpha / 2, 1 - alpha / 2])
            lo, hi = min(lo, d - t_hi * se), max(hi, d - t_lo * se)
            method = f"paired bootstrap, percentile ∪ studentised ({b} resamples)"
        w = _contributions(na, da, nb, db, rb) if ratio else na - nb
        lo -= max(0.0, -float(w.min())) / n
        hi += max(0.0, float(w.max())) / n
        method += ", ± the largest contribution (unbounded metric)"
    out.update(low=float(lo), high=float(hi), resamples=b, interval=method)
    return out


# --- a metric's intervals and paired differences (trajectory frames) ---------------------


class Run(Protocol):
    """What `paired_difference` reads of a result (`wmtsim.engine.simulation.SimResult`):
    its seed, world and trajectory frame (metrics and ``n_<counter>`` columns)."""

    @property
    def seed(self) -> int: ...
    @property
    def world(self) -> object: ...
    @property
    def trajectories(self) -> pl.DataFrame: ...


def _pooled(frame: pl.DataFrame, metric: str) -> bool:
    """Whether ``metric`` has a pooled value on ``frame``: a ratio (`RATIOS`) whose counter
    columns the frame holds."""
    return metric in RATIOS and all(f"n_{c}" in frame.columns
                                    for part in RATIOS[metric] for c in part)


def metric_ci(frame: pl.DataFrame, metric: str, confidence: float = 0.95,
              n_resamples: int = 2000, seed: int = 0) -> dict[str, float]:
    """A metric of a trajectory frame: its mean of per-trajectory values with interval
    (`mean_ci`) and its pooled value with interval (`pooled_ci`; the mean for metrics that
    are not ratios)."""
    return metric_cis([(frame, seed)], (metric,), confidence, n_resamples)[0]


def metric_cis(frames: Sequence[tuple[pl.DataFrame, int]], metrics: Sequence[str],
               confidence: float = 0.95, n_resamples: int = 2000) -> list[dict[str, float]]:
    """`metric_ci` of every metric of every ``(frame, seed)``, frame by frame, metric by
    metric: the same numbers to the bit, with each resampling matrix drawn once for all
    the series it resamples (`mean_cis`, `pooled_cis`) instead of once per interval."""
    cells = [(frame, seed, m) for frame, seed in frames for m in metrics]
    means = mean_cis([frame[m].to_numpy().astype(np.float64) for frame, _, m in cells],
                     confidence, n_resamples, [seed for _, seed, _ in cells])
    ratio = [k for k, (frame, _, m) in enumerate(cells) if _pooled(frame, m)]
    pooled = pooled_cis([frame_parts(cells[k][0], cells[k][2]) for k in ratio], confidence,
                        n_resamples, [cells[k][1] for k in ratio])
    for k, p in zip(ratio, pooled, strict=True):
        means[k].update(p)
    for out in means:
        if "pooled" not in out:
            out.update({"pooled": out["mean"], "pooled_low": out["low"],
                        "pooled_high": out["high"]})
    return means


def paired_difference(a: Run, b: Run, metric: str, confidence: float = 0.95,
                      n_resamples: int = 2000) -> dict[str, Any]:
    """Δ = ``a − b`` on ``metric``, paired over trajectories, with its test and interval
    (`paired_effect`): ``mean``, ``low``, ``high``, ``n``, ``n_nonzero`` (trajectories on
    which a and b differ), ``p``, ``test``, ``interval`` for the per-trajectory mean; for a
    ratio metric (`RATIOS`) also ``pooled``, ``pooled_low``, ``pooled_high``,
    ``pooled_p``, ``pooled_n_nonzero``, ``pooled_test`` for the difference of the pooled
    values Σ/Σ (the same estimand as the pooled table).

    Both results (`wmtsim.engine.simulation.SimResult`) must come from the same seed and
    trajectories (common random numbers).

    The sign convention is the command line's, Δ = compared − reference: call
    ``paired_difference(other, wmt, m)`` for what `wmtsim compare` prints as
    "configuration − wmt" (a lower-is-better metric such as ASR then has Δ > 0 when WMT
    is better; for TSR, higher is better, Δ < 0 when WMT is better).
    """
    ta, tb = a.trajectories, b.trajectories
    if a.seed != b.seed or a.world != b.world or not ta["trajectory"].equals(
            tb["trajectory"]):
        raise ValueError("paired differences need the same world, seed and trajectories")
    alpha = 1.0 - confidence
    bound = metric_bound(metric)
    out = paired_effect(ta[metric].to_numpy(), tb[metric].to_numpy(), alpha=alpha,
                        n_resamples=n_resamples, seed=a.seed, bound=bound)
    if _pooled(ta, metric):
        (na, da), (nb, db) = (frame_parts(t, metric) for t in (ta, tb))
        pooled = paired_effect(na, nb, da, db, alpha=alpha, n_resamples=n_resamples,
                               seed=a.seed, bound=bound)
        out.update({f"pooled_{k}" if k != "mean" else "pooled": pooled[k]
                    for k in ("mean", "low", "high", "p", "n_nonzero", "test",
                              "interval")})
    return out


def adjust(p: Sequence[float] | np.ndarray, method: str = "holm") -> np.ndarray:
    """Adjusted p-values of a family of tests: ``holm`` (Holm 1979, family-wise error),
    ``bh`` (Benjamini–Hochberg 1995, false discovery rate) or ``none``. NaN stays NaN and
    is not counted in the family."""
    if method not in CORRECTIONS:
        raise ValueError(f"correction {method!r} is unknown; allowed: "
                         f"{', '.join(CORRECTIONS)}")
    p = np.asarray(p, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    m = ok.size
    if m == 0 or method == "none":
        out[ok] = p[ok]
        return out
    order = ok[np.argsort(p[ok], kind="stable")]
    ranked = p[order]
    if method == "holm":
        adj = np.maximum.accumulate((m - np.arange(m)) * ranked)
    else:
        adj = np.minimum.accumulate((m / np.arange(1, m + 1) * ranked)[::-1])[::-1]
    out[order] = np.minimum(adj, 1.0)
    return out


def two_sided(p_holds: float, p_fails: float) -> float:
    """A claim's two-sided p-value from its two one-sided ones (the family adjusts it)."""
    return min(1.0, 2.0 * min(p_holds, p_fails))


def verdict(p_holds: float, p_fails: float, favours: float, alpha: float = ALPHA,
            p_adjusted: float | None = None) -> str:
    """The verdict of a claim: significant when its two-sided p-value (``p_adjusted``,
    after the family's correction; else `two_sided` of the one-sided ones) is at most
    ``alpha``, in the direction of the smaller one-sided p-value (``p_holds``: the claim
    holds; ``p_fails``: the opposite holds). Otherwise *holds (not significant)* when
    ``favours`` (the point estimate's margin in the claim's favour) is > 0, else *tie*."""
    p = two_sided(p_holds, p_fails) if p_adjusted is None else p_adjusted
    if math.isfinite(p) and p <= alpha:
        return HOLDS if p_holds <= p_fails else FAILS
    return HOLDS_NS if favours > 0 else TIE


def directed_verdict(favours: float, p_adjusted: float, alpha: float = ALPHA) -> str:
    """`verdict` of a claim tested by one two-sided test (symmetric: its direction is the
    point estimate's): ``favours`` the estimate's margin in the claim's favour,
    ``p_adjusted`` the test's p-value after the family's correction."""
    if not math.isfinite(favours) or favours == 0.0:
        return TIE  # no direction: an estimate of exactly 0 favours neither side
    return verdict(0.0 if favours > 0 else 1.0, 1.0 if favours > 0 else 0.0, favours,
                   alpha, p_adjusted)


def level_text(alpha: float, correction: str, family: int) -> str:
    """How a family of tests was read, e.g. "two-sided 5%, Holm over 14 tests"."""
    return (f"two-sided {alpha:.0%} (each direction {alpha / 2:.1%}), "
            f"{CORRECTION_NAMES[correction]} over {family} tests")
