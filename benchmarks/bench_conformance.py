"""The conformance kit's goals: the shipped corpus covers 100% of the named
rules and checks in < 10 s; every seeded mutation of the example implementation is caught
and shrunk to <= 12 lines. A measurement, not a test: nothing here asserts a time."""

from __future__ import annotations

import sys
import time
from typing import Any

from .machine import REPO

GOAL_CORPUS_SECONDS = 10.0
GOAL_MINIMAL_LINES = 12


def bench_conformance(sz: Any) -> dict[str, Any]:
    """`wmtsim conformance check` in-process on the shipped corpus, then every mutant."""
    from wmtsim.conformance.corpus import corpus_files
    from wmtsim.conformance.runner import run_conformance
    from wmtsim.engine.trace.rules import RULE_NAMES
    from wmtsim.engine.trace.trace import stream

    stream(corpus_files()[0], rules=True)  # load the kernels outside the timing
    start = time.perf_counter()
    fired: set[str] = set()
    failing = 0
    for path in corpus_files():
        result = stream(path, rules=True)
        fired |= {r for r, n in (result.coverage or {}).items() if n}
        failing += len(result.divergences)
    seconds = time.perf_counter() - start
    covered = len(fired & set(RULE_NAMES)) / len(RULE_NAMES)

    sys.path.insert(0, str(REPO / "examples"))
    from naive_wmt_mutants import MUTANTS

    mutants = MUTANTS if sz.cold_start else MUTANTS[:2]  # the quick run: two of them
    shrunk: dict[str, int | None] = {}
    for mutant in mutants:
        report = run_conformance(mutant, examples=0, save=None, echo=None)
        shrunk[mutant.__name__] = len(report.failure.lines) if report.failure else None
    caught = all(n is not None for n in shrunk.values())
    longest = max((n for n in shrunk.values() if n is not None), default=0)
    rows = [
        ["conformance corpus: named rules exercised", f"{covered:.0%} of {len(RULE_NAMES)}",
         "100%", "met" if covered == 1.0 else "missed"],
        ["conformance corpus: check (replay with rules)", f"{seconds:.2f} s "
         f"({failing} failing)", f"< {GOAL_CORPUS_SECONDS:g} s",
         "met" if seconds < GOAL_CORPUS_SECONDS and not failing else "missed"],
        [f"seeded mutants caught, longest minimal trace ({len(shrunk)} mutants)",
         f"{sum(n is not None for n in shrunk.values())} caught, {longest} lines",
         f"all, <= {GOAL_MINIMAL_LINES} lines",
         "met" if caught and longest <= GOAL_MINIMAL_LINES else "missed"],
    ]
    return {"seconds": seconds, "coverage": covered, "rules": len(RULE_NAMES),
            "traces": len(corpus_files()), "minimal_lines": shrunk, "rows": rows}
