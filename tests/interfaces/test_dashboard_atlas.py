"""The Atlas page under `streamlit.testing.v1.AppTest`: it shows a screening written by
the library, its metric filter changes what is shown, and a bad path is explained."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from conftest import REPO, no_exception, tooltips_follow_the_policy
from streamlit.testing.v1 import AppTest

from wmtsim.studies.scenarios.scenario import load_scenario
from wmtsim.studies.sweeps.knob_ranges import ranges_for
from wmtsim.studies.sweeps.screen import screen

PAGE = REPO / "wmtsim" / "interfaces" / "dashboard" / "views" / "atlas.py"


@pytest.fixture(scope="module")
def screening(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, object]:
    res = screen([load_scenario("paper_poisoning")], "wmt",
                 ranges_for(["rho", "rho_g", "budget"]), r=3, n=30,
                 metrics=("tsr", "prompt_tokens"))
    path = tmp_path_factory.mktemp("screen") / "screen.parquet"
    res.table.write_parquet(path)
    return str(path), res.table


def _open(path: str) -> AppTest:
    at = AppTest.from_file(str(PAGE), default_timeout=300)
    at.run()
    at.sidebar.selectbox(key="atlas_source").set_value("other path").run()
    at.sidebar.text_input(key="atlas_path").set_value(path).run()
    return at


def test_atlas_shows_the_screening_and_filters_metrics(screening: tuple[str, object]) -> None:
    import polars as pl

    path, table = screening
    assert isinstance(table, pl.DataFrame)
    at = _open(path)
    no_exception(at)
    assert at.title[0].value == "Screening atlas"
    matters = table.filter(pl.col("verdict") == "matters").height
    assert at.subheader[0].value.startswith(f"{matters} (world, metric, knob)")
    tooltips_follow_the_policy(at)
    at.sidebar.multiselect(key="atlas_metrics").set_value(["tsr"]).run()
    no_exception(at)
    shown = table.filter((pl.col("verdict") == "matters") & (pl.col("metric") == "tsr"))
    assert at.subheader[0].value.startswith(f"{shown.height} ")


def test_atlas_explains_a_path_that_is_not_a_screening(tmp_path: Path) -> None:
    bad = tmp_path / "x.parquet"
    bad.write_text("not parquet")
    at = _open(str(bad))
    no_exception(at)
    assert "cannot read a screening table" in at.info[0].value
