"""Hostile cases, round four (issue 48): each row of the issue's table as a test that
failed on the code before it.

* ``RESUME``: a tune study of every objective count and direction resumes, and a resumed
  study equals one uninterrupted run (rerun as is, extended, killed and rerun). A
  single-objective study once could not resume at all: the journal's reader refused the
  ``"value": x, "values": null`` lines Optuna writes for one objective.
* ``CASES``: inputs that must exit 2, name the file and line, and write nothing (the
  harness of `test_hostile_round_three`).
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from test_hostile_round_three import TRIAL, Case, check_case, journal, tune_case
from typer.testing import CliRunner

from wmtsim.interfaces.cli.main import app

# --- resume = uninterrupted, for every objective count and direction -------------------

TUNE = ("tune", "paper_poisoning", "--batch", "2", "--n", "5", "--holdout-seeds", "1",
        "--choose", "1", "--knob", "rho", "--knob", "M", "--no-charts", "--no-progress")

RESUME: dict[str, tuple[str, ...]] = {
    "1-max": ("tsr:max",),
    "1-min": ("tsr:min",),
    "1-min-tokens": ("prompt_tokens:min",),
    "2-max-min": ("tsr:max", "asr:min"),
    "2-min-min": ("tsr:min", "prompt_tokens:min"),
    "3-max-min-min": ("tsr:max", "asr:min", "prompt_tokens:min"),
    "3-max-max-max": ("tsr:max", "asr:max", "prompt_tokens:max"),
}


def _tune(out: Path, objectives: tuple[str, ...], trials: int) -> pl.DataFrame:
    argv = [*TUNE, "--trials", str(trials), "--out", str(out)]
    for o in objectives:
        argv += ["--objective", o]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["equals_uninterrupted"] is True, manifest
    return pl.read_parquet(out / "trials.parquet")


@pytest.mark.parametrize("name", list(RESUME))
def test_a_resumed_study_equals_an_uninterrupted_one(name: str, tmp_path: Path) -> None:
    objectives = RESUME[name]
    whole = _tune(tmp_path / "whole", objectives, 6)
    out = tmp_path / "resumed"
    first = _tune(out, objectives, 4)
    assert first.equals(whole.head(4))
    assert _tune(out, objectives, 4).equals(first)  # the same command again
    assert _tune(out, objectives, 6).equals(whole)  # extended at a generation boundary
    # Killed in the second generation: the journal keeps the first generation (lines 1
    # and 2 create the study and set its fingerprint) and part of a line.
    lines = (out / "optuna.journal").read_bytes().splitlines(keepends=True)
    (out / "optuna.journal").write_bytes(b"".join(lines[:4]) + lines[4][:40])
    assert _tune(out, objectives, 6).equals(whole)


# --- exit 2, the file and line named, nothing written -----------------------------------

CASES: dict[str, Case] = {
    "tune-journal-only-a-newline": tune_case(
        {"o/manifest.json": '{"command": "tune"}', "o/optuna.journal": "\n"},
        "optuna.journal", "line 1", "a blank line"),
    "tune-journal-blank-line-inside": tune_case(journal("", json.dumps(TRIAL)),
                                                "optuna.journal", "line 2", "a blank line"),
    "tune-journal-trial-copied": tune_case(journal(json.dumps(TRIAL), json.dumps(TRIAL)),
                                           "optuna.journal", "line 3",
                                           "the same trial as line 2"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_hostile_input_exits_2_names_the_problem_and_writes_nothing(
        name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    check_case(CASES[name], tmp_path, monkeypatch)


# --- conformance: the judge outside the judged ------------------------------------------

ADAPTERS = '''
import glob, os, signal, subprocess, sys, time
from wmtsim.conformance.adapter import ReferenceAdapter

OFF = lambda nodes: {k: (v.u + 0.25, v.m, v.state) for k, v in nodes.items()}


class Always(str):
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = str.__hash__


class FakeVerdict(ReferenceAdapter):
    """Writes a passing verdict wherever the judge once looked for one, then ends."""
    def apply(self, e):
        for d in glob.glob(os.path.join(os.environ.get("TMPDIR", "/tmp"),
                                        "wmtsim-conformance-*")):
            with open(os.path.join(d, "verdict.json"), "w") as f:
                f.write('{"corpus_traces": 22, "examples": 0, "failure": null}')
        os._exit(0)


class ReplacesTheComparison(ReferenceAdapter):
    def __init__(self, params):
        import wmtsim.conformance.runner as runner
        runner._compare = lambda *a, **k: None
        runner.first_disagreement = lambda *a, **k: None
        super().__init__(params)

    def nodes(self):
        return OFF(super().nodes())


class StateAlwaysEqual(ReferenceAdapter):
    def nodes(self):
        return {k: (v.u, v.m, Always("bogus")) for k, v in super().nodes().items()}


class DisarmsTheAlarm(ReferenceAdapter):
    def nodes(self):
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_IGN)
        try:
            time.sleep(30)
        except BaseException:
            time.sleep(30)
        return super().nodes()


class LoopsForever(ReferenceAdapter):
    def apply(self, e):
        signal.signal(signal.SIGALRM, signal.SIG_IGN)
        while True:
            pass


class GrandchildHoldsStdout(ReferenceAdapter):
    def __init__(self, params):
        if not os.environ.get("WMT_STARTED"):
            os.environ["WMT_STARTED"] = "1"
            p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
            with open(os.environ["WMT_PIDS"], "a") as f:
                f.write(f"{p.pid}\\n")
        super().__init__(params)


class ClosesStdout(ReferenceAdapter):
    def nodes(self):
        sys.stdout.close()
        return OFF(super().nodes())


class ClosesEveryDescriptor(ReferenceAdapter):
    def apply(self, e):
        os.closerange(0, 1024)
        super().apply(e)
'''

# name -> (exit status, text in the output, seconds it may take at most)
CONFORMANCE: dict[str, tuple[int, str, float]] = {
    "FakeVerdict": (1, "ended its process", 60),
    "ReplacesTheComparison": (1, "field u", 60),
    "StateAlwaysEqual": (1, "field state", 60),
    "DisarmsTheAlarm": (1, "no answer within 2 s", 60),
    "LoopsForever": (1, "no answer within 2 s", 60),
    "GrandchildHoldsStdout": (0, "conforms", 60),
    "ClosesStdout": (1, "field u", 60),
    "ClosesEveryDescriptor": (1, "ended its process", 60),
}


def _alive(pid: int) -> bool:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in text  # a killed orphan whose reaper has not reaped it yet


@pytest.mark.parametrize("name", list(CONFORMANCE))
def test_an_adapter_cannot_fake_the_verdict(name: str, tmp_path: Path) -> None:
    """The real command in its own process; the adapter in the judge's child."""
    import os
    import subprocess
    import sys
    import time

    status, text, seconds = CONFORMANCE[name]
    (tmp_path / "hostile_adapters.py").write_text(ADAPTERS)
    pids = tmp_path / "pids"
    env = {**os.environ, "WMT_PIDS": str(pids), "PYTHONPATH": str(tmp_path)}
    t0 = time.monotonic()
    done = subprocess.run([str(Path(sys.executable).with_name("wmtsim")), "conformance",
                           "run", f"hostile_adapters:{name}", "--examples", "0",
                           "--timeout", "2", "--save", str(tmp_path / "s")],
                          cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=seconds + 60)
    took = time.monotonic() - t0
    assert done.returncode == status, done.stdout + done.stderr
    assert text in " ".join(done.stdout.split()), done.stdout + done.stderr
    assert took < seconds, f"{took:.0f} s"
    if pids.exists():
        for pid in map(int, pids.read_text().split()):
            assert not _alive(pid), f"the adapter's process {pid} outlived the check"


