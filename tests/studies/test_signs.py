"""Sign and direction of every reported difference.

Each test constructs a case whose answer's sign is known by construction — one
configuration is better than the other by a fixed amount on every trajectory, or by a
shift chosen against the bootstrap's own quantiles — and checks the numbers (means,
interval ends, statuses), not their printed form: `paired_difference` (a − b), the
comparison's Δ (`paired_vs`: policy − reference), the bootstrap intervals' ends, the claims
cell test (`evaluate`: which quantile decides "holds" and "fails") and the Shapley
attribution (to − from).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import polars as pl
import pytest

from wmtsim.core.bootstrap import mean_ci, paired_bootstrap, pooled_ci
from wmtsim.core.inference import FAILS, HOLDS, HOLDS_NS, TIE, paired_difference, verdict
from wmtsim.core.verdicts import read_family
from wmtsim.core.world_spec import WorldSpec
from wmtsim.engine.simulation import SimResult, simulate
from wmtsim.studies.attribution.shapley import shapley_exact, shapley_sampled
from wmtsim.studies.compare.claims import Claim, evaluate
from wmtsim.studies.compare.report import paired_vs

SPEC = WorldSpec(n_subtasks=(2, 3), n_actions=(2, 3))
N = 40


@pytest.fixture(scope="module")
def base() -> SimResult:
    return simulate(SPEC, "wmt", n=N, seed=11)


def _with(res: SimResult, policy: str, metric: str, values: np.ndarray) -> SimResult:
    frame = res.trajectories.with_columns(pl.Series(metric, values, dtype=pl.Float64))
    return replace(res, policy=policy, trajectories=frame)


def _spread(n: int = N) -> np.ndarray:
    """Per-trajectory values with spread: 0.1, 0.2, ..., cycled (0.1 … 0.5)."""
    return 0.1 * (1 + np.arange(n) % 5)


def test_paired_difference_is_a_minus_b(base: SimResult) -> None:
    """a = x + 0.25, b = x on every trajectory: a − b = +0.25 exactly, both interval ends
    +0.25 (no spread); swapped, −0.25."""
    x = _spread()
    a, b = _with(base, "wmt", "tsr", x + 0.25), _with(base, "linear", "tsr", x)
    d = paired_difference(a, b, "tsr", n_resamples=200)
    assert d["mean"] == pytest.approx(0.25, abs=1e-12)
    assert d["low"] == pytest.approx(0.25, abs=1e-12)
    assert d["high"] == pytest.approx(0.25, abs=1e-12)
    assert paired_difference(b, a, "tsr", n_resamples=200)["mean"] == pytest.approx(-0.25)


def test_paired_difference_interval_lies_on_the_side_of_the_sign(base: SimResult) -> None:
    """a − b = 0.1 + spread in [0, 0.4]: every difference is > 0, so low > 0, and
    low ≤ mean ≤ high."""
    x = _spread()
    a = _with(base, "wmt", "asr", x + 0.1 + x)
    b = _with(base, "linear", "asr", x)
    d = paired_difference(a, b, "asr", n_resamples=300)
    assert 0.0 < d["low"] <= d["mean"] <= d["high"]
    assert d["mean"] == pytest.approx(0.1 + float(x.mean()))
    d = paired_difference(b, a, "asr", n_resamples=300)
    assert d["low"] <= d["mean"] <= d["high"] < 0.0


def test_compare_delta_is_policy_minus_reference(base: SimResult) -> None:
    """`paired_vs` (compare's Δ table) reports each policy minus WMT: linear's TSR is
    0.5 below WMT's on every trajectory, so Δ = −0.5; its prompt tokens are 100 above,
    Δ = +100."""
    x = _spread()
    wmt = _with(_with(base, "wmt", "tsr", x + 0.5), "wmt", "prompt_tokens", 1000 + x)
    lin = _with(_with(base, "linear", "tsr", x), "linear", "prompt_tokens", 1100 + x)
    wmt, lin = (_with(r, r.policy, "avg_prompt_tokens", np.zeros(N)) for r in (wmt, lin))
    table = paired_vs({"wmt": wmt, "linear": lin}, "wmt", n_resamples=100)
    rows = {r["metric"]: r for r in table.iter_rows(named=True)}
    assert set(table["policy"]) == {"linear"} and set(table["reference"]) == {"wmt"}
    assert rows["tsr"]["mean"] == pytest.approx(-0.5)
    assert rows["tsr"]["high"] == pytest.approx(-0.5)
    assert rows["prompt_tokens"]["mean"] == pytest.approx(100.0)


def test_mean_ci_ends_are_ordered_and_follow_a_shift() -> None:
    """Interval of x + 1 is the interval of x moved by +1 (same resamples)."""
    x = _spread(60)
    lo = mean_ci(x, n_resamples=500, seed=3)
    hi = mean_ci(x + 1.0, n_resamples=500, seed=3)
    assert lo["low"] < lo["mean"] < lo["high"]
    for k in ("mean", "low", "high"):
        assert hi[k] == pytest.approx(lo[k] + 1.0, abs=1e-12)


def test_pooled_ci_low_is_the_lower_quantile() -> None:
    """Pooled Σnum/Σden = 6/20 = 0.3, and its interval ends bracket it, low below high."""
    num = np.array([0.0, 1, 2, 3, 0, 0, 0, 0, 0, 0])
    den = np.full(10, 2.0)
    r = pooled_ci(num, den, n_resamples=500, seed=1)
    assert r["pooled"] == 0.3
    assert r["pooled_low"] < 0.3 < r["pooled_high"]


def test_paired_bootstrap_sides() -> None:
    """Row 0 is always positive (≥ 0.1), row 1 always negative: low/high on their side."""
    rows = np.stack([_spread(), -_spread()])
    low, high = paired_bootstrap(rows, 300, 0.05, np.random.default_rng(0))
    assert 0.0 < low[0] < high[0]
    assert low[1] < high[1] < 0.0


# --------------------------------------------------------------------------- claims verdicts

LOWEST = Claim("wmt lowest ASR", "asr", "wmt", ("linear",))  # favour −1: lower is better
HIGHEST = Claim("wmt highest TSR", "tsr", "wmt", ("linear",))  # favour +1


def test_claim_favour_follows_the_metrics_direction() -> None:
    assert LOWEST.favour == -1 and HIGHEST.favour == 1
    assert Claim("linear worst ASR", "asr", "linear", ("wmt",), "worst").favour == 1
    assert Claim("linear worst TSR", "tsr", "linear", ("wmt",), "worst").favour == -1


def _verdict(claim: Claim, values: dict[str, np.ndarray]) -> dict:
    """`evaluate` then the family's reading (one claim: no correction to speak of)."""
    (row,) = read_family([evaluate(claim, values)], correction="none")
    return row


def test_claim_verdicts_on_constant_differences() -> None:
    """wmt's ASR 0.25 below linear's on every trajectory: d = −1·(x_wmt − x_lin) = +0.25,
    the claim holds (significant) with margin +0.25; 0.25 above: it fails (significant)
    with margin −0.25; TSR (higher is better) 0.25 above: holds."""
    x = _spread()
    r = _verdict(LOWEST, {"wmt": x, "linear": x + 0.25})
    assert r["verdict"] == HOLDS and r["margin"] == pytest.approx(0.25)
    assert r["p_holds"] < 0.025 < r["p_fails"]
    r = _verdict(LOWEST, {"wmt": x + 0.25, "linear": x})
    assert r["verdict"] == FAILS and r["margin"] == pytest.approx(-0.25)
    assert r["p_fails"] < 0.025 < r["p_holds"]
    r = _verdict(HIGHEST, {"wmt": x + 0.25, "linear": x})
    assert r["verdict"] == HOLDS and r["margin"] == pytest.approx(0.25)


def test_verdict_reads_the_two_sided_level_in_the_smaller_ps_direction() -> None:
    """Two-sided p = 2·min(p_holds, p_fails) against α = 5%: p_holds 0.0249 → holds
    (significant); 0.0251 → not significant, then holds (n.s.) with a positive margin and
    a tie with a margin ≤ 0; p_fails 0.0249 → fails (significant). A verdict that read
    one-sided 5% or swapped the directions flips one of these."""
    assert verdict(0.0249, 0.9751, 0.1) == HOLDS
    assert verdict(0.0251, 0.9749, 0.1) == HOLDS_NS
    assert verdict(0.0251, 0.9749, 0.0) == TIE
    assert verdict(0.9751, 0.0249, -0.1) == FAILS
    assert verdict(0.04, 0.96, 0.1) == HOLDS_NS  # one-sided 4% is not two-sided 5%


def test_fails_is_bonferroni_over_the_rivals() -> None:
    """"fails" needs some rival significantly better: check_claim multiplies the smallest
    one-sided p_fails by m, the number of rivals (m = 2 here); "holds" takes the largest
    p_holds (intersection–union: every rival beaten)."""
    z = _noisy()
    claim = Claim("wmt highest TSR", "tsr", "wmt", ("linear", "a2_no_controller"))
    far = np.full_like(z, -10.0)
    one = evaluate(Claim("wmt highest TSR", "tsr", "wmt", ("linear",)),
                   {"wmt": z - 0.1, "linear": np.zeros_like(z)})
    two = evaluate(claim, {"wmt": z - 0.1, "linear": np.zeros_like(z),
                           "a2_no_controller": far})
    assert two["closest"] == "linear"
    assert two["p_fails"] == pytest.approx(min(1.0, 2 * one["p_fails"]))
    assert two["p_holds"] == pytest.approx(one["p_holds"])


def _noisy(n: int = 200) -> np.ndarray:
    return np.random.default_rng(7).normal(size=n)


# --------------------------------------------------------------------------- attribution


def test_shapley_signs_of_a_constructed_game() -> None:
    """v(∅) = 0, v({0}) = +1, v({1}) = −2, v({0,1}) = −1 (additive): φ0 = +1 (player 0
    raises the metric), φ1 = −2 (player 1 lowers it); Σφ = v(N) − v(∅) = −1 (to − from)."""
    v = np.array([0.0, 1.0, -2.0, -1.0])
    assert shapley_exact(v).tolist() == [1.0, -2.0]
    orders = np.array([[0, 1], [1, 0]])
    phi, _ = shapley_sampled(lambda mask: v[mask], 2, orders)
    assert phi.tolist() == [1.0, -2.0]


def test_shapley_per_trajectory_games_keep_their_signs() -> None:
    """Two games at once (columns): the second is the first negated, so are its values."""
    v = np.array([[0.0, 0.0], [1.0, -1.0], [2.0, -2.0], [4.0, -4.0]])
    phi = shapley_exact(v)
    assert phi[:, 0].tolist() == [1.5, 2.5]
    assert phi[:, 1].tolist() == [-1.5, -2.5]


# --------------------------------------------------------------------------- edges of the intervals


def test_paired_difference_refuses_unpaired_results(base: SimResult) -> None:
    """A paired difference needs the same seed, world and trajectories: each alone
    differing is refused."""
    other_seed = replace(base, seed=base.seed + 1)
    other_world = replace(base, world=WorldSpec(n_subtasks=(1, 2)))
    other_rows = replace(base, trajectories=base.trajectories.with_columns(
        pl.col("trajectory") + 1))
    for b in (other_seed, other_world, other_rows):
        with pytest.raises(ValueError, match="same world, seed and trajectories"):
            paired_difference(base, b, "tsr", n_resamples=50)


def test_two_values_have_an_interval_not_a_point() -> None:
    """Two different trajectories are enough for a bootstrap interval (mean and pooled)."""
    r = mean_ci(np.array([0.0, 1.0]), n_resamples=200)
    assert r["low"] < r["high"]
    p = pooled_ci(np.array([0.0, 2.0]), np.array([2.0, 2.0]), n_resamples=200)
    assert p["pooled"] == 0.5 and p["pooled_low"] < p["pooled_high"]


def test_pooled_ci_without_denominator_and_with_empty_resamples() -> None:
    """Σ den = 0: undefined (NaN). Resamples whose Σ den is 0 are left out: here every
    defined resample has ratio 1 (only trajectory 0 has a denominator), so both ends are
    1, not NaN."""
    r = pooled_ci(np.zeros(4), np.zeros(4))
    assert np.isnan(r["pooled"]) and np.isnan(r["pooled_low"])
    num = np.array([1.0] + [0.0] * 9)
    r = pooled_ci(num, num.copy(), n_resamples=300, seed=2)
    assert (r["pooled"], r["pooled_low"], r["pooled_high"]) == (1.0, 1.0, 1.0)


def test_interval_ends_at_low_confidence_stay_ordered() -> None:
    """At confidence 0.5 the ends are the 25% and 75% quantiles: still low ≤ high (an
    α read as 2·α instead of α/2 would ask for the 100% and 0% quantiles: low > high)."""
    x = _spread(50)
    r = pooled_ci(x, np.ones(50), confidence=0.5, n_resamples=300)
    assert r["pooled_low"] < r["pooled_high"]
    low, high = paired_bootstrap(np.stack([x]), 300, 0.5, np.random.default_rng(0))
    assert low[0] < high[0]


def test_paired_bootstrap_in_chunks() -> None:
    """Many trajectories make the resampling run in chunks (2,000,000 // n resamples at a
    time): the chunks must cover exactly n_resamples."""
    rows = np.stack([np.linspace(0.1, 1.0, 2001)])
    low, high = paired_bootstrap(rows, 2000, 0.05, np.random.default_rng(0))
    assert 0.1 < low[0] < high[0] < 1.0


def test_claim_closest_is_the_first_of_equal_competitors() -> None:
    """Two others with the same (constant) margin 0.25: `closest` names the first."""
    x = _spread()
    claim = Claim("wmt highest TSR", "tsr", "wmt", ("linear", "a2_no_controller"))
    r = evaluate(claim, {"wmt": x + 0.25, "linear": x, "a2_no_controller": x.copy()})
    assert r["closest"] == "linear" and r["margin"] == pytest.approx(0.25)


def test_claim_without_any_paired_value_is_never_significant() -> None:
    nan = np.full(N, np.nan)
    r = _verdict(HIGHEST, {"wmt": nan, "linear": _spread()})
    assert r["verdict"] not in (HOLDS, FAILS) and r["n"] == 0


def test_shapley_three_player_additive_game() -> None:
    """An additive game v(S) = Σ_{j∈S} c_j with c = (+1, −2, +4): each player's value is
    its own c_j, signs included (the weights |S|!(k−|S|−1)!/k! over S sum to 1)."""
    c = np.array([1.0, -2.0, 4.0])
    v = np.array([sum(c[j] for j in range(3) if mask >> j & 1) for mask in range(8)])
    assert shapley_exact(v) == pytest.approx(c.tolist(), abs=1e-15)
