"""Issue 52, a researcher's first hour (round four), on the dashboard's pages under
`streamlit.testing.v1.AppTest`: the Why page's claims-map picker after an attack, the
Attack page's whole budgets, Compare's downloads and its "mean" view, the sweep
explorer's first view, the Population page's legend, an uploaded bad scenario."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

pytest.importorskip("streamlit")
from conftest import no_exception
from streamlit.testing.v1 import AppTest
from test_dashboard_apptest import PAGES, TIMEOUT, _charts, _frame, _page


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A results folder holding what `wmtsim attack` writes (budgets 1 and 2)."""
    from typer.testing import CliRunner

    from wmtsim.interfaces.cli import app

    root = tmp_path_factory.mktemp("results")
    res = CliRunner().invoke(app, ["attack", "paper_poisoning", "-p", "wmt", "-p", "linear",
                                   "-p", "a1_unweighted", "--budget", "1,2", "--trials",
                                   "2", "--n", "20", "--n-holdout", "20", "--no-charts",
                                   "--no-progress", "--out", str(root / "atk")])
    assert res.exit_code == 0, res.output
    return root


def test_the_claims_picker_does_not_offer_an_attack(results: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """An attack folder holds a claims.json but no claims map: the Why page neither
    opens it nor lists it (issue 52, row 1: "claims map not available …
    claims.parquet: No such file")."""
    assert (results / "atk" / "claims.json").is_file()
    monkeypatch.setenv("WMTSIM_RESULTS", str(results))
    at = _page("why")
    at.run()
    no_exception(at)
    assert "atk" not in at.text_input(key="why_claims").value
    assert not any("atk" in c.value for c in at.caption if c.value.startswith("found:"))
    assert not any("not available" in w.value for w in at.warning)


def test_the_attack_page_shows_whole_budgets(results: Path) -> None:
    """Budgets of 1 and 2 injections read "1" and "2" in the table and on the axis
    (issue 52, row 11: "1.00", ticks 1.00, 1.10 … 2.00)."""
    at = _page("attack")
    at.query_params["attack"] = str(results / "atk")
    at.run()
    no_exception(at)
    shown = _frame(at, "policy", "budget", "worst_asr")  # whole numbers are drawn whole
    assert shown["budget"].dtype == pl.Int64 and set(shown["budget"]) == {1, 2}
    spec = _charts(at)[0][0]
    axis = json.dumps(spec)
    assert '"format": "d"' in axis and '"tickMinStep": 1' in axis, axis
