"""Hostile cases, round four (issue 48), the readers: one door for every read, and the
small rows. Each test failed on the code before it.

* ``SWEEP_READS``: a sweep written by the real ``wmtsim sweep``, then one of its files
  replaced by a FIFO, a link out of the result, a sparse 2 GiB file, or its manifest made
  to name a file outside ``chunks/``; ``analyze`` and ``sweep --resume`` exit 2 naming the
  file, at once (a FIFO once hung both; a link out was read and analyze exited 0), and
  write nothing.
* the dashboard's Sweep and Attack listings skip a FIFO, a link to ``/dev/zero`` and a
  sparse 2 GiB ``manifest.json`` at once; the Trace page's path box reads only under the
  results folder and says the same for a missing file as for an unreadable one.
* the small rows: a user's ``.out.old-999999/`` survives ``run --out out``; a stale
  ``.res.partial-*/optuna.journal`` of another study stays where it is on a refusal;
  ``replay --out`` through a link is refused, nothing written
  (tests/interfaces/test_output_promises.py, ``test_a_symlinked_out_file_is_refused``).
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_hostile_inputs import SWEEP, _snapshot
from test_hostile_round_three import Fifo, Link, _make, _unblock
from typer.testing import CliRunner

from wmtsim.interfaces.cli.main import app


@dataclass(frozen=True)
class Sparse:
    """A sparse file of ``size`` bytes (no block written: it costs no disk)."""

    size: int = 2 << 30


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sweep folder the real ``wmtsim sweep`` wrote (one chunk of two points)."""
    root = tmp_path_factory.mktemp("sweep")
    (root / "w.toml").write_text(SWEEP)
    result = CliRunner().invoke(app, ["sweep", str(root / "w.toml"), "--out",
                                      str(root / "s"), "--no-progress"])
    assert result.exit_code == 0, result.output
    assert (root / "s" / "chunks" / "points-000000.parquet").is_file()
    return root


ANALYZE = ("analyze", "{d}/s", "--no-charts")
RESUME = ("sweep", "{d}/w.toml", "--out", "{d}/s", "--resume", "--no-progress")
POINTS = "s/chunks/points-000000.parquet"
TRAJ = "s/chunks/trajectories-000000.parquet"
OUTSIDE = "{d}/elsewhere.parquet"  # a copy of the chunk outside the result

# name -> (command, the file replaced, what replaces it, expected parts of the message)
SWEEP_READS: dict[str, tuple[tuple[str, ...], str, object, tuple[str, ...]]] = {
    "analyze-design-fifo": (ANALYZE, "s/design.parquet", Fifo(), ("design.parquet",
                                                                   "FIFO")),
    "analyze-points-fifo": (ANALYZE, POINTS, Fifo(), ("points-000000.parquet", "FIFO")),
    "analyze-trajectories-fifo": (ANALYZE, TRAJ, Fifo(), ("trajectories-000000", "FIFO")),
    "analyze-design-link-out": (ANALYZE, "s/design.parquet", Link("{d}/design.parquet"),
                                ("design.parquet", "links out of a result refused")),
    "analyze-points-link-out": (ANALYZE, POINTS, Link(OUTSIDE),
                                ("points-000000.parquet", "links out of a result refused")),
    "analyze-trajectories-link-out": (ANALYZE, TRAJ, Link(OUTSIDE),
                                      ("trajectories-000000", "symbolic link")),
    "analyze-chunks-folder-link-out": (ANALYZE, "s/chunks", Link("{d}/chunks"),
                                       ("points-000000.parquet", "chunks/",
                                        "symbolic link")),
    "analyze-points-sparse-2gib": (ANALYZE, POINTS, Sparse(),
                                   ("points-000000.parquet", "larger than")),
    "analyze-manifest-names-outside": (ANALYZE, "s/manifest.json", "../../elsewhere",
                                       ("manifest.json", "chunks[0].points",
                                        "'../../elsewhere.parquet'", "allowed")),
    "resume-points-fifo": (RESUME, POINTS, Fifo(), ("points-000000.parquet", "FIFO")),
    "resume-points-link-out": (RESUME, POINTS, Link(OUTSIDE),
                               ("points-000000.parquet", "symbolic link")),
    "resume-points-sparse-2gib": (RESUME, POINTS, Sparse(), ("points-000000.parquet",
                                                             "larger than")),
}


