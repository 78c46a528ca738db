"""The dashboard's "Why" page under `streamlit.testing.v1.AppTest`: the attribution it
shows is the library's, its controls change it, and a claims map renders its heatmaps and
counts."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

pytest.importorskip("streamlit")
from conftest import REPO, no_exception
from streamlit.testing.v1 import AppTest

from wmtsim.studies.attribution.attribution import attribute
from wmtsim.studies.compare.claims import Claim, claims_map, grid_sweep, summary_frame, write_claims
from wmtsim.studies.scenarios.scenario import load_scenario

PAGE = REPO / "wmtsim" / "interfaces" / "dashboard" / "views" / "why.py"
TIMEOUT = 300  # the first simulation in a process may compile or load numba kernels
N = 40


@pytest.fixture(scope="module")
def claims_folder(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("why_claims")
    claims = (Claim("Full WMT lowest ASR", "asr", "wmt", ("linear", "a2_no_controller")),
              Claim("A2 lowest BR", "br", "a2_no_controller", ("wmt",)))
    sweep = grid_sweep(load_scenario("paper_poisoning"),
                       [("poison[*].p_supersede", 0.0, 1.0), ("stubs.poison_boost", -0.1, 0.2)],
                       2, 30, 0, claims)
    write_claims(claims_map(sweep, root, claims), root, charts=False)
    return str(root)


def _page(claims: str) -> AppTest:
    at = AppTest.from_file(str(PAGE), default_timeout=TIMEOUT)
    at.query_params["claims"] = claims
    return at


# A table of the page by a column only it has (AppTest does not expose dataframe keys).
TABLES = {"why_table": "from_mean", "why_coalitions": "moved_by_rule",
          "why_claims_summary": "holds (not significant)"}


def _frame(at: AppTest, key: str) -> pl.DataFrame:
    for df in at.dataframe:
        value = df.value
        value = value.data if hasattr(value, "data") else value  # a pandas Styler
        if TABLES[key] in value.columns:
            return pl.from_pandas(value)
    raise AssertionError(f"no table {key!r}")


def test_why_page_shows_the_library_attribution_and_reacts(claims_folder: str) -> None:
    at = _page(claims_folder)
    at.run()
    no_exception(at)
    at.sidebar.number_input(key="why_n").set_value(N).run()
    at.sidebar.selectbox(key="why_from").set_value("a2_no_controller").run()
    at.sidebar.multiselect(key="why_metrics").set_value(["asr", "tsr"]).run()
    no_exception(at)
    shown = _frame(at, "why_table")
    sc = load_scenario("paper_poisoning")
    lib = attribute(sc, "a2_no_controller", "wmt", metrics=("asr", "tsr"), n=N, seed=sc.seed,
                    threads=1, n_resamples=2000)
    assert shown["mechanism"].to_list() == lib.table["mechanism"].to_list()
    assert shown["contribution"].to_list() == pytest.approx(
        lib.table["contribution"].to_list(), abs=1e-12)
    assert shown["low"].to_list() == pytest.approx(lib.table["low"].to_list(), abs=1e-12)
    # The contributions add up to the difference of the two means.
    for metric in ("asr", "tsr"):
        rows = shown.filter(pl.col("metric") == metric)
        assert rows["contribution"].sum() == pytest.approx(
            rows["to_mean"][0] - rows["from_mean"][0], abs=1e-12)
    assert len(at.get("vega_lite_chart")) == 2  # the waterfall and the claims map
    # Another pair of configurations: another decomposition (one switch only).
    at.sidebar.selectbox(key="why_from").set_value("a3_no_semantic").run()
    no_exception(at)
    assert _frame(at, "why_table")["mechanism"].unique().to_list() == [
        "selection branches→items"]


def test_same_configuration_is_explained_not_an_exception(claims_folder: str) -> None:
    at = _page(claims_folder)
    at.run()
    at.sidebar.number_input(key="why_n").set_value(N).run()
    at.sidebar.selectbox(key="why_from").set_value("wmt").run()
    no_exception(at)
    assert any("same switches" in i.value for i in at.info)


def test_claims_map_counts_are_the_library_ones(claims_folder: str) -> None:
    at = _page(claims_folder)
    at.run()
    at.sidebar.number_input(key="why_n").set_value(N).run()
    no_exception(at)
    summary = _frame(at, "why_claims_summary")
    meta = json.loads((Path(claims_folder) / "claims.json").read_text())
    lib = summary_frame(pl.read_parquet(Path(claims_folder) / "claims.parquet"),
                        meta["margin_flatness"])
    assert summary.to_dicts() == lib.to_dicts()
    assert "margin across the grid" in summary.columns  # the paired test of the map
    at.multiselect(key="why_claim_pick").set_value(["A2 lowest BR"]).run()
    no_exception(at)
    assert _frame(at, "why_claims_summary")["claim"].to_list() == ["A2 lowest BR"]
    at.text_input(key="why_claims").set_value(str(Path(claims_folder) / "nope")).run()
    no_exception(at)
    assert any("not available" in w.value for w in at.warning)
