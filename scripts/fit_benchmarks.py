"""Fit each base model's stub profile to Tables 1–3 (both benchmarks at once) and check the
paper's directions per model × benchmark (`wmtsim.studies.calibration.benchmarks`).

    python scripts/fit_benchmarks.py fit [--model M]   # writes wmtsim/data/profiles.toml
    python scripts/fit_benchmarks.py check             # directions, docs/calibration.md

The fit targets accuracy (TSR) of the seven configurations on both benchmarks; prompt
tokens are the benchmark world's (not fitted) and are checked as directions. Each stage
writes ``results/calibration/benchmarks_<stage>.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

from wmtsim.core.policies import POLICIES
from wmtsim.studies.calibration.benchmarks import (
    BENCHMARKS,
    CONFIGS,
    MODELS,
    check_directions,
    fit_profile,
    paper_cell,
    profile_objective,
    summary,
)
from wmtsim.studies.calibration.calibrate import Knob
from wmtsim.studies.calibration.inference import predictive_cells

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "results" / "calibration"
PROFILES = ROOT / "wmtsim" / "data" / "profiles.toml"
sys.path.insert(0, str(ROOT / "scripts"))

KNOBS = (
    Knob("stubs.p_use_max", 0.5, 1.0),
    Knob("stubs.dilution_tokens", 500.0, 30000.0),
    Knob("stubs.p_guess", 0.0, 0.5),
    Knob("stubs.selector_noise", 0.0, 0.6),
    # The final answer's rule is the world's knob; how well a model recovers a result
    # missing from its context is fitted with its profile (the same for every policy).
    Knob("world.p_recover", 0.0, 1.0),
    Knob("world.final_share", 0.25, 1.0),
)


def stage_fit(args: argparse.Namespace) -> None:
    models = [args.model] if args.model else list(MODELS)
    results = {}
    for m in models:
        t0 = time.perf_counter()
        r = fit_profile(m, KNOBS, replicates=args.replicates, maxiter=args.maxiter,
                        popsize=args.popsize)
        r["seconds"] = time.perf_counter() - t0
        results[m] = r
        print(f"{m}: objective {r['objective']:.1f} after {r['evaluations']} evaluations "
              f"({r['seconds'] / 60:.1f} min): {r['fitted']}", flush=True)
        write_profile(m, r["fitted"])
    budget = {"replicates": args.replicates, "maxiter": args.maxiter,
              "popsize": args.popsize}
    OUT.mkdir(parents=True, exist_ok=True)
    old = _maybe("fit")
    merged = {**(old["models"] if old else {}), **results}
    (OUT / "benchmarks_fit.json").write_text(json.dumps({"budget": budget, "models": merged},
                                                        indent=1, default=float))


def write_profile(model: str, fitted: dict[str, Any]) -> None:
    """Rewrite profiles.toml with ``model``'s fitted values (header comment kept)."""
    import tomllib

    text = PROFILES.read_text("utf-8")
    data = tomllib.loads(text)
    for key, value in fitted.items():
        part, name = key.split(".", 1)
        data.setdefault(model, {}).setdefault(part, {})[name] = value
    head = [line for line in text.splitlines() if line.startswith("#")]
    lines = [*head, ""]
    for m in MODELS:
        for part, table in data.get(m, {}).items():
            lines.append(f'["{m}".{part}]')
            lines += [f"{k} = {v!r}" for k, v in table.items()]
            lines.append("")
    PROFILES.write_text("\n".join(lines), encoding="utf-8")
    tomllib.loads(PROFILES.read_text("utf-8"))  # still valid TOML


def _maybe(stage: str) -> Any:
    p = OUT / f"benchmarks_{stage}.json"
    return json.loads(p.read_text()) if p.is_file() else None


