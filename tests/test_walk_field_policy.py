"""The walk "a new field policy" (scripts/walk_field_policy.py, docs/architecture.md): its
anchors still match today's files (quick: a refactor that moves them fails here, not in a
reviewer's rerun), and the walk itself passes in at most 4 hand-edited files (slow: it
compiles the copy's kernels, several minutes)."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _script():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("walk_field_policy", REPO / "scripts" /
                                                  "walk_field_policy.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_every_anchor_is_in_todays_files_once_and_the_edits_still_parse() -> None:
    walk = _script()
    for edit in walk.EDITS:
        text = (REPO / edit.path).read_text(encoding="utf-8")
        assert text.count(edit.anchor) == 1, (edit.path, edit.anchor)
    texts = walk.edited(REPO)  # every edit made, in memory
    assert len(texts) <= walk.TARGET
    for path, text in texts.items():
        ast.parse(text, filename=path)  # the edited file is still Python
        assert walk.POLICY in text, path


def test_a_missing_anchor_stops_the_walk() -> None:
    walk = _script()
    with pytest.raises(SystemExit, match="occurs 0 times"):
        walk.apply("nothing here", walk.Edit("x.py", "anchor", "text"))


@pytest.mark.slow  # copies the tree and compiles its kernels: ~2-3 min on two loaded cores
def test_the_walk_passes_in_at_most_four_files(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "scripts/walk_field_policy.py", "--dir",
                           str(tmp_path / "copy")], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert "walk: PASSED" in done.stdout
    count = int(done.stdout.split("files edited by hand: ")[1].split()[0])
    assert count <= 4
