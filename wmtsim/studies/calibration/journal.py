"""A fit's journal: every evaluation of `wmtsim.studies.calibration.inference.fit`, one JSON
line each, so that an interrupted fit resumes as if it had never stopped (docs/calibration.md)."""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wmtsim.studies.scenarios.scenario import Scenario


@dataclass
class Evaluation:
    """One point of a fit: its knob values, its objective and every configuration's pooled
    cells (policy -> metric -> value)."""

    knobs: dict[str, float | int]
    objective: float
    pooled: dict[str, dict[str, float]]


class FitJournal:
    """The evaluations of one fit, one JSON line each, appended as they finish.

    Differential evolution with a fixed seed proposes the same points in the same order,
    and every point is simulated on the same seed (common random numbers), so a fit rerun
    over its journal replays what it already evaluated from the file and goes on where it
    stopped: a resumed fit is the uninterrupted one. The first line is the fit's
    fingerprint (knobs, ranges, seed, budget, scenario); a journal of another fit is
    refused. A last line cut by an interruption is dropped (that point is evaluated
    again); any other bad line is an error naming the file and line.
    """

    def __init__(self, path: Path, fingerprint: dict[str, Any]) -> None:
        self.path = path
        self.rows: list[dict[str, Any]] = []
        if path.is_file() and path.stat().st_size > 0:
            lines = path.read_text(encoding="utf-8").split("\n")
            complete = lines[:-1]  # the text after the last newline was never finished
            try:
                head = json.loads(complete[0]) if complete else None
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}: line 1: not a fit journal ({e.msg})") from None
            if head != {"fingerprint": fingerprint}:
                raise ValueError(f"{path}: line 1: the journal of another fit (its knobs, "
                                 "ranges, seed, budget or scenario differ); allowed: a journal "
                                 "this fit wrote, or a new --journal path")
            for i, line in enumerate(complete[1:], start=2):
                try:
                    row = json.loads(line)
                    ok = (isinstance(row, dict) and isinstance(row.get("knobs"), dict)
                          and (row.get("objective") is None
                               or isinstance(row.get("objective"), (int, float)))
                          and isinstance(row.get("pooled"), dict))
                except json.JSONDecodeError:
                    ok = False
                if not ok:
                    raise ValueError(f"{path}: line {i}: not an evaluation; allowed: "
                                     '{"knobs": {...}, "objective": x or null, '
                                     '"pooled": {...}}')
                self.rows.append(row)
            # Rewrite without a cut tail, so the next append starts on a fresh line.
            text = "\n".join(complete) + "\n"
            if text != "\n".join(lines):
                path.write_text(text, encoding="utf-8")
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({"fingerprint": fingerprint}) + "\n", encoding="utf-8")

    def append(self, evaluation: Evaluation) -> None:
        # NaN and infinity are not JSON: a cell without a denominator, an objective that
        # could not be computed, are written as null and read back as NaN / infinity.
        pooled = {p: {m: (v if math.isfinite(v) else None) for m, v in cells.items()}
                  for p, cells in evaluation.pooled.items()}
        obj = evaluation.objective if math.isfinite(evaluation.objective) else None
        line = json.dumps({"knobs": evaluation.knobs, "objective": obj, "pooled": pooled},
                          allow_nan=False)
        with self.path.open("a", encoding="utf-8") as f:
            f.write(line + "\n")
            f.flush()
            os.fsync(f.fileno())

    @staticmethod
    def evaluation(row: dict[str, Any]) -> Evaluation:
        """A journal row as the `Evaluation` it recorded (nulls back to NaN / infinity)."""
        pooled = {p: {m: (math.nan if v is None else float(v)) for m, v in cells.items()}
                  for p, cells in row["pooled"].items()}
        obj = math.inf if row["objective"] is None else float(row["objective"])
        return Evaluation(row["knobs"], obj, pooled)


def digest(value: Any) -> str:
    import hashlib

    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


def scenario_digest(scenario: Scenario) -> str:
    """A short hash of everything a scenario simulates (its knobs and seed)."""
    from dataclasses import asdict

    return digest({"world": asdict(scenario.world), "stubs": asdict(scenario.stubs),
                    "params": asdict(scenario.params), "seed": scenario.seed})
