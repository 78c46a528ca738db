"""The dashboard in a real browser: `wmtsim dashboard` on 127.0.0.1, every page opened by
its URL path in headless Chromium (Debian's ``chromium`` driven by Playwright) at 1,280 x
800 and 1,920 x 1,080: charts rendered, no error box, no chart, legend or title past the
viewport or its box, no truncated text, no overlapping labels, no "Deploy" button; a
screenshot per page (into docs/screenshots/ with `make screenshots`).

Then every finding of issue 25 as a user meets it, clicked through in the browser: Why's
scenario switch (its metrics, n, seed and labels, the claims map's scenario), Compare's
captions (pooled or mean, the paper's tick marks), the Trace page's failed expect line,
the sweep picker driving the URL and the drill-down, the download buttons (the files
they give are read back: PNG, SVG, CSV, Parquet, against the library's numbers); and
issue 28's click from a survival curve into a trajectory on the Poisoning dynamics page,
with a scenario picked by path or uploaded. Every wait is on what the page shows after
Streamlit's rerun (`_settle`), not on a fixed delay."""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, free_port

# One worker runs them all (`make test` distributes by group): one server, one browser,
# one cache of simulated pages.
pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]

CHROMIUM = "/usr/bin/chromium"
# Screenshots go to a temporary folder, or to WMTSIM_SCREENSHOTS (`make screenshots`
# sets it to docs/screenshots/, the README's pictures) so a test run leaves the tree clean.
SHOTS_ENV = os.environ.get("WMTSIM_SCREENSHOTS")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
# page -> (url path, number of charts it shows with its default controls). Every page is
# opened at its declared path (app.py); the root opens /dynamics.
PAGES = {"dynamics": ("dynamics", 8), "population": ("population", 3),
         "compare": ("compare", 1), "sweep": ("sweep", 4),
         "trace": ("trace", 2), "why": ("why", 2), "atlas": ("atlas", 1),
         "attack": ("attack", 0)}
SCREENSHOTS = ("dynamics", "compare", "sweep", "trace", "why")  # the README's pictures

if not Path(CHROMIUM).is_file():
    if os.environ.get("CI"):
        pytest.fail(f"CI is set but {CHROMIUM} is missing: .ci/run must install it "
                    "(apt-get install -y chromium)", pytrace=False)
    pytest.skip(f"{CHROMIUM} not found; install Debian's Chromium to run the browser test: "
                "apt-get install -y chromium", allow_module_level=True)
try:  # the dev extra installs both: a missing one on CI is a broken setup, not a skip
    import streamlit  # noqa: F401
    from playwright import sync_api
except ImportError as e:
    if os.environ.get("CI"):
        pytest.fail(f"CI is set but {e.name} is missing: make setup installs it", pytrace=False)
    pytest.skip(f"{e.name} is not installed (make setup installs it)",
                allow_module_level=True)


def _wmtsim() -> list[str]:
    exe = Path(sys.executable).with_name("wmtsim")
    return [str(exe)] if exe.is_file() else [sys.executable, "-m", "wmtsim.interfaces.cli.main"]


SWEEPS = {  # two sweeps over different knobs: the picker must switch every label
    "screenshot": '"params.rho" = { values = [0.7, 0.8, 0.9] }\n'
                  '"params.budget" = { values = [64, 128, 256, 1024] }\n',
    "rho_m": '"params.rho" = { values = [0.9, 0.95] }\n"params.M" = { values = [4, 8] }\n',
}


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The dashboard's results folder ($WMTSIM_RESULTS): the two sweeps of `SWEEPS`."""
    from wmtsim.studies.sweeps.sweep import load_sweep, run_sweep

    root = tmp_path_factory.mktemp("browser_results")
    for name, knobs in SWEEPS.items():
        (root / f"{name}.toml").write_text(
            f'name = "{name}"\nscenario = "paper_poisoning"\npolicies = ["linear", "wmt"]\n'
            f'[parameters]\n{knobs}[design]\nkind = "grid"\ntrajectories = 30\nseed = 0\n',
            encoding="utf-8")
        run_sweep(load_sweep(root / f"{name}.toml"), root / name, progress=False, threads=1)
    return root