@pytest.mark.parametrize("name", list(SWEEP_READS))
def test_a_sweep_file_is_read_only_through_the_door(
        name: str, sweep: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    argv, target, content, expect = SWEEP_READS[name]
    work = tmp_path / "work"
    shutil.copytree(sweep, work, symlinks=True)
    # what a link out points to: the result's own files, copied outside it
    shutil.copy(work / POINTS, work / "elsewhere.parquet")
    shutil.copy(work / "s/design.parquet", work / "design.parquet")
    shutil.copytree(work / "s/chunks", work / "chunks")
    path = work / target
    fifos: list[Path] = []
    if isinstance(content, str):  # the manifest names a file outside chunks/
        manifest = json.loads(path.read_text())
        manifest["chunks"][0]["points"] = content + ".parquet"
        path.write_text(json.dumps(manifest))
    else:
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()
        if isinstance(content, Sparse):
            with open(path, "wb") as f:
                f.truncate(content.size)
        else:
            fifos = _make(work, {target: content})  # type: ignore[dict-item]
    monkeypatch.chdir(work)
    before = _snapshot(tmp_path)
    stop = threading.Event()
    _unblock(fifos, stop)  # a reader blocked on a FIFO fails the case instead of hanging
    start = time.monotonic()
    try:
        result = CliRunner().invoke(app, [a.replace("{d}", str(work)) for a in argv])
    finally:
        stop.set()
    assert time.monotonic() - start < 3.0 or not fifos, "waited on the FIFO"
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"traceback: {result.exception!r}")
    assert result.exit_code == 2, result.output
    text = " ".join(result.stderr.split())
    for part in expect:
        assert part in text, f"{part!r} not in: {result.stderr}"
    assert _snapshot(tmp_path) == before, "something was written"


# --- the dashboard's listings ----------------------------------------------------------------


@pytest.mark.parametrize("listing", ["sweep", "attack"])
@pytest.mark.parametrize("bad", ["fifo", "link-dev-zero", "sparse-2gib"])
def test_a_listing_skips_a_manifest_it_must_not_read(listing: str, bad: str,
                                                     tmp_path: Path) -> None:
    from wmtsim.interfaces.dashboard.services_attack import find_attacks
    from wmtsim.interfaces.dashboard.services_sweep import find_sweeps

    good = {"sweep": {"command": "sweep", "sweep_id": "x", "design": {}, "chunks": []},
            "attack": {"command": "attack"}}[listing]
    (tmp_path / "good").mkdir()
    (tmp_path / "good" / "manifest.json").write_text(json.dumps(good))
    manifest = tmp_path / "bad" / "manifest.json"
    manifest.parent.mkdir()
    fifos = []
    if bad == "fifo":
        os.mkfifo(manifest)
        fifos.append(manifest)
    elif bad == "link-dev-zero":
        manifest.symlink_to("/dev/zero")
    else:
        with open(manifest, "wb") as f:
            f.truncate(2 << 30)
    find = find_sweeps if listing == "sweep" else find_attacks
    stop = threading.Event()
    _unblock(fifos, stop)
    start = time.monotonic()
    try:
        found = find(str(tmp_path))
    finally:
        stop.set()
    assert time.monotonic() - start < 2.0
    assert found == [str(tmp_path / "good")]


# --- the Trace page's path box ---------------------------------------------------------------


def _trace_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, typed: str) -> list[str]:
    """The Trace page's errors after ``typed`` in its path box, the results folder being
    ``tmp_path/results``."""
    pytest.importorskip("streamlit")
    from conftest import REPO
    from streamlit.testing.v1 import AppTest

    from wmtsim.interfaces.dashboard.services_runs import RESULTS_ENV

    monkeypatch.setenv(RESULTS_ENV, str(tmp_path / "results"))
    page = REPO / "wmtsim" / "interfaces" / "dashboard" / "views" / "trace.py"
    at = AppTest.from_file(str(page), default_timeout=300).run()
    at.sidebar.text_input(key="trace_path").set_value(typed).run()
    return [e.value for e in at.error]


def test_the_trace_path_box_reads_only_under_the_results_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from wmtsim.interfaces.cli.main import demo_trace_path

    results = tmp_path / "results"
    results.mkdir()
    trace = demo_trace_path().read_bytes()
    (results / "t.jsonl").write_bytes(trace)
    (tmp_path / "outside.jsonl").write_bytes(trace)
    (results / "link.jsonl").symlink_to(tmp_path / "outside.jsonl")
    assert _trace_page(tmp_path, monkeypatch, str(results / "t.jsonl")) == []
    for typed in (str(tmp_path / "outside.jsonl"), str(results / "link.jsonl"),
                  str(results / ".." / "outside.jsonl"), "/dev/zero", "/etc/hostname"):
        errors = _trace_page(tmp_path, monkeypatch, typed)
        assert errors and "no trace file to read there" in errors[0], (typed, errors)


