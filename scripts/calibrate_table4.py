"""Fit paper_poisoning to Table 4 as inference against a noisy target, for each mechanism
family (`wmtsim.studies.calibration.families`), hold each row out in turn, and measure how robust
each claim is (`wmtsim.studies.calibration.inference`).

    python scripts/calibrate_table4.py fit --family paper   # fit all five rows
    python scripts/calibrate_table4.py held-out --family v1 # fit on four, predict the fifth
    python scripts/calibrate_table4.py robustness           # claims over plausible worlds
    python scripts/calibrate_table4.py docs --dir DIR       # rewrites docs/calibration.md, README

Each stage reads and writes ``<stage>-<family>.json`` in ``--dir`` (default
``results/calibration``, a folder of your own), so a stage can be rerun alone. The shipped
numbers rest on ``docs/calibration/*.json`` (small, in the repository); ``make docs`` runs
``docs --dir docs/calibration``. Two stages rewrite repository files, and say so: ``docs``
(docs/calibration.md and the README's calibration blocks) and ``ship`` (the default
family's fitted values into the shipped paper_poisoning.toml).
Budgets are options (``--replicates``, ``--maxiter``,
``--popsize``); the values used for the shipped numbers are recorded in the JSON and in
the docs. Every family is fitted with the same budget from the same start: a Latin
hypercube over the knobs' ranges (seed 0), not the shipped values (which would favour the
family they were fitted under).
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
from wmtsim.studies.calibration.calibrate import FIT_METRICS, Knob, _current
from wmtsim.studies.calibration.families import DEFAULT_FAMILY, FAMILIES, Family
from wmtsim.studies.calibration.fresh_seeds import objective_noise, reevaluate
from wmtsim.studies.calibration.inference import (
    fit,
    held_out,
    inside_share,
    plausible_threshold,
    replicate,
    robustness,
)
from wmtsim.studies.calibration.journal import FitJournal
from wmtsim.studies.compare.report import paper_table4
from wmtsim.studies.scenarios.scenario import load_scenario
from wmtsim.studies.scenarios.toml_files import update_toml_text

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "docs" / "calibration"  # what the docs and the README rest on
OUT = Path("results") / "calibration"  # set by --dir
SCENARIO = ROOT / "wmtsim" / "data" / "scenarios" / "paper_poisoning.toml"
sys.path.insert(0, str(ROOT / "scripts"))

# The free knobs every family fits: the selector, persuasion, success-under-compromise
# (p_misled) and the final-answer rule, the selector's budget and the injections' look and
# detection; each family adds the one knob its rules bring (`Family.own_knob`).
COMMON_KNOBS = (
    Knob("stubs.selector_noise", 0.0, 0.6),
    Knob("stubs.poison_boost", -0.3, 0.3),
    Knob("stubs.p_persuade", 0.3, 1.0),
    Knob("stubs.p_persuade_vs_evidence", 0.0, 1.0),
    Knob("stubs.p_misled", 0.0, 1.0),
    Knob("world.p_recover", 0.0, 1.0),
    Knob("world.final_share", 0.25, 1.0),
    Knob("stubs.p_use_max", 0.5, 1.0),
    Knob("stubs.c_sum", 0.05, 1.0),
    Knob("params.budget", 20, 400, integer=True),
    Knob("stubs.base_tokens", 0, 100, integer=True),
    Knob("world.tokens_median", 10.0, 80.0),
    Knob("poison[0].apparent_relevance", 0.3, 1.0),
    Knob("poison[1].apparent_relevance", 0.3, 1.0),
    Knob("poison[0].p_supersede", 0.0, 1.0),
    Knob("poison[1].p_supersede", 0.0, 1.0),
)


def knobs_of(family: Family) -> tuple[Knob, ...]:
    return (*COMMON_KNOBS, family.own_knob)


# Fitted cells: Table 4's ASR, PRR, BR, AF and TSR (the target's 25 cells), and, as
# constraints on the same footing, CCR and the average prompt tokens per step.
METRICS = (*FIT_METRICS, "ccr", "avg_prompt_tokens")
METRICS_ALL = ("asr", "prr", "ip", "br", "af", "tsr", "ccr", "avg_prompt_tokens")
# poison[2] is a second plausible injection (9% of scenarios): it copies poison[0].
TIED = {"poison[2].apparent_relevance": "poison[0].apparent_relevance",
        "poison[2].p_supersede": "poison[0].p_supersede"}


def _tied(values: dict[str, Any]) -> dict[str, Any]:
    return {**values, **{k: values[v] for k, v in TIED.items() if v in values}}


def _budget(args: argparse.Namespace) -> dict[str, Any]:
    return {"replicates": args.replicates, "corpus": 100, "maxiter": args.maxiter,
            "start": "latin hypercube (seed 0)",
            "popsize": args.popsize, "polish": args.polish, "kind": args.objective, "seed": 0,
            "reevaluation": {"seeds": list(FRESH_SEEDS), "replicates": REEVAL_REPLICATES}}


# Every number a fit reports is re-evaluated at seeds it was not selected on, at R = 20
# replicate corpora (the search runs at --replicates, seed 0): `fresh_seeds.reevaluate`.
FRESH_SEEDS = tuple(range(1, 11))
REEVAL_REPLICATES = 20


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


def _scenario(family: Family) -> Any:
    """The shipped scenario under ``family``'s rules (its fitted values as the start)."""
    return family.apply(load_scenario("paper_poisoning"))


