"""Markdown for the calibration-as-inference stages (scripts/calibrate_table4.py): the
paper's Table 4 cells in their predictive distributions, the held-out rows and the
robustness of each claim; written into docs/calibration.md and the README."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from doc_blocks import replace_block

from wmtsim.core.metrics import LABELS
from wmtsim.core.policies import POLICIES
from wmtsim.studies.calibration.families import DEFAULT_FAMILY, FAMILIES

T4 = ("linear", "a1_unweighted", "a2_no_controller", "a3_no_semantic", "wmt")
METRICS = ("asr", "prr", "ip", "br", "af", "tsr", "ccr", "avg_prompt_tokens")


def _n(x: float) -> str:
    if x is None or not math.isfinite(x):
        return "–"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3f}"


def _budget(b: dict[str, Any]) -> str:
    return (f"{b['replicates']} replicate corpora of {b['corpus']} scenarios per "
            f"evaluation, objective `{b['kind']}`, differential evolution with popsize "
            f"{b['popsize']} for {b['maxiter']} generations from a "
            f"{b.get('start', 'start at the shipped values')}, then up to {b['polish']} "
            f"Powell evaluations, seed {b['seed']}")


def _reevaluation(fit: dict[str, Any]) -> str:
    """The fit re-evaluated at fresh seeds (`fresh_seeds.reevaluate`): what every number of
    the fit rests on."""
    rv = fit.get("reevaluation")
    if not rv:
        return ""
    rows = rv["rows"]
    ins = [r["inside"] for r in rows]
    tok = [r["tokens_within_15"] for r in rows]
    return (f"Re-evaluated at {len(rows)} fresh seeds ({rows[0]['seed']}–{rows[-1]['seed']}, "
            f"{rv['replicates']} replicate corpora each; the table is seed {rows[0]['seed']}'s): "
            f"{min(ins)}–{max(ins)} of {rows[0]['of']} cells of ASR, PRR, BR, AF and TSR inside "
            f"(mean {sum(ins) / len(ins):.1f}); tokens within 15% for {min(tok)}–{max(tok)} of "
            f"{rows[0]['tokens_of']} rows; objective {rv['objective_mean']:.0f} ± "
            f"{rv['objective_sd']:.0f} at the fresh seeds against "
            f"{rv['objective_at_own_seed']:.0f} at the seed the fit was selected on (the "
            "same replicate count): the winner's curse, measured.")


def predictive_markdown(fit: dict[str, Any]) -> str:
    cells = {(c["policy"], c["metric"]): c for c in fit["cells"]}
    fitted = [c for c in fit["cells"] if c["fitted"]]
    inside = sum(c["inside"] for c in fitted)
    target = [c for c in fitted if c["metric"] in ("asr", "prr", "br", "af", "tsr")]
    lines = [f"**{sum(c['inside'] for c in target)} of {len(target)}** of Table 4's ASR, PRR, "
             f"BR, AF and TSR cells ({inside} of {len(fitted)} fitted cells with CCR and "
             "tokens) lie inside the simulator's 95% prediction interval for a "
             f"100-scenario corpus at a fresh seed ({fit['evaluations']:,} evaluations, "
             f"{fit['seconds'] / 60:.0f} min; {_budget(fit['budget'])}).", "",
             _reevaluation(fit), "",
             "Each cell: the paper's value, then the simulator's 95% prediction interval for "
             "one new corpus (t, from the replicate corpora) and the paper value's z; "
             "✓ inside, ✗ outside, * fitted.",
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


# Why a Table 4 cell lies outside everything the model reaches (the knob box and every rule
# flip): the paper's own text ruling the value out (quoted), or the mechanism of ours that
# stands in the way. A cell out of reach with no entry here is shown as unexplained.
OUT_OF_REACH: dict[tuple[str, str], str] = {
    ("a2_no_controller", "ip"):
        "ruled out by the paper's own text: \"A2 yields complete infection persistence\" "
        "(§4) and IP counts poison \"eligible for ordinary context construction\" (App. A.1): "
        "A2 has no memory controller, so nothing retires its poison and IP = 1 (the "
        "contradiction ledger)",
    ("a3_no_semantic", "ip"):
        "ruled out by the paper's own text under whole-branch retrieval: A3 \"reintroduces "
        "irrelevant or poisoned information through whole-branch retrieval\" (§4), and IP "
        "counts what context construction can reach (App. A.1); the previous rule "
        "(`branch_folded` = summary) reaches 0.009 but reverses A3's contamination and "
        "tokens (the contradiction ledger)",
    ("a1_unweighted", "asr"):
        "a mechanism of ours in the way: A1 folds finished subtasks into summaries that keep "
        "no poison (`stubs.p_leak` = 0, App. A.4's \"supported results and warnings\"), so "
        "the poison of finished subtasks leaves A1's context and its ASR stays below A2's "
        "(which does not fold). The paper puts A1 above A2 (0.631 against 0.601, within one "
        "corpus's noise); a leaking summary (the `p_leak` flip) raises A1's ASR to 0.55, "
        "not further. The text does not say what keeps A1's poison in play",
    ("a2_no_controller", "avg_prompt_tokens"):
        "a rule of ours in the way: the selector reads every candidate "
        "(`stubs.selector_read_fraction` = 1; §3 counts the selection call), and A2, with no "
        "fold and no suppression, has the whole history as its pool, so every A2 prompt pays "
        "for its history twice (the selector's read, then the chosen memories). Even the "
        "compact index (the 0.1 flip) leaves A2 at 168 tokens per step; the paper's A2 within "
        "11% of Full WMT's tokens needs a selector that reads much less than A2's pool, "
        "which the paper's Table 2 (selection costing 1.3–1.9 times Tree's tokens) argues "
        "against",
    ("a3_no_semantic", "af"):
        "a rule of ours in the way: whole-branch retrieval takes every eligible branch at "
        "every prompt (`stubs.branch_retrieval` = whole, §4's \"whole-branch retrieval\"), "
        "so a poison is retrieved at every prompt from its injection until it is superseded; "
        "AF's floor is then set by how late supersession comes. The paper's 1.98, twice Full "
        "WMT's, implies A3 retrieves a poison about twice; the rule flips (B-bounded branches, "
        "summaries only) reach 2.8 at the lowest",
}


def reach_markdown(fit: dict[str, Any]) -> str:
    """Each Table 4 cell: the paper's value, the fit's prediction interval, the range over
    every evaluated point of the knob box and over every rule flip at the fit, and, for a
    cell outside both, why (`OUT_OF_REACH`)."""
    reach = fit.get("reach")
    if not reach:
        return "Not computed: run `python scripts/calibrate_table4.py reach`."
    cells = {(c["policy"], c["metric"]): c for c in fit["cells"]}
    lines = [f"Over the fit's {reach['evaluations']:,} evaluations (the knob box as the "
             "search covered it: a Latin hypercube over every range, then the generations "
             f"around the optimum; pooled over {fit['budget']['replicates']} × 100 "
             f"trajectories each) and {len(reach['flips'])} rule flips of "
             "[model_decisions.md](model_decisions.md) at the fit (seed "
             f"{reach['flip_seed']}, {reach['flip_replicates']} × 100 trajectories). A cell is "
             "*reached* when the paper's value lies within the range, widened by the half-width "
             "of the cell's 95% prediction interval at the fit (one corpus's noise).", "",
             "| cell | paper | fit: 95% prediction interval | knob box: min – max | rule "
             "flips: min – max (the flip at the nearer end) | reached | if not, why |",
             "|---|---|---|---|---|---|---|"]
    n_reached = n_out = 0
    unexplained = []
    for p in T4:
        for m in METRICS:
            c = cells.get((p, m))
            box = reach["box"].get(f"{p}.{m}")
            if c is None or box is None:
                continue
            flips = [(label, pooled[p][m]) for label, pooled in reach["flips"].items()
                     if pooled.get(p, {}).get(m) is not None
                     and math.isfinite(pooled[p][m])]
            fl_lo = min(flips, key=lambda t: t[1]) if flips else None
            fl_hi = max(flips, key=lambda t: t[1]) if flips else None
            lo = min([box["min"]] + ([fl_lo[1]] if fl_lo else []))
            hi = max([box["max"]] + ([fl_hi[1]] if fl_hi else []))
            half = (c["high"] - c["low"]) / 2.0 if math.isfinite(c["high"] - c["low"]) else 0.0
            paper = c["paper"]
            reached = lo - half <= paper <= hi + half
            near = fl_lo if fl_lo and abs(fl_lo[1] - paper) <= abs(fl_hi[1] - paper) else fl_hi
            why = "–"
            if reached:
                n_reached += 1
            else:
                n_out += 1
                why = OUT_OF_REACH.get((p, m), "")
                if not why:
                    why = "**unexplained**"
                    unexplained.append(f"{POLICIES[p].label} {LABELS.get(m, m)}")
            flip_text = (f"{_n(fl_lo[1])} – {_n(fl_hi[1])} ({near[0]})"
                         if fl_lo and fl_hi and near else "–")
            lines.append(f"| {POLICIES[p].label} {LABELS.get(m, m)} | {_n(paper)} | "
                         f"[{_n(c['low'])}, {_n(c['high'])}] | {_n(box['min'])} – "
                         f"{_n(box['max'])} | {flip_text} | {'yes' if reached else '**no**'} "
                         f"| {why} |")
    head = (f"**{n_reached} of {n_reached + n_out}** of Table 4's cells are within reach of "
            f"the model (knob box or rule flip); {n_out} are not"
            + (f", of which {len(unexplained)} unexplained: {', '.join(unexplained)}."
               if unexplained else ", each explained below."))
    return head + "\n\n" + "\n".join(lines)


def held_out_markdown(ho: dict[str, Any]) -> str:
    lines = [f"Budget per fit: {_budget(ho['budget'])}; every fit starts as the full fit "
             "did.", "",
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
              "paper's value in their 95% prediction interval (tokens: with the 5% "
              "model-discrepancy SD)."]
    return "\n".join(lines)


def robustness_markdown(rb: dict[str, Any]) -> str:
    lines = [f"Plausible fits: every evaluation of the fit whose objective is within "
             f"{rb['threshold']:.0f} of the best (a confidence set at the replicate count "
             f"used, with the misfit's dispersion φ = {rb['dispersion']:.0f}: "
             "`wmtsim.studies.calibration.plausible`; "
             f"{rb['rows'][0].get('n_in_set', rb['rows'][0]['n_near_optimal'])} of the "
             "fit's evaluations), at most 200 of them spread over their ranks, each "
             f"re-simulated at seed {rb.get('seed', 0)} (not the seed the fit was selected "
             "on); rule flips: each of docs/model_decisions.md's rules flipped on the best "
             "fit, at the same seed.", "",
             "| claim | at the best fit | plausible fits | rule flips | all plausible "
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
FIT_COMMAND = ("*Generated by `python scripts/calibrate_table4.py fit --dir results/calibration`"
               " (the shipped fit: 5,270 evaluations, about 10 minutes on two idle cores, "
               "resumable), `reach`, `robustness`, then `fit` and `held-out` for each family "
               "F = paper, paper1, v1 with `--dir results/calibration/families --popsize 3 "
               "--maxiter 4 --polish 150` (the comparison budget), and `docs` (not re-run by "
               "the tests; docs/calibration/*.json, shipped, hold every number and "
               "budget).*")
ROBUSTNESS_COMMAND = ("*Generated by `python scripts/calibrate_table4.py robustness --dir "
                      "docs/calibration` and `docs` "
                      "(about 1 minute, not re-run by the tests; docs/calibration/robustness.json "
                      "holds the plausible fits and flips).*")


def readme_markdown(rb: dict[str, Any]) -> str:
    lines = ["| claim (Table 4) | share of plausible worlds where it holds |", "|---|---|"]
    lines += [f"| {r['claim']} | {_share(r['share'])} ({r['n_near_optimal']} plausible "
              f"fits, {r['n_flips']} rule flips) |" for r in rb["rows"]]
    lines += ["", ROBUSTNESS_COMMAND]
    return "\n".join(lines)


def summary_markdown(fit: dict[str, Any], ho: dict[str, Any] | None,
                     verdict: str = "") -> str:
    """The README's plain statement of the fit and the held-out rows."""
    target = [c for c in fit["cells"] if c["metric"] in ("asr", "prr", "br", "af", "tsr")]
    inside = sum(c["inside"] for c in target)
    tok = [c for c in fit["cells"] if c["metric"] == "avg_prompt_tokens"]
    ok = sum(abs(c["pooled"] / c["paper"] - 1.0) <= 0.15 for c in tok)
    lines = [f"* Fit: **{inside} of {len(target)}** of Table 4's ASR, PRR, BR, AF and TSR "
             "cells lie inside the simulator's 95% prediction interval for a 100-scenario "
             f"corpus at a fresh seed (target: 15); average prompt tokens per step within "
             f"15% of the paper for **{ok} of {len(tok)}** rows (target: 3)."]
    rv = fit.get("reevaluation")
    if rv:
        ins = [r["inside"] for r in rv["rows"]]
        lines.append(f"* Over {len(ins)} fresh seeds: {min(ins)}–{max(ins)} cells inside; "
                     f"objective {rv['objective_mean']:.0f} ± {rv['objective_sd']:.0f} "
                     f"against {rv['objective_at_own_seed']:.0f} at the fit's own seed.")
    if fit.get("reach"):
        lines.append("* " + reach_markdown(fit).split("\n")[0].split(";")[0]
                     + " ([docs/calibration.md](docs/calibration.md#reachability-what-the-"
                     "model-can-reach-of-each-cell)).")
    if ho is not None:
        parts = [f"{POLICIES[r['held_out']].label} {r['inside']}/{r['of']}"
                 for r in ho["rows"]]
        lines.append("* Held out (fit on four rows, predict the fifth; cells inside their "
                     "95% prediction interval, of the fitted metrics): " + ", ".join(parts)
                     + ".")
    if verdict:
        lines.append(f"* Which mechanisms: {verdict[len('Verdict: '):]} (table: "
                     "[docs/calibration.md](docs/calibration.md#which-mechanisms-the-papers-"
                     "text-against-the-previous-rules)).")
    lines += ["", FIT_COMMAND]
    return "\n".join(lines)


