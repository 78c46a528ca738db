"""Recovery (docs/stub_logs.md, "Recovery"): logs drawn from wmtsim's stubs at known
parameters are fitted back; estimates converge as the log grows; the intervals' coverage
(slow tier; benchmarks/stub_fit_coverage.py is the full study)."""

from __future__ import annotations

from pathlib import Path

import pytest

from wmtsim.core.stubs import Stubs
from wmtsim.studies.stub_fit.fit import FITTED, StubFit, fit_log
from wmtsim.studies.stub_fit.log import read_log
from wmtsim.studies.stub_fit.simulate import write_log

TRUTH = Stubs(p_leak=0.3, p_misled=0.7, selector_noise=0.2, poison_boost=0.15,
              p_persuade=0.6, select_threshold=0.4)


def _fit(tmp_path: Path, n: int, seed: int, truth: Stubs = TRUTH) -> StubFit:
    path = tmp_path / f"log{n}_{seed}.jsonl"
    write_log(str(path), truth, n, seed=seed)
    return fit_log(read_log(path))


def test_a_fit_recovers_the_stubs_that_drew_the_log(tmp_path: Path) -> None:
    fit = _fit(tmp_path, 8000, seed=21)
    truth = TRUTH.to_dict()
    assert [e.name for e in fit.estimates if e.identified] == [
        n for n in (f.name for f in fit.estimates) if n in FITTED]
    for e in fit.estimates:
        # Within two interval widths (about four standard errors) of the truth.
        assert abs(e.estimate - truth[e.name]) < 2 * (e.high - e.low), e
        assert e.low <= e.estimate <= e.high
    assert fit.stubs().p_leak == pytest.approx(fit.by_name()["p_leak"].estimate)


def test_estimates_converge_as_the_log_grows(tmp_path: Path) -> None:
    small, large = _fit(tmp_path, 1500, seed=3), _fit(tmp_path, 24000, seed=3)
    truth = TRUTH.to_dict()
    for a, b in zip(small.estimates, large.estimates, strict=True):
        if b.high >= 1.0 and b.name != "dilution_tokens":
            continue  # an interval on the end of its range (p_use_max near 1) is one-sided
        # 16 times the events: intervals about 4 times narrower (√16).
        assert (b.high - b.low) < 0.4 * (a.high - a.low), (a, b)
        assert abs(b.estimate - truth[b.name]) < (b.high - b.low), b


def test_a_log_without_an_event_type_leaves_its_parameters_unidentified(
        tmp_path: Path) -> None:
    path = tmp_path / "sel.jsonl"
    from wmtsim.studies.stub_fit.simulate import LogDesign

    write_log(str(path), TRUTH, 800, seed=1, design=LogDesign(answer=0, fold=0))
    fit = fit_log(read_log(path))
    est = fit.by_name()
    assert est["select_threshold"].identified and est["w_u"].identified
    for name in ("p_persuade", "p_misled", "dilution_tokens", "p_leak", "p_leak_rider"):
        assert not est[name].identified and est[name].estimate == getattr(Stubs(), name)
        assert est[name].reason.startswith("needs ")
    assert fit.stubs().p_misled == Stubs().p_misled


@pytest.mark.slow
def test_the_intervals_cover_the_truth(tmp_path: Path) -> None:
    # 80 logs of 1,500 events: every parameter's interval holds the truth at least 85% of
    # the time here (±0.025 Monte Carlo), and 93% pooled over the 13 parameters (1,040
    # intervals, ±0.007); benchmarks/stub_fit_coverage.py measures each at 300 logs.
    truth = TRUTH.to_dict()
    hits = dict.fromkeys(FITTED, 0)
    logs = 80
    for seed in range(logs):
        for e in _fit(tmp_path, 1500, seed=100 + seed).estimates:
            hits[e.name] += int(e.identified and e.low <= truth[e.name] <= e.high)
    assert min(hits.values()) >= 0.85 * logs, hits
    assert sum(hits.values()) >= 0.93 * logs * len(FITTED), hits


def test_a_parameter_left_unidentified_is_held_at_its_default_while_its_block_fits(
        tmp_path: Path) -> None:
    # No answer has the evidence: p_use_max, p_guess and p_misled are not identified and
    # only dilution_tokens is fitted, the others held at their defaults (p_misled = 1
    # exactly, not nudged inside its range): the block's maximum is (L4) there.
    import json

    import numpy as np

    from wmtsim.studies.stub_fit import likelihoods as L

    path = tmp_path / "ans.jsonl"
    with path.open("w") as f:
        for k in range(400):
            comp = k % 4 == 0
            f.write(json.dumps({"type": "answer", "evidence": False,
                                "poisoned": [{"id": "p"}], "context_tokens": 300 * (k % 40),
                                "compromised": comp,
                                "correct": not comp and k % 11 == 1}) + "\n")
    fit = fit_log(read_log(path))
    est = fit.by_name()
    assert [n for n in ("p_guess", "p_misled", "p_use_max", "dilution_tokens")
            if est[n].identified] == ["dilution_tokens"]
    d = fit.data
    theta = np.array([0.1, 1.0, 0.95, est["dilution_tokens"].estimate])
    value, _ = L.correctness_negll(theta, d.evidence, d.compromised, d.tokens, d.correct)
    assert fit.loglik["correctness"] == pytest.approx(-value, rel=1e-9)