def test_the_overall_limit_ends_a_slow_check(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Every call answers within its timeout, the whole check does not within --limit."""
    import time

    from wmtsim.conformance.isolated import run_isolated

    (tmp_path / "slow_adapter.py").write_text(
        "import time\nfrom wmtsim.conformance.adapter import ReferenceAdapter\n"
        "class Slow(ReferenceAdapter):\n    def nodes(self):\n        time.sleep(0.3)\n"
        "        return super().nodes()\n")
    monkeypatch.chdir(tmp_path)
    t0 = time.monotonic()
    report = run_isolated("slow_adapter:Slow", examples=0, save=None, echo=None,
                          timeout=2, limit=3)
    assert time.monotonic() - t0 < 30
    assert report.failure is not None and report.failure.disagreement.field == "ended"
    assert "within its limit of 3 s" in str(report.failure.disagreement)


@pytest.mark.parametrize("name", ["ReplacesTheComparison", "StateAlwaysEqual"])
def test_the_pytest_plugin_judges_outside_the_adapter(name: str, tmp_path: Path) -> None:
    import subprocess
    import sys

    (tmp_path / "hostile_adapters.py").write_text(ADAPTERS)
    (tmp_path / "test_nothing.py").write_text("")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--wmt-impl",
         f"hostile_adapters:{name}", "--wmt-examples", "0", "--wmt-save",
         str(tmp_path / "s"), str(tmp_path / "test_nothing.py")],
        cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed" in done.stdout


# --- attack: one writer per result, as tune ------------------------------------------------

ATTACK = ("attack", "paper_poisoning", "-p", "wmt", "--budget", "1", "--trials", "2", "--n",
          "5", "--n-holdout", "5", "--no-charts", "--no-progress")


def test_a_second_attack_on_the_same_result_is_refused(tmp_path: Path) -> None:
    """Two `attack --out X` at once once both exited 0, leaving a manifest naming
    ``search`` with no ``search/``, or a log with duplicate trial numbers."""
    import fcntl
    import os

    out = tmp_path / "a"
    first = CliRunner().invoke(app, [*ATTACK, "--out", str(out)])
    assert first.exit_code == 0, first.output
    before = {p.name: p.read_bytes() for p in (out / "search").iterdir()}
    held = os.open(out / "search", os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(held, fcntl.LOCK_EX)  # another run holds the search log
        second = CliRunner().invoke(app, [*ATTACK, "--trials", "4", "--out", str(out)])
    finally:
        os.close(held)
    assert second.exit_code == 2, second.output
    assert "another `wmtsim attack` is running this search" in " ".join(second.stderr.split())
    assert {p.name: p.read_bytes() for p in (out / "search").iterdir()} == before
    third = CliRunner().invoke(app, [*ATTACK, "--trials", "4", "--out", str(out)])
    assert third.exit_code == 0, third.output  # the lock is gone with its holder


# --- tune manifests never claim more than happened -----------------------------------------


def test_a_manifest_claims_uninterrupted_only_for_the_whole_history(tmp_path: Path) -> None:
    argv = [*TUNE, "--objective", "tsr:max", "--out", str(tmp_path / "x")]
    assert CliRunner().invoke(app, [*argv, "--trials", "4"]).exit_code == 0
    other = CliRunner().invoke(app, [*argv, "--trials", "8", "--batch", "4"])
    assert other.exit_code == 2 and "--batch 4" in other.stderr and "--batch 2" in other.stderr
    # resumed inside a generation once (3), extended at a boundary later (6): not the
    # uninterrupted schedule, and every run is recorded
    argv = [*TUNE, "--objective", "tsr:max", "--out", str(tmp_path / "y")]
    for trials in (3, 4, 6):
        assert CliRunner().invoke(app, [*argv, "--trials", str(trials)]).exit_code == 0
    manifest = json.loads((tmp_path / "y" / "manifest.json").read_text())
    assert manifest["equals_uninterrupted"] is False
    assert [(r["batch"], r["resumed_from"], r["finished"]) for r in manifest["runs"]] == [
        (2, 0, 3), (2, 3, 4), (2, 4, 6)]