@pytest.fixture(scope="module")
def sweep_folder(results: Path) -> str:
    return str(results / "screenshot")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, results: Path) -> Iterator[str]:
    port = free_port()
    log_path = tmp_path_factory.mktemp("dashboard") / "streamlit.log"
    log = log_path.open("w", encoding="utf-8")
    proc = subprocess.Popen([*_wmtsim(), "dashboard", "--port", str(port), "--host",
                             "127.0.0.1"], cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
                            env={**os.environ, "WMTSIM_RESULTS": str(results)})
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
                pytest.fail(f"`wmtsim dashboard` did not come up on {url}: "
                            f"{log_path.read_text(encoding='utf-8')}")
            time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


# One browser for the module (Playwright's sync API allows one instance at a time), a
# fresh context (session) per test.
@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture()
def page(chromium: Any) -> Iterator[Any]:
    """A fresh session at 1,280 x 800 (the narrowest width the dashboard must fit)."""
    context = chromium.new_context(viewport={"width": 1280, "height": 800},
                                   accept_downloads=True)
    try:
        yield context.new_page()
    finally:
        context.close()


VIEWPORTS = ((1280, 800), (1920, 1080))  # nothing may be clipped across this range
RENDERED = """n => {
    const app = document.querySelector('[data-testid="stApp"]');
    if (!app || app.getAttribute('data-test-script-state') !== 'notRunning') return false;
    const embeds = document.querySelectorAll('.vega-embed');
    if (embeds.length < n) return false;
    return [...embeds].every(e => e.querySelector('canvas, svg'));
}"""
# Charts, tables and the page itself must fit their boxes: a legend or a column that does
# not is cut off (Streamlit hides the overflow). Measured on the drawn SVG: each chart's
# right edge and each legend's box against the chart's box and the viewport; no text
# truncated by Vega ("…"); no two labels of one text layer overlapping.
CLIPPED = """() => {
    const out = [];
    const page = document.documentElement;
    const vw = window.innerWidth;
    if (page.scrollWidth > vw + 1) out.push(`page ${page.scrollWidth}px wide in ${vw}px`);
    for (const e of document.querySelectorAll('.vega-embed')) {
        const box = e.getBoundingClientRect();
        const name = (e.querySelector('.role-title text') || e).textContent.slice(0, 50);
        for (const c of e.querySelectorAll(':scope > canvas, :scope > svg')) {
            const r = c.getBoundingClientRect();
            if (r.right > box.right + 1 || r.right > vw + 1 || e.scrollWidth > e.clientWidth + 1)
                out.push(`chart "${name}" right edge ${r.right}px, box ${box.right}px, ` +
                         `viewport ${vw}px`);
        }
        for (const g of e.querySelectorAll('g.role-legend')) {
            const r = g.getBoundingClientRect();
            if (r.width && (r.right > box.right + 1 || r.right > vw + 1 ||
                            r.left < box.left - 1 || r.bottom > box.bottom + 1))
                out.push(`legend of "${name}" x ${r.left}-${r.right}px y ..${r.bottom}px, ` +
                         `box x ${box.left}-${box.right}px y ..${box.bottom}px`);
        }
        for (const t of e.querySelectorAll('text'))
            if (t.textContent.includes('…')) out.push(`"${name}": truncated "${t.textContent}"`);
        for (const g of e.querySelectorAll('g.mark-text.role-mark')) {
            if (g.closest('.role-axis, .role-legend, .role-title')) continue;
            // labels only: a one-glyph mark (the raster's ● for poison) may touch its neighbour
            const boxes = [...g.querySelectorAll('text')].filter(t => t.textContent.length > 1)
                .map(t => [t.textContent, t.getBoundingClientRect()]);
            for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
                const [a, p] = boxes[i], [b, q] = boxes[j];
                if (p.left < q.right - 1 && q.left < p.right - 1 && p.top < q.bottom - 1 &&
                    q.top < p.bottom - 1) {
                    out.push(`"${name}": "${a}" overlaps "${b}"`); i = boxes.length; break;
                }
            }
        }
    }
    for (const t of document.querySelectorAll('[data-testid="stTable"]'))
        if (t.scrollWidth > t.clientWidth + 1) out.push(`table ${t.scrollWidth}px`);
    return out;
}"""
# Chart right edges and widths, for the record (test output).
WIDTHS_JS = """() => [...document.querySelectorAll('.vega-embed')].map(e => {
    const c = e.querySelector(':scope > svg, :scope > canvas');
    return c ? Math.round(c.getBoundingClientRect().right) : 0; })"""


