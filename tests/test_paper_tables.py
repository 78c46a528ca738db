"""The paper's claims in simulation, on smaller runs than the shipped scenarios."""

from __future__ import annotations

import pytest

from wmtsim.report import compare
from wmtsim.scenario import load_scenario


@pytest.fixture(scope="module")
def table4():  # type: ignore[no-untyped-def]
    return compare(load_scenario("paper_poisoning"), n=400, n_resamples=200)


@pytest.fixture(scope="module")
def table123():  # type: ignore[no-untyped-def]
    return compare(load_scenario("gaia_like"), n=3000, n_resamples=200)


def _claims(comp, text: str) -> list[dict]:  # type: ignore[no-untyped-def]
    return [c for c in comp.checks if text in c["claim"]]


@pytest.mark.parametrize("claim", ["Full WMT best", "Linear worst"])
def test_table4_ordering(table4, claim: str) -> None:  # type: ignore[no-untyped-def]
    cs = _claims(table4, claim)
    assert len(cs) == 5
    assert all(c["passed"] for c in cs), cs


@pytest.mark.parametrize("metric", ["ASR", "PRR", "BR", "TSR"])
def test_table4_wmt_row_close(table4, metric: str) -> None:  # type: ignore[no-untyped-def]
    (c,) = _claims(table4, f"{metric}: Full WMT within")
    assert c["passed"], c


def test_table123_directions(table123) -> None:  # type: ignore[no-untyped-def]
    failed = [c for c in table123.checks if not c["passed"]]
    assert len(table123.checks) == 8 and not failed, failed
