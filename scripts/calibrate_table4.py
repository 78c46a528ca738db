"""Fit paper_poisoning to Table 4 as inference against a noisy target, hold each row out in
turn, and measure how robust each claim is (`wmtsim.studies.inference`).

    python scripts/calibrate_table4.py fit         # fit all five rows, write the scenario
    python scripts/calibrate_table4.py held-out    # fit on four, predict the fifth, x5
    python scripts/calibrate_table4.py robustness  # claims over near-optimal fits + flips
    python scripts/calibrate_table4.py docs        # rewrite docs/calibration.md, README

Each stage writes ``results/calibration/<stage>.json`` (the docs stage reads them), so a
stage can be rerun alone. Budgets are options (``--replicates``, ``--maxiter``,
``--popsize``); the values used for the shipped numbers are recorded in the JSON and in
the docs.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from wmtsim.core.policies import POLICIES, TABLE4_POLICIES
from wmtsim.studies.calibrate import Knob, _current
from wmtsim.studies.inference import (
    FIT_METRICS,
    fit,
    held_out,
    inside_share,
    robustness,
)
from wmtsim.studies.report import paper_table4
from wmtsim.studies.scenario import load_scenario, update_toml_text

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "results" / "calibration"
SCENARIO = ROOT / "wmtsim" / "data" / "scenarios" / "paper_poisoning.toml"
sys.path.insert(0, str(ROOT / "scripts"))

# The free knobs: the selector, persuasion, leak, success-under-compromise (p_misled) and
# the final-answer rule, the selector's budget and the injections' look and detection.
KNOBS = (
    Knob("stubs.selector_noise", 0.0, 0.6),
    Knob("stubs.poison_boost", -0.3, 0.3),
    Knob("stubs.p_persuade", 0.3, 1.0),
    Knob("stubs.p_persuade_vs_evidence", 0.0, 1.0),
    Knob("stubs.p_misled", 0.0, 1.0),
    Knob("world.p_recover", 0.0, 1.0),
    Knob("world.final_share", 0.25, 1.0),
    Knob("stubs.p_use_max", 0.5, 1.0),
    Knob("stubs.p_leak", 0.0, 1.0),
    Knob("stubs.c_sum", 0.05, 1.0),
    Knob("params.budget", 20, 400, integer=True),
    Knob("stubs.base_tokens", 0, 100, integer=True),
    Knob("world.tokens_median", 10.0, 80.0),
    Knob("poison[0].apparent_relevance", 0.3, 1.0),
    Knob("poison[1].apparent_relevance", 0.3, 1.0),
    Knob("poison[0].p_supersede", 0.0, 1.0),
    Knob("poison[1].p_supersede", 0.0, 1.0),
)
# Fitted cells: Table 4's ASR, PRR, BR, AF and TSR (the target's 25 cells), and, as
# constraints on the same footing, CCR and the average prompt tokens per step.
METRICS = (*FIT_METRICS, "ccr", "avg_prompt_tokens")
# poison[2] is a second plausible injection (9% of scenarios): it copies poison[0].
TIED = {"poison[2].apparent_relevance": "poison[0].apparent_relevance",
        "poison[2].p_supersede": "poison[0].p_supersede"}


def _tied(values: dict[str, Any]) -> dict[str, Any]:
    return {**values, **{k: values[v] for k, v in TIED.items() if v in values}}


def _budget(args: argparse.Namespace) -> dict[str, Any]:
    return {"replicates": args.replicates, "corpus": 100, "maxiter": args.maxiter,
            "popsize": args.popsize, "polish": args.polish, "kind": args.objective, "seed": 0}


def _save(name: str, data: Any) -> Path:
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{name}.json"
    path.write_text(json.dumps(data, indent=1, default=float), encoding="utf-8")
    return path


def _load(name: str) -> Any:
    return json.loads((OUT / f"{name}.json").read_text(encoding="utf-8"))


def _tick(i: int, best: float) -> None:
    if i % 25 == 0:
        print(f"  {i} evaluations, best {best:.2f}", flush=True)


def stage_fit(args: argparse.Namespace) -> None:
    sc = load_scenario("paper_poisoning")
    table = paper_table4()
    b = _budget(args)
    start = {k.key: k.value(_current(sc, k)) for k in KNOBS}
    t0 = time.perf_counter()
    r = fit(sc, table, KNOBS, metrics=METRICS, replicates=b["replicates"],
            corpus=b["corpus"], maxiter=b["maxiter"], popsize=b["popsize"], kind=b["kind"],
            polish=b["polish"], progress=_tick)
    fitted = _tied(r.fitted)
    if args.write_scenario:
        text = update_toml_text(SCENARIO.read_text("utf-8"), fitted)
        SCENARIO.write_text(text, encoding="utf-8")
    _save("fit", {"budget": b, "start": start, "fitted": fitted, "objective": r.objective,
                  "evaluations": len(r.evaluations), "seconds": time.perf_counter() - t0,
                  "inside_fitted": inside_share(r.cells), "cells": r.cells,
                  "history": [{"knobs": e.knobs, "objective": e.objective, "pooled": e.pooled}
                              for e in r.evaluations]})
    print(f"fit: objective {r.objective:.2f}, {inside_share(r.cells):.0%} of fitted cells "
          f"inside their 95% predictive interval, {len(r.evaluations)} evaluations")


def stage_cells(args: argparse.Namespace) -> None:
    """Recompute the fit's cells at its fitted values (same replicates and seed)."""
    from wmtsim.studies.inference import predictive_cells, replicate

    data = _load("fit")
    b = data["budget"]
    sc = load_scenario("paper_poisoning").with_overrides(data["fitted"])
    rep = replicate(sc, TABLE4_POLICIES, b["replicates"], b["corpus"], b["seed"])
    cells = predictive_cells(rep, paper_table4())
    for c in cells:
        c["fitted"] = c["metric"] in METRICS
    data["cells"] = cells
    data["inside_fitted"] = inside_share(cells)
    _save("fit", data)
    print(f"cells: {inside_share(cells):.0%} of fitted cells inside")


