"""``wmtsim compare``'s two modes for the field on equal terms (docs/policies.md):
``--budget`` (every policy across budgets B, `wmtsim.studies.field_curves`) and
``--parity`` (the parity table, `wmtsim.studies.field_parity`). The command itself is
`wmtsim.interfaces.cli_scenarios.compare`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from wmtsim.interfaces.cli_common import _compile_first, _fail, _progress, _say, _writing

if TYPE_CHECKING:
    from wmtsim.studies.scenario import Scenario


def parity_mode(s: Scenario, policy: list[str] | None, n: int | None, seed: int | None,
                threads: int | None, out_dir: Path) -> None:
    """``compare --parity`` (`wmtsim.studies.field_parity`)."""
    from wmtsim.core.policies import POLICIES
    from wmtsim.studies.field_parity import parity_markdown, parity_table, write_parity

    pols = tuple(dict.fromkeys(policy)) if policy else tuple(POLICIES)
    _compile_first(pols)
    frame = parity_table(s, pols, n, seed, threads)
    _say(parity_markdown(frame))
    with _writing(out_dir) as work:
        _say(f"written to {out_dir}/: {', '.join(p.name for p in write_parity(frame, work))}")


def budget_curves_mode(s: Scenario, budget: str, policy: list[str] | None, n: int | None,
                       seed: int | None, threads: int | None, out_dir: Path) -> None:
    """``compare --budget``: every policy at each budget
    (`wmtsim.studies.field_curves.budget_curves`)."""
    from wmtsim.core.policies import POLICIES
    from wmtsim.studies.field_curves import (
        budget_curves,
        curves_markdown,
        parse_budgets,
        write_curves,
    )

    try:
        budgets = parse_budgets(budget)
    except ValueError as e:
        raise _fail(str(e)) from None
    pols = tuple(dict.fromkeys(policy)) if policy else tuple(POLICIES)
    with _progress() as bar:
        task = bar.add_task(f"{s.name}: budgets", total=len(budgets))
        frame = budget_curves(s, budgets, pols, n, seed, threads,
                              progress=lambda b: bar.advance(task))
    _say(curves_markdown(frame))
    with _writing(out_dir) as work:
        written = write_curves(frame, work, title=f"{s.name}: TSR vs prompt tokens over B")
    _say(f"curves written to {out_dir}/: {', '.join(p.name for p in written)}")
