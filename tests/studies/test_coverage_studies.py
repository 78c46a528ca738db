"""Monte Carlo coverage studies, one per procedure issue 38 found short (docs/statistics.md,
"Coverage"). Each runs the project's own function on data with a known truth
(`wmtsim.studies.coverage.cases`, which says what each case is), is seeded, runs in
seconds, and states its Monte Carlo error: every assertion allows 3 Monte Carlo standard
errors (`mc_error`, sqrt(p (1 − p) / runs)) beyond the nominal level. Each failed on the
code issue 38 was filed against; the numbers before and after, at larger sizes, are the
table of docs/statistics.md ("Coverage", `python scripts/coverage_study.py`).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from wmtsim.studies.coverage import cases
from wmtsim.studies.coverage.cases import mc_error

pytestmark = pytest.mark.slow  # Monte Carlo: about a minute in all on two cores (make test-all)


def test_zero_difference_bound_of_a_pooled_ratio_covers() -> None:
    """Denominators 90 (20 trajectories) and 20 (180). At p = 0.05 the truth (0.0167) is
    above 3/n = 0.015 and no heavy trajectory differs in 36% of the runs: ± 3/n covered
    0.62; the weighted rule of three (the three largest shares of the denominator, 0.05)
    covers. At p = 0.15 the truth (0.05) sits on the weighted bound: its worst case."""
    runs = 1500
    for p in (0.05, 0.15):
        cov = float(np.mean(cases.pooled_zero_bound(runs, p, seed=38)))
        assert cov >= 0.95 - 3 * mc_error(cov, runs), (p, cov)


def test_sparse_unbounded_effect_reports_no_interval_it_cannot_keep() -> None:
    """Tokens where 1% of 400 trajectories differ by a lognormal amount: the interval
    scaled by the largest observed difference covered 0.83 of the time it was reported;
    now none is reported (any that were would have to cover at 95%), and the exact test,
    the whole reading, keeps its size on the null with random signs."""
    runs = 600
    hits, rejections = cases.sparse_unbounded(runs, seed=381)
    if hits:
        cov = float(np.mean(hits))
        assert cov >= 0.95 - 3 * mc_error(cov, len(hits)), (cov, len(hits))
    size = float(np.mean(rejections))
    assert size <= 0.05 + 3 * mc_error(size, runs), size


def test_grid_test_keeps_its_size_at_n_50() -> None:
    """8 points on 50 shared trajectories with one mean: with the standard errors held at
    the sample's the bootstrap rejected 0.148 (skewed) and 0.095 (rate) of these 400
    flat grids; studentised inside the bootstrap, within 3 Monte Carlo errors of 0.05."""
    runs = 400
    for kind in ("skewed", "rate"):
        size = float(np.mean(cases.grid_size(runs, kind, seed=4)))
        assert size <= 0.05 + 3 * mc_error(size, runs), (kind, size)


def test_morris_test_keeps_its_level_per_null_knob_at_r_6() -> None:
    """Five knobs at the atlas's r = 6 (`cases.morris_false_matters`): the knob that
    moves the mean is found, and each null knob — one read but moving only the noise,
    three not in f — is called "matters" at most 5% of the time before the screening's
    correction (which only lowers it). The interval rule it replaced called the read
    knob "matters" in about 0.2 of the runs."""
    runs = 400
    rate = cases.morris_false_matters(runs, seed=6)
    assert rate[0] >= 0.9
    for i in range(1, rate.size):
        assert rate[i] <= 0.05 + 3 * mc_error(rate[i], runs), (i, rate)


def test_sobol_indices_of_the_mean_function_under_common_random_numbers() -> None:
    """A sweep like `sobol_gaia` (R = 4 × N = 64, 500 trajectories on common random
    numbers) through `sobol_table`: read on the point means the intervals covered the
    mean function's indices 0.6-0.75 and called the read-but-inert x_3 non-zero every
    time; from the trajectories they cover at 95%, x_3 is non-zero at most 5% of the
    time, and `noise_share` is reported."""
    runs = 80
    hits, inert_nonzero, shares, flat = cases.sobol_crn(runs, seed=2)
    assert not any(flat)
    cov = float(np.mean(hits))
    assert cov >= 0.95 - 3 * mc_error(cov, len(hits)), cov
    rate = float(np.mean(inert_nonzero))
    assert rate <= 0.05 + 3 * mc_error(rate, runs), rate
    assert 0.0 < float(np.mean(shares)) < 0.2  # the noise is counted, and is small here


def test_attack_worst_case_is_unbiased_when_nothing_beats_the_script() -> None:
    """Two attacks of the same true harm: picking the more harmful on the held-out data
    overstated it by +0.0021 (± 0.0004); chosen on the search data, the held-out value
    is unbiased (within 3 Monte Carlo errors of 0)."""
    runs = 1500
    errors = np.array(cases.attack_bias(runs, seed=5))
    bias, se = float(errors.mean()), float(errors.std() / math.sqrt(runs))
    assert abs(bias) <= 3 * se, (bias, se)


def test_margin_interval_covers_when_all_five_tie() -> None:
    """All five Table 4 configurations tie (true margin 0): the closest rival's own 95%
    interval covered 0.91; the margin's interval over every rival covers at 95%."""
    runs = 1200
    cov = float(np.mean(cases.margin_ties(runs, seed=55)))
    assert cov >= 0.95 - 3 * mc_error(cov, runs), cov
