"""Records are built by name: no call in the package, its scripts, benchmarks or study
passes a positional argument to `Policy`, `Sweep`, `Attribution`, `Comparison` or
`SimResult`, so a field added, removed or reordered cannot silently shift the others
(factories such as `_field(...)` are fine: the record they build is itself called with
keywords)."""

from __future__ import annotations

import ast

import pytest
from conftest import REPO

RECORDS = ("Policy", "Sweep", "Attribution", "Comparison", "SimResult")
FOLDERS = ("wmtsim", "scripts", "benchmarks", "why_study")


def _called_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _positional_calls(name: str) -> list[str]:
    found = []
    for path in sorted(p for folder in FOLDERS for p in (REPO / folder).rglob("*.py")):
        tree = ast.parse(path.read_text("utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and _called_name(node.func) == name
                    and node.args):
                found.append(f"{path.relative_to(REPO)}:{node.lineno}")
    return found


@pytest.mark.parametrize("name", RECORDS)
def test_records_are_built_by_keyword(name: str) -> None:
    calls = _positional_calls(name)
    assert not calls, f"{name}(...) with positional arguments at: {', '.join(calls)}"
