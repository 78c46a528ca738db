"""The terminal never hides the answer, and says what it is doing.

At 80 columns a comparison keeps Full WMT and every compared configuration (split into
parts, never cut); `compare --budget` prints tables, not Markdown; the help shows no
``<bool>`` after a flag and no docstring line breaks; mistyped names get a "did you
mean"; a bad ``--set`` names the command line; bars stay off a terminal; ``--csv``
writes every table as CSV; compile notices are calibrated on this machine.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from wmtsim.core.formatting import did_you_mean
from wmtsim.interfaces.cli.main import app

runner = CliRunner()


def _table_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line[:1] in "┏┃┡│└"]


def test_compare_at_80_columns_fits_and_shows_each_configuration_once(
        tmp_path: Path) -> None:
    """Issue 39: at 80 columns no line is wider, nothing is cut with "…", each
    configuration's name is whole and shown once (Full WMT was repeated in every part),
    an interval is never broken across lines, and the claims read one line each (their
    tests and details are in report.txt and checks.json)."""
    res = runner.invoke(app, ["compare", "paper_poisoning", "--n", "20", "--out",
                              str(tmp_path / "c")], env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "…" not in out and "left out" not in out
    main = out.split("Paired differences")[0]
    parts = re.findall(r"\(part \d of \d: ([^)]*)\)", " ".join(main.split()))
    assert len(parts) >= 2
    flat = ", ".join(parts)
    for label in ("Linear History", "A1 Unweighted Tree", "A2 No Memory Controller",
                  "A3 No Semantic Retrieval", "Full WMT"):
        assert flat.count(label) == 1, (label, flat)
    assert re.search(r"│ ASR ↓ +│ +[\d.]+ \[[\d.]+, [\d.]+\] │", main), main
    claims = out.split("Table 4 claims")[1].split("tests and details:")[0]
    rows = [line for line in claims.splitlines() if line.startswith("│")]
    assert len(rows) == 14, claims  # one line per claim
    assert (tmp_path / "c" / "report.txt").read_text(encoding="utf-8").count("TOST") >= 4
    assert len(out.splitlines()) < 160


def test_compare_at_200_columns_is_one_table(tmp_path: Path) -> None:
    res = runner.invoke(app, ["compare", "paper_poisoning", "--n", "20", "--out",
                              str(tmp_path / "c")], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert "part 1 of" not in res.stdout
    assert max(len(line) for line in _table_lines(res.stdout)) <= 200


def test_compare_budget_prints_tables_not_markdown(tmp_path: Path) -> None:
    res = runner.invoke(app, ["compare", "paper_poisoning", "--budget", "95,190", "--n", "10",
                              "-p", "wmt", "-p", "memgpt", "--csv", "--out",
                              str(tmp_path / "b")], env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    assert "<br>" not in res.stdout and "|---" not in res.stdout
    assert max(len(line) for line in res.stdout.splitlines()) <= 80
    assert "Δ = policy − wmt" in " ".join(res.stdout.split())
    frame = pl.read_csv(tmp_path / "b" / "curves.csv")
    assert frame.height == pl.read_parquet(tmp_path / "b" / "curves.parquet").height


def test_run_csv_writes_the_step_records(tmp_path: Path) -> None:
    res = runner.invoke(app, ["run", "paper_poisoning", "--n", "4", "-p", "wmt",
                              "--record-steps", "2", "--csv", "--no-progress", "--out",
                              str(tmp_path / "r")])
    assert res.exit_code == 0, res.output
    for name in ("trajectories", "summary", "steps"):
        csv = pl.read_csv(tmp_path / "r" / f"{name}.csv", infer_schema_length=0)
        assert csv.height == pl.read_parquet(tmp_path / "r" / f"{name}.parquet").height
    assert "compiling" not in res.stderr or "kernels" in res.stderr
    assert "━" not in res.stderr  # no bar off a terminal


def test_help_has_no_bool_and_no_hard_wrapped_docstrings() -> None:
    for command in ("compare", "run", "attribute", "claims", "replay"):
        res = runner.invoke(app, [command, "--help"], env={"COLUMNS": "200"})
        assert res.exit_code == 0
        assert "<bool>" not in res.stdout and "<str>" not in res.stdout
    text = runner.invoke(app, ["compare", "--help"], env={"COLUMNS": "200"}).stdout
    # The docstring's paragraph reflows to the terminal (its source lines are 88 wide).
    line = next(line for line in text.splitlines() if "Prints, per metric" in line)
    assert len(line.strip()) > 150, line
    for command in ("run", "compare", "attribute", "claims"):
        text = runner.invoke(app, [command, "--help"], env={"COLUMNS": "200"}).stdout
        assert "--no-progress" in text, command


def test_did_you_mean() -> None:
    assert did_you_mean("wmtt", ["wmt", "linear"]) == " (did you mean 'wmt'?)"
    assert did_you_mean("qqqq", ["wmt"]) == ""
    res = runner.invoke(app, ["run", "paper_poisonin", "--n", "2"])
    assert res.exit_code == 2 and "did you mean 'paper_poisoning'" in res.stderr
    res = runner.invoke(app, ["run", "paper_poisoning", "-p", "wmtt", "--n", "2"])
    assert res.exit_code == 2 and "did you mean 'wmt'" in res.stderr


@pytest.mark.parametrize(("item", "says"), [
    ("rh0=0.8", "--set rh0=0.8 (command line): rh0: unknown key (did you mean 'rho'?)"),
    ("rho=2", "--set rho=2 (command line): params.rho: 2 is invalid"),
    ("poison[*].p_supersede=3", "--set poison[*].p_supersede=3 (command line): poison[0]"),
])
def test_a_bad_set_names_the_command_line(item: str, says: str, tmp_path: Path) -> None:
    res = runner.invoke(app, ["run", "paper_poisoning", "--set", item, "--n", "2", "--out",
                              str(tmp_path / "x")])
    assert res.exit_code == 2
    first = " ".join(res.stderr.split())
    assert first.startswith("error: " + says), first
    assert not (tmp_path / "x").exists()


def test_the_compile_estimate_is_calibrated_on_this_machine(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from wmtsim.engine import warm

    monkeypatch.setattr(warm, "_times_file", lambda: tmp_path / "compile_times.json")
    monkeypatch.setattr(warm, "slowdown", lambda: 2.0)
    seconds, kernels, measured = warm.estimate("world")
    assert (seconds, kernels, measured) == (warm.GROUPS["world"][1] * 2.0, None, False)
    warm._remember("world", cpu=10.0, wall=25.0, kernels=42)
    record = json.loads((tmp_path / "compile_times.json").read_text())["world"]
    assert record["cpu"] == 10.0 and record["kernels"] == 42
    assert warm.estimate("world") == (20.0, 42, True)


def test_compiles_are_counted() -> None:
    import numba

    from wmtsim.engine.warm import counting_compiles

    heard: list[int] = []
    with counting_compiles(heard.append) as count:
        numba.njit(lambda x: x + 1)(1)  # a new function: compiled, never cached
    assert count[0] >= 1 and heard[-1] == count[0]


def test_the_slowdown_follows_the_load_as_measured_here(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from wmtsim.engine import warm

    monkeypatch.setattr(warm, "_times_file", lambda: tmp_path / "compile_times.json")
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(os, "getloadavg", lambda: (8.0, 0.0, 0.0))
    assert warm.slowdown() == 5.0  # nothing measured: a fair share, 1 + load per core
    # A compile measured here at 4 runnable jobs per core took 3x its CPU time: k = 0.5.
    (tmp_path / "compile_times.json").write_text(json.dumps({"world": {
        "cpu": 10.0, "wall": 30.0, "kernels": 5, "load_per_core": 4.0, "cores": 2}}))
    assert warm.slowdown() == 3.0
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    assert warm.slowdown() == 1.0