def _harmless(message: str, url: str) -> bool:
    """Streamlit's frontend first asks for its config below a deep link (/compare/_stcore/
    host-config), gets a 404, and then asks at the root."""
    return "404" in message and "/_stcore/" in url


def _console_errors(page: Any) -> list[str]:
    """The page's console errors from now on (a list that grows)."""
    errors: list[str] = []

    def note(message: Any) -> None:
        if message.type == "error" and not _harmless(message.text,
                                                     message.location.get("url", "")):
            errors.append(message.text)

    page.on("console", note)
    return errors


def _open(page: Any, url: str, charts: int) -> float:
    """Load ``url`` and wait until every chart has drawn; returns the seconds it took."""
    t0 = time.perf_counter()
    page.goto(url)
    page.wait_for_function(RENDERED, arg=charts, timeout=300_000)  # a loaded machine
    return time.perf_counter() - t0


def _check(page: Any, name: str, errors: list[str]) -> None:
    exceptions = page.locator('[data-testid="stException"]')
    assert exceptions.count() == 0, f"{name}: {exceptions.first.inner_text()}"
    dialogs = page.locator('[role="dialog"]')  # e.g. "Page not found"
    assert dialogs.count() == 0, f"{name}: {dialogs.first.inner_text()}"
    page.wait_for_timeout(500)  # let vega finish its transitions and lay out its legends
    clipped = page.evaluate(CLIPPED)
    assert clipped == [], f"{name}: {clipped}"
    assert errors == [], f"{name}: console errors {errors}"
    deploy = page.locator('[data-testid="stAppDeployButton"]')
    assert deploy.count() == 0, f"{name}: Streamlit's Deploy button is shown"


def test_every_page_renders_in_chromium(server: str, sweep_folder: str, tmp_path: Path,
                                        chromium: Any, record_property: Any) -> None:
    """Every page by its URL path at 1280 x 800 and 1920 x 1080: no exception, no console
    error, nothing clipped or truncated; the load times and the charts' right edges are
    recorded (``record_property`` and load_times.json), not asserted."""
    shots = Path(SHOTS_ENV) if SHOTS_ENV else tmp_path
    shots.mkdir(parents=True, exist_ok=True)
    times: dict[str, float] = {}
    edges: dict[str, list[int]] = {}
    for width, height in VIEWPORTS:
        page = chromium.new_page(viewport={"width": width, "height": height})
        errors = _console_errors(page)
        _open(page, server, PAGES["dynamics"][1])  # the root opens /dynamics
        assert page.url.rstrip("/").endswith("/dynamics"), page.url
        for name, (path, charts) in PAGES.items():
            url = f"{server}/{path}"
            if name == "sweep":
                url += f"?folder={sweep_folder}"
            times[f"{name}@{width}"] = round(_open(page, url, charts), 2)
            _check(page, f"{name} at {width} px", errors)
            edges[f"{name}@{width}"] = page.evaluate(WIDTHS_JS)
            if name == "attack":
                assert page.get_by_text("The strongest attacker").count()
            if width == VIEWPORTS[0][0] and name in SCREENSHOTS:
                page.set_viewport_size({"width": width, "height": 1600})
                page.wait_for_timeout(500)
                page.screenshot(path=str(shots / f"{name}.png"))
                assert (shots / f"{name}.png").stat().st_size > 10_000
                page.set_viewport_size({"width": width, "height": height})
        page.close()
    for key, seconds in times.items():
        record_property(f"load_seconds[{key}]", seconds)
    for key, rights in edges.items():
        record_property(f"chart_right_edges[{key}]", rights)
    (tmp_path / "load_times.json").write_text(json.dumps(times, indent=2))
    print("page load (s):", times)
    print("chart right edges (px):", edges)