def stage_fit(args: argparse.Namespace) -> None:
    family = FAMILIES[args.family]
    knobs = knobs_of(family)
    sc = _scenario(family)
    table = paper_table4()
    b = _budget(args)
    start = {k.key: k.value(_current(sc, k)) for k in knobs}
    t0 = time.perf_counter()
    journal = OUT / f"fit-{family.name}.journal"
    r = fit(sc, table, knobs, metrics=METRICS, replicates=b["replicates"],
            corpus=b["corpus"], maxiter=b["maxiter"], popsize=b["popsize"], kind=b["kind"],
            polish=b["polish"], progress=_tick, from_current=False, workers=args.workers,
            journal=journal, tied=TIED)
    fitted = _tied(r.fitted)
    threshold, dispersion = plausible_threshold(r)
    # Keep what the robustness stage needs (the plausible set), not every evaluation; the
    # journal keeps them all (the reachability table reads it).
    plausible = [e for e in r.evaluations if e.objective <= r.objective + threshold]
    fresh = reevaluate(r, FRESH_SEEDS, REEVAL_REPLICATES, table)
    noise = objective_noise(r, plausible, seeds=args.noise_seeds)
    _save(f"fit-{family.name}", {
        "family": family.name, "rules": family.rules, "budget": b, "start": start,
        "fitted": fitted, "objective": r.objective, "evaluations": len(r.evaluations),
        "seconds": time.perf_counter() - t0, "workers": args.workers,
        "inside_fitted_at_fit_seed": inside_share(r.cells),
        "inside_fitted": inside_share(fresh["cells"]),
        "cells": fresh["cells"], "cells_at_fit_seed": r.cells, "reevaluation": fresh,
        "threshold": threshold, "dispersion": dispersion, "noise": noise,
        "journal": journal.name,
        "plausible": [{"knobs": e.knobs, "objective": e.objective, "pooled": e.pooled}
                      for e in plausible]})
    print(f"fit ({family.name}): objective {r.objective:.2f} at its own seed, "
          f"{fresh['objective_mean']:.1f} ± {fresh['objective_sd']:.1f} at "
          f"{len(FRESH_SEEDS)} fresh seeds (R = {REEVAL_REPLICATES}); "
          f"{fresh['rows'][0]['inside']}/{fresh['rows'][0]['of']} fitted cells inside their "
          f"95% prediction interval at seed {FRESH_SEEDS[0]}, tokens within 15% for "
          f"{fresh['rows'][0]['tokens_within_15']}/{fresh['rows'][0]['tokens_of']} rows; "
          f"{len(r.evaluations)} evaluations, {len(plausible)} plausible")


def stage_ship(args: argparse.Namespace) -> None:
    """Write the default family's fitted values into the shipped paper_poisoning.toml."""
    data = _load(f"fit-{DEFAULT_FAMILY}")
    text = update_toml_text(SCENARIO.read_text("utf-8"), data["fitted"])
    SCENARIO.write_text(text, encoding="utf-8")
    print(f"wrote the {DEFAULT_FAMILY} family's fit into {SCENARIO}")


def stage_noise(args: argparse.Namespace) -> None:
    """Recompute a family's objective noise (`objective_noise`) from its saved fit."""
    from wmtsim.studies.calibration.inference import Fit
    from wmtsim.studies.calibration.journal import Evaluation

    family = FAMILIES[args.family]
    data = _load(f"fit-{family.name}")
    b = data["budget"]
    sc = _scenario(family).with_overrides(data["fitted"])
    evals = [Evaluation(h["knobs"], h["objective"], h["pooled"]) for h in data["plausible"]]
    result = Fit(sc, data["fitted"], data["objective"], data["cells"], TABLE4_POLICIES,
                 METRICS, knobs_of(family), b["replicates"], b["corpus"], b["kind"], evals)
    data["noise"] = objective_noise(result, evals, seeds=args.noise_seeds)
    _save(f"fit-{family.name}", data)
    print(f"noise ({family.name}): {data['noise']}")


