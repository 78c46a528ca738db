"""``wmtsim dynamics``: Parquet, charts and a manifest through the output layer; bad
input exits 2 and writes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
from typer.testing import CliRunner

from wmtsim.interfaces.cli.main import app


def test_dynamics_writes_tables_charts_and_a_manifest(tmp_path: Path) -> None:
    out = tmp_path / "dyn"
    r = CliRunner().invoke(app, ["dynamics", "paper_poisoning", "-p", "a2_no_controller",
                                 "-p", "wmt", "--n", "200", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "median poison lifetime" in r.output
    for name in ("steps", "since", "survival", "lifetimes", "fates", "spread"):
        frame = pl.read_parquet(out / f"{name}.parquet")
        assert set(frame["policy"]) == {"a2_no_controller", "wmt"}, name
    for chart in ("survival", "fates", "contamination"):
        assert (out / f"{chart}.png").stat().st_size > 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["command"] == "dynamics" and manifest["n"] == 200
    assert "fates.parquet" in manifest["files"]
    # The same command again replaces its own result.
    again = CliRunner().invoke(app, ["dynamics", "paper_poisoning", "-p", "wmt", "--n",
                                     "50", "--out", str(out), "--no-charts"])
    assert again.exit_code == 0, again.output
    assert not (out / "fates.png").exists()


def test_a_world_without_poison_gives_empty_charts(tmp_path: Path) -> None:
    """gaia_like injects nothing: the survival and fate tables are empty and their charts
    are drawn empty (it raised inside Altair: a field's type guessed from no rows)."""
    out = tmp_path / "dyn"
    r = CliRunner().invoke(app, ["dynamics", "gaia_like", "-p", "wmt", "--n", "20",
                                 "--out", str(out)])
    assert r.exit_code == 0, r.output
    for chart in ("survival", "fates", "contamination"):
        assert (out / f"{chart}.png").stat().st_size > 0


def test_bad_input_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "dyn"
    for args in (["paper_poisoning", "-p", "bogus"], ["no_such_scenario"],
                 ["paper_poisoning", "--n", "0"]):
        r = CliRunner().invoke(app, ["dynamics", *args, "--out", str(out)])
        assert r.exit_code == 2, (args, r.output)
        assert "Traceback" not in r.output
    assert not out.exists()
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    r = CliRunner().invoke(app, ["dynamics", "paper_poisoning", "--n", "10", "--out",
                                 str(mine)])
    assert r.exit_code == 2 and (mine / "notes.txt").read_text() == "mine"