def _share(x: float) -> str:
    return "–" if x is None or not math.isfinite(x) else f"{x:.0%}"


def _held_total(ho: dict[str, Any] | None) -> str:
    if ho is None:
        return "–"
    return (f"{sum(r['inside'] for r in ho['rows'])} / {sum(r['of'] for r in ho['rows'])} "
            f"({len(ho['rows'])} rows)")


def _fit_counts(fit: dict[str, Any]) -> tuple[int, int, int, int]:
    target = [c for c in fit["cells"] if c["metric"] in ("asr", "prr", "br", "af", "tsr")]
    tok = [c for c in fit["cells"] if c["metric"] == "avg_prompt_tokens"]
    ok = sum(abs(c["pooled"] / c["paper"] - 1.0) <= 0.15 for c in tok)
    return sum(c["inside"] for c in target), len(target), ok, len(tok)


def _audit_counts(audit: dict[str, Any] | None, family: str) -> tuple[str, str, str]:
    if audit is None or family not in audit["families"]:
        return "–", "–", "–"
    from mechanism_audit import counts

    fam = audit["families"][family]

    def text(rows: list[dict[str, Any]]) -> str:
        c = counts(rows)
        return f"{c['holds']} / {c['fails']} / {c['undecided']}"

    return (text(fam["table4"]["orderings"]),
            text([p for s in fam["table4"]["text"] for p in s["parts"]]),
            text([r for c in fam["table123"] for r in c["rows"]]))