# What a selectbox shows: its text and its input's value (Streamlit draws the choice in
# either, depending on the version).
SHOWN = """label => {
    for (const e of document.querySelectorAll('[data-testid="stSelectbox"]')) {
        const l = e.querySelector('label');
        if (l && l.textContent.trim() === label)
            return e.textContent + ' ' + [...e.querySelectorAll('input')].map(i => i.value)
                .join(' ');
    }
    return '';
}"""


def _selectbox(page: Any, label: str) -> Any:
    return page.get_by_test_id("stSelectbox").filter(has_text=label).first


def _shown(page: Any, label: str) -> str:
    return str(page.evaluate(SHOWN, label))


def test_the_sweep_picker_drives_the_url_and_the_drill_down(server: str, results: Path,
                                                            page: Any) -> None:
    """Open one sweep by its link, pick the other in the sidebar: the address and the
    drill-down's point follow (issue 25: the point kept the first sweep's knobs)."""
    first, second = results / "screenshot", results / "rho_m"
    errors = _console_errors(page)
    _open(page, f"{server}/sweep?folder={first}", PAGES["sweep"][1])
    assert "params.budget=" in _shown(page, "Point"), _shown(page, "Point")
    _selectbox(page, "Sweep folder").click()
    page.get_by_role("option", name=str(second), exact=True).click()
    page.wait_for_function(f"() => ({SHOWN})('Point').includes('params.M=')",
                           timeout=120_000)
    page.wait_for_function(RENDERED, arg=PAGES["sweep"][1], timeout=120_000)
    point = _shown(page, "Point")
    assert "params.M=" in point and "params.budget" not in point, point
    assert page.url.endswith(f"folder={urllib.parse.quote(str(second), safe='')}") \
        or f"folder={second}" in urllib.parse.unquote(page.url), page.url
    _check(page, "sweep after the switch", errors)


def test_long_horizon_renders_a_summary_in_chromium(server: str, page: Any,
                                                    record_property: Any) -> None:
    """The long_horizon scenario on the dynamics page: a summary view (no per-node labels,
    score bands, a step window), nothing clipped; the render time is recorded."""
    page.set_viewport_size({"width": 1280, "height": 1600})
    errors = _console_errors(page)
    _open(page, server, PAGES["dynamics"][1])
    page.get_by_test_id("stSidebar").get_by_test_id("stSelectbox").first.click()
    t0 = time.perf_counter()
    page.get_by_role("option", name="long_horizon").click()
    # Done when both panels have drawn the summary (chart titles are svg text).
    page.wait_for_function(
        "() => [...document.querySelectorAll('.vega-embed')].filter(e => "
        "e.textContent.includes('mean and range per class')).length == 2",
        timeout=120_000)
    page.wait_for_function(RENDERED, arg=PAGES["dynamics"][1], timeout=120_000)
    seconds = time.perf_counter() - t0
    _check(page, "long_horizon", errors)
    titles = page.evaluate("() => [...document.querySelectorAll('.vega-embed')]"
                           ".map(e => e.textContent).join(' ')")
    assert titles.count("mean and range per class") == 2
    assert titles.count("selections, steps ") == 2
    record_property("long_horizon_render_seconds", round(seconds, 2))
    print(f"long_horizon: switch and render in {seconds:.1f} s")


