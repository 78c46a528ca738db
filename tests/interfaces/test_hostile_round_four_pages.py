"""Hostile cases, round four (issue 48), the dashboard's pages: one door for every read.
Each test failed on the code before it (its message, at least: the old Atlas page refused
a FIFO by a ``stat`` before reading, with no reason given).

A file a page reads (the Atlas page's screening, the Why page's claims map, a page's
scenario path box) is replaced by a FIFO, a link to ``/dev/zero``, a sparse 2 GiB file or
a link out of the results folder: the page refuses it at once, naming the file and why.
Each call runs in a forked child with a memory cap and a time limit (`_bounded`), so code
that reads such a file whole fails its case instead of filling the shared machine.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import resource
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from test_hostile_round_three import _unblock


def _bounded(call: Callable[[], object], seconds: float = 20.0) -> tuple[Any, ...]:
    """``call()`` in a forked child with 1 GiB of memory above what it starts with, killed
    after ``seconds``: code that reads ``/dev/zero`` or a sparse 2 GiB file whole fails
    the case instead of filling the shared machine, one that waits on a FIFO fails it
    instead of hanging the suite. ``("ok", value, seconds)`` or ``("raised", type, text,
    seconds)``."""
    ctx = multiprocessing.get_context("fork")
    reader, writer = ctx.Pipe(duplex=False)

    def run() -> None:
        status = Path("/proc/self/status").read_text()
        size = int(status.split("VmSize:")[1].split()[0]) * 1024 + (1 << 30)
        resource.setrlimit(resource.RLIMIT_AS, (size, size))
        start = time.monotonic()
        try:
            out: tuple[Any, ...] = ("ok", call())
        except BaseException as e:
            out = ("raised", type(e).__name__, " ".join(str(e).split()))
        writer.send((*out, time.monotonic() - start))

    child = ctx.Process(target=run)
    child.start()
    try:
        if not reader.poll(seconds):
            pytest.fail(f"no answer within {seconds} s (waiting on a FIFO, or reading "
                        "without end)")
        return tuple(reader.recv())
    finally:
        child.kill()
        child.join()


def _plant(path: Path, bad: str, outside: Path | None = None) -> list[Path]:
    """``path`` made a FIFO, a link to /dev/zero, a sparse 2 GiB file or a link to
    ``outside`` (a good copy outside the results folder); the FIFOs made."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if bad == "fifo":
        os.mkfifo(path)
        return [path]
    if bad == "link-dev-zero":
        path.symlink_to("/dev/zero")
    elif bad == "sparse-2gib":
        with open(path, "wb") as f:
            f.truncate(2 << 30)
    else:
        assert outside is not None
        path.symlink_to(outside)
    return []


# what each bad file is refused as, a part of the message: under the results folder no
# link is followed, so a link to /dev/zero is refused as a link before it is opened
REFUSED = {"fifo": "FIFO", "link-dev-zero": "symbolic link", "sparse-2gib": "larger than",
           "link-out": "symbolic link"}


def _screening() -> pl.DataFrame:
    return pl.DataFrame({"scenario": ["s"], "metric": ["tsr"], "parameter": ["rho"],
                         "mu_star": [0.1], "verdict": ["matters"]})


