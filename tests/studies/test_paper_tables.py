"""The paper's claims in simulation: evaluated and reported honestly, never asserted to hold.

wmtsim reports which of the paper's claims hold on the shipped scenarios (README,
docs/calibration.md). These tests check that the checks are computed as documented
(pooled values, the paired runner-up, the paper's numbers), and that the shipped
documentation states the outcome a fresh run gives.
"""

from __future__ import annotations

import pytest
from conftest import REPO

from wmtsim.studies.compare.report import compare, paper_table4
from wmtsim.studies.scenarios.scenario import load_scenario

ROOT = REPO


@pytest.fixture(scope="module")
def table4():  # type: ignore[no-untyped-def]
    return compare(load_scenario("paper_poisoning"), n=2000, n_resamples=200)


@pytest.fixture(scope="module")
def table123():  # type: ignore[no-untyped-def]
    return compare(load_scenario("gaia_like"), n=1000, n_resamples=200)


def test_table4_checks_are_the_papers_fourteen_claims(table4) -> None:  # type: ignore[no-untyped-def]
    claims = [c["claim"] for c in table4.checks]
    assert len(claims) == 14
    for m in ("ASR", "PRR", "BR", "AF", "TSR"):
        assert f"{m}: Full WMT best" in claims and f"{m}: Linear worst" in claims
    for m in ("ASR", "PRR", "BR", "TSR"):
        assert f"{m}: Full WMT within 0.05 of paper" in claims


def test_table4_checks_use_pooled_values(table4) -> None:  # type: ignore[no-untyped-def]
    for c in table4.checks:
        metric = c["claim"].split(":")[0].lower()
        pooled = {p: table4.cell(p, metric)["pooled"] for p in paper_table4()}
        if "Full WMT best" in c["claim"]:
            better = max if metric == "tsr" else min
            # holds (significant) only where Full WMT is best on the pooled values
            assert c["passed"] <= (better(pooled, key=lambda p: pooled[p]) == "wmt")
        elif "within" in c["claim"]:
            paper = paper_table4()["wmt"][metric]
            assert c["passed"] <= (abs(pooled["wmt"] - paper) <= 0.05)


def test_docs_state_the_claims_a_fresh_run_gives(table4) -> None:  # type: ignore[no-untyped-def]
    """README and docs/calibration.md say how many claims hold and list each verdict;
    they must be regenerated when the engine moves the results."""
    held = sum(c["passed"] for c in table4.checks)
    for doc in ("README.md", "docs/calibration.md"):
        text = (ROOT / doc).read_text(encoding="utf-8")
        assert f"{held} of the paper's 14 Table 4 claims hold significantly" in text, doc
    cal = (ROOT / "docs" / "calibration.md").read_text(encoding="utf-8")
    for c in table4.checks:
        row = next(line for line in cal.splitlines() if line.startswith(f"| {c['claim']} |"))
        assert f"| {c['verdict']} |" in row, row


def test_table123_directions_are_reported(table123) -> None:  # type: ignore[no-untyped-def]
    assert len(table123.checks) == 8
    assert all(isinstance(c["passed"], bool) and c["detail"] for c in table123.checks)
