"""docs/architecture.md's map is the tree (scripts/architecture_map.py): every capability
folder names a door that exists, its commands and pages reach it, and every command and
page belongs to one; a change to the tree that the map does not follow fails."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

_spec = importlib.util.spec_from_file_location("architecture_map",
                                               REPO / "scripts" / "architecture_map.py")
assert _spec is not None and _spec.loader is not None
amap = importlib.util.module_from_spec(_spec)
sys.modules["architecture_map"] = amap
_spec.loader.exec_module(amap)


def test_the_generated_map_is_the_tree() -> None:
    done = subprocess.run([sys.executable, "scripts/architecture_map.py", "--check"],
                          cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_every_capability_is_a_folder_with_its_door() -> None:
    caps = amap.capabilities()
    folders = {c.folder for c in caps}
    for layer in ("studies", "engine", "interfaces"):
        for init in (REPO / "wmtsim" / layer).glob("*/__init__.py"):
            assert init.parent.relative_to(REPO).as_posix() + "/" in folders, init
    for c in caps:
        assert (REPO / (c.door.replace(".", "/") + ".py")).is_file(), c.door
    assert amap.problems(caps) == []


def test_studies_has_no_loose_modules() -> None:
    """One folder per capability: nothing in studies/ but its capability folders."""
    loose = [p.name for p in (REPO / "wmtsim" / "studies").glob("*.py")
             if p.name != "__init__.py"]
    assert loose == []


@pytest.mark.parametrize("mutation", ["door", "command", "page", "orphan_command"])
def test_a_declaration_that_drifts_is_caught(mutation: str,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    caps = amap.capabilities()
    i = next(k for k, c in enumerate(caps) if c.module == "wmtsim.studies.tune")
    c = caps[i]
    if mutation == "door":
        caps[i] = amap.Capability(**{**c.__dict__, "door": "wmtsim.studies.tune.gone"})
    elif mutation == "command":  # a command that exists but does not reach the folder
        caps[i] = amap.Capability(**{**c.__dict__, "names": ("replay",),
                                     "commands": ("wmtsim replay",)})
    elif mutation == "page":
        caps[i] = amap.Capability(**{**c.__dict__, "pages": ("Trace replay",)})
    else:  # `wmtsim tune` left out of every capability
        caps[i] = amap.Capability(**{**c.__dict__, "names": (), "commands": ()})
    assert amap.problems(caps) != []


def test_a_folder_without_a_door_is_caught(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A new studies/ folder whose __init__ names no door fails the map (on a copy of the
    package, so that no other test sees the probe)."""
    shutil.copytree(REPO / "wmtsim", tmp_path / "wmtsim",
                    ignore=shutil.ignore_patterns("__pycache__", "data"))
    probe = tmp_path / "wmtsim" / "studies" / "probe"
    probe.mkdir()
    (probe / "__init__.py").write_text('"""A capability that forgot its door."""\n')
    monkeypatch.setattr(amap, "ROOT", tmp_path)
    monkeypatch.setattr(amap, "PACKAGE", tmp_path / "wmtsim")
    bad = amap.problems(amap.capabilities())
    assert [b for b in bad if "probe" in b and "Door:" in b], bad
