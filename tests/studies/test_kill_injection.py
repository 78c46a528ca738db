"""SIGKILL at every rename (issue 16, points 3 and 4; method in docs/faults.md).

`tests/studies/kill_at_rename.py` runs a command in a fresh process and kills it with SIGKILL at
its K-th rename, before or after it takes effect. ``wmtsim run --out`` must leave the old
complete result, the new complete result, or no folder — never a mix of two runs; a sweep
killed anywhere, even before its first manifest, must resume to the same results as an
uninterrupted sweep.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from wmtsim.interfaces.cli.main import app
from wmtsim.studies.sweeps.store import load_results
from wmtsim.studies.sweeps.sweep import load_sweep, run_sweep

KILLER = Path(__file__).with_name("kill_at_rename.py")
RUN = ["run", "paper_poisoning", "-p", "wmt", "-p", "linear"]


def _killed(k: int, when: str, argv: list[str], cwd: Path) -> int:
    res = subprocess.run([sys.executable, str(KILLER), str(k), when, *argv], cwd=cwd,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode in (0, -signal.SIGKILL), res.stderr[-2000:]
    return res.returncode


def _which_run(folder: Path) -> tuple[int, int] | None:
    """(n, seed) of the complete run in ``folder``, None if absent; fails on a mix."""
    if not folder.exists():
        return None
    manifest = json.loads((folder / "manifest.json").read_text())
    n, seed = manifest["n"], manifest["seed"]
    traj = pl.read_parquet(folder / "trajectories.parquet")
    summary = pl.read_parquet(folder / "summary.parquet")
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [*manifest["files"], "manifest.json"])
    assert traj.height == n * 2 and set(traj["seed"].unique()) == {seed}
    assert set(summary["policy"].unique()) == {"wmt", "linear"}
    return n, seed


@pytest.mark.slow  # 10-27 s each (a command killed at every point): make test-all
def test_run_killed_at_each_rename_leaves_old_or_new_never_a_mix(tmp_path: Path) -> None:
    old = tmp_path / "old"
    assert CliRunner().invoke(app, [*RUN, "--n", "30", "--seed", "0", "--out", str(old)]
                              ).exit_code == 0
    seen = []
    # "after K" covers the state between rename K and K+1; "before 1" the very start.
    # "fsync K": killed with the K-th file complete but not renamed (tells write-aside
    # from write-in-place, which the renames alone cannot).
    for k, when in [(1, "before"), (1, "after"), (2, "after"), (3, "after"), (4, "after"),
                    (5, "after"), (1, "fsync"), (2, "fsync"), (4, "fsync")]:
        case = tmp_path / f"{k}-{when}"
        case.mkdir()
        shutil.copytree(old, case / "out")
        code = _killed(k, when, [*RUN, "--n", "20", "--seed", "7", "--out", "out"], case)
        state = _which_run(case / "out")
        assert state in ((30, 0), (20, 7)), (k, when, state)
        leftovers = [p.name for p in case.iterdir() if p.name != "out"]
        if code == 0:
            assert state == (20, 7) and not leftovers
        seen.append(state)
    assert (30, 0) in seen and (20, 7) in seen  # the kills hit both sides of the swap


SWEEP = """scenario = "paper_poisoning"
policies = ["wmt", "linear"]
[parameters.rho]
values = [0.7, 0.9]
[design]
kind = "grid"
trajectories = 8
chunk = 1
"""


@pytest.mark.parametrize(("k", "when"), [(1, "before"), (1, "after"), (2, "after"),
                                         (3, "after"), (5, "after")])
def test_sweep_killed_anywhere_resumes_to_the_same_results(tmp_path: Path, k: int,
                                                           when: str) -> None:
    (tmp_path / "w.toml").write_text(SWEEP)
    spec = load_sweep(tmp_path / "w.toml")
    run_sweep(spec, tmp_path / "reference", progress=False)
    _killed(k, when, ["sweep", "w.toml", "--out", "out", "--no-progress"], tmp_path)
    run_sweep(spec, tmp_path / "out", progress=False)  # resumes; refuses nothing
    want = load_results(tmp_path / "reference")
    got = load_results(tmp_path / "out")
    assert got.manifest["complete"]
    cols = [c for c in want.points.columns if c != "seconds"]
    assert got.points.select(cols).sort("key").equals(want.points.select(cols).sort("key"))
    assert got.design.equals(want.design)


ATTRIBUTE = ["attribute", "paper_poisoning", "--from", "a3_no_semantic", "--to", "wmt",
             "--no-charts"]


@pytest.mark.slow  # 10-27 s each (a command killed at every point): make test-all
def test_attribute_killed_anywhere_leaves_old_or_new_never_a_mix(tmp_path: Path) -> None:
    """Issue 27: attribute used to leave a new attribution.parquet beside the old manifest."""
    old = tmp_path / "old"
    assert CliRunner().invoke(app, [*ATTRIBUTE, "--n", "5", "--out", str(old)]
                              ).exit_code == 0
    seen = set()
    for k, when in [(1, "after"), (2, "after"), (3, "after"), (1, "fsync"), (3, "fsync")]:
        case = tmp_path / f"{k}-{when}"
        case.mkdir()
        shutil.copytree(old, case / "out")
        _killed(k, when, [*ATTRIBUTE, "--n", "7", "--out", "out"], case)
        folder = case / "out"
        if not folder.exists():
            continue
        manifest = json.loads((folder / "manifest.json").read_text())
        assert sorted(p.name for p in folder.iterdir()) == sorted(
            [*manifest["files"], "manifest.json"])
        coalitions = pl.read_parquet(folder / "coalitions.parquet")
        assert coalitions.height == manifest["coalitions"]
        seen.add(manifest["n"])
    assert seen <= {5, 7} and seen


def _whole(folder: Path, kept: tuple[str, ...] = ()) -> dict:
    """The manifest of the complete result in ``folder``; fails on a mix of files."""
    manifest = json.loads((folder / "manifest.json").read_text())
    entries = {p.name for p in folder.iterdir()} - set(kept)
    assert entries == {*manifest["files"], "manifest.json"}, (entries, manifest["files"])
    return manifest


CALIBRATE = ["calibrate", "paper_poisoning", "--maxiter", "1", "--knob", "stubs.p_leak=0:1",
             "--method", "nelder-mead", "--fit-on", "wmt"]


@pytest.mark.slow  # 10-27 s each (a command killed at every point): make test-all
def test_calibrate_killed_anywhere_leaves_old_or_new_never_a_mix(tmp_path: Path) -> None:
    """Issue 27: calibrate used to leave a new fit beside the old error report."""
    old = tmp_path / "old"
    assert CliRunner().invoke(app, [*CALIBRATE, "--n", "2", "--out", str(old)]
                              ).exit_code == 0
    seen = set()
    for k, when in [(1, "after"), (2, "after"), (3, "after"), (4, "after"), (2, "fsync")]:
        case = tmp_path / f"{k}-{when}"
        case.mkdir()
        shutil.copytree(old, case / "out")
        _killed(k, when, [*CALIBRATE, "--n", "3", "--out", "out"], case)
        folder = case / "out"
        if not folder.exists():
            continue
        manifest = _whole(folder)
        header = (folder / "calibrated.toml").read_text().splitlines()[0]
        assert f"(n={manifest['n']}, objective {manifest['objective']:.4f})" in header, header
        errors = pl.read_csv(folder / "errors.csv")
        assert set(errors["policy"].unique()) >= {"wmt"}
        seen.add(manifest["n"])
    assert seen == {2, 3}, seen  # the kills hit both sides of the swap


CLAIMS = ["claims", "paper_poisoning", "--vary", "stubs.selector_noise=0:0.4", "--vary",
          "stubs.poison_boost=0:0.1", "--levels", "2", "--no-progress", "--no-charts"]


@pytest.mark.slow  # 10-27 s each (a command killed at every point): make test-all
def test_claims_killed_anywhere_leaves_old_or_new_never_a_mix(tmp_path: Path) -> None:
    """Issue 27: claims used to leave claims.parquet without claims.json. A new request
    (another n) replaces the old result, its sweep included."""
    old = tmp_path / "old"
    res = CliRunner().invoke(app, [*CLAIMS, "--n", "2", "--out", str(old)])
    assert res.exit_code == 0, res.output
    seen = set()
    # 12 renames: the sweep's (manifest, design, chunks), the result's files, the swap.
    for k, when in [(1, "after"), (6, "after"), (11, "after"), (12, "after"), (2, "fsync")]:
        case = tmp_path / f"{k}-{when}"
        case.mkdir()
        shutil.copytree(old, case / "out")
        _killed(k, when, [*CLAIMS, "--n", "3", "--out", "out"], case)
        folder = case / "out"
        if not (folder / "manifest.json").exists():
            continue  # killed before the swap with the old sweep removed: rerun resumes
        manifest = _whole(folder, kept=("sweep",))
        claims = json.loads((folder / "claims.json").read_text())
        table = pl.read_parquet(folder / "claims.parquet")
        assert claims["n"] == manifest["n"] and table.height > 0
        seen.add(manifest["n"])
    assert seen == {2, 3}, seen  # the kills hit both sides of the swap
    # Whatever the kill left, the next run completes it.
    res = CliRunner().invoke(app, [*CLAIMS, "--n", "3", "--out", str(tmp_path / "1-after" / "out")])
    assert res.exit_code == 0, res.output


# --- the newer commands: screen, tune, attack (and --restart), compare --parity ------------

SCREEN = ["screen", "paper_poisoning", "--knob", "rho", "--knob", "tau_obs", "-r", "2",
          "--no-charts"]
TUNE = ["tune", "paper_poisoning", "--batch", "2", "--n", "3", "--holdout-seeds", "1",
        "--knob", "rho", "--no-charts", "--no-progress"]
ATTACK = ["attack", "paper_poisoning", "-p", "wmt", "--budget", "1", "--n", "5",
          "--n-holdout", "5", "--no-charts"]
PARITY = ["compare", "paper_poisoning", "-p", "wmt", "-p", "linear", "--parity"]

# name -> (old argv, new argv, the manifest value that tells them apart, its old and new
# value, the entries a rerun resumes from, the kill points). A kill point (K, when) is the
# K-th rename, before or after it takes effect, or the K-th fsync; the swap is the last
# rename, so "before" it leaves the old result and "after" it the new one with the old
# still to delete.
KILLS = {
    "screen": ([*SCREEN, "--n", "3"], [*SCREEN, "--n", "4"], "n", (3, 4), (),
               [(1, "fsync"), (4, "before"), (4, "after")]),
    "compare --parity": ([*PARITY, "--n", "3"], [*PARITY, "--n", "4"], "n", (3, 4), (),
                         [(1, "fsync"), (4, "before"), (4, "after")]),
    # tune resumes its study: the new request asks for more trials of the same study; its
    # 11th rename moves optuna.journal into the new folder, the 12th is the swap.
    "tune": ([*TUNE, "--trials", "2"], [*TUNE, "--trials", "4"], "trials", (2, 4),
             ("optuna.journal",), [(2, "fsync"), (11, "after"), (12, "after")]),
    "attack": ([*ATTACK, "--trials", "2"], [*ATTACK, "--trials", "3"], "trials", (2, 3),
               ("search",), [(1, "fsync"), (8, "after"), (9, "after")]),
    # --restart: the first fsync is the new search's trial log, the first rename moves it
    # into the new folder; the old result and its log must stay whole until the swap.
    "attack --restart": ([*ATTACK, "--trials", "2"], [*ATTACK, "--trials", "3", "--restart"],
                         "trials", (2, 3), ("search",),
                         [(1, "fsync"), (1, "after"), (9, "before"), (9, "after")]),
}


def _value(folder: Path, key: str, kept: tuple[str, ...]) -> int:
    """The manifest's ``key`` of the complete result in ``folder`` (which fails on a mix):
    its entries are those the manifest lists, where the work kept to resume from (which
    the manifest lists too) may be absent or, after a kill, newer."""
    manifest = json.loads((folder / "manifest.json").read_text())
    entries = {p.name for p in folder.iterdir()} - set(kept)
    assert entries == {*manifest["files"], "manifest.json"} - set(kept), (
        entries, manifest["files"])
    return int(manifest["settings"][key] if "settings" in manifest else manifest[key])


def _logged(folder: Path) -> int:
    """Trials in an attack folder's trial log."""
    return len((folder / "search" / "trials.jsonl").read_text().splitlines())