def stage_held_out(args: argparse.Namespace) -> None:
    # Every held-out fit starts where the full fit started (never from a fit that saw
    # the held-out row): the start recorded by the fit stage.
    sc = load_scenario("paper_poisoning")
    start = _load("fit")["start"] if (OUT / "fit.json").is_file() else {}
    start = {k.key: k.value(start[k.key]) for k in KNOBS if k.key in start}
    sc = sc.with_overrides(_tied(start))
    b = _budget(args)
    rows = held_out(sc, paper_table4(), KNOBS, rows=args.row or None, metrics=METRICS,
                    replicates=b["replicates"], corpus=b["corpus"], maxiter=b["maxiter"],
                    popsize=b["popsize"], kind=b["kind"], polish=b["polish"])
    for row in rows:  # one file per held-out row, so rows can be run one at a time
        _save(f"held_out_{row['held_out']}", {"budget": b, "start": start, "rows": [row]})
    for row in rows:
        print(f"held out {row['held_out']}: {row['inside']}/{row['of']} fitted-metric cells "
              "inside their 95% predictive interval")


def _flips() -> list[tuple[str, dict[str, Any], dict[str, Any] | None]]:
    from model_decisions import RULES  # the rule flips of docs/model_decisions.md

    sc = load_scenario("paper_poisoning")
    out: list[tuple[str, dict[str, Any], dict[str, Any] | None]] = []
    for rule in RULES:
        flat: dict[str, Any] = {}
        for k, v in rule.overrides.items():
            if k.startswith("poison[*]."):
                for i in range(len(sc.world.poison)):
                    flat[k.replace("[*]", f"[{i}]")] = v
            else:
                flat[k] = v
        pols = ({p: replace(POLICIES[p], supersede=True) for p in TABLE4_POLICIES}
                if rule.all_supersede else None)
        out.append((rule.name, flat, pols))
    return out


def stage_robustness(args: argparse.Namespace) -> None:
    from wmtsim.studies.inference import Evaluation, Fit

    data = _load("fit")
    sc = load_scenario("paper_poisoning").with_overrides(data["fitted"])
    evals = [Evaluation(h["knobs"], h["objective"], h["pooled"]) for h in data["history"]]
    b = data["budget"]
    result = Fit(sc, data["fitted"], data["objective"], data["cells"], TABLE4_POLICIES,
                 METRICS, KNOBS, b["replicates"], b["corpus"], b["kind"], evals)
    rows = robustness(result, flips=_flips())
    _save("robustness", {"budget": b, "rows": rows})
    for r in rows:
        print(f"{r['claim']}: {r['share']:.0%} of plausible worlds "
              f"({r['n_near_optimal']} near-optimal fits, {r['n_flips']} flips)")


def stage_docs(args: argparse.Namespace) -> None:
    from calibration_doc import write_docs  # the Markdown renderings of the stages

    parts = [_load(f"held_out_{p}") for p in TABLE4_POLICIES
             if (OUT / f"held_out_{p}.json").is_file()]
    ho = {"budget": parts[0]["budget"], "rows": [r for d in parts for r in d["rows"]]
          } if parts else None
    write_docs(ROOT, _load("fit"), ho, _maybe("robustness"))


def _maybe(name: str) -> Any:
    return _load(name) if (OUT / f"{name}.json").is_file() else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stage", choices=("fit", "cells", "held-out", "robustness", "docs"))
    ap.add_argument("--replicates", type=int, default=10)
    ap.add_argument("--maxiter", type=int, default=4)
    ap.add_argument("--popsize", type=int, default=3)
    ap.add_argument("--polish", type=int, default=200,
                    help="Powell evaluations after differential evolution")
    ap.add_argument("--objective", default="nll", choices=("nll", "z2"))
    ap.add_argument("--row", action="append", choices=TABLE4_POLICIES,
                    help="held-out: only this row (repeatable; default all five)")
    ap.add_argument("--write-scenario", action="store_true",
                    help="write the fitted values into the shipped paper_poisoning.toml")
    args = ap.parse_args()
    stages = {"fit": stage_fit, "cells": stage_cells, "held-out": stage_held_out,
              "robustness": stage_robustness, "docs": stage_docs}
    stages[args.stage](args)


if __name__ == "__main__":
    main()
