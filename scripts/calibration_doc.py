"""Markdown for the calibration-as-inference stages (scripts/calibrate_table4.py): the
paper's Table 4 cells in their predictive distributions, the held-out rows and the
robustness of each claim; written into docs/calibration.md and the README."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from paper_tables_doc import replace_block

from wmtsim.core.metrics import LABELS
from wmtsim.core.policies import POLICIES

T4 = ("linear", "a1_unweighted", "a2_no_controller", "a3_no_semantic", "wmt")
METRICS = ("asr", "prr", "ip", "br", "af", "tsr", "ccr", "avg_prompt_tokens")


def _n(x: float) -> str:
    if x is None or not math.isfinite(x):
        return "–"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3f}"


def _budget(b: dict[str, Any]) -> str:
    return (f"{b['replicates']} replicate corpora of {b['corpus']} scenarios per "
            f"evaluation, objective `{b['kind']}`, differential evolution with popsize "
            f"{b['popsize']} for {b['maxiter']} generations, seed {b['seed']}")


def predictive_markdown(fit: dict[str, Any]) -> str:
    cells = {(c["policy"], c["metric"]): c for c in fit["cells"]}
    fitted = [c for c in fit["cells"] if c["fitted"]]
    inside = sum(c["inside"] for c in fitted)
    lines = [f"**{inside} of {len(fitted)} fitted cells** lie inside the simulator's 95% "
             f"predictive interval for a 100-scenario corpus (objective "
             f"{fit['objective']:.1f}, {fit['evaluations']} evaluations, "
             f"{fit['seconds'] / 60:.0f} min; {_budget(fit['budget'])}).", "",
             "Each cell: the paper's value, then the simulator's predictive 95% interval "
             "over replicate corpora and the paper value's z; ✓ inside, ✗ outside, * fitted.",
             "", "| metric | " + " | ".join(POLICIES[p].label for p in T4) + " |",
             "|---|" + "---|" * len(T4)]
    for m in METRICS:
        row = [LABELS.get(m, m)]
        for p in T4:
            c = cells.get((p, m))
            if c is None:
                row.append("–")
                continue
            mark = "✓" if c["inside"] else "✗"
            row.append(f"{_n(c['paper'])} in [{_n(c['low'])}, {_n(c['high'])}] "
                       f"z {c['z']:+.1f} {mark}{'*' if c['fitted'] else ''}")
        lines.append("| " + " | ".join(row) + " |")
    lines += ["", "Average prompt tokens per step, simulated (pooled) vs paper:", "",
              "| configuration | simulated | paper | relative error | within 15% |",
              "|---|---|---|---|---|"]
    for p in T4:
        c = cells[(p, "avg_prompt_tokens")]
        rel = c["pooled"] / c["paper"] - 1.0
        lines.append(f"| {POLICIES[p].label} | {c['pooled']:.1f} | {c['paper']:.1f} | "
                     f"{rel:+.1%} | {'yes' if abs(rel) <= 0.15 else 'no'} |")
    lines += ["", "Fitted values: " + ", ".join(f"`{k}` = {v:g}"
                                                for k, v in fit["fitted"].items()) + "."]
    return "\n".join(lines)


def held_out_markdown(ho: dict[str, Any]) -> str:
    lines = [f"Budget per fit: {_budget(ho['budget'])}; every fit starts from the same "
             "values as the full fit.", "",
             "| held-out row | " + " | ".join(LABELS.get(m, m) for m in METRICS)
             + " | fitted-metric cells inside |", "|---|" + "---|" * (len(METRICS) + 1)]
    for row in ho["rows"]:
        cells = {c["metric"]: c for c in row["cells"]}
        out = [POLICIES[row["held_out"]].label]
        for m in METRICS:
            c = cells.get(m)
            out.append("–" if c is None else
                       f"{_n(c['paper'])} in [{_n(c['low'])}, {_n(c['high'])}] "
                       f"{'✓' if c['inside'] else '✗'}")
        out.append(f"{row['inside']} / {row['of']}")
        lines.append("| " + " | ".join(out) + " |")
    total = sum(r["inside"] for r in ho["rows"])
    of = sum(r["of"] for r in ho["rows"])
    lines += ["", f"Over the five held-out rows, **{total} of {of}** predicted cells "
              "of the fitted metrics (ASR, PRR, BR, AF, TSR, CCR, tokens per step) contain the "
              "paper's value in their 95% predictive interval (tokens: with the 5% "
              "model-discrepancy SD)."]
    return "\n".join(lines)


def robustness_markdown(rb: dict[str, Any]) -> str:
    lines = ["| claim | at the best fit | near-optimal fits | rule flips | all plausible "
             "worlds | flips where it fails |", "|---|---|---|---|---|---|"]
    for r in rb["rows"]:
        fails = "; ".join(r["failing_flips"]) or "–"
        lines.append(f"| {r['claim']} | {'holds' if r['best_fit'] else 'fails'} | "
                     f"{_share(r['near_optimal'])} of {r['n_near_optimal']} | "
                     f"{_share(r['flips'])} of {r['n_flips']} | **{_share(r['share'])}** | "
                     f"{fails} |")
    return "\n".join(lines)


# What the README's calibration blocks state as their command (they are too costly for
# the tests to re-run; tests/test_readme_numbers.py checks each block names one).
FIT_COMMAND = ("*Generated by `python scripts/calibrate_table4.py fit`, `held-out` and `docs` "
               "(an optimisation over replicate corpora, not re-run by the tests; "
               "results/calibration/*.json record its budgets).*")
ROBUSTNESS_COMMAND = ("*Generated by `python scripts/calibrate_table4.py robustness` and `docs` "
                      "(not re-run by the tests; results/calibration/robustness.json records "
                      "the fits and flips).*")


def readme_markdown(rb: dict[str, Any]) -> str:
    lines = ["| claim (Table 4) | share of plausible worlds where it holds |", "|---|---|"]
    lines += [f"| {r['claim']} | {_share(r['share'])} ({r['n_near_optimal']} near-optimal "
              f"fits, {r['n_flips']} rule flips) |" for r in rb["rows"]]
    lines += ["", ROBUSTNESS_COMMAND]
    return "\n".join(lines)


def summary_markdown(fit: dict[str, Any], ho: dict[str, Any] | None) -> str:
    """The README's plain statement of the fit and the held-out rows."""
    target = [c for c in fit["cells"] if c["metric"] in ("asr", "prr", "br", "af", "tsr")]
    inside = sum(c["inside"] for c in target)
    tok = [c for c in fit["cells"] if c["metric"] == "avg_prompt_tokens"]
    ok = sum(abs(c["pooled"] / c["paper"] - 1.0) <= 0.15 for c in tok)
    lines = [f"* Fit: **{inside} of {len(target)}** of Table 4's ASR, PRR, BR, AF and TSR "
             "cells lie inside the simulator's 95% predictive interval for a 100-scenario "
             f"corpus (target: 80%); average prompt tokens per step within 15% of the paper "
             f"for **{ok} of {len(tok)}** rows."]
    if ho is not None:
        parts = [f"{POLICIES[r['held_out']].label} {r['inside']}/{r['of']}"
                 for r in ho["rows"]]
        lines.append("* Held out (fit on four rows, predict the fifth; cells inside their "
                     "95% predictive interval, of the fitted metrics): " + ", ".join(parts)
                     + ".")
    lines += ["", FIT_COMMAND]
    return "\n".join(lines)


def _share(x: float) -> str:
    return "–" if x is None or not math.isfinite(x) else f"{x:.0%}"


def write_docs(root: Path, fit: dict[str, Any], ho: dict[str, Any] | None,
               rb: dict[str, Any] | None) -> None:
    cal = root / "docs" / "calibration.md"
    text = cal.read_text(encoding="utf-8")
    text = replace_block(text, "table4-predictive", predictive_markdown(fit))
    if ho is not None:
        text = replace_block(text, "held-out", held_out_markdown(ho))
    if rb is not None:
        text = replace_block(text, "robustness", robustness_markdown(rb))
    cal.write_text(text, encoding="utf-8")
    readme = root / "README.md"
    text = replace_block(readme.read_text(encoding="utf-8"), "calibration-summary",
                         summary_markdown(fit, ho))
    if rb is not None:
        text = replace_block(text, "claims-robustness", readme_markdown(rb))
    readme.write_text(text, encoding="utf-8")
    print(f"wrote {cal}" + (" and README.md" if rb is not None else ""))
