"""The conformance commands: expect, check --coverage / --all, conformance generate /
check / run; bad input exits 2 and writes nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import REPO
from typer.testing import CliRunner

from wmtsim.engine.trace.trace import check
from wmtsim.interfaces.cli.main import app

runner = CliRunner()
A4 = REPO / "scenarios" / "traces" / "paper_a4.jsonl"
TRACE = ['{"op": "query", "id": "q"}', '{"op": "action", "id": "a", "parent": "q"}',
         '{"op": "select", "selected": []}', '{"op": "select", "selected": []}']


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


def test_expect_writes_golden_lines_that_check_accepts(tmp_path: Path) -> None:
    src = _write(tmp_path / "t.jsonl", TRACE)
    out = tmp_path / "golden.jsonl"
    r = runner.invoke(app, ["expect", str(src), "--out", str(out)])
    assert r.exit_code == 0, r.output
    lines = out.read_text().splitlines()
    assert lines[:3] == TRACE[:3] and len(lines) == 4 + 2 * 2  # 2 nodes after 2 selects
    assert json.loads(lines[4]) == {"op": "expect", "id": "a", "u": 0.45, "m": 1,
                                    "state": "active", "tol": 1e-9}
    assert check(out) is None
    r = runner.invoke(app, ["expect", str(src), "-o", str(out), "--at", "end", "--tol", "0"])
    assert r.exit_code == 0 and len(out.read_text().splitlines()) == 6


def test_expect_refuses_bad_input_and_foreign_files(tmp_path: Path) -> None:
    src = _write(tmp_path / "t.jsonl", TRACE)
    foreign = tmp_path / "notes.txt"
    foreign.write_text("my notes\n")
    r = runner.invoke(app, ["expect", str(src), "--out", str(foreign)])
    assert r.exit_code == 2 and "not a result of `wmtsim expect`" in r.output
    assert foreign.read_text() == "my notes\n"
    bad = _write(tmp_path / "bad.jsonl", ['{"op": "task"}'])
    r = runner.invoke(app, ["expect", str(bad), "--out", str(tmp_path / "x.jsonl")])
    assert r.exit_code == 2 and "line 1" in r.output and not (tmp_path / "x.jsonl").exists()
    r = runner.invoke(app, ["expect", str(src), "--out", str(src)])
    assert r.exit_code == 2 and "input trace" in r.output
    r = runner.invoke(app, ["expect", str(src), "--out", str(tmp_path / "y.jsonl"),
                            "--at", "sometimes"])
    assert r.exit_code == 2 and "allowed" in r.output


def test_check_coverage_and_all(tmp_path: Path) -> None:
    r = runner.invoke(app, ["check", str(A4), "--coverage"])
    assert r.exit_code == 0, r.output
    assert "eq4.past_cap" in r.output.split("never exercised")[0]
    assert "eq7.suppressed" in r.output.split("never exercised")[1]
    wrong = _write(tmp_path / "w.jsonl", [*TRACE,
        '{"op": "expect", "id": "a", "u": 0.5, "m": 1}',
        '{"op": "expect", "id": "q", "state": "folded"}'])
    r = runner.invoke(app, ["check", str(wrong), "--all"])
    assert r.exit_code == 1
    assert "3 divergences in 3 rule groups" in r.output
    assert "eq4.at_cap: 0" not in r.output and "eq4.below_cap: 1" in r.output
    assert "line 5, node 'a', field u" in r.output and "line 5, node 'a', field m" in r.output


def test_conformance_generate_and_check(tmp_path: Path) -> None:
    out = tmp_path / "corpus"
    r = runner.invoke(app, ["conformance", "generate", "--out", str(out)])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["conformance", "generate", "--out", str(out)])  # replaces it
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["conformance", "check", str(out)])
    assert r.exit_code == 0 and "0 failing" in r.output, r.output
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "keep.txt").write_text("x")
    r = runner.invoke(app, ["conformance", "generate", "--out", str(foreign)])
    assert r.exit_code == 2 and (foreign / "keep.txt").exists()
    r = runner.invoke(app, ["conformance", "check", str(foreign)])
    assert r.exit_code == 2 and "not a conformance corpus" in r.output


def test_conformance_run_reports_a_mutant(tmp_path: Path) -> None:
    """The minimal failing trace is a one-file result with its sidecar manifest: a rerun
    replaces its own, a user's file at that path is refused before any work."""
    r = runner.invoke(app, ["conformance", "run", "nowhere:Nothing"])
    assert r.exit_code == 2 and "cannot be loaded" in r.output
    argv = [sys.executable, "-m", "wmtsim.interfaces.cli.main", "conformance", "run",
            "naive_wmt_mutants:UncappedDecay", "--examples", "0", "--save", str(tmp_path)]
    saved = tmp_path / "minimal_UncappedDecay.jsonl"
    for _ in (1, 2):  # a new file, then over its own
        proc = subprocess.run(argv, cwd=REPO / "examples", capture_output=True, text=True)
        assert proc.returncode == 1, proc.stderr
        assert "minimal trace" in proc.stdout and saved.exists()
        side = json.loads((tmp_path / f"{saved.name}.manifest.json").read_text())
        assert side["command"] == "conformance-run" and side["impl"] == "UncappedDecay"
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
            [saved.name, f"{saved.name}.manifest.json"])
    (tmp_path / f"{saved.name}.manifest.json").unlink()
    saved.write_text('{"op": "query", "id": "my own trace"}\n')
    proc = subprocess.run(argv, cwd=REPO / "examples", capture_output=True, text=True)
    assert proc.returncode == 2 and "--save" in proc.stderr, proc.stderr
    assert saved.read_text() == '{"op": "query", "id": "my own trace"}\n'


def test_pytest_plugin_runs_conformance(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text("")
    for impl, code in (("naive_wmt:NaiveWMT", 0), ("naive_wmt_mutants:UncappedDecay", 1)):
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
             f"--wmt-impl={impl}", "--wmt-examples=20", f"--wmt-save={tmp_path / 'min'}",
             str(tmp_path)], cwd=REPO / "examples", capture_output=True, text=True,
            env={**__import__("os").environ, "PYTHONPATH": str(REPO / "examples")})
        assert proc.returncode == code, proc.stdout + proc.stderr
        assert "wmt_conformance" in proc.stdout or code == 0
        if code:
            assert "minimal trace" in proc.stdout
