"""The promises of issue 42 outside a table row's reach: a tune study that survives a
cut line and a second writer, resumed searches that equal uninterrupted ones, a
conformance verdict that an adapter cannot fake, a silent scheduler, a temporary file a
killed writer left. Each test failed on the code before issue 42."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from wmtsim.conformance.adapter import ReferenceAdapter
from wmtsim.conformance.runner import run_conformance
from wmtsim.interfaces.cli.main import app
from wmtsim.studies.attack.search import SearchSettings, search
from wmtsim.studies.attack.space import AttackSpace
from wmtsim.studies.scenarios.scenario import load_scenario
from wmtsim.studies.sweeps.knob_ranges import ranges_for
from wmtsim.studies.tune.tune import STORAGE, Fit, parse_objective, tune

# --- tune: the journal ------------------------------------------------------------------


def _fit() -> Fit:
    sc = load_scenario("paper_poisoning")
    return Fit((sc,), (0,), 10, (parse_objective("tsr"), parse_objective("prompt_tokens")),
               ranges=ranges_for(["rho", "M"]))


def _trials(storage: Path, trials: int) -> list[tuple[object, ...]]:
    frame = tune(_fit(), storage, trials=trials, batch=2, seed=3).trials
    return [tuple(r) for r in frame.select("trial", "params.rho", "params.M").iter_rows()]


def test_a_resumed_tune_equals_an_uninterrupted_one(tmp_path: Path) -> None:
    """4 trials then 6 (batch 2: the resume starts at a generation boundary, as after any
    kill) give the trials of one run of 6. From inside a generation (3 then 6, or a
    journal whose last line was cut) the search goes on validly, keeps the trials it had,
    and says that it is not the uninterrupted one (`equals_uninterrupted`)."""
    whole = _trials(tmp_path / "whole" / STORAGE, 6)
    (tmp_path / "resumed").mkdir()
    _trials(tmp_path / "resumed" / STORAGE, 4)
    assert _trials(tmp_path / "resumed" / STORAGE, 6) == whole
    cut = tmp_path / "cut" / STORAGE
    _trials(cut, 4)
    cut.write_bytes(cut.read_bytes()[:-30])  # the last trial's line, cut short
    again = tune(_fit(), cut, trials=6, batch=2, seed=3)
    assert again.extra == {"resumed_from": 3, "equals_uninterrupted": False}
    rows = [tuple(r) for r in again.trials.select("trial", "params.rho",
                                                   "params.M").iter_rows()]
    assert rows[:3] == whole[:3] and [r[0] for r in rows] == list(range(6))


def test_a_cut_journal_resumes_through_the_cli(tmp_path: Path) -> None:
    """The rerun drops the cut line instead of appending to it (and failing ever after)."""
    argv = ["tune", "paper_poisoning", "--batch", "2", "--n", "5", "--holdout-seeds", "0",
            "--knob", "rho", "--no-charts", "--no-progress", "--out", str(tmp_path / "r")]
    assert CliRunner().invoke(app, [*argv, "--trials", "2"]).exit_code == 0
    journal = tmp_path / "r" / STORAGE
    journal.write_bytes(journal.read_bytes()[:-30])
    again = CliRunner().invoke(app, [*argv, "--trials", "3"])
    assert again.exit_code == 0, again.output
    assert "3 trials (2 computed now" in again.output
    assert journal.read_bytes().endswith(b"\n")


def test_a_second_writer_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    argv = ["tune", "paper_poisoning", "--batch", "2", "--n", "5", "--holdout-seeds", "0",
            "--knob", "rho", "--no-charts", "--no-progress", "--out", str(tmp_path / "r"),
            "--trials", "2"]
    assert CliRunner().invoke(app, argv).exit_code == 0
    journal = tmp_path / "r" / STORAGE
    before = journal.read_bytes()
    with open(journal, "rb") as held:  # another run's lock (another open file)
        fcntl.flock(held, fcntl.LOCK_EX)
        second = CliRunner().invoke(app, [*argv[:-1], "4"])
    assert second.exit_code == 2
    assert "another `wmtsim tune` is running this study" in " ".join(second.stderr.split())
    assert journal.read_bytes() == before


def test_tune_takes_every_seed_its_help_allows(tmp_path: Path) -> None:
    """--seed 2^32 (NSGA-II refused seeds >= 2^32 after creating the journal)."""
    result = CliRunner().invoke(app, [
        "tune", "paper_poisoning", "--trials", "2", "--batch", "2", "--n", "3",
        "--holdout-seeds", "0", "--knob", "rho", "--no-charts", "--no-progress",
        "--seed", str(2**32), "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output


# --- attack: resume -----------------------------------------------------------------------


def test_a_resumed_attack_search_equals_an_uninterrupted_one(tmp_path: Path) -> None:
    sc = load_scenario("paper_poisoning")
    space = AttackSpace()

    def rows(log: Path, trials: int) -> list[tuple[object, ...]]:
        settings = SearchSettings(trials=trials, n_search=4, n_holdout=4)
        search(sc, "wmt", 1.0, space, settings, log=log)
        logged = [json.loads(line) for line in log.read_text().splitlines()]
        return [(r["number"], json.dumps(r["params"], sort_keys=True), r["value"])
                for r in logged]

    whole = rows(tmp_path / "whole.jsonl", 8)
    rows(tmp_path / "resumed.jsonl", 3)
    assert rows(tmp_path / "resumed.jsonl", 8) == whole


def test_a_logged_point_outside_the_space_is_refused_by_its_line(tmp_path: Path) -> None:
    from wmtsim.studies.attack.log import TrialLogError
    from wmtsim.studies.attack.search import study_name

    sc = load_scenario("paper_poisoning")
    settings = SearchSettings(trials=2, n_search=4, n_holdout=4)
    name = study_name(sc, "wmt", 1.0, AttackSpace(), settings)
    log = tmp_path / "trials.jsonl"
    log.write_text(json.dumps({"study": name, "number": 0, "params": {"s0.kind": "bogus"},
                               "value": 0.5, "user_attrs": {}}) + "\n")
    with pytest.raises(TrialLogError, match=r"trials.jsonl: line 1: params"):
        search(sc, "wmt", 1.0, AttackSpace(), settings, log=log)


# --- conformance: a verdict that cannot be faked -----------------------------------------

ADAPTERS = '''
import os, sys
from wmtsim.conformance.adapter import ReferenceAdapter


class ExitZero(ReferenceAdapter):
    def apply(self, e):
        if e["op"] == "select":
            sys.exit(0)
        super().apply(e)


class OsExit(ReferenceAdapter):
    def apply(self, e):
        if e["op"] == "select":
            os._exit(0)
        super().apply(e)
'''


class AlmostOne(ReferenceAdapter):
    """Every miss count off by a fraction: int() once truncated it back."""

    shift = 0.99

    def nodes(self) -> dict[str, object]:
        return {k: (v.u, v.m + self.shift, v.state) for k, v in super().nodes().items()}


class Half(AlmostOne):
    shift = 0.5


class ExitThree(ReferenceAdapter):
    def apply(self, event: dict[str, object]) -> None:
        if event["op"] == "select":
            raise SystemExit(3)
        super().apply(event)


class Interrupt(ReferenceAdapter):
    def apply(self, event: dict[str, object]) -> None:
        if event["op"] == "select":
            raise KeyboardInterrupt
        super().apply(event)


class Hang(ReferenceAdapter):
    def nodes(self) -> dict[str, object]:
        threading.Event().wait()  # forever, unless the call's timeout interrupts it
        return {}


@pytest.mark.parametrize("impl, field", [(AlmostOne, "m"), (Half, "m"), (ExitThree, "raised"),
                                         (Interrupt, "raised"), (Hang, "timeout")])
def test_an_adapter_cannot_pass_by_exiting_or_by_near_values(
        impl: type, field: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    report = run_conformance(impl, examples=0, save=tmp_path / "s", echo=None, timeout=0.5)
    assert report.failure is not None
    assert report.failure.disagreement.field == field
    assert report.failure.lines and report.failure.saved is not None  # the minimal trace


class FirstCallsOnly(ReferenceAdapter):
    """Disagrees on its first three answers only (the runner once asserted that a shrunk
    trace still disagrees)."""

    answers = 0

    def nodes(self) -> dict[str, object]:
        FirstCallsOnly.answers += 1
        out = super().nodes()
        if FirstCallsOnly.answers <= 3:
            return {k: (v.u + 1.0, v.m, v.state) for k, v in out.items()}
        return dict(out)


def test_an_adapter_that_disagrees_only_at_first_is_reported(tmp_path: Path) -> None:
    report = run_conformance(FirstCallsOnly, examples=0, save=tmp_path / "s", echo=None)
    assert report.failure is not None and report.failure.disagreement.field == "u"
    assert report.failure.lines


SAVE_SPOILER = '''
from pathlib import Path
from wmtsim.conformance.adapter import ReferenceAdapter



class Off(ReferenceAdapter):
    def nodes(self):  # after --save was checked: a file where its folder goes
        Path("s").write_text("a file")
        return {k: (v.u + 1.0, v.m, v.state) for k, v in super().nodes().items()}
'''


def test_a_file_appearing_at_save_exits_2_naming_it(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "spoiler.py").write_text(SAVE_SPOILER)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["conformance", "run", "spoiler:Off", "--examples", "0",
                                      "--save", "s"])
    assert result.exit_code == 2, result.output
    assert "cannot write" in result.stderr and "/s'" in result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_the_check_writes_no_hypothesis_folder_here(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    report = run_conformance(ReferenceAdapter, corpus=False, examples=3, save=None, echo=None)
    assert report.passed and report.examples == 3
    assert list(tmp_path.iterdir()) == []


def test_an_adapter_that_ends_the_process_does_not_conform(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from wmtsim.conformance.isolated import run_isolated

    (tmp_path / "bad_adapters.py").write_text(ADAPTERS)
    monkeypatch.chdir(tmp_path)
    ended = run_isolated("bad_adapters:OsExit", examples=0, save=None, echo=None)
    assert ended.failure is not None and ended.failure.disagreement.field == "ended"
    exited = CliRunner().invoke(app, ["conformance", "run", "bad_adapters:ExitZero",
                                      "--examples", "0", "--save", str(tmp_path / "s")])
    assert exited.exit_code == 1 and "SystemExit" in exited.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad_adapters.py", "s"]


def test_the_pytest_plugin_fails_an_adapter_that_exits(tmp_path: Path) -> None:
    (tmp_path / "bad_adapters.py").write_text(ADAPTERS)
    for name in ("ExitZero",):  # (OsExit: the same child process, tested above)
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--wmt-impl",
             f"bad_adapters:{name}", "--wmt-examples", "0", "--wmt-save",
             str(tmp_path / "s"), str(tmp_path / "bad_adapters.py")],
            cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert done.returncode == 1, done.stdout + done.stderr
        assert "1 failed" in done.stdout
    assert not (tmp_path / ".hypothesis").exists()


# --- schedulers and leftovers --------------------------------------------------------------


def test_a_scheduler_that_never_answers_times_out(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    from wmtsim.studies.sweeps import run as sweep_run

    monkeypatch.setattr(sweep_run, "CONNECT_TIMEOUT", 0.5)
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)  # accepts (the kernel does), never answers
    port = server.getsockname()[1]
    result: list[object] = []
    run = threading.Thread(daemon=True, target=lambda: result.append(CliRunner().invoke(
        app, ["screen", "paper_poisoning", "--knob", "rho", "-r", "2", "--n", "3",
              "--no-charts", "--out", str(tmp_path / "o"), "--scheduler",
              f"tcp://127.0.0.1:{port}"])))
    run.start()
    run.join(120)  # a hang guard, not a speed test: the timeout is 0.5 s
    server.close()
    assert result, "screen still waits for a scheduler that never answers"
    outcome: Any = result[0]
    assert outcome.exit_code == 2 and "cannot connect within" in outcome.stderr
    assert not (tmp_path / "o").exists()


def test_no_traceback_after_the_scheduler_message() -> None:
    wmtsim = str(Path(sys.executable).with_name("wmtsim"))
    done = subprocess.run([wmtsim, "screen",
                           "paper_poisoning", "--knob", "rho", "-r", "2", "--n", "3",
                           "--no-charts", "--scheduler", "inproc://x"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and "--scheduler" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_killed_writers_temporary_file_goes_with_the_next_write(tmp_path: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"op": "query", "id": "q"}\n')
    left = tmp_path / f".g.jsonl.{dead.pid}.140000.tmp"
    left.write_text("half a result")
    result = CliRunner().invoke(app, ["expect", str(trace), "--out", str(tmp_path / "g.jsonl")])
    assert result.exit_code == 0, result.output
    assert not left.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.jsonl", "g.jsonl.manifest.json",
                                                         "t.jsonl"]
    assert os.path.exists(tmp_path / "g.jsonl")