@pytest.mark.parametrize("bad", list(REFUSED))
def test_the_atlas_reads_a_screening_only_through_the_door(
        bad: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Atlas page's screening (its path box, its listing): once read by its path
    with polars, following any link out of the results folder."""
    pytest.importorskip("streamlit")
    from wmtsim.interfaces.dashboard import services_atlas
    from wmtsim.interfaces.dashboard.services_runs import RESULTS_ENV

    monkeypatch.setenv(RESULTS_ENV, str(tmp_path / "results"))
    outside = tmp_path / "outside" / "screen.parquet"
    outside.parent.mkdir()
    _screening().write_parquet(outside)
    path = tmp_path / "results" / "x" / "screen.parquet"
    fifos = _plant(path, bad, outside)
    stop = threading.Event()
    _unblock(fifos, stop)
    try:
        answer = _bounded(lambda: services_atlas.screening(str(path)).height)
    finally:
        stop.set()
    assert answer[0] == "raised" and answer[1] == "ValueError", answer
    assert str(path) in answer[2] and REFUSED[bad] in answer[2], answer
    assert answer[-1] < 2.5, f"took {answer[-1]:.1f} s"


def _claims_map(folder: Path) -> None:
    from wmtsim.studies.compare.claims import STATUSES

    folder.mkdir(parents=True)
    pl.DataFrame({"claim": ["c"], "status": [STATUSES[0]], "margin": [0.1], "n": [10],
                  "n_nonzero": [10], "test": ["t"], "p_adjusted": [0.01], "rho": [0.8],
                  "M": [4]}).write_parquet(folder / "claims.parquet")
    (folder / "claims.json").write_text(json.dumps({
        "scenario": "s", "parameters": ["rho", "M"], "family": "f",
        "margin_flatness": None}))


# (the file replaced in the map "m", what replaces it)
WHY_READS = {f"claims.json-{bad}": ("claims.json", bad) for bad in REFUSED} | {
    "claims.parquet-link-out": ("claims.parquet", "link-out"),
    "the-map-folder-link-out": ("", "link-out"),
    "a-table-alone-link-out": ("../claims_x.parquet", "link-out")}


@pytest.mark.parametrize("name", list(WHY_READS))
def test_the_why_page_reads_a_claims_map_only_through_the_door(
        name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Why page's claims map (its folder's claims.json and claims.parquet, or a table
    alone), and the family and summary read from its claims.json again: once read by
    path (a FIFO hung the page, /dev/zero filled the server's memory, a link out of the
    results folder was followed)."""
    pytest.importorskip("streamlit")
    from wmtsim.interfaces.dashboard import services_why
    from wmtsim.interfaces.dashboard.services_runs import RESULTS_ENV

    monkeypatch.setenv(RESULTS_ENV, str(tmp_path / "results"))
    rel, bad = WHY_READS[name]
    _claims_map(tmp_path / "outside")
    good = tmp_path / "results" / "m"
    _claims_map(good)
    path = good / rel if rel else good
    if path.exists():
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    fifos = _plant(path, bad, tmp_path / "outside" / (path.name if rel else ""))
    shown = str(path) if rel.endswith(".parquet") and rel.startswith("..") else str(good)
    table = pl.DataFrame({"claim": []})
    stop = threading.Event()
    _unblock(fifos, stop)

    def page() -> object:
        family = services_why.claims_family(shown, table)  # reads claims.json again
        return family, services_why.claims_view(shown).knobs

    try:
        answer = _bounded(page)
    finally:
        stop.set()
    assert answer[0] == "raised" and answer[1] in ("OSError", "FileNotFoundError"), answer
    assert str(path) in answer[2], answer  # the file, or the folder it is in
    assert REFUSED[bad] in answer[2], answer
    assert answer[-1] < 2.5, f"took {answer[-1]:.1f} s"


@pytest.mark.parametrize("bad", ["fifo", "link-dev-zero", "sparse-2gib"])
def test_the_scenario_path_box_reads_only_through_the_door(bad: str, tmp_path: Path) -> None:
    """A page's scenario path box (Compare's, and every page's `scenario_picker`) once read
    the typed path whole: a FIFO hung the page, /dev/zero and a sparse 2 GiB file filled
    the server's memory. (No results folder applies: a scenario may be any TOML file of
    the user's, and scenarios/ holds links to the shipped ones.)"""
    pytest.importorskip("streamlit")
    from conftest import REPO
    from streamlit.testing.v1 import AppTest

    path = tmp_path / "s.toml"
    fifos = _plant(path, bad)
    page = REPO / "wmtsim" / "interfaces" / "dashboard" / "views" / "compare.py"

    def errors() -> object:
        at = AppTest.from_file(str(page), default_timeout=60)
        at.session_state["cmp_source"] = "file path"
        at.session_state["cmp_path"] = str(path)
        at.run()
        return [e.value for e in at.error]

    stop = threading.Event()
    _unblock(fifos, stop, after=10.0)  # the page itself takes a second or two
    try:
        answer = _bounded(errors, seconds=60.0)
    finally:
        stop.set()
    assert answer[0] == "ok", answer
    assert answer[-1] < 8.0, f"took {answer[-1]:.1f} s: waited on the FIFO"
    (message,) = answer[1]
    expect = "larger than" if bad == "sparse-2gib" else "not a regular file"
    assert "cannot load the scenario" in message and str(path) in message, message
    assert expect in message, message
