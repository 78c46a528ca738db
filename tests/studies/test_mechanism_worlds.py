"""Each world built to exercise a mechanism does: the knob moves its metric there beyond
sampling noise (a paired difference on common random numbers, more than 3 paired standard
errors from 0), where the paper's poisoning world is flat."""

from __future__ import annotations

import numpy as np
import pytest

from wmtsim.studies.evaluate import evaluate, make_point, paired_se
from wmtsim.studies.scenario import load_scenario

# (scenario, low setting, high setting, metric, trajectories)
CASES = [
    ("decay_pressure", {"rho": 0.5}, {"rho": 0.99}, "accuracy", 400),
    ("decay_pressure", {"M": 1}, {"M": 8}, "accuracy", 400),
    ("late_poison", {"rho": 0.5}, {"rho": 0.99}, "asr", 1000),
]


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
