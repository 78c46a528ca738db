"""Issue 39 in the browser: `wmtsim dashboard` started from a folder of one's own, outside
the source checkout, reads the results/ of that folder (a sweep and an attack written
there by the library functions the commands use), or the folder given by ``--results``;
and the dashboard rows of the issue's table, each as a user meets it: missing values and
counts in the tables, every world of the atlas labelled, the Why heading's ``*`` shown,
no key warning in the server's log after the Population → Dynamics jump, the CLI's line
and column for a bad trace line, and a plain message for a file that is not an atlas.

The helpers (the browser, the waits, the checks) are test_dashboard_browser.py's."""

from __future__ import annotations

import os
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import test_dashboard_browser as browser
from conftest import REPO, free_port
from test_dashboard_browser import (
    PAGES,
    _check,
    _click_a_wmt_drop,
    _console_errors,
    _has_text,
    _open,
    _settle,
    _shown,
    _sidebar,
    _wmtsim,
)

chromium = browser.chromium  # its fixtures: one browser, a fresh 1,280 x 800 page per test
page = browser.page

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]

SWEEP = """name = "mine"
scenario = "paper_poisoning"
policies = ["linear", "wmt"]
[parameters]
"params.rho" = { values = [0.9, 0.95] }
"params.M" = { values = [4, 8] }
[design]
kind = "grid"
trajectories = 30
seed = 0
"""


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of one's own, outside the checkout, with results/mine (a sweep) and
    results/atk (an attack), written by the library functions `wmtsim sweep` and
    `wmtsim attack` run."""
    from typer.testing import CliRunner

    from wmtsim.interfaces.cli.main import app
    from wmtsim.studies.sweeps.sweep import load_sweep, run_sweep

    root = tmp_path_factory.mktemp("home")
    assert REPO not in root.resolve().parents
    (root / "mine.toml").write_text(SWEEP, encoding="utf-8")
    run_sweep(load_sweep(root / "mine.toml"), root / "results" / "mine", progress=False,
              threads=1)
    res = CliRunner().invoke(app, ["attack", "paper_poisoning", "-p", "wmt", "-p", "linear",
                                   "--budget", "1", "--trials", "2", "--n", "20",
                                   "--n-holdout", "20", "--no-charts", "--out",
                                   str(root / "results" / "atk")])
    assert res.exit_code == 0, res.output
    return root


def _serve(cwd: Path, log_path: Path, *args: str) -> Iterator[str]:
    """`wmtsim dashboard ARGS` started in ``cwd`` (no $WMTSIM_RESULTS), until the test
    module ends; its address."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "WMTSIM_RESULTS"}
    with log_path.open("w", encoding="utf-8") as log:
        proc = subprocess.Popen([*_wmtsim(), "dashboard", "--port", str(port), "--host",
                                 "127.0.0.1", *args], cwd=cwd, stdout=log,
                                stderr=subprocess.STDOUT, env=env)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                        if r.status == 200:
                            break
                except OSError:
                    pass
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"`wmtsim dashboard {' '.join(args)}` did not come up in "
                                f"{cwd}: {log_path.read_text(encoding='utf-8')}")
                time.sleep(0.3)
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture(scope="module")
def server_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("home_log") / "streamlit.log"


@pytest.fixture(scope="module")
def server(home: Path, server_log: Path) -> Iterator[str]:
    """`wmtsim dashboard` started in ``home``."""
    yield from _serve(home, server_log)


def _main(page: Any) -> str:
    return str(page.get_by_test_id("stMain").inner_text())


