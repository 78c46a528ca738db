"""`make mutation` (scripts/mutation.py) names code by string and by function: when the code
moves, the script must fail here, not silently mutate nothing an hour into a run."""

from __future__ import annotations

import importlib.util
import shlex
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _script():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("mutation_script", REPO / "scripts" /
                                                  "mutation.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_every_hand_mutant_finds_its_line_once() -> None:
    m = _script()
    groups = {g.name for g in m.GROUPS}
    for label, file, old, new, group in m.HAND:
        text = (REPO / file).read_text(encoding="utf-8")
        assert text.count(old) == 1, f"{label}: {old!r} occurs {text.count(old)} times in {file}"
        assert old != new, label
        assert group in groups, f"{label}: no group {group!r}"


def test_every_group_names_existing_functions_and_tests() -> None:
    m = _script()
    for g in m.GROUPS:
        for file, names in g.targets.items():
            assert m.spans(REPO / file, names), g.name  # raises on a missing name
        paths = [a.split("::")[0] for a in shlex.split(g.tests)
                 if a.startswith("tests/")]
        assert paths, g.name
        missing = [a for a in paths if not (REPO / a).exists()]
        assert not missing, f"group {g.name}: {missing}"