# ---------------------------------------------------------------------------------------
# Issue 25's findings and issue 28's click-through, as a user meets them in the browser

WORLD = """name = "{name}"
description = "{name}: two poison injections, for the browser test"
n = {n}
seed = {seed}
policies = ["linear", "wmt"]
{paper}
[[poison]]
kind = "plausible"

[[poison]]
kind = "failed"
"""


@pytest.fixture(scope="module")
def worlds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two small scenario files: one read against the paper's Table 4, one without a
    paper table (a benign reading), each with its own n and seed."""
    root = tmp_path_factory.mktemp("browser_worlds")
    out = {}
    for name, n, seed, paper in (("table_world", 30, 3, 'paper = "table4"\n'),
                                 ("plain_world", 24, 7, "")):
        out[name] = root / f"{name}.toml"
        out[name].write_text(WORLD.format(name=name, n=n, seed=seed, paper=paper),
                             encoding="utf-8")
    return out


def _settle(page: Any, condition: str, charts: int = 0, timeout: int = 300_000) -> None:
    """Wait until ``condition`` (a JavaScript expression) holds and the rerun it belongs
    to has drawn ``charts`` charts: the page's own signal, not a fixed delay (a rerun's
    first frames can still show the old page)."""
    page.wait_for_function(f"() => {condition}", timeout=timeout)
    page.wait_for_function(RENDERED, arg=charts, timeout=timeout)


def _has_text(text: str, where: str = "[data-testid='stMain']") -> str:
    return f"document.querySelector({json.dumps(where)})?.innerText.includes({json.dumps(text)})"


def _sidebar(page: Any) -> Any:
    return page.get_by_test_id("stSidebar")


def _pick_path(page: Any, path: Path) -> None:
    """The sidebar's scenario picker: "file path", then ``path`` (Enter commits it)."""
    radio = _sidebar(page).get_by_text("file path", exact=True)
    if not _sidebar(page).get_by_label("Scenario file path").count():
        radio.click()
    box = _sidebar(page).get_by_label("Scenario file path")
    box.wait_for(timeout=120_000)
    box.fill(str(path))
    box.press("Enter")


TAGS = """label => {
    for (const e of document.querySelectorAll('[data-testid="stMultiSelect"]')) {
        const l = e.querySelector('label');
        if (l && l.textContent.trim() === label)
            return [...e.querySelectorAll('[data-tag]')].map(t => t.getAttribute('aria-label'));
    }
    return null;
}"""
SVG_TEXT = """() => [...document.querySelectorAll('.vega-embed svg text')]
    .map(t => t.textContent)"""


def _value(page: Any, label: str) -> str:
    return str(_sidebar(page).get_by_label(label, exact=True).input_value())


def _slider(page: Any) -> str:
    return str(page.get_by_test_id("stSlider").locator('input[type="range"]').input_value())


def test_why_follows_a_scenario_switch_in_chromium(server: str, worlds: dict[str, Path],
                                                   page: Any) -> None:
    """Why, switched between two scenarios: metrics, n and seed are each scenario's own
    defaults, the subheader names it, the claims map names its scenario, nothing is
    clipped at 1,280 px (issue 25: gaia_like kept paper_poisoning's metrics and n)."""
    errors = _console_errors(page)
    _open(page, f"{server}/why?claims=why_study/tables/claims_detection.parquet",
          PAGES["why"][1])
    _pick_path(page, worlds["table_world"])
    _settle(page, _has_text("on table_world"), PAGES["why"][1])
    assert page.evaluate(TAGS, "Metrics") == ["asr", "prr", "br", "tsr", "prompt_tokens"]
    assert (_value(page, "Trajectories (n)"), _value(page, "Seed")) == ("30", "3")

    _pick_path(page, worlds["plain_world"])
    _settle(page, _has_text("on plain_world"), PAGES["why"][1])
    assert page.evaluate(TAGS, "Metrics") == ["tsr", "accuracy", "prompt_tokens"]
    assert (_value(page, "Trajectories (n)"), _value(page, "Seed")) == ("24", "7")
    texts = page.evaluate(SVG_TEXT)
    assert "accuracy" in texts and "asr" not in texts, texts  # the waterfall's panels
    heads = page.get_by_role("heading").all_inner_texts()
    assert any(h.startswith("Claims map: paper_poisoning, over ") for h in heads), heads
    _check(page, "why after the switch", errors)


