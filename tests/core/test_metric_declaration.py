"""Each property of a metric comes from its one declaration (`wmtsim.core.metrics.DECLARED`):
the bound of its paired differences, its pooled value, and the statistics that read a
trajectory frame without the engine (`wmtsim.core.inference`)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import polars as pl
import pytest

import wmtsim
from wmtsim.core import inference
from wmtsim.core.inference import metric_bound, metric_ci, paired_difference
from wmtsim.core.metrics import DECLARED, RATIOS, UNIT, frame_parts


@pytest.mark.parametrize("m", DECLARED, ids=lambda m: m.name)
def test_a_paired_difference_is_bounded_as_its_metric_is_declared(m) -> None:  # type: ignore[no-untyped-def]
    assert metric_bound(m.name) == (1.0 if m.unit else None)
    assert (m.name in UNIT) == m.unit


# The ratios whose per-trajectory value can leave [0, 1], each with its reason; every
# other ratio (a count of some of its denominator's events) is declared `unit`.
NOT_UNIT = {"af": "one poison selected many times: H_p can exceed P_i",
            "avg_prompt_tokens": "tokens per step", "latency_ms": "milliseconds per step"}


def test_every_share_is_declared_unit() -> None:
    """A share of events (ASR, TSR, final answers correct, ...) is bounded by 1, and its
    declaration says so (``final_correct`` once was not: its sparse differences then got
    no interval where the bound gives one)."""
    ratios = {m.name for m in DECLARED if m.den}
    assert {m for m in ratios if not next(d for d in DECLARED if d.name == m).unit} == set(
        NOT_UNIT)


def _frame(asr_num: list[int], asr_den: list[int]) -> pl.DataFrame:
    num, den = np.array(asr_num, dtype=np.float64), np.array(asr_den, dtype=np.float64)
    asr = np.divide(num, den, out=np.full(num.shape, np.nan), where=den > 0)
    return pl.DataFrame({"trajectory": np.arange(len(num)), "asr": asr,
                         "n_compromised_steps": num, "n_critical_steps": den})


def test_paired_difference_reads_any_result_with_seed_world_and_trajectories() -> None:
    """No engine type needed: a result is what has a seed, a world and a frame."""
    a = SimpleNamespace(seed=1, world="w", trajectories=_frame([1, 2, 0, 3], [2, 4, 1, 3]))
    b = SimpleNamespace(seed=1, world="w", trajectories=_frame([0, 2, 0, 1], [2, 4, 1, 3]))
    d = paired_difference(a, b, "asr", n_resamples=100)
    # per-trajectory means 0.5417 − 0.2708; pooled (6 − 3) / 10
    assert d["mean"] == pytest.approx((0.5 + 0.5 + 0 + 1) / 4 - (0 + 0.5 + 0 + 1 / 3) / 4)
    assert d["pooled"] == pytest.approx(6 / 10 - 3 / 10)
    with pytest.raises(ValueError, match="same world, seed and trajectories"):
        paired_difference(a, SimpleNamespace(seed=2, world="w", trajectories=b.trajectories),
                          "asr")


def test_the_pooled_value_is_the_ratio_of_the_declared_counters() -> None:
    frame = _frame([1, 2, 0, 3], [2, 4, 1, 3])
    assert "asr" in RATIOS
    num, den = frame_parts(frame, "asr")
    assert metric_ci(frame, "asr", n_resamples=50)["pooled"] == num.sum() / den.sum() == 0.6


def test_wmtsim_paired_difference_is_the_statistics_module_s() -> None:
    assert wmtsim.paired_difference is inference.paired_difference
