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
import test_dashboard_apptest as apptest
from conftest import no_exception
from streamlit.testing.v1 import AppTest
from test_dashboard_apptest import PAGES, TIMEOUT, _charts, _frame, _page

scenario_file = apptest.scenario_file  # its fixture: a table4 scenario of 50 trajectories


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A results folder holding what `wmtsim attack` writes (budgets 1 and 2)."""
    from typer.testing import CliRunner

    from wmtsim.interfaces.cli.main import app

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


@pytest.fixture(scope="module")
def rho_m(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The shipped rho_m_grid sweep, run."""
    from conftest import REPO

    from wmtsim.studies.sweeps.sweep import load_sweep, run_sweep

    out = tmp_path_factory.mktemp("sweep") / "rho_m"
    run_sweep(load_sweep(REPO / "sweeps" / "rho_m_grid.toml"), out, progress=False)
    return str(out)


def test_the_sweep_explorer_opens_on_what_the_sweep_varies(rho_m: str) -> None:
    """rho_m_grid: TSR is flat noise there (a few successes of 400), accuracy is not;
    the explorer opens on accuracy, says without a warning that a grid has no Sobol
    indices, opens the drill-down on the last step and draws the tree's deepest node
    inside the chart (issue 52, row 12)."""
    from wmtsim.studies.sweeps.flatness import flatness
    from wmtsim.studies.sweeps.store import load_results

    assert flatness(load_results(rho_m), "tsr")["flat"][0]
    at = AppTest.from_file(str(PAGES / "sweep.py"), default_timeout=TIMEOUT)
    at.query_params["folder"] = rho_m
    at.run()
    no_exception(at)
    assert at.sidebar.selectbox(key="sweep_metric").value == "accuracy"
    assert not any("Sobol" in w.value or "sobol" in w.value for w in at.warning)
    assert any("need a Sobol design" in c.value for c in at.caption)
    slider = at.slider(key="sweep_step")
    assert slider.value == slider.max > 0
    tree = [(spec, data) for spec, data in _charts(at)
            if "memory tree" in json.dumps(spec.get("title", ""))]
    assert tree, "no tree drawn"
    spec, data = tree[0]
    deepest = max(d["depth"].max() for d in data.values() if "depth" in d.columns)
    scales = [layer["encoding"]["y"]["scale"] for layer in spec["layer"]
              if layer.get("encoding", {}).get("y", {}).get("field") == "depth"]
    assert scales and all(s.get("domainMax", deepest) > deepest for s in scales), scales


BENIGN = """name = "benign"
description = "no poison"
n = 40
seed = 0
policies = ["linear", "wmt"]
"""


def _compare(path: str) -> AppTest:
    """The Compare page opened on the scenario file ``path`` (no shipped one first)."""
    at = _page("compare")
    at.session_state["cmp_source"] = "file path"
    at.session_state["cmp_path"] = path
    return at.run()


def test_compare_means_stand_alone_and_a_benign_world_has_no_poison_metrics(
        scenario_file: str, tmp_path: Path) -> None:
    """Compare: the per-trajectory means are not printed beside the paper's pooled
    values; a world without poison opens without ASR, PRR, IP, BR, AF, which it leaves
    at 0 or – (issue 52, row 13)."""
    at = _compare(scenario_file)  # paper = "table4"
    no_exception(at)
    assert "· paper" in at.table[0].value.to_string()  # pooled: beside the paper's
    at.sidebar.radio(key="cmp_value").set_value("mean of per-trajectory values").run()
    no_exception(at)
    assert "· paper" not in at.table[0].value.to_string()
    assert any("choose the pooled value" in c.value for c in at.caption)
    benign = tmp_path / "benign.toml"
    benign.write_text(BENIGN, encoding="utf-8")
    at = _compare(str(benign))
    no_exception(at)
    shown = set(at.sidebar.multiselect(key="cmp_metrics").value)
    assert shown and not shown & {"asr", "prr", "ip", "br", "af"}, shown


def test_the_population_legend_names_the_configurations() -> None:
    """Population: the survival curves' legend uses the sidebar's names, and each
    configuration has its own colour, dash and marker (issue 52, row 14)."""
    from wmtsim.interfaces.dashboard.services_runs import policy_labels

    at = _page("population")
    at.run()
    no_exception(at)
    chosen = at.sidebar.multiselect(key="pop_policies").value
    names = {policy_labels()[p] for p in chosen}
    spec, data = next((s, d) for s, d in _charts(at)
                      if "P(poison still remains)" in json.dumps(s))
    encodings = [layer.get("encoding", {}) for layer in spec["layer"]]
    for channel in ("color", "strokeDash"):
        assert any(e.get(channel, {}).get("field") == "configuration" for e in encodings)
    drawn = {v for d in data.values() if "configuration" in d.columns
             for v in d["configuration"].to_list()}
    assert drawn == names, (drawn, names)
