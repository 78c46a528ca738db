"""Every ratio metric pinned to its numerator and denominator counters.

The metrics of docs/model.md §5 (Eqs. 8–14) are ratios of per-trajectory counters. Two
places turn counters into values — `metrics_from_counters` (per-trajectory values) and
`ratio_parts` (the numerator and denominator behind pooled Σ/Σ values) — and the engine's
trajectory frame carries both the metric and the raw ``n_<counter>`` columns. The
expected values here are worked out by hand from a counter row whose counters are all
different, so dividing by the wrong counter (ASR over prompt steps instead of critical
steps, PRR = H_p / H_c, ...) gives a different number and fails.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from wmtsim.core.metrics import COUNTERS, metrics_from_counters, ratio_parts
from wmtsim.core.world_spec import PoisonSpec, WorldSpec
from wmtsim.engine.simulation import simulate

# A hand-worked counter row (one trajectory). Every counter has its own value.
ROW = {
    "prompt_steps": 10, "contaminated_steps": 4, "h_p": 3, "h_c": 5, "ccr_sum": 2.5,
    "ccr_steps": 5, "critical_steps": 4, "compromised_steps": 1, "correct_steps": 3,
    "success": 1, "p_i": 2, "p_r": 1, "prompt_tokens": 1000, "llm_calls": 12,
    "selector_calls": 6, "summariser_calls": 2, "folds": 2, "suppressed": 1,
    "superseded": 0, "nodes": 14, "final_correct": 1, "revisions": 0, "latency_ms": 500,
    # the parity counters: no ratio metric reads them
    "memory_tokens": 300, "context_tokens": 700, "context_max": 90, "context_items_max": 4,
    "context_overflows": 0,
    "tasks": 2,  # a two-task conversation (world.tasks): TSR is per task
}
# Its metrics, by hand (numerator / denominator, docs/model.md §5):
HAND = {
    "asr": 1 / 4,  # compromised critical steps 1 / critical steps 4 (not / prompt steps 10)
    "prr": 3 / 8,  # H_p 3 / (H_p 3 + H_c 5)  (H_p / H_c would be 0.6)
    "ip": 1 / 2,  # P_r 1 / P_i 2
    "br": 4 / 10,  # T_c 4 / T_p 10
    "af": 3 / 2,  # H_p 3 / P_i 2
    "ccr": 2.5 / 5,  # Σ selected/candidate tokens 2.5 / steps with candidates 5
    "accuracy": 3 / 4,  # correct critical steps 3 / critical steps 4
    "tsr": 1 / 2,  # successful tasks 1 / tasks 2
    "final_correct": 1 / 2,
    "prompt_tokens": 1000.0,
    "steps": 10.0,
    "llm_calls": 12.0,
    "latency_ms": 50.0,  # simulated latency 500 ms / 10 prompt steps
    "avg_prompt_tokens": 100.0,  # prompt tokens 1000 / prompt steps 10
}
# The numerator and denominator of each ratio metric on ROW, by hand.
PARTS = {"asr": (1, 4), "prr": (3, 8), "ip": (1, 2), "br": (4, 10), "af": (3, 2),
         "ccr": (2.5, 5), "accuracy": (3, 4)}


def _matrix(*rows: dict[str, float]) -> np.ndarray:
    return np.array([[r[name] for name in COUNTERS] for r in rows], dtype=np.float64)


def test_row_covers_every_counter() -> None:
    assert set(ROW) == set(COUNTERS)


@pytest.mark.parametrize("metric", sorted(HAND))
def test_metric_equals_its_counters_on_a_hand_worked_row(metric: str) -> None:
    got = metrics_from_counters(_matrix(ROW))[metric]
    assert got.tolist() == [HAND[metric]]


@pytest.mark.parametrize("metric", sorted(PARTS))
def test_ratio_parts_are_the_metrics_numerator_and_denominator(metric: str) -> None:
    """The pooled (Σ/Σ) value is built from `ratio_parts`: on one row it must give the
    same numerator and denominator as the per-trajectory metric."""
    num, den = ratio_parts(_matrix(ROW), metric)
    assert (num.tolist(), den.tolist()) == ([PARTS[metric][0]], [PARTS[metric][1]])
    assert num[0] / den[0] == HAND[metric]


def test_pooled_over_two_rows_is_ratio_of_sums() -> None:
    """Two rows: ASR per trajectory 1/4 and 3/6 (mean 0.375), pooled (1+3)/(4+6) = 0.4;
    PRR 3/8 and 0/4, pooled 3/12 = 0.25."""
    other = dict(ROW, critical_steps=6, compromised_steps=3, h_p=0, h_c=4)
    counts = _matrix(ROW, other)
    assert metrics_from_counters(counts)["asr"].tolist() == [0.25, 0.5]
    num, den = ratio_parts(counts, "asr")
    assert num.sum() / den.sum() == 0.4
    assert metrics_from_counters(counts)["prr"].tolist() == [0.375, 0.0]
    num, den = ratio_parts(counts, "prr")
    assert num.sum() / den.sum() == 0.25


@pytest.mark.parametrize(("metric", "zero"), [
    ("asr", "critical_steps"), ("accuracy", "critical_steps"), ("ip", "p_i"),
    ("af", "p_i"), ("br", "prompt_steps"), ("ccr", "ccr_steps"),
    ("latency_ms", "prompt_steps")])
def test_zero_denominator_is_undefined_not_zero(metric: str, zero: str) -> None:
    """A ratio whose denominator counter is 0 is NaN (left out of means), never 0 or inf."""
    row = dict(ROW, **{zero: 0})
    if zero == "critical_steps":
        row["compromised_steps"] = row["correct_steps"] = 0
    assert math.isnan(metrics_from_counters(_matrix(row))[metric][0])


def test_prr_undefined_without_selections() -> None:
    row = dict(ROW, h_p=0, h_c=0)
    assert math.isnan(metrics_from_counters(_matrix(row))["prr"][0])


# The engine's per-trajectory frame: each metric column against the raw counter columns.
POISONED = WorldSpec(n_subtasks=(2, 3), n_actions=(2, 4), n_globals=1,
                     poison=(PoisonSpec("plausible"), PoisonSpec("failed"),
                             PoisonSpec("global")))
ENGINE_RATIOS = {
    "asr": ("n_compromised_steps", ("n_critical_steps",)),
    "prr": ("n_h_p", ("n_h_p", "n_h_c")),
    "ip": ("n_p_r", ("n_p_i",)),
    "br": ("n_contaminated_steps", ("n_prompt_steps",)),
    "af": ("n_h_p", ("n_p_i",)),
    "ccr": ("n_ccr_sum", ("n_ccr_steps",)),
    "accuracy": ("n_correct_steps", ("n_critical_steps",)),
    "latency_ms": ("n_latency_ms", ("n_prompt_steps",)),
    "avg_prompt_tokens": ("n_prompt_tokens", ("n_prompt_steps",)),
}


@pytest.mark.parametrize("policy", ["wmt", "linear"])
def test_engine_metric_columns_equal_their_counter_columns(policy: str) -> None:
    res = simulate(POISONED, policy, n=30, seed=5)
    t = res.trajectories
    for metric, (num, dens) in ENGINE_RATIOS.items():
        n = t[num].to_numpy().astype(np.float64)
        d = sum(t[c].to_numpy().astype(np.float64) for c in dens)
        got = t[metric].to_numpy()
        ok = d > 0
        assert np.array_equal(got[ok], n[ok] / d[ok]), metric
        assert np.isnan(got[~ok]).all(), metric
    assert np.array_equal(t["tsr"].to_numpy(), t["n_success"].to_numpy().astype(float))
    assert np.array_equal(t["steps"].to_numpy(), t["n_prompt_steps"].to_numpy().astype(float))
    # The summary's pooled value is Σ numerator / Σ denominator of those same columns.
    summary = {r["metric"]: r for r in res.summary(n_resamples=50).iter_rows(named=True)}
    for metric in ("asr", "prr", "br", "af", "ip"):
        num, dens = ENGINE_RATIOS[metric]
        total = sum(float(t[c].sum()) for c in dens)
        assert summary[metric]["pooled"] == pytest.approx(float(t[num].sum()) / total,
                                                          rel=1e-12), metric


def test_the_pooled_ratios_are_exactly_these() -> None:
    """`RATIOS` (the metrics a report pools as Σ num / Σ den over trajectories), written
    out by hand on purpose (a golden check of the declaration, not a second source):
    latency and prompt tokens per step are ratios but averaged per trajectory (not
    pooled), TSR per task likewise, and a count (tokens, steps) has no denominator."""
    from wmtsim.core.metrics import RATIOS

    assert RATIOS == {
        "asr": (("compromised_steps",), ("critical_steps",)),
        "prr": (("h_p",), ("h_p", "h_c")),
        "ip": (("p_r",), ("p_i",)),
        "br": (("contaminated_steps",), ("prompt_steps",)),
        "af": (("h_p",), ("p_i",)),
        "ccr": (("ccr_sum",), ("ccr_steps",)),
        "accuracy": (("correct_steps",), ("critical_steps",)),
    }
