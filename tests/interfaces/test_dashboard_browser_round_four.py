"""Issue 52, a researcher's first hour (round four), in the browser: the sidebar's
configuration names whole, and an uploaded bad scenario named by its file. The rest of
the issue's page rows are AppTest tests (test_dashboard_round_four.py).

The helpers (the browser, the server, the waits) are test_dashboard_browser.py's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import test_dashboard_browser as browser
from test_dashboard_browser import PAGES, _after, _download, _has_text, _open, _settle, _sidebar

chromium = browser.chromium  # its fixtures: one browser, a fresh 1,280 x 800 page per test
page = browser.page
results = browser.results
server = browser.server

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]

CUT_TAGS = """() => [...document.querySelectorAll(
    '[data-testid="stSidebar"] [data-tag] > span[title]')]
    .filter(s => s.scrollWidth > s.clientWidth + 1 || s.textContent.includes('…'))
    .map(s => s.textContent)"""


def test_the_sidebar_shows_configuration_names_whole(server: str, page: Any) -> None:
    """Compare on paper_poisoning: every chosen configuration's name is shown whole in
    the sidebar (issue 52, row 13: "A2 No Memory Contr…", "Tree + Selection + Su…")."""
    _open(page, f"{server}/compare", PAGES["compare"][1])
    tags = page.evaluate("""() => [...document.querySelectorAll(
        '[data-testid="stSidebar"] [data-tag] > span[title]')].map(s => s.textContent)""")
    assert "A2 No Memory Controller" in tags, tags
    assert page.evaluate(CUT_TAGS) == []


def test_an_uploaded_bad_scenario_is_named_by_its_file(server: str, tmp_path: Path,
                                                       page: Any) -> None:
    """A scenario with a misspelt field, uploaded: the error names the file, not
    "uploaded scenario" (issue 52, row 15)."""
    bad = tmp_path / "my_study.toml"
    bad.write_text('name = "my_study"\nn = 20\nsede = 1\n', encoding="utf-8")
    _open(page, f"{server}/compare", PAGES["compare"][1])
    _sidebar(page).get_by_text("upload TOML", exact=True).click()
    uploader = _sidebar(page).locator('input[type="file"]')
    uploader.wait_for(state="attached", timeout=120_000)
    uploader.set_input_files(str(bad))
    _settle(page, _has_text("cannot load the scenario"), 0)
    error = page.get_by_test_id("stAlertContentError").inner_text()
    assert "my_study.toml" in error and "uploaded scenario" not in error, error
    assert "sede" in error, error


def test_the_attack_tables_download_as_numbers(server: str, results: Path,
                                               page: Any) -> None:
    """The Attack page's worst-case table shows "worst − scripted" as one text; its CSV
    holds the numbers behind it, each bound in its own column (issue 52, item 4)."""
    import io

    import polars as pl
    from typer.testing import CliRunner

    from wmtsim.interfaces.cli.main import app

    out = results / "atk"
    res = CliRunner().invoke(app, ["attack", "paper_poisoning", "-p", "wmt", "-p", "linear",
                                   "--budget", "1", "--trials", "2", "--n", "20",
                                   "--n-holdout", "20", "--no-charts", "--no-progress",
                                   "--out", str(out)])
    assert res.exit_code == 0, res.output
    _open(page, f"{server}/attack?attack={out}", 2)
    name, csv = _download(page, _after(page.get_by_text("Transfer", exact=True).first, "CSV"))
    transfer = pl.read_csv(io.BytesIO(csv))
    assert name == "attack_transfer.csv", name
    assert "vs scripted" not in transfer.columns, transfer.columns
    assert transfer.schema["vs_scripted"].is_numeric(), transfer.schema
    robust = pl.read_parquet(out / "results.parquet")
    name, csv = _download(page, _after(page.get_by_role("heading").first, "CSV"))
    shown = pl.read_csv(io.BytesIO(csv))
    assert name == "attack_worst_case.csv", name
    assert "gain" in shown.columns and shown.schema["gain"].is_numeric(), shown.schema
    assert shown["gain"].to_list() == pytest.approx(robust["gain"].to_list())
