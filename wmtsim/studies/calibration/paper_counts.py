"""Which counts can stand behind Table 4's printed ratios (docs/calibration.md).

The paper's Appendix A.3 gives the corpus: "100 scenarios contain 297 subtasks and 1,118
memory entries, including 709 benign and 409 intentionally poisoned memories", and
Appendix A.1 defines the metrics as ratios of counts (IP: injected poisoned memories that
remain eligible, over the injected ones; AF: retrievals of injected poisoned memories,
over their initial number; TSR: the proportion of evaluated tasks completed). A ratio
k / D printed to three decimals must lie within 0.0005 of the printed value for some
integer k. This module checks, for each cell of those metrics and each denominator the
paper's text supports, whether such a k exists. It is arithmetic on the paper's own
numbers: no simulation, no rule of ours.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# The denominators the paper's text gives (Appendix A.3), by metric.
DENOMINATORS: dict[str, tuple[tuple[str, int], ...]] = {
    "IP": (("409 injected poisoned memories", 409),),
    "AF": (("409 injected poisoned memories", 409),),
    "TSR": (("100 scenarios (tasks)", 100), ("297 subtasks", 297)),
}
HALF = 0.0005  # three printed decimals


@dataclass(frozen=True)
class CountCheck:
    """One cell against one denominator: the integers k with |k / D − value| ≤ 0.0005."""

    metric: str
    policy: str
    value: float
    denominator: str
    d: int
    k: tuple[int, ...]

    @property
    def possible(self) -> bool:
        return bool(self.k)

    def nearest(self) -> str:
        """The two ratios k / D around the printed value (what a count would print)."""
        lo = math.floor(self.value * self.d)
        return ", ".join(f"{k}/{self.d} = {k / self.d:.4f}" for k in (lo, lo + 1))


def counts_for(value: float, d: int) -> tuple[int, ...]:
    """Every integer k with |k / d − value| ≤ `HALF` (a small tolerance for the float)."""
    eps = 1e-12
    lo = math.ceil((value - HALF) * d - eps)
    hi = math.floor((value + HALF) * d + eps)
    return tuple(k for k in range(max(lo, 0), hi + 1) if abs(k / d - value) <= HALF + eps)


def check_table4(table: dict[str, dict[str, float]]) -> list[CountCheck]:
    """Every (metric, configuration, denominator) of `DENOMINATORS` for ``table``
    (``table[policy][metric]``, e.g. `wmtsim.studies.compare.report.paper_table4`)."""
    out = []
    for metric, denominators in DENOMINATORS.items():
        key = metric.lower()
        for policy, cells in table.items():
            if key not in cells:
                continue
            for label, d in denominators:
                value = float(cells[key])
                out.append(CountCheck(metric, policy, value, label, d, counts_for(value, d)))
    return out


def counts_markdown(checks: list[CountCheck], labels: dict[str, str]) -> str:
    """The checks as a Markdown table, then one sentence per metric."""
    lines = ["| metric | configuration | printed | denominator | a count k with k / D "
             "printing so? | nearest counts |", "|---|---|---|---|---|---|"]
    for c in checks:
        verdict = f"yes (k = {', '.join(map(str, c.k))})" if c.possible else "**no**"
        lines.append(f"| {c.metric} | {labels.get(c.policy, c.policy)} | {c.value:.3f} | "
                     f"{c.denominator} | {verdict} | {c.nearest()} |")
    lines.append("")
    for metric in DENOMINATORS:
        rows = [c for c in checks if c.metric == metric]
        for label, _ in DENOMINATORS[metric]:
            bad = [labels.get(c.policy, c.policy) for c in rows
                   if c.denominator == label and not c.possible]
            total = sum(1 for c in rows if c.denominator == label)
            lines.append(f"* {metric} over {label}: {total - len(bad)} of {total} cells can "
                         "be a count" + (f"; not {', '.join(bad)}." if bad else "."))
    return "\n".join(lines) + "\n"
