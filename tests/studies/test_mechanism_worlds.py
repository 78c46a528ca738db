"""Each world built to exercise a mechanism does: the knob moves its metric there beyond
sampling noise (a paired difference on common random numbers, more than 3 paired standard
errors from 0), where the paper's poisoning world is flat."""

from __future__ import annotations

import numpy as np
import pytest

from wmtsim.studies.scenarios.scenario import load_scenario
from wmtsim.studies.sweeps.evaluate import evaluate, make_point, paired_se

# (scenario, low setting, high setting, metric, trajectories); in brittle_tools at
# α = 0.3, where suppression can fire (docs/design.md, "The worlds").
SUPPRESSIBLE = {"alpha": 0.3, "tau_obs": 0.3}
CASES = [
    ("decay_pressure", {"rho": 0.5}, {"rho": 0.99}, "accuracy", 400),
    ("decay_pressure", {"M": 1}, {"M": 8}, "accuracy", 400),
    # Under the choosing selector decay no longer retires late poison beyond noise (ASR
    # −0.004 ± 0.002 at n = 1000); what ρ decides here is accuracy (scenario header).
    ("late_poison", {"rho": 0.5}, {"rho": 0.99}, "accuracy", 1000),
    ("long_horizon", {"rho": 0.5}, {"rho": 0.99}, "accuracy", 400),
    ("long_horizon", {"M": 1}, {"M": 8}, "accuracy", 400),
    ("stale_memory", {"world.p_stale": 0.0}, {"world.p_stale": 0.4}, "accuracy", 400),
    ("brittle_tools", {"alpha": 0.3, "tau_obs": 0.0}, {"alpha": 0.3, "tau_obs": 0.4}, "tsr",
     400),
    ("brittle_tools", {"alpha": 0.3, "tau_obs": 0.0}, {"alpha": 0.3, "tau_obs": 0.4}, "asr",
     400),
    ("brittle_tools", {"alpha": 0.3, "tau_obs": 0.4}, {"alpha": 0.6, "tau_obs": 0.4}, "tsr",
     400),
    ("brittle_tools", {**SUPPRESSIBLE, "beta": 0.0}, {**SUPPRESSIBLE, "beta": 0.6}, "asr",
     400),
    ("brittle_tools", {**SUPPRESSIBLE, "gamma": 0.0}, {**SUPPRESSIBLE, "gamma": 0.4}, "asr",
     400),
    ("brittle_tools", {**SUPPRESSIBLE, "delta": 0.0}, {**SUPPRESSIBLE, "delta": 0.4}, "tsr",
     1000),
]


def _pair(name: str, low: dict[str, float], high: dict[str, float], metric: str, n: int,
          policy: str = "wmt") -> tuple[float, float]:
    """The paired difference high − low of ``metric`` and its standard error."""
    sc = load_scenario(name)
    a, b = (make_point(sc, s, policy, sc.seed, n) for s in (low, high))
    out = evaluate([a, b], n)
    x, y = out[a.key].metric(metric), out[b.key].metric(metric)
    ok = np.isfinite(x) & np.isfinite(y)
    return float((y[ok] - x[ok]).mean()), paired_se(x, y)


@pytest.mark.parametrize(("name", "low", "high", "metric", "n"), CASES)
def test_the_knob_moves_its_metric_beyond_noise(name: str, low: dict[str, float],
                                                high: dict[str, float], metric: str,
                                                n: int) -> None:
    sc = load_scenario(name)
    a, b = (make_point(sc, s, "wmt", sc.seed, n) for s in (low, high))
    out = evaluate([a, b], n)
    x, y = out[a.key].metric(metric), out[b.key].metric(metric)
    ok = np.isfinite(x) & np.isfinite(y)
    diff = float((y[ok] - x[ok]).mean())
    se = paired_se(x, y)
    assert abs(diff) > 3 * se, f"{name}: {metric} moves by {diff:.4f}, paired s.e. {se:.4f}"


def test_rho_is_flat_in_the_paper_poisoning_world() -> None:
    """The contrast the new worlds answer: in paper_poisoning, ρ's effect on TSR is
    within noise (docs/sweeps.md)."""
    sc = load_scenario("paper_poisoning")
    a, b = (make_point(sc, {"rho": r}, "wmt", sc.seed, 400) for r in (0.5, 0.99))
    out = evaluate([a, b], 400)
    x, y = out[a.key].metric("tsr"), out[b.key].metric("tsr")
    assert abs(float((y - x).mean())) <= 3 * paired_se(x, y)


def test_staleness_pays_only_to_a_policy_that_acts_on_supersession() -> None:
    """stale_memory: outdated memories that Full WMT marks obsolete free its budget (the
    accuracy gain above); A1, which keeps them, is not moved beyond noise."""
    diff, se = _pair("stale_memory", {"world.p_stale": 0.0}, {"world.p_stale": 0.4},
                     "accuracy", 400, policy="a1_unweighted")
    assert abs(diff) <= 3 * se, f"A1's accuracy moves by {diff:.4f}, paired s.e. {se:.4f}"


def test_suppression_cannot_fire_at_the_papers_alpha() -> None:
    """A folded branch keeps U_b >= alpha * u_init_task = 0.54 at the paper's alpha, above
    any tau_obs in [0, 0.4]: in brittle_tools tau_obs then changes nothing at all."""
    sc = load_scenario("brittle_tools")
    a, b = (make_point(sc, {"tau_obs": t}, "wmt", sc.seed, 200) for t in (0.0, 0.4))
    out = evaluate([a, b], 200)
    np.testing.assert_array_equal(out[a.key].values, out[b.key].values)