def _criteria(fits: dict[str, dict[str, Any]], held: dict[str, dict[str, Any] | None],
              audit: dict[str, Any] | None) -> list[tuple[str, dict[str, float]]]:
    """What neither family was fitted to, as (criterion, family -> score), higher better."""
    from mechanism_audit import counts

    out: list[tuple[str, dict[str, float]]] = []
    if all(held.get(f) is not None for f in fits):
        out.append(("held-out cells inside their prediction interval", {
            f: float(sum(r["inside"] for r in held[f]["rows"])) for f in fits}))  # type: ignore[index]
    if audit is not None and all(f in audit["families"] for f in fits):
        fam = audit["families"]
        out.append(("Table 4's pairwise orderings that hold", {
            f: float(counts(fam[f]["table4"]["orderings"])["holds"]) for f in fits}))
        out.append(("the paper's text on Table 4 that holds", {
            f: float(counts([p for s in fam[f]["table4"]["text"] for p in s["parts"]])["holds"])
            for f in fits}))
        out.append(("Tables 1–3 statements that hold", {
            f: float(counts([r for c in fam[f]["table123"] for r in c["rows"]])["holds"])
            for f in fits}))
    return out


def verdict_markdown(fits: dict[str, dict[str, Any]], held: dict[str, dict[str, Any] | None],
                     audit: dict[str, Any] | None) -> str:
    """Which family the evidence not fitted to supports, criterion by criterion."""
    parts = []
    wins = {f: 0 for f in fits}
    for name, score in _criteria(fits, held, audit):
        best = max(score.values())
        leaders = [f for f, v in score.items() if v == best]
        if len(leaders) == 1:
            wins[leaders[0]] += 1
            parts.append(f"{name}: **{FAMILIES[leaders[0]].label}** ("
                         + " vs ".join(f"{score[f]:.0f}" for f in fits) + ")")
        else:
            parts.append(f"{name}: a tie ({score[leaders[0]]:.0f})")
    if not parts:
        return "Verdict: not yet computed (run the held-out stage and the audit)."
    ahead = max(wins, key=lambda f: wins[f])
    tied = sum(w == wins[ahead] for w in wins.values()) > 1
    head = ("the criteria split evenly between the families" if tied else
            f"the evidence not fitted to supports **{FAMILIES[ahead].label}** on "
            f"{wins[ahead]} of {len(parts)} criteria")
    shipped = FAMILIES[DEFAULT_FAMILY].label
    return (f"Verdict: {head}; the shipped default is {shipped}. Criterion by criterion ("
            + " vs ".join(FAMILIES[f].label for f in fits) + "): " + "; ".join(parts) + ".")


