"""What the CLI prints: tables that fit the terminal, errors that name their file, a
summary from `analyze`, counts with the right plural, and the missing dashboard extra."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from rich.table import Table
from typer.testing import CliRunner

from wmtsim.core.formatting import interval, num, plural
from wmtsim.interfaces.cli import main as cli
from wmtsim.interfaces.cli.main import app

runner = CliRunner()


def _widest_line(text: str) -> int:
    return max(len(line) for line in text.splitlines())


# ---------------------------------------------------------------------------------------
# The precision policy


@pytest.mark.parametrize(("args", "text"), [
    ((0.09888, 0.09068, 0.108), "0.0989 [0.0907, 0.1080]"),  # bounds at the mean's digits
    ((5528.0, 5311.0, 5741.0), "5,530 [5,310, 5,740]"),
    ((0.31, 0.22, 0.4), "0.310 [0.220, 0.400]"),
    ((0.09996, 0.09, 0.11), "0.100 [0.090, 0.110]"),  # rounding moves the magnitude
    ((1.0, 1.0, 1.0), "1.00"),  # a single point: no interval
    ((0.5, None, None), "0.500"),
    ((float("nan"), float("nan"), float("nan")), "–"),
    ((None, None, None), "–"),
])
def test_interval(args: tuple[float | None, ...], text: str) -> None:
    assert interval(*args) == text


def test_signed_interval_and_numbers() -> None:
    assert interval(-0.25, -0.34, -0.17, sign=True) == "-0.250 [-0.340, -0.170]"
    assert interval(0.0286, 0.0052, 0.0525, sign=True) == "+0.0286 [+0.0052, +0.0525]"
    assert num(0.0, sign=True) == "0"
    assert num(-0.00001) == "-1.00e-05"
    assert num(float("inf")) == "–"
    assert (plural(0, "point"), plural(1, "point"), plural(2, "point")) == (
        "0 points", "1 point", "2 points")
    assert plural(1, "configuration") == "1 configuration"


# ---------------------------------------------------------------------------------------
# Tables fit the terminal


def _wide_table(columns: int) -> Table:
    t = Table(title="wide")
    t.add_column("metric")
    for k in range(columns):
        t.add_column(f"configuration number {k}")
    t.add_row("asr", *[f"0.{k}00 [0.{k}01, 0.{k}02]" for k in range(columns)])
    return t


def test_a_table_that_fits_is_printed_whole(capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    cli._print_table(_wide_table(2))
    out = capsys.readouterr().out
    assert "configuration number 1" in out and "left out" not in out
    assert _widest_line(out) <= 200


def test_a_wide_table_wraps_to_the_terminal(capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "90")
    cli._print_table(_wide_table(4))
    out = capsys.readouterr().out
    assert _widest_line(out) <= 90
    assert "left out" not in out  # wrapped cells still show every column
    assert out.count("[0.3") == 1  # the last configuration's cell is there


def test_a_too_wide_table_is_split_not_cut(capsys: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Wrapped cells still too wide: the table comes in parts, each with the row labels;
    every column is printed once, none is left out."""
    monkeypatch.setenv("COLUMNS", "60")
    cli._print_table(_wide_table(8), full="out/report.txt")
    out = capsys.readouterr().out
    assert _widest_line(out) <= 60
    assert "left out" not in out
    for k in range(8):
        assert out.count(f"[0.{k}01,") == 1, k
    parts = out.count("asr")
    assert parts > 1 and f"part {parts} of {parts}" in out
    assert "the whole table is in out/report.txt" in " ".join(out.split())


