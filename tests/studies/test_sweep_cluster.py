"""A sweep on a real dask.distributed cluster, and a sweep killed with SIGKILL and resumed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
from conftest import sweep_frames
from test_sweep_support import write_files

from wmtsim.studies.sweeps.sweep import load_sweep, run_sweep

pytestmark = [pytest.mark.cluster, pytest.mark.slow]  # 7-11 s each: make test-all

distributed = pytest.importorskip("distributed")


# Worker processes shutting down at the end of the test may leave resource-tracker or
# "unclosed" notices that are about dask's teardown, not about our results.
@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore:.*[Pp]ort.*:UserWarning")
@pytest.mark.filterwarnings("ignore::DeprecationWarning:distributed")
def test_dask_cluster_results_match_a_local_run(tmp_path: Path) -> None:
    sweep = load_sweep(write_files(tmp_path))
    run_sweep(sweep, tmp_path / "local", progress=False)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None) as cluster:
        report = run_sweep(sweep, tmp_path / "dask", progress=False,
                           scheduler=cluster.scheduler_address)
    assert report.computed == 12
    a, b = sweep_frames(tmp_path / "local"), sweep_frames(tmp_path / "dask")
    assert a[0].equals(b[0]) and a[1].equals(b[1])


def test_sigkill_then_resume_gives_the_uninterrupted_results(tmp_path: Path) -> None:
    # One point per chunk, enough trajectories that the run takes a few seconds.
    path = write_files(tmp_path, n=4000, chunk=1)
    out = tmp_path / "killed"
    env = {**os.environ, "NUMBA_NUM_THREADS": "1"}
    err = tmp_path / "stderr.txt"
    with open(err, "wb") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "wmtsim.interfaces.cli.main", "sweep", str(path), "--out",
             str(out), "--no-progress"], env=env, stdout=subprocess.DEVNULL, stderr=stderr)
    deadline = time.monotonic() + 60
    chunks = out / "chunks"
    while time.monotonic() < deadline:
        if chunks.is_dir() and len(list(chunks.glob("points-*.parquet"))) >= 3:
            break
        assert proc.poll() is None, err.read_text()
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    saved = set()
    for f in chunks.glob("points-*.parquet"):
        saved.update(pl.read_parquet(f, columns=["key"])["key"])
    assert 3 <= len(saved) < 12, "the sweep was not killed part-way"

    sweep = load_sweep(path)
    report = run_sweep(sweep, out, progress=False, resume=True)
    assert report.already == len(saved) and report.computed == 12 - len(saved)
    log = [line.split("\t") for line in (out / "computed.log").read_text().splitlines()]
    sessions = list(dict.fromkeys(s for s, _, _ in log))
    after = [k for s, _, k in log if s == sessions[-1]]
    assert not set(after) & saved  # nothing computed twice after the resume
    assert len(after) == len(set(after)) == 12 - len(saved)
    assert not list(out.rglob("*.tmp"))

    run_sweep(sweep, tmp_path / "clean", progress=False)
    a, b = sweep_frames(tmp_path / "clean"), sweep_frames(out)
    assert a[0].equals(b[0]) and a[1].equals(b[1])


def _corrupt_cache(dest: Path) -> Path:
    """A copy of the real kernel cache's index files under ``dest``, each garbage: the
    first kernel a process loads from it raises `wmtsim.numba_cache.CacheError`."""
    from wmtsim.numba_cache import cache_dir

    src = Path(os.environ.get("NUMBA_CACHE_DIR") or cache_dir())
    for p in src.rglob("*.nbi"):
        q = dest / p.relative_to(src)
        q.parent.mkdir(parents=True, exist_ok=True)
        q.write_bytes(b"garbage")
    return dest


@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore:.*[Pp]ort.*:UserWarning")
@pytest.mark.filterwarnings("ignore::DeprecationWarning:distributed")
@pytest.mark.parametrize("where", ["dask", "pool"])
def test_a_cache_error_in_a_worker_exits_2_and_the_sweep_resumes(
        where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 27: numba's cache corrupt on a dask worker (a local cluster of processes) or in
    a ``--workers`` pool process, not in the command's own process (its kernels are loaded
    already): the error travels back with the task and reaches the user as the same exit 2
    naming the cache file, no traceback; the sweep's folder is resumable work (no temporary
    file), and a rerun with a sound cache completes it."""
    from typer.testing import CliRunner

    from wmtsim.interfaces.cli.main import app

    bad = _corrupt_cache(tmp_path / "bad")
    path, out = write_files(tmp_path), tmp_path / "out"
    sweep = load_sweep(path)
    run_sweep(sweep, tmp_path / "clean", progress=False)  # this process's kernels: loaded
    argv = ["sweep", str(path), "--out", str(out), "--no-progress"]
    if where == "dask":
        with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                      host="127.0.0.1", dashboard_address=":0",
                                      env={"NUMBA_CACHE_DIR": str(bad)}) as cluster:
            res = CliRunner().invoke(app, [*argv, "--scheduler", cluster.scheduler_address])
    else:
        with monkeypatch.context() as env:  # what the spawned pool processes inherit
            env.setenv("NUMBA_CACHE_DIR", str(bad))
            res = CliRunner().invoke(app, [*argv, "--workers", "2"])
    assert res.exit_code == 2 and isinstance(res.exception, SystemExit), res.output
    text = " ".join(res.stderr.split())
    assert f"numba's kernel cache '{bad}'" in text and ".nbi' is corrupt" in text, text
    assert "Traceback" not in res.output and "NUMBA_CACHE_DIR" in text
    assert not list(out.rglob("*.tmp"))
    res = CliRunner().invoke(app, argv)
    assert res.exit_code == 0, res.output
    a, b = sweep_frames(tmp_path / "clean"), sweep_frames(out)
    assert a[0].equals(b[0]) and a[1].equals(b[1])