def comparison_markdown(fits: dict[str, dict[str, Any]],
                        held: dict[str, dict[str, Any] | None],
                        audit: dict[str, Any] | None) -> str:
    """The families side by side: the fit, its noise, and what neither was fitted to."""
    lines = ["| family | objective at the fit (seed 0) | at fresh seeds: mean ± SD | rival − "
             "best at fresh seeds | Table 4 cells inside (fitted) | tokens within 15% | "
             "held-out cells inside | Table 4 orderings (hold / fail / undecided) | the text "
             "on Table 4 | Tables 1–3 |", "|---|---|---|---|---|---|---|---|---|---|"]
    for name, fit in fits.items():
        inside, of, ok, tok = _fit_counts(fit)
        nz = fit.get("noise", {})
        fresh = (f"{nz['best_mean']:.0f} ± {nz['best_sd']:.0f}" if nz.get("seeds") else "–")
        rival = (f"{nz['difference_mean']:+.1f} ± {nz['difference_sd']:.1f}"
                 if nz.get("seeds") else "–")
        orders, text, t123 = _audit_counts(audit, name)
        mark = " (default)" if name == DEFAULT_FAMILY else ""
        lines.append(f"| {FAMILIES[name].label}{mark} | {fit['objective']:.0f} | {fresh} | "
                     f"{rival} | {inside} / {of} | {ok} / {tok} | {_held_total(held.get(name))}"
                     f" | {orders} | {text} | {t123} |")
    lines += ["", verdict_markdown(fits, held, audit)]
    lines += ["", "Rules of each family: " + "; ".join(
        f"**{FAMILIES[n].label}**: " + ", ".join(f"`{k}` = {v!r}" for k, v in
                                                FAMILIES[n].rules.items())
        + f", fitted `{FAMILIES[n].own_knob.key}`" for n in fits) + "."]
    return "\n".join(lines)