def test_an_interval_is_never_broken_and_the_parts_fit(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 39: at 80 columns a summary's interval stays on one line (its column is held
    at its widest interval; the row labels wrap instead) and no part overflows; the
    intervals were broken across lines ("0.930 [0.911," / "0.947]")."""
    import polars as pl

    from wmtsim.core.formatting import interval
    from wmtsim.studies.compare.report import render_summary

    policies = ("linear", "a1_unweighted", "a2_no_controller", "a3_no_semantic", "wmt")
    metrics = ("asr", "prr", "br", "tsr", "avg_prompt_tokens")
    rows = [{"policy": p, "metric": m, "mean": 0.5 + i / 100, "low": 0.4 + i / 100,
             "high": 0.6 + i / 100, "n": 200, "paper": 0.123}
            for i, (p, m) in enumerate((p, m) for p in policies for m in metrics)]
    monkeypatch.setenv("COLUMNS", "80")
    cli._print_table(render_summary(pl.DataFrame(rows), policies, metrics, paper=True),
                     pinned=())
    out = capsys.readouterr().out
    assert _widest_line(out) <= 80
    for r in rows:
        text = interval(r["mean"], r["low"], r["high"])
        assert out.count(text) == 1, text  # on one line, once


def test_compare_fits_a_120_column_terminal(tmp_path: Path) -> None:
    res = runner.invoke(app, ["compare", "paper_poisoning", "--n", "20", "--out",
                              str(tmp_path / "c")], env={"COLUMNS": "120"})
    assert res.exit_code == 0, res.output
    tables = [line for line in res.stdout.splitlines() if line[:1] in "┏┃┡│└"]
    assert tables and max(len(line) for line in tables) <= 120
    assert "NaN" not in res.stdout
    # The file keeps the whole table.
    assert "Full WMT" in (tmp_path / "c" / "report.txt").read_text(encoding="utf-8")


# ---------------------------------------------------------------------------------------
# Errors name their file


def test_a_bad_trace_error_names_the_file(tmp_path: Path) -> None:
    trace = tmp_path / "typo.jsonl"
    trace.write_text('{"op": "query"}\n{"op": "taks", "id": "t", "parent": "root"}\n',
                     encoding="utf-8")
    for command in ("check", "replay"):
        res = runner.invoke(app, [command, str(trace)])
        assert res.exit_code == 2
        assert res.stderr.startswith(f"error: {trace}: line 2: unknown op 'taks'"), res.stderr


def test_analyze_error_names_the_folder(tmp_path: Path) -> None:
    res = runner.invoke(app, ["analyze", str(tmp_path)])
    assert res.exit_code == 2
    assert str(tmp_path) in res.stderr


# ---------------------------------------------------------------------------------------
# analyze says what it found


def test_analyze_prints_a_summary(tmp_path: Path) -> None:
    from wmtsim.studies.sweeps.sweep import load_sweep, run_sweep

    (tmp_path / "s.toml").write_text(
        'name = "tiny"\nscenario = "paper_poisoning"\npolicies = ["wmt"]\n'
        '[parameters]\n"params.rho" = { values = [0.8, 0.9] }\n'
        '"params.M" = { values = [2, 3] }\n'
        '[design]\nkind = "grid"\ntrajectories = 10\nseed = 0\n', encoding="utf-8")
    run_sweep(load_sweep(tmp_path / "s.toml"), tmp_path / "out", progress=False, threads=1)
    res = runner.invoke(app, ["analyze", str(tmp_path / "out"), "--no-charts"])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0].startswith(f"{tmp_path / 'out'}: grid design over 2 parameters "
                               "(params.rho, params.M); 4 points computed, 1 configuration")
    import polars as pl

    front = pl.read_csv(tmp_path / "out" / "analysis" / "pareto.csv")
    assert ("Pareto front (tsr up, prompt tokens down, every configuration): "
            f"{plural(front.height, 'distinct point')}") in res.stdout
    assert "most robust setting" in res.stdout
    assert lines[-1].startswith("wrote 4 tables")


# ---------------------------------------------------------------------------------------
# The dashboard extra


def test_dashboard_without_streamlit_names_the_extra(monkeypatch: pytest.MonkeyPatch
                                                     ) -> None:
    monkeypatch.setitem(sys.modules, "streamlit", None)  # as if it were not installed
    res = runner.invoke(app, ["dashboard", "--port", "1"])
    assert res.exit_code == 2
    assert "pip install 'wmtsim[dashboard]'" in res.stderr
    assert "No module named" not in res.output

