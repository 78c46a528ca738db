"""Every help text is whole at 80 columns, names what ships, and every example in it runs
(issue 39: ten help texts ended in "…", `run --help` named 6 of 11 scenarios, and the
`screen` and `tune` examples named a scenario that does not exist)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest
import typer
from conftest import REPO
from typer.testing import CliRunner

from wmtsim.interfaces.cli.main import app

runner = CliRunner()


def _command_paths() -> list[list[str]]:
    """Every command and subcommand of ``wmtsim``, as the words that name it."""
    paths: list[list[str]] = [[]]

    def walk(group: Any, prefix: list[str]) -> None:
        for name, command in group.commands.items():
            paths.append([*prefix, name])
            if hasattr(command, "commands"):  # a group (typer's own click)
                walk(command, [*prefix, name])

    walk(typer.main.get_command(app), [])
    return paths


def _help(path: list[str], columns: int) -> str:
    res = runner.invoke(app, [*path, "--help"], env={"COLUMNS": str(columns)})
    assert res.exit_code == 0, (path, res.output)
    return res.stdout


def test_every_help_text_is_whole_at_80_columns() -> None:
    paths = _command_paths()
    assert len(paths) > 20
    for path in paths:
        text = _help(path, 80)
        assert "…" not in text, (path, [line for line in text.splitlines() if "…" in line])
        assert max(len(line) for line in text.splitlines()) <= 80, path


def test_run_help_names_every_shipped_scenario() -> None:
    from wmtsim.studies.scenarios.scenario import shipped_scenarios

    text = " ".join(_help(["run"], 1000).split())
    names = list(shipped_scenarios())
    assert len(names) >= 11
    for name in names:
        assert name in text, name


def examples() -> list[list[str]]:
    """Every example command of every help text, as its words (``wmtsim`` dropped)."""
    found: list[list[str]] = []
    for path in _command_paths():
        text = re.sub(r" *\\ *\n *", " ", _help(path, 1000))  # a shell's line continuation
        for line in text.splitlines():
            line = line.strip()
            if line.startswith("wmtsim "):
                # As a shell reads it; the root's list says "command  what it does".
                command = shlex.split(line.split("  ")[0])[1:]
                if command not in found:
                    found.append(command)
    return found


# What an example that would take minutes in the suite gets appended (click takes an
# option's last value): the same command at a small size.
SMALLER = {
    "attack": ["--trials", "2", "--n", "20", "--n-holdout", "20"],
    "calibrate": ["--n", "10", "--maxiter", "1"],
    "compare": ["--n", "30"],
    "dynamics": ["--n", "30"],
    "run": ["--n", "30"],
    "screen": ["--n", "10", "-r", "2"],
    "tune": ["--trials", "2", "--batch", "2", "--n", "10"],
    "attribute": ["--n", "30"],
    "claims": ["--n", "10", "--n-max", "20"],
}

MY_GRID = """name = "my_grid"
scenario = "paper_poisoning"
policies = ["linear", "a1_unweighted", "a2_no_controller", "a3_no_semantic", "wmt"]

[parameters.rho]
values = [0.8, 0.9]

[parameters.M]
values = [2, 3]

[design]
kind = "grid"
trajectories = 10
seed = 0
"""


@pytest.mark.slow
def test_every_help_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """From a folder of one's own holding the repository's scenarios/, sweeps/ and
    examples/ and the files the examples name (a trace, a sweep file), every example
    exits 0; the costly ones run with `SMALLER` appended, and `dashboard` stops where it
    would become the Streamlit server."""
    for folder in ("scenarios", "sweeps", "examples"):
        (tmp_path / folder).symlink_to(REPO / folder)
    trace = REPO / "scenarios" / "traces" / "paper_a4.jsonl"
    for name in ("trace.jsonl", "my_trace.jsonl", "my_agent_log.jsonl"):
        shutil.copy(trace, tmp_path / name)
    (tmp_path / "my_grid.toml").write_text(MY_GRID, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))  # `conformance run examples.naive_wmt:...`
    served: list[list[str]] = []

    def serve(exe: str, cmd: list[str], env: object) -> None:
        served.append(cmd)
        raise SystemExit(0)  # here the process would become the server

    commands = examples()
    assert ["screen", "decay_pressure", "--n", "200", "-r", "10"] in commands
    # A sweep's analysis needs the sweep: run the sweeps first.
    commands.sort(key=lambda c: c[0] != "sweep")
    for command in commands:
        args = command + SMALLER.get(command[0], [])
        with monkeypatch.context() as m:
            if command[0] == "dashboard":
                m.setattr(os, "execve", serve)
                m.setattr(os, "chdir", lambda path: None)
            res = runner.invoke(app, args, env={"COLUMNS": "100"})
        assert res.exit_code == 0, (args, res.output[-3000:])
    assert len(served) == 2 and all("streamlit" in cmd for cmd in served)


def test_schema_prints_and_writes_nothing_without_out(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """`wmtsim schema scenario` (docs/guide.md) prints the schema; the package's own copy
    is left alone (it once rewrote it)."""
    from wmtsim.studies.scenarios.schema import SCHEMA_FILE, schema_text

    before = SCHEMA_FILE.stat().st_mtime_ns
    monkeypatch.chdir(tmp_path)
    res = runner.invoke(app, ["schema", "scenario"])
    assert res.exit_code == 0, res.output
    assert res.stdout == schema_text()
    assert SCHEMA_FILE.stat().st_mtime_ns == before
    assert list(tmp_path.iterdir()) == []
    res = runner.invoke(app, ["schema", "scenario", "--out", "s.json"])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "s.json").read_text(encoding="utf-8") == schema_text()
    assert SCHEMA_FILE.stat().st_mtime_ns == before


def test_the_notebook_names_commands_the_install_has() -> None:
    """The quick-start notebook's first cell says how to run it with what `make setup`
    installs (it said `jupyter lab`, which is not installed)."""
    import json
    import re
    import sys

    notebook = json.loads((REPO / "notebooks" / "quickstart.ipynb").read_text("utf-8"))
    first = "".join(notebook["cells"][0]["source"])
    commands = re.findall(r"`((?:\.venv/bin/)?(?:jupyter|jupytext|python)[^`]*)`", first)
    assert commands, first
    bin_dir = Path(sys.executable).parent
    for command in commands:
        for part in command.split("|"):
            words = part.split()
            exe = Path(words[0]).name
            if exe == "jupyter":  # `jupyter lab` runs the program jupyter-lab
                exe = f"jupyter-{words[1]}"
            assert (bin_dir / exe).exists(), (command, exe)