def test_the_trace_path_box_does_not_tell_which_files_exist(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    results = tmp_path / "results"
    results.mkdir()
    os.mkfifo(results / "fifo.jsonl")
    (results / "folder.jsonl").mkdir()
    names = ["missing.jsonl", "fifo.jsonl", "folder.jsonl"]
    if os.geteuid() != 0:  # root reads a file whatever its mode
        (results / "secret.jsonl").write_text("{}\n")
        (results / "secret.jsonl").chmod(0)
        names.append("secret.jsonl")
    messages = set()
    for name in names:
        errors = _trace_page(tmp_path, monkeypatch, str(results / name))
        assert len(errors) == 1, errors
        messages.add(errors[0].replace(name, "NAME"))
    assert len(messages) == 1, messages


# --- the small rows ---------------------------------------------------------------------------


def test_a_users_folder_named_like_a_leftover_is_kept(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """``run --out out`` once deleted a user's ``.out.old-999999/``: a dead process's
    leftover by its name alone."""
    mine = tmp_path / ".out.old-999999"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["run", "paper_poisoning", "-p", "wmt", "--n", "3",
                                      "--out", "out"])
    assert result.exit_code == 0, result.output
    assert (mine / "notes.txt").read_text() == "mine"
    # a leftover wmtsim wrote (a killed run's work folder) is still cleaned up
    killed = tmp_path / ".out.partial-999999"
    shutil.copytree(tmp_path / "out", killed)
    (killed / "manifest.json").unlink()
    (killed / ".wmtsim-work").touch()
    result = CliRunner().invoke(app, ["run", "paper_poisoning", "-p", "wmt", "--n", "3",
                                      "--out", "out"])
    assert result.exit_code == 0, result.output
    assert not killed.exists() and mine.is_dir()
    assert ".wmtsim-work" not in json.loads((tmp_path / "out/manifest.json").read_text()
                                            ).get("files", [])


TUNE = ("tune", "paper_poisoning", "--trials", "2", "--batch", "2", "--n", "3",
        "--holdout-seeds", "1", "--choose", "1", "--no-charts", "--no-progress")


def test_a_stale_journal_of_another_study_is_not_moved_in_on_a_refusal(
        tmp_path: Path) -> None:
    """A dead run's ``.res.partial-PID/optuna.journal`` of another study was moved into
    ``res/`` and then refused: the refusal changed the folder."""
    other = tmp_path / "other"
    result = CliRunner().invoke(app, [*TUNE, "--knob", "rho", "--out", str(other)])
    assert result.exit_code == 0, result.output
    stale = tmp_path / ".res.partial-999999"
    shutil.copytree(other, stale)
    before = _snapshot(tmp_path)
    result = CliRunner().invoke(app, [*TUNE, "--knob", "M", "--out", str(tmp_path / "res")])
    assert result.exit_code == 2, result.output
    assert ".res.partial-999999/optuna.journal" in " ".join(result.stderr.split())
    assert _snapshot(tmp_path) == before, "something was moved or written"


def test_a_refused_tune_resume_changes_nothing(tmp_path: Path) -> None:
    """A study recorded with ``--batch 2``, killed while being rewritten (its journal in a
    dead run's ``.res.partial-PID/``), resumed with ``--batch 4``: refused, and the folder
    is byte for byte as it was (the refusal once came after the journal was moved back
    into ``res/``)."""
    res = tmp_path / "res"
    result = CliRunner().invoke(app, [*TUNE, "--knob", "rho", "--out", str(res)])
    assert result.exit_code == 0, result.output
    stale = tmp_path / ".res.partial-999999"
    stale.mkdir()
    (stale / ".wmtsim-work").touch()
    os.rename(res / "optuna.journal", stale / "optuna.journal")
    before = _contents(tmp_path)
    argv = [a for a in TUNE if a not in ("--trials", "2", "--batch")]
    result = CliRunner().invoke(app, [*argv, "--trials", "4", "--batch", "4", "--knob", "rho",
                                      "--out", str(res)])
    assert result.exit_code == 2, result.output
    assert "--batch 4" in " ".join(result.stderr.split())
    assert _contents(tmp_path) == before, "the refusal changed the folder"


def _contents(root: Path) -> dict[str, bytes | str]:
    """Every path under ``root`` with its bytes (a link: its target; a folder: '/')."""
    out: dict[str, bytes | str] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            p = Path(folder) / name
            key = str(p.relative_to(root))
            out[key] = (f"-> {os.readlink(p)}" if p.is_symlink() else
                        "/" if p.is_dir() else p.read_bytes())
    return out


def test_replay_out_at_a_fifo_is_refused_at_once(tmp_path: Path) -> None:
    """``replay --out f.parquet`` with a FIFO there once hung: the check for a replay an
    older wmtsim wrote (its columns) handed the path to pyarrow, which waited for a
    writer."""
    from wmtsim.interfaces.cli.main import demo_trace_path

    out = tmp_path / "f.parquet"
    os.mkfifo(out)
    stop = threading.Event()
    _unblock([out], stop)
    start = time.monotonic()
    try:
        result = CliRunner().invoke(app, ["replay", str(demo_trace_path()), "--out", str(out)])
    finally:
        stop.set()
    assert time.monotonic() - start < 2.5, "waited on the FIFO"
    assert result.exit_code == 2, result.output
    assert str(out) in " ".join(result.stderr.split())
