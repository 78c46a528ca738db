"""The bootstrap interval of `paired_effect` is the 2.5% and 97.5% quantiles, both tails:
checked against the normal interval a large sample must approach (hand-derived: for
n = 5,000 paired differences drawn N(0.1, 1), se = 1/√n ≈ 0.0141, so the 95% interval is
mean ± 1.96 · se ≈ ± 0.0277). A tail moved to 5% would shorten its side by
(1.96 − 1.645)/1.96 ≈ 16%."""

from __future__ import annotations

import math

import numpy as np

from wmtsim.core.inference import paired_effect


def test_bootstrap_interval_has_both_tails_at_two_and_a_half_percent() -> None:
    rng = np.random.default_rng(7)
    n = 5_000
    a = rng.normal(0.1, 1.0, n)
    b = np.zeros(n)
    out = paired_effect(a, b, n_resamples=10_000, seed=0, bound=10.0)  # percentile only
    assert out["interval"].startswith("paired percentile bootstrap")
    se = float(a.std(ddof=1)) / math.sqrt(n)
    lower_side, upper_side = out["mean"] - out["low"], out["high"] - out["mean"]
    # each side is 1.96 se to within the bootstrap's own noise (a few per cent)
    assert abs(lower_side / se - 1.96) < 0.1, lower_side / se
    assert abs(upper_side / se - 1.96) < 0.1, upper_side / se
