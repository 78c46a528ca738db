"""Claims as tests: "``subject`` is the best (or worst) of itself and ``others``", tested
on paired trajectories and read as one of the verdicts of `wmtsim.core.inference`.

`check_claim` runs, for each other configuration o, the paired test of
``s · (x_subject − x_o)`` (s = ±1 so that the claim says > 0; `paired_effect`), on the
claim's estimand: per-trajectory means, or pooled ratios Σ/Σ when the values are
``(numerator, denominator)`` pairs. The claim is an intersection–union test (it holds only
if it holds against every o), so its p-value for "holds" is the largest pairwise
one-sided p-value; "fails" (some o is better) is a union, so its p-value is the smallest
one-sided p-value times m, the number of others (Bonferroni within the claim). The claim's
two-sided p-value, 2 · min of the two, is what a family of claims corrects (`read_family`:
Holm by default), and the verdict is significant when the corrected p-value is at most
alpha (two-sided; each direction at alpha/2).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from wmtsim.core.inference import (
    ALPHA,
    EXACT_MAX,
    SIGNIFICANT,
    adjust,
    paired_effect,
    two_sided,
    verdict,
)

Values = np.ndarray | tuple[np.ndarray, np.ndarray]
__all__ = ["check_claim", "effect_text", "margin_interval", "pair_test", "read_family"]


def pair_test(x: Values, y: Values, favour: int, alpha: float = ALPHA,
              bound: float | None = None, interval: bool = False, seed: int = 0
              ) -> dict[str, Any]:
    """`paired_effect` of ``favour · (x − y)``, with ``p_holds`` (the claim's direction)
    and ``p_fails`` (the opposite)."""
    if isinstance(x, tuple):
        assert isinstance(y, tuple)
        e = paired_effect(x[0], y[0], x[1], y[1], alpha=alpha, bound=bound,
                          interval=interval, seed=seed)
    else:
        assert not isinstance(y, tuple)
        e = paired_effect(x, y, alpha=alpha, bound=bound, interval=interval, seed=seed)
    up, down = (e["p_greater"], e["p_less"]) if favour > 0 else (e["p_less"],
                                                                 e["p_greater"])
    return {**e, "p_holds": up, "p_fails": down}


def check_claim(subject: str, others: Sequence[str], favour: int,
               values: Mapping[str, Values], alpha: float = ALPHA,
               bound: float | None = None, interval: bool = False) -> dict[str, Any]:
    """The claim "``subject`` beats every one of ``others``" (``favour`` +1: larger is
    the claim's direction) on one set of paired trajectories. Returns ``margin`` (the
    smallest favour-signed difference), ``closest`` (that rival), ``n`` (the fewest
    paired trajectories), ``n_nonzero`` and ``test`` of the closest rival, ``p_holds``,
    ``p_fails`` and ``p`` (two-sided); with ``interval``, also ``margin_low`` and
    ``margin_high``, the margin's interval at ``1 − alpha`` (`margin_interval`: of the
    smallest difference over every rival, not conditional on which one is closest)."""
    m = len(others)
    p_holds, p_fails_min = 0.0, 1.0
    margin, closest, best = math.inf, "", None
    n_min = None
    rivals = []  # the others with a difference at all
    for o in others:
        r = pair_test(values[subject], values[o], favour, alpha, bound)
        n_min = r["n"] if n_min is None else min(n_min, r["n"])
        if r["n"] == 0 or not math.isfinite(r["mean"]):
            p_holds = 1.0
            continue
        rivals.append(o)
        signed = favour * r["mean"]
        if signed < margin:
            margin, closest, best = signed, o, r
        p_holds = max(p_holds, r["p_holds"])
        p_fails_min = min(p_fails_min, r["p_fails"])
    p_fails = min(1.0, m * p_fails_min)
    out = {"margin": margin if math.isfinite(margin) else math.nan, "closest": closest,
           "n": n_min or 0, "n_nonzero": 0 if best is None else best["n_nonzero"],
           "test": "none" if best is None else best["test"],
           "p_holds": p_holds, "p_fails": p_fails, "p": two_sided(p_holds, p_fails)}
    if interval:
        low = high = math.nan
        if best is not None:
            low, high = margin_interval(subject, rivals, favour, values, alpha, bound)
        out.update(margin_low=low, margin_high=high)
    return out


def margin_interval(subject: str, rivals: Sequence[str], favour: int,
                    values: Mapping[str, Values], alpha: float = ALPHA,
                    bound: float | None = None) -> tuple[float, float]:
    """The ``1 − alpha`` interval of the margin min_o D_o, D_o the favour-signed
    difference of ``subject`` and rival o: the minimum of the lower and of the upper ends
    of simultaneous intervals for every D_o (Bonferroni: each at ``alpha / m``, m rivals).
    When all m cover, [min low_o, min high_o] holds min_o D_o, so it covers at 1 − alpha
    whichever rival is closest. The interval of the rival closest on the point estimate,
    at 1 − alpha, covered 0.913-0.919 when all five configurations tie: picking
    the rival on the data shifts its estimate down. NaN when a rival has no interval
    (a sparse effect on an unbounded metric)."""
    m = len(rivals)
    ends = []
    for o in rivals:
        e = pair_test(values[subject], values[o], favour, alpha / m, bound, True)
        # paired_effect's interval is of x − y; favour-signed, −1 swaps its ends
        ends.append((e["low"], e["high"]) if favour > 0 else (-e["high"], -e["low"]))
    low, high = np.min(np.array(ends, dtype=np.float64), axis=0)
    return float(low), float(high)


def read_family(rows: Sequence[dict[str, Any]], alpha: float = ALPHA,
                correction: str = "holm") -> list[dict[str, Any]]:
    """Correct the two-sided p-values of a family of claims (rows of `check_claim`) and
    give each its verdict; adds ``p_adjusted``, ``verdict``, ``significant``."""
    p_adj = adjust([r["p"] for r in rows], correction)
    out = []
    for r, pa in zip(rows, p_adj, strict=True):
        v = verdict(r["p_holds"], r["p_fails"], r["margin"] if math.isfinite(r["margin"])
                    else 0.0, alpha, float(pa))
        out.append({**r, "p_adjusted": float(pa), "verdict": v,
                    "significant": v in SIGNIFICANT})
    return out


def effect_text(d: Mapping[str, Any], prefix: str = "") -> str:
    """An effect as printed everywhere: ``value [low, high]`` and, when few trajectories
    differ, how many and the exact test's p-value; with none, an upper bound labelled as
    one (the rule of three: the size of the difference is at most ``high``, or, for an
    unbounded metric, the share of trajectories that could differ), never an interval
    and never ``[0, 0]``. ``prefix`` picks the ``pooled`` fields of a paired row."""
    from wmtsim.core.formatting import interval, num

    def get(key: str) -> Any:
        return d.get(f"{prefix}_{key}" if prefix else key)

    mean = d.get(prefix or "mean")
    n, k = d.get("n"), get("n_nonzero")
    if n == 0:  # defined on no trajectory (CCR of a policy that never has candidates)
        return "– (defined on no trajectory)"
    if mean is None or k is None or not n:
        return "–"
    if k == 0:  # an upper bound, not an interval: never "0 [-b, +b]"
        high = get("high")
        if isinstance(high, int | float) and math.isfinite(high) and high > 0:
            return (f"0 (none of {n} differ; 95% upper bound on the size of the "
                    f"difference: {num(high)}, rule of three)")
        return (f"0 (none of {n} differ; upper bound at 95%: ≤ {num(3 / n)} of them "
                "would, rule of three)")
    text = interval(mean, get("low"), get("high"), sign=True)
    low = get("low")
    bare = not (isinstance(low, int | float) and math.isfinite(low))
    if k <= EXACT_MAX:  # a sparse effect on an unbounded metric has no interval
        text += (f" ({k} of {n} differ; {'no interval, ' if bare else ''}"
                 f"exact p = {num(get('p'), 2)})")
    elif bare:  # sparse differences (under DENSE) of an unbounded metric: no interval
        text += f" ({k} of {n} differ; no interval, sparse; p = {num(get('p'), 2)})"
    return text


def contribution_tests(phi_t: np.ndarray, low: np.ndarray, high: np.ndarray,
                       alpha: float = ALPHA, bound: float | None = None
                       ) -> list[dict[str, Any]]:
    """Per row of ``phi_t`` (k, n) — one mechanism's per-trajectory contributions — its
    test of "the mean is not 0" (`paired_effect` against 0: exact when few trajectories
    carry a nonzero contribution) and its interval: the shared paired bootstrap
    (``low``, ``high``) when enough trajectories are nonzero, else `paired_effect`'s
    conservative bound (with none nonzero: ``± bound`` · 3/n, the rule of three, NaN for
    an unbounded metric). Returns low, high, n_nonzero, p, test per row (uncorrected)."""
    from wmtsim.core.inference import SPARSE

    out = []
    for j in range(phi_t.shape[0]):
        e = paired_effect(phi_t[j], np.zeros(phi_t.shape[1]), alpha=alpha, bound=bound,
                          interval=bool(np.count_nonzero(phi_t[j]) < SPARSE))
        sparse = e["n_nonzero"] < SPARSE
        out.append({"low": e["low"] if sparse else float(low[j]),
                    "high": e["high"] if sparse else float(high[j]),
                    "n_nonzero": e["n_nonzero"], "p": e["p"], "test": e["test"]})
    return out
