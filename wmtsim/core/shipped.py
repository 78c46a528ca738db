"""The examples shipped inside the package (wmtsim/data/), addressable by name from any
folder, as scenarios are (`wmtsim.studies.scenarios.scenario.shipped_scenarios`): the traces
(``paper_a4``, or its repository path ``scenarios/traces/paper_a4.jsonl``), the sweeps
(``rho_m_grid``, or ``sweeps/rho_m_grid.toml``) and the example adapter
(``examples.naive_wmt:NaiveWMT``). A file that exists is always read as given: a name
is looked up only when no such file is there.

Each shipped file is a copy of the repository's
(tests/interfaces/test_first_hour_round_four.py keeps them identical)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple


class Kind(NamedTuple):
    folder: str  # under wmtsim/data/ ("" : data/ itself)
    suffix: str
    repo_folder: str  # where the repository keeps the original


TRACES = Kind("", ".jsonl", "scenarios/traces")
SWEEPS = Kind("sweeps", ".toml", "sweeps")
EXAMPLES = Kind("examples", ".py", "examples")


def data_folder(kind: Kind) -> Path:
    """The package's folder of ``kind``."""
    from importlib import resources  # not imported by a command given a path

    return Path(str(resources.files("wmtsim") / "data")) / kind.folder


def shipped(kind: Kind) -> dict[str, Path]:
    """The shipped files of ``kind`` by name (the file name without its suffix)."""
    folder = data_folder(kind)
    if not folder.is_dir():
        return {}
    return {p.name[: -len(kind.suffix)]: p for p in sorted(folder.iterdir())
            if p.name.endswith(kind.suffix) and p.is_file()}


def resolve(path_or_name: str | os.PathLike[str], kind: Kind) -> Path:
    """``path_or_name`` when such a file (or folder) exists; else the shipped file it
    names: ``name``, ``name`` + suffix, or its repository path (``sweeps/<name>.toml``);
    else ``path_or_name`` unchanged, for the caller to report as missing."""
    p = Path(path_or_name)
    if p.exists():
        return p
    name = p.name[: -len(kind.suffix)] if p.name.endswith(kind.suffix) else p.name
    parent = p.parent.as_posix()
    by_name = parent == "." and str(path_or_name) in (name, name + kind.suffix)
    by_repo_path = p.name == name + kind.suffix and parent.endswith(kind.repo_folder)
    if by_name or by_repo_path:
        return shipped(kind).get(name, p)
    return p


def names(kind: Kind) -> str:
    """The shipped names of ``kind``, for a message ("allowed: ...")."""
    return ", ".join(shipped(kind)) or "none"
