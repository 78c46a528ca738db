"""The `wmtsim replay`, `check` and `demo` commands."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from conftest import REPO
from typer.testing import CliRunner

from wmtsim.engine.trace.trace import REPLAY_COLUMNS, replay
from wmtsim.interfaces.cli.main import app, demo_trace_path

PAPER_A4 = REPO / "scenarios" / "traces" / "paper_a4.jsonl"
runner = CliRunner()


def _write(path: Path, events: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


def test_check_exit_0_on_paper_a4() -> None:
    result = runner.invoke(app, ["check", str(PAPER_A4)])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "OK: 31 expectations hold"


def test_check_exit_1_prints_first_divergence(tmp_path: Path) -> None:
    trace = _write(tmp_path / "t.jsonl", [
        {"op": "query"}, {"op": "action", "id": "a", "parent": "root"},
        {"op": "select", "selected": []},
        {"op": "expect", "id": "a", "u": 0.45, "m": 1},  # holds: 0.5 · 0.9
        {"op": "expect", "id": "a", "m": 2},  # first divergence
        {"op": "expect", "id": "a", "u": 0.1},
    ])
    result = runner.invoke(app, ["check", str(trace)])
    assert result.exit_code == 1
    # One line, naming the file: the failing line is not printed twice.
    assert result.stdout.strip() == (f"FAIL: {trace}: line 5, node 'a', field m: expected 2, "
                                     "got 1, tolerance exact")


def test_check_exit_1_names_u_tolerance(tmp_path: Path) -> None:
    trace = _write(tmp_path / "t.jsonl", [
        {"op": "query"}, {"op": "expect", "id": "root", "u": 0.99, "tol": 0.001}])
    result = runner.invoke(app, ["check", str(trace)])
    assert result.exit_code == 1
    assert ("line 2, node 'root', field u: expected 0.99, got 1.0, tolerance 0.001"
            in result.stdout)


def test_check_exit_2_on_bad_trace_and_missing_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"op": "task", "id": "t", "parent": "root"}\n')
    result = runner.invoke(app, ["check", str(bad)])
    assert result.exit_code == 2
    assert f"error: {bad}: line 1: the first line must be a query" in result.stderr
    missing = runner.invoke(app, ["check", str(tmp_path / "nope.jsonl")])
    assert missing.exit_code == 2
    assert "cannot read" in missing.stderr


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_replay_writes_output(tmp_path: Path, suffix: str) -> None:
    out = tmp_path / "nested" / f"replay{suffix}"
    result = runner.invoke(app, ["replay", str(PAPER_A4), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "9 select steps, 9 nodes, 31 expectations" in result.stdout
    assert "mirror_page" in result.stdout  # the final-tree table
    assert f"wrote 57 rows to {out}" in result.stdout
    expected = replay(PAPER_A4)
    if suffix == ".parquet":
        got = pl.read_parquet(out)
    else:
        got = pl.read_csv(out, schema=expected.schema)
    assert got.equals(expected)
    # the file and its sidecar manifest, no leftover temporary file
    assert sorted(p.name for p in out.parent.iterdir()) == [out.name, f"{out.name}.manifest.json"]


def test_replay_without_out_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["replay", str(PAPER_A4)])
    assert result.exit_code == 0
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["r.json", "r.txt", "r"])
def test_replay_rejects_other_extensions(tmp_path: Path, name: str) -> None:
    result = runner.invoke(app, ["replay", str(PAPER_A4), "--out", str(tmp_path / name)])
    assert result.exit_code == 2
    assert "allowed: .parquet, .csv" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_replay_notes_divergence_but_exits_0(tmp_path: Path) -> None:
    trace = _write(tmp_path / "t.jsonl", [
        {"op": "query"}, {"op": "select", "selected": []}, {"op": "expect", "id": "root", "m": 3}])
    result = runner.invoke(app, ["replay", str(trace)])
    assert result.exit_code == 0
    assert "an expectation does not hold: line 3:" in result.stdout


def test_replay_trace_without_select(tmp_path: Path) -> None:
    trace = _write(tmp_path / "t.jsonl", [{"op": "query"}])
    out = tmp_path / "r.csv"
    result = runner.invoke(app, ["replay", str(trace), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "0 select steps" in result.stdout
    assert pl.read_csv(out).columns == [c for c, _ in REPLAY_COLUMNS]


def test_demo_prints_decay_and_writes_parquet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                              ) -> None:
    monkeypatch.chdir(tmp_path)
    # Wide enough for the whole table (pytest-xdist workers set COLUMNS=80).
    result = runner.invoke(app, ["demo"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    out = tmp_path / "results" / "demo" / "paper_a4_replay.parquet"
    assert out.is_file()
    assert pl.read_parquet(out).equals(replay(PAPER_A4))
    text = result.stdout
    # The precision policy (three significant digits); the exact values are in the file.
    for value in ("0.270 (m=1)", "0.219 (m=2)", "0.159 (m=3)", "0.116 (m=4)",
                  "0.675 (m=1)", "0.547 (m=2)", "0.399 (m=3)", "obsolete",
                  "0.750 (m=0)", "OK: 31 hand-derived expectations hold"):
        assert value in text, value
    assert "results/demo/paper_a4_replay.parquet" in text


def test_demo_trace_found_in_repo_and_package() -> None:
    assert demo_trace_path().resolve() == PAPER_A4.resolve()
    packaged = REPO / "wmtsim" / "data" / "paper_a4.jsonl"
    # One file: the repository's copy is a link to the packaged one.
    assert PAPER_A4.resolve() == packaged.resolve()


def test_help_lists_commands_with_examples() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for word in ("replay", "check", "demo", "Examples"):
        assert word in result.stdout
    sub = runner.invoke(app, ["replay", "--help"])
    assert sub.exit_code == 0 and "--out" in sub.stdout


def test_console_script_entry_point(tmp_path: Path) -> None:
    """The installed `wmtsim` script runs outside the repository (package-data trace)."""
    proc = subprocess.run([sys.executable, "-m", "wmtsim.interfaces.cli.main", "check",
                           str(PAPER_A4)], capture_output=True, text=True, cwd=tmp_path,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "OK: 31 expectations hold"


def test_demo_trace_falls_back_to_package_data(monkeypatch: pytest.MonkeyPatch) -> None:
    import wmtsim.interfaces.cli.main as cli

    monkeypatch.setattr(cli, "__file__", "/nonexistent/wmtsim/interfaces/cli/main.py")
    path = cli.demo_trace_path()
    assert path.parent.name == "data" and path.name == "paper_a4.jsonl"
    assert path.read_text() == PAPER_A4.read_text()
