"""The dashboard's doors (`open_shown`, the Why page's `load_claims(root=...)`, the Atlas
page's `screening`) read what the real writers wrote: a claims map from `wmtsim claims`
and a screening from `wmtsim screen`, under the results folder, exactly as the hostile
cases (tests/interfaces/test_hostile_round_four_pages.py) refuse their tampered copies."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

pytest.importorskip("streamlit")

from wmtsim.interfaces.cli.main import app


@pytest.fixture()
def results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "results"
    monkeypatch.setenv("WMTSIM_RESULTS", str(folder))
    return folder


def test_the_why_page_reads_the_claims_map_wmtsim_claims_wrote(results: Path) -> None:
    from wmtsim.interfaces.dashboard import services_why

    out = results / "claims_map"
    done = CliRunner().invoke(app, ["claims", "paper_poisoning", "--vary",
                                    "stubs.selector_noise=0:0.3", "--vary",
                                    "stubs.poison_boost=-0.1:0.2", "--levels", "2", "--n", "20",
                                    "-o", str(out), "--no-charts", "--no-progress"])
    assert done.exit_code == 0, done.output
    written = pl.read_parquet(out / "claims.parquet")
    for shown in (out, out / "claims.parquet"):  # the listing's folder, a typed table path
        view = services_why.claims_view.__wrapped__(str(shown))
        assert view.table.equals(written)
        assert view.scenario == "paper_poisoning"  # from the map's claims.json
        assert set(view.knobs) == {"stubs.selector_noise", "stubs.poison_boost"}


def test_the_atlas_reads_the_screening_wmtsim_screen_wrote(results: Path) -> None:
    from wmtsim.interfaces.dashboard import services_atlas

    out = results / "screening"
    done = CliRunner().invoke(app, ["screen", "paper_poisoning", "--knob", "rho", "--knob",
                                    "tau_obs", "-r", "2", "--n", "3", "--no-charts",
                                    "--out", str(out)])
    assert done.exit_code == 0, done.output
    written = pl.read_parquet(out / "screen.parquet")
    shown = services_atlas.screening.__wrapped__(str(out / "screen.parquet"))
    assert shown.equals(written)