def stage_held_out(args: argparse.Namespace) -> None:
    # Every held-out fit starts where the family's full fit started (never from a fit
    # that saw the held-out row): the start its fit stage recorded, else the shipped
    # scenario under the family's rules.
    family = FAMILIES[args.family]
    sc = _scenario(family)
    if (OUT / f"fit-{family.name}.json").is_file():
        start = _load(f"fit-{family.name}")["start"]
        sc = sc.with_overrides(_tied({k.key: k.value(start[k.key])
                                      for k in knobs_of(family) if k.key in start}))
    b = _budget(args)
    rows = held_out(sc, paper_table4(), knobs_of(family), rows=args.row or None,
                    fresh_seed=FRESH_SEEDS[0], fresh_replicates=REEVAL_REPLICATES,
                    metrics=METRICS, replicates=b["replicates"], corpus=b["corpus"],
                    maxiter=b["maxiter"], popsize=b["popsize"], kind=b["kind"],
                    polish=b["polish"], from_current=False, workers=args.workers,
                    tied=TIED)
    for row in rows:  # one file per held-out row, so rows can be run one at a time
        _save(f"held_out-{family.name}-{row['held_out']}",
              {"family": family.name, "budget": b, "rows": [row]})
    for row in rows:
        print(f"held out {row['held_out']} ({family.name}): {row['inside']}/{row['of']} "
              "fitted-metric cells inside their 95% prediction interval")


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
    """Each claim over the plausible worlds: every evaluation in the fit's journal within
    the plausible set's threshold (`inference.plausible_threshold`, recomputed here, so a
    new threshold rule needs no refit), re-simulated at a fresh seed, and the rule flips
    at the fit."""
    from wmtsim.studies.calibration.inference import Fit

    family = FAMILIES[DEFAULT_FAMILY]
    data = _load(f"fit-{family.name}")
    sc = _scenario(family).with_overrides(data["fitted"])
    b = data["budget"]
    journal = OUT / data.get("journal", f"fit-{family.name}.journal")
    if journal.is_file():
        evals = [FitJournal.evaluation(r) for r in
                 FitJournal(journal, _journal_head(journal)).rows]
    else:  # a fit JSON without its journal: the plausible set it kept
        from wmtsim.studies.calibration.journal import Evaluation

        evals = [Evaluation(h["knobs"], h["objective"], h["pooled"])
                 for h in data["plausible"]]
    result = Fit(sc, data["fitted"], data["objective"],
                 data.get("cells_at_fit_seed", data["cells"]), TABLE4_POLICIES, METRICS,
                 knobs_of(family), b["replicates"], b["corpus"], b["kind"], evals)
    threshold, dispersion = plausible_threshold(result)
    rows = robustness(result, flips=_flips(), threshold=threshold,
                      fresh_seed=FRESH_SEEDS[0])
    _save("robustness", {"family": family.name, "budget": b, "threshold": threshold,
                         "dispersion": dispersion, "seed": FRESH_SEEDS[0], "rows": rows})
    for r in rows:
        print(f"{r['claim']}: {r['share']:.0%} of plausible worlds "
              f"({r['n_near_optimal']} plausible fits, {r['n_flips']} flips)")


def stage_reach(args: argparse.Namespace) -> None:
    """Reachability: the range of each Table 4 cell over every point the fit evaluated
    (its journal: the knob box as the search covered it, from a Latin hypercube over the
    whole box to the optimum) and under every rule flip of docs/model_decisions.md at the
    fit (at a fresh seed, R = 20). Written into fit-<family>.json as ``reach``."""
    family = FAMILIES[args.family]
    data = _load(f"fit-{family.name}")
    rows = FitJournal(OUT / data["journal"], _journal_head(OUT / data["journal"])).rows
    evals = [FitJournal.evaluation(r) for r in rows]
    box: dict[str, dict[str, Any]] = {}
    for p in TABLE4_POLICIES:
        for m in METRICS_ALL:
            vals = [(e.pooled[p][m], e) for e in evals if p in e.pooled
                    and m in e.pooled[p] and e.pooled[p][m] == e.pooled[p][m]]
            if not vals:
                continue
            lo, hi = min(vals, key=lambda t: t[0]), max(vals, key=lambda t: t[0])
            box[f"{p}.{m}"] = {"min": lo[0], "max": hi[0], "argmin": lo[1].knobs,
                               "argmax": hi[1].knobs}
    sc = _scenario(family).with_overrides(data["fitted"])
    flips = {}
    for label, overrides, policies in _flips():
        rep = replicate(sc.with_overrides(overrides), TABLE4_POLICIES, REEVAL_REPLICATES,
                        100, FRESH_SEEDS[0], metrics=METRICS_ALL, policy_objects=policies)
        flips[label] = rep.pooled
    data["reach"] = {"evaluations": len(evals), "box": box, "flips": flips,
                     "flip_seed": FRESH_SEEDS[0], "flip_replicates": REEVAL_REPLICATES}
    _save(f"fit-{family.name}", data)
    print(f"reach ({family.name}): {len(box)} cells over {len(evals)} evaluations and "
          f"{len(flips)} rule flips")