@pytest.mark.slow  # 10-27 s each (a command killed at every point): make test-all
@pytest.mark.parametrize("name", list(KILLS))
def test_newer_commands_killed_anywhere_leave_old_or_new_and_rerun_completes(
        name: str, tmp_path: Path) -> None:
    """Issue 27: killed at a rename or an fsync, ``--out`` holds the old complete result or
    the new one (its files those its manifest lists, plus what a rerun resumes from); the
    next run of the new request completes it. ``attack --restart`` used to delete the
    old trial log before any work, so a kill left the old result without its log."""
    old_argv, new_argv, key, (old_value, new_value), kept, points = KILLS[name]
    old = tmp_path / "old"
    res = CliRunner().invoke(app, [*old_argv, "--out", str(old)])
    assert res.exit_code == 0, res.output
    assert _value(old, key, kept) == old_value
    old_log = _logged(old) if name.startswith("attack") else None
    seen, rerun = set(), [points[0]]
    for k, when in points:
        case = tmp_path / f"{k}-{when}"
        case.mkdir()
        shutil.copytree(old, case / "out")
        _killed(k, when, [*new_argv, "--out", "out"], case)
        folder = case / "out"
        if not (folder / "manifest.json").exists():
            assert kept and {p.name for p in folder.iterdir()} <= set(kept), (k, when)
            rerun.append((k, when))  # killed between moving the kept work and the swap
            continue
        value = _value(folder, key, kept)
        assert value in (old_value, new_value), (k, when, value)
        if name == "attack --restart" and value == old_value:
            assert _logged(folder) == old_log, "the old result lost its trial log"
        seen.add(value)
    assert seen == {old_value, new_value}, seen  # the kills hit both sides of the swap
    for k, when in rerun:  # whatever the kill left, the next run completes it
        folder = tmp_path / f"{k}-{when}" / "out"
        res = CliRunner().invoke(app, [*new_argv, "--out", str(folder)])
        assert res.exit_code == 0, (k, when, res.output)
        assert _value(folder, key, kept) == new_value
        assert [p.name for p in folder.parent.iterdir()] == ["out"], (
            "a leftover of the killed run survived the rerun")
