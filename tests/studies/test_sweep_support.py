"""Shared small scenario and sweep files for the sweep tests (no tests here)."""

from __future__ import annotations

from pathlib import Path

SCENARIO = """\
name = "tiny"
description = "a small poisoned world for sweep tests"
n = 50
seed = 3
policies = ["linear", "wmt"]

[world]
n_subtasks = [2, 3]

[[poison]]
kind = "plausible"
"""

GRID = """\
scenario = "tiny.toml"
policies = ["wmt", "linear"]

[parameters.rho]
values = [0.6, 0.9]

[parameters.M]
values = [1, 3, 5]

[design]
kind = "grid"
trajectories = {n}
seed = 5
chunk = {chunk}
"""


def write_files(folder: Path, sweep: str = GRID, n: int = 30, chunk: int = 2,
                name: str = "grid.toml") -> Path:
    (folder / "tiny.toml").write_text(SCENARIO)
    path = folder / name
    path.write_text(sweep.format(n=n, chunk=chunk) if "{n}" in sweep else sweep)
    return path