def test_the_pages_list_the_results_of_the_folder_it_was_started_in(
        server: str, page: Any) -> None:
    """Sweep explorer and Attack page, from a folder outside the checkout: its
    results/mine and results/atk are listed and open (issue 39: "No sweep folder found
    under results/" right after `wmtsim sweep`, and no attack listed)."""
    errors = _console_errors(page)
    _open(page, f"{server}/sweep", PAGES["sweep"][1])
    assert "No sweep folder found" not in _main(page)
    assert "mine: grid design, 8 of 8 points computed" in _main(page), _main(page)
    assert "results/mine" in _shown(page, "Sweep folder")  # relative to the folder
    _check(page, "sweep from one's own folder", errors)
    _open(page, f"{server}/sweep?folder=results/mine", PAGES["sweep"][1])  # a relative link
    assert "mine: grid design" in _main(page), _main(page)
    _open(page, f"{server}/attack", 2)  # harm vs budget, the transfer matrix
    assert "found: results/atk" in _main(page), _main(page)
    assert "not available" not in _main(page)
    _check(page, "attack from one's own folder", errors)


def test_the_results_option_names_the_folder(home: Path, tmp_path: Path, page: Any) -> None:
    """`wmtsim dashboard --results DIR` from another folder lists DIR's sweep."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for url in _serve(elsewhere, tmp_path / "streamlit.log", "--results",
                      str(home / "results")):
        _open(page, f"{url}/sweep", PAGES["sweep"][1])
        assert "mine: grid design, 8 of 8 points computed" in _main(page), _main(page)


# The cells of the Streamlit tables (data frames) whose column header is one of `names`,
# as the grid's accessible table holds them (a text cell: the text drawn).
CELLS = """names => [...document.querySelectorAll('[data-testid="stDataFrame"]')].flatMap(d => {
    const rows = [...d.querySelectorAll('[role=row]')]
        .map(r => [...r.querySelectorAll('[role=gridcell], [role=columnheader]')]
            .map(c => c.textContent));
    if (!rows.length) return [];
    const head = rows[0];
    return rows.slice(1).flatMap(r => r.map((v, i) => [head[i], v]))
        .filter(([h, v]) => names.includes(h));
})"""


def test_missing_values_are_a_dash_and_counts_whole(server: str, page: Any) -> None:
    """Population's lifetimes (Linear History keeps its poison: no median) and the
    sweep drill-down's trajectories: a missing value is "–", never "None" or blank; the
    lifetime counts are whole (issue 39: `None`, `4.00`, "4,080" for 4,084)."""
    _open(page, f"{server}/population", PAGES["population"][1])
    page.wait_for_function(f"() => ({CELLS})(['median']).length > 0", timeout=120_000)
    cells = page.evaluate(CELLS, ["median", "median_low", "median_high", "n"])
    assert all(v not in ("", "None") for _, v in cells), cells
    assert any(v == "–" for _, v in cells), cells  # Linear History: no median lifetime
    assert all(v == "–" or v.isdigit() for _, v in cells), cells
    _open(page, f"{server}/sweep", PAGES["sweep"][1])
    page.get_by_text("Drill down").scroll_into_view_if_needed()
    page.wait_for_function(f"() => ({CELLS})(['asr']).length > 0", timeout=120_000)
    cells = page.evaluate(CELLS, ["asr", "prr", "ccr", "steps", "prompt_tokens"])
    assert all(v not in ("", "None") for _, v in cells), cells


def test_every_world_of_the_atlas_is_labelled(server: str, page: Any) -> None:
    """The shipped atlas: every world's row has its label in every metric's panel
    (issue 39: 11 rows, 6 labels)."""
    import polars as pl

    worlds = set(pl.read_parquet(REPO / "why_study" / "tables" / "atlas.parquet")
                 ["scenario"].unique().to_list())
    _open(page, f"{server}/atlas", PAGES["atlas"][1])
    page.wait_for_timeout(500)
    shown = page.evaluate("""() => [...document.querySelectorAll(
        '.vega-embed g.role-axis-label text')].filter(t => {
            const o = t.getAttribute('opacity');
            return o === null || Number(o) > 0; }).map(t => t.textContent)""")
    missing = {w: 4 - shown.count(w) for w in worlds if shown.count(w) < 4}
    assert not missing, f"unlabelled rows (world: panels without its label): {missing}"


def test_the_why_heading_shows_the_knobs_as_written(server: str, page: Any) -> None:
    """The shipped claims map varies poison[*].p_supersede: the heading shows the "*",
    in no italics (issue 39: "poison[].p_supersede" in italics)."""
    table = REPO / "why_study" / "tables" / "claims_detection.parquet"
    _open(page, f"{server}/why?claims={table}", PAGES["why"][1])
    heading = page.get_by_role("heading").filter(has_text="Claims map:").first
    text = heading.inner_text()
    assert "over poison[*].p_supersede × poison[*].persuasiveness" in text, text
    assert heading.locator("em").count() == 0


WARNING = "was created with a default value but also had its value set"


def test_the_jump_to_dynamics_logs_no_warning(server: str, server_log: Path,
                                              page: Any) -> None:
    """Population (a shipped scenario) → a trajectory on Poisoning dynamics: the
    server's log has no Streamlit key warning and no stack trace."""
    before = server_log.read_text(encoding="utf-8")
    errors = _console_errors(page)
    _open(page, f"{server}/population", PAGES["population"][1])
    match = _click_a_wmt_drop(page)
    page.get_by_role("button", name="Open it on the Poisoning dynamics page").click()
    page.wait_for_url("**/dynamics", timeout=120_000)
    _settle(page, _has_text(f"step {match[5]}: after the"), PAGES["dynamics"][1])
    _check(page, "dynamics after the jump", errors)
    time.sleep(1)  # the log is written by another process
    log = server_log.read_text(encoding="utf-8")[len(before):]
    assert WARNING not in log and "Traceback" not in log, log