def test_compare_captions_say_what_the_bars_and_ticks_are(server: str,
                                                         worlds: dict[str, Path],
                                                         page: Any) -> None:
    """Compare: the axis and the caption say pooled or mean as chosen; the paper's tick
    marks are explained where the scenario has a paper table, and a scenario without
    one gets a quiet caption, not a warning."""
    errors = _console_errors(page)
    _open(page, f"{server}/compare", PAGES["compare"][1])
    _pick_path(page, worlds["table_world"])
    _settle(page, _has_text("× 30 trajectories"), PAGES["compare"][1])
    assert page.get_by_text("black tick marks: the paper's Table 4 value").count()
    assert page.get_by_text("bars: the pooled (Σ/Σ) value").count()
    assert "pooled (Σ/Σ)" in page.evaluate(SVG_TEXT)
    _sidebar(page).get_by_text("mean of per-trajectory values", exact=True).click()
    _settle(page, _has_text("bars: the mean value"), PAGES["compare"][1])
    texts = page.evaluate(SVG_TEXT)
    assert "mean" in texts and "pooled (Σ/Σ)" not in texts, texts

    _pick_path(page, worlds["plain_world"])
    _settle(page, _has_text("× 24 trajectories"), PAGES["compare"][1])
    assert page.get_by_text("The paper reports no table for this scenario").count()
    assert not page.get_by_text("tick marks").count()
    assert page.locator('[data-testid="stAlertContentWarning"]').count() == 0
    assert "pooled (Σ/Σ)" in page.evaluate(SVG_TEXT)  # a new scenario: the default value
    _check(page, "compare after the switch", errors)


def test_a_failed_expect_line_names_the_expected_value_in_chromium(
        server: str, results: Path, page: Any) -> None:
    """Trace replay of a one-step trace whose expect line fails: the error names the
    expected value beside the replayed one; the step axis reads whole numbers. (The path
    box reads only under the results folder.)"""
    trace = results / "one.jsonl"
    trace.write_text('{"op": "query"}\n{"op": "action", "id": "a", "parent": "root"}\n'
                     '{"op": "select", "selected": ["a"]}\n'
                     '{"op": "expect", "id": "a", "u": 0.123}\n', encoding="utf-8")
    errors = _console_errors(page)
    _open(page, f"{server}/trace", PAGES["trace"][1])
    box = _sidebar(page).get_by_label("…or a trace file path", exact=True)
    box.fill(str(trace))
    box.press("Enter")
    _settle(page, _has_text("line 4 (a u: expected 0.123, got "), PAGES["trace"][1])
    error = page.get_by_test_id("stAlertContentError").inner_text()
    assert "expected 0.123, got 0.5" in error and "tolerance" in error, error
    texts = page.evaluate(SVG_TEXT)
    assert "1" in texts and not any(t.endswith(".000000") for t in texts), texts
    _check(page, "trace with a failed expect line", errors)


def _download(page: Any, button: Any) -> tuple[str, bytes]:
    """Click a download button; the file's name and its bytes."""
    with page.expect_download(timeout=120_000) as info:
        button.click()
    download = info.value
    return download.suggested_filename, Path(download.path()).read_bytes()


def _after(anchor: Any, label: str) -> Any:
    """The first download button labelled ``label`` after ``anchor`` in the page (a
    figure's buttons follow it, a table's follow its caption)."""
    return anchor.locator(f"xpath=following::*[@data-testid='stDownloadButton']"
                          f"[contains(., '{label}')][1]")


