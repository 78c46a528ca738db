"""The summarise-and-absorb rule is written once on each side: one engine kernel
(`wmtsim.engine.forest._absorb`) and one twin function (`AgentStubs.absorb`), called by
every policy that writes a summary (a fold, a promoted conversation summary, the field's
running, cluster, reflection and daily summaries). Engine == twin on every summary is
`tests/twins/test_engine_differential.py` (their `Facts` included)."""

from __future__ import annotations

import ast
from pathlib import Path

import wmtsim

PACKAGE = Path(wmtsim.__file__).resolve().parent


def leak_drawers(folder: str) -> set[str]:
    """The functions of ``folder`` that name the leak draw's purpose (`PURPOSE_LEAK`)."""
    found = set()
    for path in sorted((PACKAGE / folder).glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef):
                continue
            if any(isinstance(x, ast.Name) and x.id == "PURPOSE_LEAK" for x in ast.walk(node)):
                found.add(f"{path.stem}.{node.name}")
    return found


def test_the_leak_draw_is_made_in_one_function_per_side() -> None:
    assert leak_drawers("engine") == {"forest._absorb"}
    assert leak_drawers("twins") == {"stubs_reference.absorb"}
