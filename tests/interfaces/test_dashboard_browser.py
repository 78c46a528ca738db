"""The dashboard in a real browser: `wmtsim dashboard` on 127.0.0.1, every page opened by
its URL path in headless Chromium (Debian's ``chromium`` driven by Playwright) at 1,280 x
800 and 1,920 x 1,080: charts rendered, no error box, no chart, legend or title past the
viewport or its box, no truncated text, no overlapping labels, no "Deploy" button; the
sweep picker drives the URL and the drill-down; a screenshot per page (into
docs/screenshots/ with `make screenshots`)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
# Screenshots go to a temporary folder, or to WMTSIM_SCREENSHOTS (`make screenshots`
# sets it to docs/screenshots/, the README's pictures) so a test run leaves the tree clean.
SHOTS_ENV = os.environ.get("WMTSIM_SCREENSHOTS")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
# page -> (url path, number of charts it shows with its default controls). Every page is
# opened at its declared path (app.py); the root opens /dynamics.
PAGES = {"dynamics": ("dynamics", 8), "compare": ("compare", 1), "sweep": ("sweep", 4),
         "trace": ("trace", 2), "why": ("why", 2), "atlas": ("atlas", 1),
         "attack": ("attack", 0)}
SCREENSHOTS = ("dynamics", "compare", "sweep", "trace", "why")  # the README's pictures

if not Path(CHROMIUM).is_file():
    if os.environ.get("CI"):
        pytest.fail(f"CI is set but {CHROMIUM} is missing: .ci/run must install it "
                    "(apt-get install -y chromium)", pytrace=False)
    pytest.skip(f"{CHROMIUM} not found; install Debian's Chromium to run the browser test: "
                "apt-get install -y chromium", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api")
pytest.importorskip("streamlit")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wmtsim() -> list[str]:
    exe = Path(sys.executable).with_name("wmtsim")
    return [str(exe)] if exe.is_file() else [sys.executable, "-m", "wmtsim.interfaces.cli"]


SWEEPS = {  # two sweeps over different knobs: the picker must switch every label
    "screenshot": '"params.rho" = { values = [0.7, 0.8, 0.9] }\n'
                  '"params.budget" = { values = [64, 128, 256, 1024] }\n',
    "rho_m": '"params.rho" = { values = [0.9, 0.95] }\n"params.M" = { values = [4, 8] }\n',
}


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The dashboard's results folder ($WMTSIM_RESULTS): the two sweeps of `SWEEPS`."""
    from wmtsim.studies.sweep import load_sweep, run_sweep

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
    port = _free_port()
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
                                        record_property: Any) -> None:
    """Every page by its URL path at 1280 x 800 and 1920 x 1080: no exception, no console
    error, nothing clipped or truncated; the load times and the charts' right edges are
    recorded (``record_property`` and load_times.json), not asserted."""
    shots = Path(SHOTS_ENV) if SHOTS_ENV else tmp_path
    shots.mkdir(parents=True, exist_ok=True)
    times: dict[str, float] = {}
    edges: dict[str, list[int]] = {}
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            for width, height in VIEWPORTS:
                page = browser.new_page(viewport={"width": width, "height": height})
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
        finally:
            browser.close()
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


def test_the_sweep_picker_drives_the_url_and_the_drill_down(server: str, results: Path
                                                            ) -> None:
    """Open one sweep by its link, pick the other in the sidebar: the address and the
    drill-down's point follow (issue 25: the point kept the first sweep's knobs)."""
    first, second = results / "screenshot", results / "rho_m"
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
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
        finally:
            browser.close()


def test_long_horizon_renders_a_summary_in_chromium(server: str, record_property: Any
                                                    ) -> None:
    """The long_horizon scenario on the dynamics page: a summary view (no per-node labels,
    score bands, a step window), nothing clipped; the render time is recorded."""
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1600})
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
        finally:
            browser.close()
    record_property("long_horizon_render_seconds", round(seconds, 2))
    print(f"long_horizon: switch and render in {seconds:.1f} s")