def write_docs(root: Path, fit: dict[str, Any], fits: dict[str, dict[str, Any]],
               held: dict[str, dict[str, Any] | None], rb: dict[str, Any] | None,
               audit: dict[str, Any] | None) -> None:
    """``fit``: the shipped fit (the default family, the full budget); ``fits`` and
    ``held``: every family at the comparison budget, the same for each."""
    ho = held.get(DEFAULT_FAMILY)
    cal = root / "docs" / "calibration.md"
    text = cal.read_text(encoding="utf-8")
    text = replace_block(text, "table4-predictive", predictive_markdown(fit))
    text = replace_block(text, "reachability", reach_markdown(fit))
    if ho is not None:
        text = replace_block(text, "held-out", held_out_markdown(ho))
    if rb is not None:
        text = replace_block(text, "robustness", robustness_markdown(rb))
    text = replace_block(text, "family-comparison", comparison_markdown(fits, held, audit))
    cal.write_text(text, encoding="utf-8")
    readme = root / "README.md"
    text = replace_block(readme.read_text(encoding="utf-8"), "calibration-summary",
                         summary_markdown(fit, ho, verdict_markdown(fits, held, audit)))
    if rb is not None:
        text = replace_block(text, "claims-robustness", readme_markdown(rb))
    readme.write_text(text, encoding="utf-8")
    print(f"wrote {cal}" + (" and README.md" if rb is not None else ""))