def stage_check(args: argparse.Namespace) -> None:
    from wmtsim.studies.calibration.benchmarks import profiles

    profiles.cache_clear()
    rows = []
    for m in MODELS:
        _, reps = profile_objective(m, {}, args.replicates)
        for b in BENCHMARKS:
            cell = paper_cell(b, m)
            checks = check_directions(reps[b], cell)
            cells = predictive_cells(reps[b], cell)
            rows.append({"model": m, "benchmark": b, "checks": checks, "cells": cells,
                         "summary": summary(checks)})
            print(f"{m} × {b}: {summary(checks)}")
    data = {"replicates": args.replicates, "rows": rows}
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "benchmarks_check.json").write_text(json.dumps(data, indent=1, default=float))
    if args.docs:
        from doc_blocks import replace_block

        cal = ROOT / "docs" / "calibration.md"
        text = replace_block(cal.read_text("utf-8"), "table123-cells", markdown(data))
        cal.write_text(text, encoding="utf-8")
        print(f"wrote {cal}")


def _pct(x: float) -> str:
    return "–" if not math.isfinite(x) else f"{100 * x:.1f}"


def markdown(data: dict[str, Any]) -> str:
    fit = _maybe("fit")
    lines = []
    if fit:
        b = fit["budget"]
        lines += [f"Profiles fitted on accuracy (TSR) of the seven configurations on both "
                  f"benchmarks at once: {b['replicates']} replicate corpora per benchmark "
                  f"and evaluation, differential evolution popsize {b['popsize']} for "
                  f"{b['maxiter']} generations, seed 0.", ""]
    lines += ["Accuracy (%): the paper's value, then the simulator's 95% predictive "
              "interval for a corpus of the benchmark's size (✓ inside).", "",
              "| model × benchmark | " + " | ".join(POLICIES[p].label for p in CONFIGS) + " |",
              "|---|" + "---|" * len(CONFIGS)]
    for row in data["rows"]:
        cells = {(c["policy"], c["metric"]): c for c in row["cells"]}
        out = [f"{row['model']} × {row['benchmark']}"]
        for p in CONFIGS:
            c = cells[(p, "tsr")]
            out.append(f"{_pct(c['paper'])} in [{_pct(c['low'])}, {_pct(c['high'])}] "
                       f"{'✓' if c['inside'] else '✗'}")
        lines.append("| " + " | ".join(out) + " |")
    n_in = sum(c["inside"] for r in data["rows"] for c in r["cells"] if c["metric"] == "tsr")
    n_all = sum(c["metric"] == "tsr" for r in data["rows"] for c in r["cells"])
    lines += ["", f"**{n_in} of {n_all}** accuracy cells inside.", "",
              "The paper's directions per model × benchmark (the sign of the paper's own "
              "difference; the simulator's mean difference with its 95% interval):", "",
              "| model × benchmark | holds | undecided | fails | failing directions |",
              "|---|---|---|---|---|"]
    for row in data["rows"]:
        s = row["summary"]
        bad = "; ".join(f"{c['a']} {'>' if c['sign'] > 0 else '<'} {c['b']} "
                        f"({c['metric']}: sim {_diff(c)})" for c in row["checks"]
                        if c["status"] != "holds")
        lines.append(f"| {row['model']} × {row['benchmark']} | {s['holds']} | "
                     f"{s['undecided']} | {s['fails']} | {bad or '–'} |")
    return "\n".join(lines)


def _diff(c: dict[str, Any]) -> str:
    if c["metric"] == "tsr":
        return f"{100 * c['sim_diff']:+.1f} [{100 * c['low']:+.1f}, {100 * c['high']:+.1f}] pts"
    return f"{c['sim_diff']:+,.0f} [{c['low']:+,.0f}, {c['high']:+,.0f}] tokens/task"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stage", choices=("fit", "check"))
    ap.add_argument("--model", choices=MODELS)
    ap.add_argument("--replicates", type=int, default=8)
    ap.add_argument("--maxiter", type=int, default=3)
    ap.add_argument("--popsize", type=int, default=3)
    ap.add_argument("--docs", action="store_true", help="write docs/calibration.md")
    args = ap.parse_args()
    {"fit": stage_fit, "check": stage_check}[args.stage](args)


if __name__ == "__main__":
    main()
