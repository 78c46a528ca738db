"""The dashboard in a real browser: `wmtsim dashboard` on 127.0.0.1, every page opened in
headless Chromium (Debian's ``chromium`` driven by Playwright), charts rendered, no error
box, and a screenshot per page (into docs/screenshots/ with `make screenshots`)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
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
# page -> (url path, number of charts it shows with its default controls); the default
# page lives at the root.
PAGES = {"dynamics": ("", 8), "compare": ("compare", 1), "sweep": ("sweep", 4),
         "trace": ("trace", 2), "why": ("why", 2)}

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


@pytest.fixture(scope="module")
def sweep_folder(tmp_path_factory: pytest.TempPathFactory) -> str:
    from wmtsim.studies.sweep import load_sweep, run_sweep

    root = tmp_path_factory.mktemp("browser_sweep")
    (root / "sweep.toml").write_text(
        'name = "screenshot"\nscenario = "paper_poisoning"\npolicies = ["linear", "wmt"]\n'
        '[parameters]\n"params.rho" = { values = [0.7, 0.8, 0.9] }\n'
        '"params.budget" = { values = [64, 128, 256, 1024] }\n'
        '[design]\nkind = "grid"\ntrajectories = 50\nseed = 0\n', encoding="utf-8")
    run_sweep(load_sweep(root / "sweep.toml"), root / "out", progress=False, threads=1)
    return str(root / "out")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = _free_port()
    log_path = tmp_path_factory.mktemp("dashboard") / "streamlit.log"
    log = log_path.open("w", encoding="utf-8")
    proc = subprocess.Popen([*_wmtsim(), "dashboard", "--port", str(port), "--host",
                             "127.0.0.1"], cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
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


WIDTHS = (1280, 1920)  # nothing may be clipped across this range
RENDERED = """n => {
    const app = document.querySelector('[data-testid="stApp"]');
    if (!app || app.getAttribute('data-test-script-state') !== 'notRunning') return false;
    const embeds = document.querySelectorAll('.vega-embed');
    if (embeds.length < n) return false;
    return [...embeds].every(e => e.querySelector('canvas, svg'));
}"""
# Charts, tables and the page itself must fit their boxes: a legend or a column that does
# not is cut off (Streamlit hides the overflow).
CLIPPED = """() => {
    const out = [];
    const page = document.documentElement;
    if (page.scrollWidth > window.innerWidth + 1) out.push(`page ${page.scrollWidth}px`);
    for (const e of document.querySelectorAll('.vega-embed')) {
        const box = e.getBoundingClientRect();
        for (const c of e.querySelectorAll('canvas, svg')) {
            const r = c.getBoundingClientRect();
            if (r.right > box.right + 1 || e.scrollWidth > e.clientWidth + 1)
                out.push(`chart "${(e.textContent || '').slice(0, 40)}" ${r.width}px in ` +
                         `${box.width}px`);
        }
    }
    for (const t of document.querySelectorAll('[data-testid="stTable"]'))
        if (t.scrollWidth > t.clientWidth + 1) out.push(`table ${t.scrollWidth}px`);
    return out;
}"""


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
    page.wait_for_function(RENDERED, arg=charts, timeout=120_000)
    return time.perf_counter() - t0


def _check(page: Any, name: str, errors: list[str]) -> None:
    exceptions = page.locator('[data-testid="stException"]')
    assert exceptions.count() == 0, f"{name}: {exceptions.first.inner_text()}"
    dialogs = page.locator('[role="dialog"]')  # e.g. "Page not found"
    assert dialogs.count() == 0, f"{name}: {dialogs.first.inner_text()}"
    page.wait_for_timeout(500)  # let vega finish its transitions and lay out its legends
    assert page.evaluate(CLIPPED) == [], name
    assert errors == [], f"{name}: console errors {errors}"


def test_every_page_renders_in_chromium(server: str, sweep_folder: str, tmp_path: Path,
                                        record_property: Any) -> None:
    """Every page at 1280 and 1920 px: no exception, no console error, nothing clipped;
    the load times are recorded (``record_property`` and load_times.json), not asserted."""
    shots = Path(SHOTS_ENV) if SHOTS_ENV else tmp_path
    shots.mkdir(parents=True, exist_ok=True)
    times: dict[str, float] = {}
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            for width in WIDTHS:
                page = browser.new_page(viewport={"width": width, "height": 1600})
                errors = _console_errors(page)
                for name, (path, charts) in PAGES.items():
                    url = f"{server}/{path}"
                    if name == "sweep":
                        url += f"?folder={sweep_folder}"
                    times[f"{name}@{width}"] = round(_open(page, url, charts), 2)
                    _check(page, f"{name} at {width} px", errors)
                    if width == WIDTHS[0]:  # the README's pictures
                        page.screenshot(path=str(shots / f"{name}.png"))
                        assert (shots / f"{name}.png").stat().st_size > 10_000
                page.close()
        finally:
            browser.close()
    for key, seconds in times.items():
        record_property(f"load_seconds[{key}]", seconds)
    (tmp_path / "load_times.json").write_text(json.dumps(times, indent=2))
    print("page load (s):", times)


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
