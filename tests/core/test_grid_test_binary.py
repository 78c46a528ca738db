"""`grid_test` on 0/1 outcomes (`wmtsim.core.grid_test.binary_test`, issue 49 item 5):
McNemar's mid-p by hand, the ``rho_m_grid`` case the within-trajectory shuffle alone
called significant, and a size test with teeth on both sides (docs/statistics.md,
"grid_test on binary outcomes")."""

from __future__ import annotations

import numpy as np
import pytest

from wmtsim.core.grid_test import binary_test, grid_test, mcnemar_midp
from wmtsim.studies.coverage.cases import runs_for, within


def test_mcnemar_midp_by_hand() -> None:
    """b + c = 4: P(X = 0) = 1/16, P(X = 1) = 4/16. (4, 0): 2 · ½ · 1/16 = 1/16;
    (3, 1): 2 (1/16 + ½ · 4/16) = 6/16; (2, 2): capped at 1; none discordant: 1."""
    p = mcnemar_midp(np.array([4, 3, 2, 0, 0]), np.array([0, 1, 2, 0, 4]))
    np.testing.assert_allclose(p, [1 / 16, 6 / 16, 1.0, 1.0, 1 / 16])


def _rho_m_tsr() -> np.ndarray:
    """``rho_m_grid``'s TSR of Full WMT (48 settings × 400 trajectories, seed 0): one
    trajectory succeeds everywhere, two succeed at a few neighbouring settings (10 and
    4 of 48, the 4 inside the 10), the rest nowhere: 1 against 3 successes of 400."""
    x = np.zeros((48, 400))
    x[:, 0] = 1.0
    x[[30, 36, 37, 38, 42, 43, 44, 45, 46, 47], 1] = 1.0
    x[[42, 43, 44, 45], 2] = 1.0
    return x


def test_rho_m_grid_tsr_is_not_called_different() -> None:
    """The shuffle alone finds the two trajectories' successes aligned (p_Q ≈ 0.001,
    C(10, 4)/C(48, 4) = 0.0011) but no pair of settings differs on more than two
    discordant trajectories (McNemar mid-p 0.25), so the grid is not called different."""
    r = grid_test(_rho_m_tsr())
    assert abs(r["p"] - 0.25) < 1e-12 and r["deviating"] == 0
    assert r["statistic"] > r["critical"]  # what the shuffle alone would have rejected
    assert r["test"].startswith("binary")


def test_a_real_difference_is_found_and_named() -> None:
    """Point 0 succeeds on 30 trajectories that fail at the other four points."""
    x = np.zeros((5, 100))
    x[0, :30] = 1.0
    x[:, 50:] = 1.0
    r = binary_test(x)
    assert r["p"] < 0.001 and r["deviating"] == 5 and r["largest"] == 0


def test_nothing_differs_gives_p_1() -> None:
    r = grid_test(np.tile((np.arange(20) % 2).astype(float), (6, 1)))
    assert r["p"] == 1.0 and r["deviating"] == 0


@pytest.mark.slow  # about 8 s
def test_binary_size_is_near_nominal_at_every_level() -> None:
    """Flat binary grids, 8 points on 50 trajectories sharing their outcome except with
    probability 0.1 (`coverage_cases.grid_pvalues`, exchangeable over the points):
    within 3 Monte Carlo errors of 5%, 10% and 20% on both sides, so a 40% liberal test
    fails (0.28 at 20%: runs_for = 493 runs, power 0.9) and so does the conservative
    bootstrap this replaced (0 rejections)."""
    from wmtsim.studies.coverage import cases

    runs = runs_for(0.20, 0.28)
    p = cases.grid_pvalues(runs, "binary", seed=50, resamples=500)
    for a in (0.05, 0.10, 0.20):
        rate = float(np.mean(p <= a))
        assert within(rate, a, runs, "above") and within(1 - rate, 1 - a, runs, "above"), (
            a, rate)
