"""Mechanism families: sets of the rule knobs of docs/model_decisions.md that are compared
as whole models of the paper (docs/calibration.md, "Which mechanisms").

A family fixes every mechanism rule the paper's text speaks to, and names the one free
knob its rules bring (the paper-text families' selector threshold; the previous family's
summary leak). Both are fitted to Table 4 with the same budget and judged on what neither
was fitted to: held-out rows, the orderings of Tables 1–4 and the paper's statements
(`scripts/calibrate_table4.py`, `scripts/mechanism_audit.py`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wmtsim.studies.calibration.calibrate import Knob


@dataclass(frozen=True)
class Family:
    name: str
    label: str
    rules: dict[str, Any]  # knob key -> value: the family's mechanism rules
    own_knob: Knob  # the free knob its rules bring, fitted beside the common ones

    def apply(self, scenario: Any) -> Any:
        """``scenario`` with this family's rules (a `Scenario`)."""
        return scenario.with_overrides(self.rules)


FAMILIES: dict[str, Family] = {f.name: f for f in (
    # The paper's text, rule by rule (each quoted in docs/model_decisions.md): A3's
    # whole-branch retrieval reaches inside folded branches, and IP counts what it
    # reaches; the selector's call reads every candidate it judges.
    Family("paper", "paper-text rules",
           {"stubs.selector_rule": "choose", "stubs.branch_retrieval": "whole",
            "stubs.branch_folded": "nodes", "stubs.selector_read_fraction": 1.0,
            "stubs.persuade_scope": "any", "stubs.ip_rule": "own", "stubs.p_leak": 0.0},
           Knob("stubs.select_threshold", -0.2, 1.2)),
    # The first paper-text rules: the same, except that A3 sees a folded branch only as
    # its summary and the selector reads a compact index (a tenth of each candidate).
    Family("paper1", "first paper-text rules",
           {"stubs.selector_rule": "choose", "stubs.branch_retrieval": "whole",
            "stubs.branch_folded": "summary", "stubs.selector_read_fraction": 0.1,
            "stubs.persuade_scope": "any", "stubs.ip_rule": "own", "stubs.p_leak": 0.0},
           Knob("stubs.select_threshold", -0.2, 1.2)),
    # The rules shipped before those: a selector that fills B, A3 bounded by B, persuasion
    # only by the step's own subtask's poison, leaks into summaries and IP counting them.
    Family("v1", "previous rules",
           {"stubs.selector_rule": "fill", "stubs.branch_retrieval": "fit",
            "stubs.branch_folded": "summary", "stubs.selector_read_fraction": 0.1,
            "stubs.persuade_scope": "topic", "stubs.ip_rule": "carried"},
           Knob("stubs.p_leak", 0.0, 1.0)),
)}
DEFAULT_FAMILY = "paper"