def test_the_download_buttons_give_the_figure_and_the_table(server: str, page: Any) -> None:
    """Dynamics: the tree's SVG and PNG buttons give that drawing, the step records' CSV
    and Parquet buttons give the library's step records of the trajectory shown;
    Compare: the table's CSV holds the numbers the page draws (issue 52: not the cells)."""
    import io

    import polars as pl
    from PIL import Image

    from wmtsim.core.formatting import interval
    from wmtsim.engine.simulation import simulate
    from wmtsim.studies.scenarios.scenario import load_scenario

    _open(page, f"{server}/dynamics", PAGES["dynamics"][1])
    # every figure's two buttons and the two tables' two per panel, drawn
    page.wait_for_function("() => document.querySelectorAll("
                           "'[data-testid=\"stDownloadButton\"]').length >= 24",
                           timeout=120_000)
    step = _slider(page)  # the page opens at the last step
    tree = page.locator(".vega-embed", has_text=f"memory tree at step {step}").first
    name, svg = _download(page, _after(tree, "SVG"))
    assert name.endswith(f"_tree_at_step_{step}.svg"), name
    assert svg.lstrip().startswith(b"<svg") and f"memory tree at step {step}".encode() in svg
    name, png = _download(page, _after(tree, "PNG"))
    assert name.endswith(f"_tree_at_step_{step}.png"), name
    image = Image.open(io.BytesIO(png))
    image.verify()
    assert image.format == "PNG" and min(image.size) > 100, image.size

    sc = load_scenario("paper_poisoning")
    policy = sc.policies[-1]  # the page's first configuration
    steps = simulate(sc.world, policy, n=1, seed=sc.seed, params=sc.params, stubs=sc.stubs,
                     record_steps=1, baselines=sc.baselines).steps
    stem = f"{policy}_trajectory_0_steps"  # the left panel's step records
    records = page.get_by_text("The trajectory's step records").first
    name, csv = _download(page, _after(records, "CSV"))
    assert name == f"{stem}.csv", name
    shown = pl.read_csv(io.BytesIO(csv))
    name, parquet = _download(page, _after(records, "Parquet"))
    assert name == f"{stem}.parquet", name
    table = pl.read_parquet(io.BytesIO(parquet))
    assert table.drop("parent").equals(steps.select(table.drop("parent").columns)), \
        "the downloaded step records are not the library's"
    assert shown.height == table.height and shown.columns == table.columns
    assert shown["u"].to_list() == pytest.approx(table["u"].to_list())

    _open(page, f"{server}/compare", PAGES["compare"][1])
    name, csv = _download(page, _after(page.get_by_test_id("stTable").first, "CSV"))
    assert name == "paper_poisoning_comparison.csv", name
    wide = pl.read_csv(io.BytesIO(csv))
    # Numbers, each bound in its own column; the page draws them (issue 52, row 2).
    assert wide.columns[:3] == ["metric", "better", "Linear History mean"], wide.columns
    assert all(t.is_numeric() for c, t in wide.schema.items()
               if c not in ("metric", "better")), wide.schema
    cells = page.locator('[data-testid="stTable"] tbody tr').first.locator("td")
    first = wide.row(0, named=True)
    shown = interval(first["Linear History mean"], first["Linear History low"],
                     first["Linear History high"])
    assert cells.nth(1).inner_text().strip().startswith(shown), (first, shown)


SURVIVAL_POINTS = """policy => {
    const e = document.querySelector('.vega-embed');
    return [...e.querySelectorAll('g.mark-symbol path')].map((p, i) => {
        const label = p.getAttribute('aria-label') || '';
        const f = Object.fromEntries(label.split('; ').map(kv => kv.split(': ')));
        const r = p.getBoundingClientRect();
        return {i, policy: f.policy, k: Number(f.k), survival: Number(f.survival),
                x: r.x + r.width / 2, y: r.y + r.height / 2};
    }).filter(p => p.policy === policy);
}"""
JUMP = re.compile(r"Trajectory (\d+): a (\w+) poison under Full WMT stops remaining (\d+) "
                  r"steps after injection \((\w+)\); step (\d+) is the last it remained\.")


