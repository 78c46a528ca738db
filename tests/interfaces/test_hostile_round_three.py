"""Hostile inputs, round three: tampered tune journals and attack trial logs,
FIFOs, devices and links where a command reads a file, conformance specs, options that
once ended in a traceback. Every case exits 2, names the file, line or option, and
leaves the folder exactly as it was (the harness of `test_hostile_inputs`, with FIFOs and
symbolic links among the files a case creates).

A FIFO case would hang forever where the command opens the FIFO for reading; a helper
thread keeps opening its other end after a while, so such code fails the case (no "FIFO"
in the message) instead of hanging the suite.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from test_hostile_inputs import ATTACK, TUNE, VALID_TRACE, _snapshot  # the same harness
from typer.testing import CliRunner

from wmtsim.interfaces.cli.main import app


class Fifo:
    """A named pipe at this path."""


@dataclass(frozen=True)
class Link:
    """A symbolic link at this path to ``target`` (``{d}``: the working folder)."""

    target: str


@dataclass(frozen=True)
class Case:
    argv: tuple[str, ...]
    expect: tuple[str, ...]
    files: dict[str, bytes | str | Fifo | Link] = field(default_factory=dict)


TUNE_RESULT = {"o/manifest.json": '{"command": "tune"}'}
ATTACK_RESULT = {"a/manifest.json": '{"command": "attack"}'}
CREATE = ('{"op_code":0,"worker_id":"w","study_name":"wmtsim-tune","directions":[2]}\n')
TRIAL = {"op_code": 4, "worker_id": "w", "study_id": 0, "datetime_start": None,
         "datetime_complete": None, "state": 1, "value": 0.5, "values": None,
         "distributions": {"params.rho": json.dumps(
             {"name": "FloatDistribution",
              "attributes": {"step": None, "low": 0.5, "high": 0.99, "log": False}})},
         "params": {"params.rho": 0.7}, "user_attrs": {}, "system_attrs": {},
         "intermediate_values": {}}
ROW = {"study": "s", "number": 0, "params": {"s0.kind": "action"}, "value": 0.5,
       "user_attrs": {"scripted": True}}
DEEP = "[" * 100_000 + "]" * 100_000


def journal(*lines: str) -> dict[str, bytes | str | Fifo | Link]:
    return {**TUNE_RESULT, "o/optuna.journal": CREATE + "".join(x + "\n" for x in lines)}


def tune_case(files: dict[str, bytes | str | Fifo | Link], *expect: str) -> Case:
    return Case(("tune", "paper_poisoning", *TUNE, "--objective", "tsr", "--out", "{d}/o"),
                expect, files)


def trial_log(body: str | Fifo | Link, *expect: str) -> Case:
    return Case(("attack", "paper_poisoning", *ATTACK, "--out", "{d}/a"), expect,
                {**ATTACK_RESULT, "a/search/trials.jsonl": body})


def row(**change: object) -> str:
    return json.dumps({**ROW, **change}) + "\n"


CASES: dict[str, Case] = {
    # --- tune journals, record by record -------------------------------------------
    "tune-journal-bare-trial": tune_case(journal('{"op_code": 4}'), "optuna.journal",
                                         "line 2", "worker_id"),
    "tune-journal-bare-trial-with-worker": tune_case(
        journal('{"op_code": 4, "worker_id": "w", "study_id": 0}'), "line 2", "state"),
    "tune-journal-op-unknown": tune_case(journal('{"op_code": 99, "worker_id": "w"}'),
                                         "line 2", "op_code 99", "allowed"),
    "tune-journal-op-string": tune_case(journal('{"op_code": "4", "worker_id": "w"}'),
                                        "line 2", "op_code '4'"),
    "tune-journal-deep": tune_case(journal(DEEP), "line 2", "nested too deeply"),
    "tune-journal-infinity": tune_case(journal(json.dumps({**TRIAL, "value": 1e999})),
                                       "line 2", "value inf"),
    "tune-journal-param-outside": tune_case(
        journal(json.dumps({**TRIAL, "params": {"params.rho": 7.0}})), "line 2",
        "params['params.rho']"),
    "tune-journal-middle-garbage": tune_case(journal("garbage", json.dumps(TRIAL)),
                                             "line 2", "not a JSON record"),
    "tune-journal-fifo": tune_case({**TUNE_RESULT, "o/optuna.journal": Fifo()},
                                   "optuna.journal", "FIFO"),
    "tune-journal-link-dev-zero": tune_case(
        {**TUNE_RESULT, "o/optuna.journal": Link("/dev/zero")}, "optuna.journal",
        "symbolic link"),
    "tune-journal-link-out": tune_case(
        {**TUNE_RESULT, "elsewhere.journal": CREATE, "o/optuna.journal":
         Link("{d}/elsewhere.journal")}, "optuna.journal", "symbolic link"),
    # --- attack trial logs, record by record ---------------------------------------
    "attack-log-infinity": trial_log(row(value=1e999), "trials.jsonl", "line 1",
                                     "value inf"),
    "attack-log-nan": trial_log(row().replace("0.5", "NaN"), "line 1", "value nan"),
    "attack-log-missing-keys": trial_log('{"study": "s"}\n', "line 1", "keys"),
    "attack-log-number-string": trial_log(row(number="0"), "line 1", "number"),
    "attack-log-params-nested": trial_log(row(params={"s0.kind": [1]}), "line 1", "params"),
    "attack-log-deep": trial_log('{"study": ' + DEEP + "}\n" + row(), "line 1",
                                 "nested too deeply"),
    "attack-log-fifo": trial_log(Fifo(), "trials.jsonl", "FIFO"),
    "attack-log-link-dev-zero": trial_log(Link("/dev/zero"), "trials.jsonl",
                                          "symbolic link"),
    # --- every file a command reads: no FIFO, no device --------------------------------
    "check-fifo": Case(("check", "{d}/t.jsonl"), ("t.jsonl", "FIFO"), {"t.jsonl": Fifo()}),
    "check-dev-zero": Case(("check", "/dev/zero"), ("/dev/zero", "a device")),
    "expect-fifo": Case(("expect", "{d}/t.jsonl", "--out", "{d}/o.jsonl"),
                        ("t.jsonl", "FIFO"), {"t.jsonl": Fifo()}),
    "conformance-check-fifo-trace": Case(
        ("conformance", "check", "{d}/c"), ("a.jsonl", "FIFO"),
        {"c/manifest.json": '{"command": "conformance", "traces": [{"file": "a.jsonl"}]}',
         "c/a.jsonl": Fifo()}),
    "conformance-check-fifo-manifest": Case(("conformance", "check", "{d}/c"),
                                            ("manifest.json", "FIFO"),
                                            {"c/manifest.json": Fifo()}),
    "conformance-check-trace-outside": Case(
        ("conformance", "check", "{d}/c"), ("traces[0].file", "'../t.jsonl'"),
        {"c/manifest.json": '{"command": "conformance", "traces": [{"file": "../t.jsonl"}]}',
         "t.jsonl": VALID_TRACE}),
    "sweep-file-fifo": Case(("sweep", "{d}/w.toml", "--out", "{d}/o"),
                            ("w.toml", "not a regular file"), {"w.toml": Fifo()}),
    "analyze-manifest-fifo": Case(("analyze", "{d}/sw", "--out", "{d}/an"),
                                  ("manifest.json", "FIFO"), {"sw/manifest.json": Fifo()}),
    "replay-out-fifo": Case(("replay", "{trace}", "--out", "{d}/o.csv"), ("o.csv",),
                            {"o.csv": Fifo()}),
    # --- options that ended in a traceback or wrote a non-finite number ---------------
    "claims-precision-inf": Case(("claims", "paper_poisoning", "--vary", "rho=0.5:0.9",
                                  "--precision", "inf", "--n-max", "40"),
                                 ("--precision", "inf", "finite")),
    "claims-precision-1e-300": Case(("claims", "paper_poisoning", "--vary", "rho=0.5:0.9",
                                     "--precision", "1e-300", "--n-max", "40"),
                                    ("--precision", "1e-300")),
    "expect-at-superscript": Case(("expect", "{trace}", "--out", "{d}/o.jsonl", "--at", "²"),
                                  ("--at", "²")),
    "conformance-run-file-path": Case(("conformance", "run", "./x.py:C"),
                                      ("'./x.py:C'", "module:Class")),
    "conformance-run-relative": Case(("conformance", "run", ".x:C"),
                                     ("'.x:C'", "module:Class")),
    "conformance-run-syntax-error": Case(("conformance", "run", "syn:C", "--examples", "0"),
                                         ("syn:C", "SyntaxError"), {"syn.py": "def (\n"}),
    "conformance-run-exits-at-import": Case(
        ("conformance", "run", "bye:C", "--examples", "0"), ("bye:C", "SystemExit"),
        {"bye.py": "import sys\nsys.exit(0)\n"}),
    "conformance-run-timeout-nan": Case(("conformance", "run", "examples.naive_wmt:NaiveWMT",
                                         "--timeout", "nan"), ("--timeout",)),
    "screen-scheduler-inproc": Case(("screen", "paper_poisoning", "--knob", "rho", "-r", "2",
                                     "--n", "3", "--no-charts", "--scheduler", "inproc://x"),
                                    ("--scheduler", "'inproc://x'", "cannot connect")),
    "tune-scheduler-inproc": Case(("tune", "paper_poisoning", *TUNE, "--out", "{d}/o",
                                   "--scheduler", "inproc://x"),
                                  ("--scheduler", "'inproc://x'", "cannot connect")),
    "attack-scheduler-inproc": Case(("attack", "paper_poisoning", *ATTACK, "--out", "{d}/a",
                                     "--scheduler", "inproc://x"),
                                    ("--scheduler", "'inproc://x'", "cannot connect")),
}


def _make(work: Path, files: dict[str, bytes | str | Fifo | Link]) -> list[Path]:
    fifos = []
    for rel, content in files.items():
        path = work / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Fifo):
            os.mkfifo(path)
            fifos.append(path)
        elif isinstance(content, Link):
            path.symlink_to(content.target.replace("{d}", str(work)))
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return fifos


def _unblock(fifos: list[Path], stop: threading.Event, after: float = 3.0) -> None:
    """Until ``stop``, open the writing end of each FIFO now and then, starting after
    ``after`` seconds: a reader blocked on it then reads nothing and goes on (opening
    fails at once when no one reads)."""
    def run() -> None:
        stop.wait(after)
        while not stop.is_set():
            for path in fifos:
                try:
                    os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
                except OSError:
                    pass
            stop.wait(0.2)

    threading.Thread(target=run, daemon=True).start()


@pytest.mark.parametrize("name", list(CASES))
def test_hostile_input_exits_2_names_the_problem_and_writes_nothing(
        name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    check_case(CASES[name], tmp_path, monkeypatch)


def check_case(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run ``case``: exit 2, every expected part in the message, nothing written."""
    work = tmp_path / "work"
    work.mkdir()
    fifos = _make(work, case.files)
    (tmp_path / "valid.jsonl").write_text(VALID_TRACE)
    monkeypatch.chdir(work)
    before = _snapshot(tmp_path)
    argv = [a.replace("{d}", str(work)).replace("{trace}", str(tmp_path / "valid.jsonl"))
            for a in case.argv]
    stop = threading.Event()
    _unblock(fifos, stop)
    try:
        result = CliRunner().invoke(app, argv)
    finally:
        stop.set()
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"traceback: {result.exception!r}")
    assert result.exit_code == 2, result.output
    text = " ".join(result.stderr.split())
    for part in case.expect:
        assert part in text, f"{part!r} not in: {result.stderr}"
    assert _snapshot(tmp_path) == before, "something was written"