BAD_LINES = {  # file name -> its bytes: a bad byte at byte 41 of line 2; a BOM, then
    # malformed JSON; a U+2028 inside a string (one line), then a missing value
    "bad_byte": b'{"op": "query"}\n{"op": "action", "id": "a", "parent": "r\xffoot"}\n',
    "bom": b'\xef\xbb\xbf{"op": "query" "id": "q"}\n',
    "separator": '{"op": "query"}\n{"op": "action", "id": "a\u2028b", "parent": "root", '
                 '"tokens": }\n'.encode(),
}


@pytest.mark.parametrize("name", BAD_LINES)
def test_a_bad_trace_line_has_the_clis_line_and_column(server: str, home: Path,
                                                       page: Any, name: str) -> None:
    """The Trace page and `wmtsim replay` say the same for the same bad line: its line
    and the column of the bad byte or value in it (issue 39: "column 1" against
    "column 41"). The path box reads only under the results folder."""
    trace = home / "results" / f"{name}.jsonl"
    trace.write_bytes(BAD_LINES[name])
    cli = subprocess.run([*_wmtsim(), "replay", str(trace)], capture_output=True, text=True)
    assert cli.returncode != 0
    said = cli.stderr.strip().removeprefix(f"error: {trace}: ")
    assert said.startswith("line ") and "column" in said, said
    _open(page, f"{server}/trace", PAGES["trace"][1])
    box = _sidebar(page).get_by_label("…or a trace file path", exact=True)
    box.fill(str(trace))
    box.press("Enter")
    _settle(page, _has_text("cannot replay"), 0)
    error = page.get_by_test_id("stAlertContentError").inner_text()
    assert error == f"{trace}: cannot replay: {said}", (error, said)


def test_a_file_that_is_not_a_screening_is_named_plainly(server: str, tmp_path: Path,
                                                         page: Any) -> None:
    """The Atlas page given a file that is not Parquet: the message names the problem,
    not a polars exception class (issue 39: "…(ComputeError)")."""
    bad = tmp_path / "x.parquet"
    bad.write_text("not parquet")
    _open(page, f"{server}/atlas", PAGES["atlas"][1])
    _sidebar(page).get_by_test_id("stSelectbox").first.click()
    page.get_by_role("option", name="other path").click()
    box = _sidebar(page).get_by_label("Path to a screen.parquet")
    box.wait_for(timeout=120_000)
    box.fill(str(bad))
    box.press("Enter")
    _settle(page, _has_text("cannot read a screening table"), 0)
    message = page.get_by_test_id("stAlertContentInfo").inner_text()
    assert "not in Parquet format" in message and "Error" not in message, message
