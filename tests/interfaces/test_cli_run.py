"""`wmtsim run` / `wmtsim compare`: output files, manifest, bad scenarios."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
from typer.testing import CliRunner

from wmtsim.interfaces.cli.main import app

runner = CliRunner()


def test_run_writes_parquet_and_manifest(tmp_path: Path) -> None:
    out = tmp_path / "r"
    res = runner.invoke(app, ["run", "paper_poisoning", "-p", "wmt", "-p", "linear",
                              "--n", "20", "--seed", "3", "--out", str(out),
                              "--record-steps", "2", "--threads", "1"])
    assert res.exit_code == 0, res.output
    t = pl.read_parquet(out / "trajectories.parquet")
    assert t.height == 40 and set(t["policy"]) == {"wmt", "linear"}
    s = pl.read_parquet(out / "summary.parquet")
    assert {"policy", "metric", "mean", "low", "high"} <= set(s.columns)
    assert pl.read_parquet(out / "steps.parquet").height > 0
    m = json.loads((out / "manifest.json").read_text())
    assert m["seed"] == 3 and m["n"] == 20 and m["policies"] == ["wmt", "linear"]
    assert "wmtsim_version" in m and "total_seconds" in m["timings"]
    assert m["params"]["budget"] == m["scenario"]["params"]["budget"]
    assert not list(out.glob(".*tmp*"))


def test_compare_writes_tables(tmp_path: Path) -> None:
    out = tmp_path / "c"
    res = runner.invoke(app, ["compare", "paper_poisoning", "--n", "30", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "Table 4" in res.output and "paper" in res.output
    assert str(out) in res.output
    for f in ("summary.parquet", "paired.parquet", "checks.json", "report.txt",
              "manifest.json"):
        assert (out / f).is_file(), f
    checks = json.loads((out / "checks.json").read_text())
    assert any("Full WMT best" in c["claim"] for c in checks)


def test_compare_parity_prints_and_writes_the_parity_table(tmp_path: Path) -> None:
    out = tmp_path / "p"
    res = runner.invoke(app, ["compare", "paper_poisoning", "--parity", "--n", "10",
                              "--policy", "wmt", "--policy", "memgpt", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "B used" in res.output and "`memgpt`" in res.output
    assert (out / "parity.md").is_file() and (out / "parity.parquet").is_file()


def test_bad_scenario_exit_2_nothing_written(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[[poison]]\nkind = "nope"\n')
    out = tmp_path / "o"
    for cmd in (["run", str(bad), "--out", str(out)], ["compare", str(bad), "--out", str(out)]):
        res = runner.invoke(app, cmd)
        assert res.exit_code == 2
        assert "poison[0].kind" in res.output and "allowed" in res.output
        assert not out.exists()


def test_unknown_policy_exit_2(tmp_path: Path) -> None:
    res = runner.invoke(app, ["run", "paper_poisoning", "-p", "bogus", "--out",
                              str(tmp_path / "o")])
    assert res.exit_code == 2 and "bogus" in res.output
    assert not (tmp_path / "o").exists()


def test_run_refuses_more_threads_than_numba_has(tmp_path: Path) -> None:
    from numba import config
    from typer.testing import CliRunner

    from wmtsim.interfaces.cli.main import app

    too_many = str(int(config.NUMBA_NUM_THREADS) + 1)
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["run", "paper_poisoning", "--threads", too_many,
                                      "--out", str(out)])
    assert result.exit_code == 2
    assert f"--threads {too_many}: allowed: an integer in [1, " in result.output
    assert not out.exists()
