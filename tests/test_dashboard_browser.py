"""The dashboard in a real browser: `wmtsim dashboard` on 127.0.0.1, every page opened in
headless Chromium (Debian's ``chromium`` driven by Playwright), charts rendered, no error
box, and a screenshot per page (into docs/screenshots/ with `make screenshots`)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
REPO = Path(__file__).resolve().parents[1]
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
    return [str(exe)] if exe.is_file() else [sys.executable, "-m", "wmtsim.cli"]


@pytest.fixture(scope="module")
def sweep_folder(tmp_path_factory: pytest.TempPathFactory) -> str:
    from wmtsim.sweep import load_sweep, run_sweep

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


def test_every_page_renders_in_chromium(server: str, sweep_folder: str,
                                        tmp_path: Path) -> None:
    SHOTS = Path(SHOTS_ENV) if SHOTS_ENV else tmp_path
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1500, "height": 1100})
            for name, (path, charts) in PAGES.items():
                url = f"{server}/{path}"
                if name == "sweep":
                    url += f"?folder={sweep_folder}"
                page.goto(url)
                # The script ran to the end, and every chart drew its canvas or svg.
                page.wait_for_function(
                    """n => {
                        const app = document.querySelector('[data-testid="stApp"]');
                        if (!app || app.getAttribute('data-test-script-state')
                                    !== 'notRunning') return false;
                        const embeds = document.querySelectorAll('.vega-embed');
                        if (embeds.length < n) return false;
                        return [...embeds].every(e => e.querySelector('canvas, svg'));
                    }""", arg=charts, timeout=90_000)
                errors = page.locator('[data-testid="stException"]')
                assert errors.count() == 0, f"{name}: {errors.first.inner_text()}"
                dialogs = page.locator('[role="dialog"]')  # e.g. "Page not found"
                assert dialogs.count() == 0, f"{name}: {dialogs.first.inner_text()}"
                page.wait_for_timeout(500)  # let vega finish its transitions
                page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)
                assert (SHOTS / f"{name}.png").stat().st_size > 10_000
        finally:
            browser.close()