def _journal_head(path: Path) -> dict[str, Any]:
    """The fingerprint a journal was written under (the reach stage reads a finished one)."""
    with path.open(encoding="utf-8") as f:
        return json.loads(f.readline())["fingerprint"]


def _held_out(family: str) -> dict[str, Any] | None:
    parts = [_load(f"held_out-{family}-{p}") for p in TABLE4_POLICIES
             if (OUT / f"held_out-{family}-{p}.json").is_file()]
    if not parts:
        return None
    return {"family": family, "budget": parts[0]["budget"],
            "rows": [r for d in parts for r in d["rows"]]}


def stage_docs(args: argparse.Namespace) -> None:
    """The shipped fit (``fit-paper.json``) and the family comparison (``families/``, every
    family at the same comparison budget) rendered into docs/calibration.md and README."""
    global OUT
    from calibration_doc import write_docs  # the Markdown renderings of the stages

    if not (OUT / f"fit-{DEFAULT_FAMILY}.json").is_file():
        raise SystemExit(f"{OUT}: no fit-{DEFAULT_FAMILY}.json to write the docs from (run "
                         f"the fit stage with --dir {OUT}, or use the shipped --dir "
                         f"{SHIPPED.relative_to(ROOT)})")
    main = _load(f"fit-{DEFAULT_FAMILY}")
    rb, audit = _maybe("robustness"), _maybe("audit")
    top = OUT
    OUT = top / "families"
    fits = {f: _load(f"fit-{f}") for f in FAMILIES if (OUT / f"fit-{f}.json").is_file()}
    held = {f: _held_out(f) for f in fits}
    OUT = top
    write_docs(ROOT, main, fits or {DEFAULT_FAMILY: main}, held, rb, audit)


def _maybe(name: str) -> Any:
    return _load(name) if (OUT / f"{name}.json").is_file() else None


def main() -> None:
    global OUT
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("stage", choices=("fit", "noise", "ship", "held-out", "reach",
                                      "robustness", "docs"))
    ap.add_argument("--family", default=DEFAULT_FAMILY, choices=tuple(FAMILIES),
                    help=f"the mechanism family (default {DEFAULT_FAMILY}; "
                         "wmtsim.studies.calibration.families)")
    ap.add_argument("--noise-seeds", type=int, default=6,
                    help="fit: seeds at which the objective's run-to-run SD is measured")
    # The default budget: 20 generations of 15 × 17 points (5,100 evaluations) and 200
    # Powell steps, at 10 replicate corpora per evaluation (about 0.1 s each on 2 cores).
    ap.add_argument("--replicates", type=int, default=10)
    ap.add_argument("--maxiter", type=int, default=19)
    ap.add_argument("--popsize", type=int, default=15)
    ap.add_argument("--workers", type=int, default=1,
                    help="processes evaluating a generation at once (default 1: each "
                         "evaluation already runs on every core, numba's parallel loop "
                         "over trajectories)")
    ap.add_argument("--polish", type=int, default=200,
                    help="Powell evaluations after differential evolution")
    ap.add_argument("--objective", default="nll", choices=("nll", "z2"))
    ap.add_argument("--row", action="append", choices=TABLE4_POLICIES,
                    help="held-out: only this row (repeatable; default all five)")
    ap.add_argument("--dir", type=Path, default=OUT,
                    help=f"folder of the stages' JSON (default {OUT}; the shipped ones: "
                         f"{SHIPPED.relative_to(ROOT)})")
    args = ap.parse_args()
    OUT = args.dir
    stages = {"fit": stage_fit, "noise": stage_noise, "ship": stage_ship,
              "held-out": stage_held_out, "reach": stage_reach,
              "robustness": stage_robustness, "docs": stage_docs}
    stages[args.stage](args)


if __name__ == "__main__":
    main()
