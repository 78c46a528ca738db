"""The ranges over which `wmtsim screen` and `wmtsim tune` move WMT's parameters.

Each range says why it is plausible. The paper (arXiv 2608.20631) hand-sets every value
(paper §7, "Limitations": hand-specified initial values, update rules, coefficients and
thresholds; docs/model.md §2–3): the ranges span the values an implementer could defend, about
half to twice the paper's where the paper gives no bound, and respect the constraints of
the equations (Eq. 2: a success scores above a failure, so the two ranges do not overlap
and every combination is valid; Eq. 4: 0 < ρ ≤ 1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from wmtsim.studies.sweeps.spec import ParameterSpec

if TYPE_CHECKING:
    from wmtsim.studies.scenarios.scenario import Scenario


@dataclass(frozen=True)
class KnobRange:
    """A knob's range; ``relative`` ranges are factors of the scenario's own value."""

    key: str
    low: float
    high: float
    why: str
    integer: bool = False
    log: bool = False
    relative: bool = False

    def resolve(self, value: float, scenario: Scenario) -> float | int:
        """The knob's value on ``scenario`` for a value of the range (a factor for
        relative ranges)."""
        if not self.relative:
            return value
        section, name = self.key.split(".", 1)
        x = value * getattr(getattr(scenario, section), name)
        return max(1, round(x)) if self.integer else x

    def spec(self, scenario: Scenario) -> ParameterSpec:
        """The range as a sweep parameter on ``scenario`` (relative ranges resolved)."""
        low, high = self.low, self.high
        if self.relative:
            section, name = self.key.split(".", 1)
            base = getattr(getattr(scenario, section), name)
            low, high = low * base, high * base
        if self.integer:
            low, high = max(1, round(low)), max(2, round(high))
        return ParameterSpec(self.key, low=low, high=high, log=self.log,
                             integer=self.integer)


WMT_RANGES: tuple[KnobRange, ...] = (
    KnobRange("params.rho", 0.5, 0.99, "Eq. 4 decay per missed selection; paper 0.9"),
    KnobRange("params.M", 1, 8, "Eq. 4 cap on compounding misses; paper 3", integer=True),
    KnobRange("params.rho_g", 0.8, 1.0, "Eq. 4 global decay; paper 0.98, slower than ρ"),
    KnobRange("params.u_success", 0.55, 1.0, "Eq. 2 success score; paper 0.75, above u_failure"),
    KnobRange("params.u_failure", 0.0, 0.5, "Eq. 2 failure score; paper 0.3, below u_success"),
    KnobRange("params.u_init_root", 0.5, 1.0, "§2 initial score of the query; paper 1.0"),
    KnobRange("params.u_init_task", 0.5, 1.0, "§2 initial score of a task; paper 0.9"),
    KnobRange("params.u_init_action", 0.2, 0.8, "§2 score before an outcome; paper 0.5"),
    KnobRange("params.u_init_global", 0.2, 1.0, "§2 initial score of a global memory; paper 0.6"),
    KnobRange("params.u_init_summary", 0.4, 1.0, "§2 initial score of a summary; paper 0.8"),
    KnobRange("params.alpha", 0.0, 1.2, "Eq. 6 weight of the branch max; paper 0.6 (0 to 2x)"),
    KnobRange("params.beta", 0.0, 0.6, "Eq. 6 weight of the branch mean; paper 0.3 (0 to 2x)"),
    KnobRange("params.gamma", 0.0, 0.4, "Eq. 6 failure penalty; paper 0.2 (0 to 2x)"),
    KnobRange("params.delta", 0.0, 0.4, "Eq. 6 obsolescence penalty; paper 0.2 (0 to 2x)"),
    KnobRange("params.tau_obs", 0.0, 0.4, "Eq. 7 suppression threshold; paper 0.1 (0 to 4x)"),
    KnobRange("params.budget", 0.5, 2.0, "selector budget B: half to twice the scenario's",
              integer=True, log=True, relative=True),
    KnobRange("stubs.w_u", 0.0, 1.0, "weight of u in the selector's utility; default 0.5"),
    KnobRange("stubs.w_b", 0.0, 0.6, "weight of U_b in the selector's utility; default 0.3"),
)

RANGES_BY_KEY = {r.key: r for r in WMT_RANGES}


def ranges_for(keys: list[str] | None) -> tuple[KnobRange, ...]:
    """The ranges of ``keys`` (canonical or bare Params names; default: all)."""
    if not keys:
        return WMT_RANGES
    out = []
    for key in keys:
        canon = key if "." in key else f"params.{key}"
        if canon not in RANGES_BY_KEY:
            canon = f"stubs.{key}" if f"stubs.{key}" in RANGES_BY_KEY else canon
        if canon not in RANGES_BY_KEY:
            raise ValueError(f"--knob {key!r}: no declared range; allowed: "
                             + ", ".join(r.key for r in WMT_RANGES))
        out.append(RANGES_BY_KEY[canon])
    return tuple(out)