def _click_a_wmt_drop(page: Any) -> re.Match[str]:
    """Click Full WMT's survival curve where it drops (a poison stops remaining there)
    until the page names a trajectory that shows it; the page's sentence."""
    points = sorted(page.evaluate(SURVIVAL_POINTS, "wmt"), key=lambda p: p["k"])
    drops = [b for a, b in itertools.pairwise(points) if b["survival"] < a["survival"]]
    assert drops, points
    for point in drops[:3]:
        page.mouse.click(point["x"], point["y"])
        found = f"stops remaining {point['k']} steps"
        none = f"stops remaining {point['k']} steps after injection under wmt"
        _settle(page, f"{_has_text(found)} || {_has_text(none)}", PAGES["population"][1])
        match = JUMP.search(page.get_by_test_id("stMain").inner_text())
        if match:
            assert int(match[3]) == point["k"], (match[0], point)
            return match
    raise AssertionError(f"no trajectory found for the drops {drops[:3]}")


def test_a_point_of_a_survival_curve_opens_its_trajectory(server: str,
                                                           worlds: dict[str, Path],
                                                           page: Any) -> None:
    """Population dynamics → Poisoning dynamics in one session: the Dynamics
    page first shows another scenario; a click on Full WMT's curve names a trajectory,
    its button opens it there — the same scenario (by path, then uploaded), the
    trajectory, the configuration and the step."""
    errors = _console_errors(page)
    _open(page, f"{server}/dynamics", PAGES["dynamics"][1])  # its own state first
    nav = page.get_by_test_id("stSidebarNav")
    nav.get_by_text("Population dynamics", exact=True).click()
    _settle(page, _has_text("Survival of poison"), PAGES["population"][1])
    _pick_path(page, worlds["table_world"])
    _settle(page, _has_text("table_world: two poison", "[data-testid='stSidebar']"),
            PAGES["population"][1])
    for source in ("path", "upload"):
        match = _click_a_wmt_drop(page)
        page.get_by_role("button", name="Open it on the Poisoning dynamics page").click()
        page.wait_for_url("**/dynamics", timeout=120_000)
        _settle(page, _has_text(f"step {match[5]}: after the"), PAGES["dynamics"][1])
        assert _value(page, "Trajectory") == match[1]
        assert "Full WMT" in _shown(page, "Configuration")
        assert _slider(page) == match[5]
        assert f"memory tree at step {match[5]}" in page.evaluate(SVG_TEXT)
        world = "table_world" if source == "path" else "plain_world"
        assert page.get_by_test_id("stSidebar").get_by_text(f"{world}: two poison").count()
        if source == "path":
            assert _value(page, "Scenario file path") == str(worlds["table_world"])
            # Back, and the same with an uploaded scenario, which a file uploader on the
            # Dynamics page cannot be given: it is carried as its text.
            nav.get_by_text("Population dynamics", exact=True).click()
            _settle(page, _has_text("Survival of poison"), PAGES["population"][1])
            _sidebar(page).get_by_text("upload TOML", exact=True).click()
            uploader = _sidebar(page).locator('input[type="file"]')
            uploader.wait_for(state="attached", timeout=120_000)
            uploader.set_input_files(str(worlds["plain_world"]))
            _settle(page, _has_text("plain_world: two poison", "[data-testid='stSidebar']"),
                    PAGES["population"][1])
        else:
            assert _sidebar(page).get_by_text(
                "plain_world.toml, uploaded on the Population dynamics page").count()
            assert not page.get_by_text("Upload a scenario TOML file").count()
    _check(page, "dynamics opened from the population page", errors)
