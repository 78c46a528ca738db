"""The Streamlit entry at the repository's top level (docs/dashboard.md): ``streamlit run
dashboards/app.py`` from a clone, the package's shipped copy that ``wmtsim dashboard``
runs, and the two are one file (the root entry is a link to the shipped copy, as
``scenarios/`` links to the package's scenarios)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from conftest import REPO, free_port, no_exception
from streamlit.testing.v1 import AppTest

ROOT_ENTRY = REPO / "dashboards" / "app.py"
TIMEOUT = 300  # the first simulation in a process may compile or load numba kernels


def _shipped_entry() -> Path:
    """The app inside the installed package (what a wheel ships)."""
    from importlib import resources

    return Path(str(resources.files("wmtsim") / "interfaces" / "dashboard" / "app.py"))


def test_the_root_entry_is_the_shipped_app() -> None:
    assert ROOT_ENTRY.is_symlink(), "dashboards/app.py links to the package's copy"
    assert ROOT_ENTRY.resolve() == _shipped_entry().resolve()


@pytest.mark.parametrize("entry", ["root", "shipped"])
def test_each_entry_renders_the_default_page(entry: str) -> None:
    path = ROOT_ENTRY if entry == "root" else _shipped_entry()
    at = AppTest.from_file(str(path), default_timeout=TIMEOUT)
    at.run()
    no_exception(at)
    assert at.title[0].value == "Poisoning dynamics"


def _get(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=5) as r:  # a local server
        return r.status, r.read().decode("utf-8", "replace")


def test_streamlit_run_dashboards_app_serves_from_a_clone(tmp_path: Path) -> None:
    """The command a Streamlit user types, run from the clone's top level."""
    port = free_port()
    cmd = [sys.executable, "-m", "streamlit", "run", "dashboards/app.py",
           "--server.port", str(port), "--server.address", "127.0.0.1",
           "--server.headless", "true", "--browser.gatherUsageStats", "false"]
    env = {**os.environ, "WMTSIM_RESULTS": str(tmp_path)}
    log = (tmp_path / "streamlit.log").open("w")
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                status, body = _get(f"http://127.0.0.1:{port}/_stcore/health")
                break
            except OSError:
                assert proc.poll() is None, (tmp_path / "streamlit.log").read_text()
                assert time.monotonic() < deadline, "no answer from streamlit in 120 s"
                time.sleep(0.5)
        assert (status, body.strip()) == (200, "ok")
        status, page = _get(f"http://127.0.0.1:{port}/")
        assert status == 200 and "<div id=\"root\">" in page
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=30)
        log.close()
