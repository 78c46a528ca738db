"""The mechanism audit: every statement the paper makes about a configuration — its text,
quoted, and the orderings of Tables 1–4 — beside the simulator's direction with its paired
95% interval, for each mechanism family (`wmtsim.studies.calibration.families`).

    python scripts/mechanism_audit.py                   # print the summary (both families)
    python scripts/mechanism_audit.py --json FILE       # and write the whole audit as JSON
    python scripts/mechanism_audit.py --write-docs      # make docs: docs/calibration.md,
                                                        # README.md and docs/calibration/audit.json

A statement *holds* when the 95% interval of the simulator's difference lies on the paper's
side of 0, *fails* when it lies on the other side, and is *undecided* when it contains 0.
Where Table 4 prints two equal values (IP 0.009 for the four trees, CCR 1.000 for Linear
and A3), the statement is that they do not differ: it holds when the interval contains 0
and fails otherwise.

Table 4 and the text about it: `paper_poisoning` at n trajectories at seeds 1, 2 and 3
(never seed 0, the seed every fit was selected on), the five configurations on common
random numbers: the shipped fit (docs/calibration/fit-paper.json) and each family at its
comparison fit (docs/calibration/families/fit-<family>.json). Tables 1–3: each model ×
benchmark world (`wmtsim.studies.calibration.benchmarks`) under the family's rules and its fitted
own knob (the profiles were fitted once and are not refitted per family), R replicate corpora of the
benchmark's size; the interval is the mean difference's, normal, from the replicate spread.
The quotes are the paper's text (arXiv 2608.20631v1, §4 and Appendix A.2) as its
source-linked summary reproduces it.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from wmtsim.core.inference import metric_bound, paired_effect
from wmtsim.core.metrics import LABELS, RATIOS
from wmtsim.core.policies import POLICIES, TABLE4_POLICIES
from wmtsim.studies.calibration.families import DEFAULT_FAMILY, FAMILIES
from wmtsim.studies.compare.report import paper_table4
from wmtsim.studies.scenarios.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[1]
CAL = ROOT / "docs" / "calibration"
sys.path.insert(0, str(ROOT / "scripts"))

T4_METRICS = ("asr", "prr", "ip", "br", "af", "tsr", "ccr", "avg_prompt_tokens")

# The paper's text about Table 4's configurations: (quote, where, [(metric, a, b)]) where
# each triple states "a's value is above b's" on the metric.
Q_ROBUST = "Removing retention scoring or lifecycle management weakens robustness"
Q_A3_RETRIEVAL = ("removing semantic retrieval reintroduces irrelevant or poisoned "
                  "information through whole-branch retrieval")
Q_A1 = "A1 permits lower-value memories to remain influential"
Q_A2 = "A2 yields complete infection persistence"
Q_A3 = "A3 increases prompt size and contamination metrics"
Q_WMT = ("WMT records the lowest attack success rate, poison retrieval rate, blast radius, "
         "and amplification factor while matching the lowest infection persistence and "
         "achieving the highest task success rate")
OTHERS = ("linear", "a1_unweighted", "a2_no_controller", "a3_no_semantic")
TEXT_T4: tuple[tuple[str, str, tuple[tuple[str, str, str], ...]], ...] = (
    (Q_ROBUST, "§4", (("asr", "a1_unweighted", "wmt"), ("asr", "a2_no_controller", "wmt"))),
    (Q_A3_RETRIEVAL, "§4", (("prr", "a3_no_semantic", "wmt"),)),
    (Q_A1, "§4", (("prr", "a1_unweighted", "wmt"), ("asr", "a1_unweighted", "wmt"))),
    (Q_A2, "§4", (("ip", "a2_no_controller", "wmt"),)),
    (Q_A3, "§4", (("avg_prompt_tokens", "a3_no_semantic", "wmt"),
                  ("prr", "a3_no_semantic", "wmt"), ("br", "a3_no_semantic", "wmt"),
                  ("af", "a3_no_semantic", "wmt"))),
    (Q_WMT, "§4", tuple((m, o, "wmt") for m in ("asr", "prr", "br", "af") for o in OTHERS)
     + tuple(("tsr", "wmt", o) for o in OTHERS)),
)

# Tables 1–3: the text's statements per model × benchmark, as (quote, [(metric, a, b)]).
TEXT_T123: tuple[tuple[str, tuple[tuple[str, str, str], ...]], ...] = (
    ("WMT achieves the highest accuracy and lowest prompt-token usage among memory-based "
     "configurations", (("tsr", "wmt", "linear"), ("tsr", "wmt", "tree"),
                        ("prompt_tokens", "linear", "wmt"), ("prompt_tokens", "tree", "wmt"))),
    ("WMT outperforms the unweighted tree in all six model–benchmark combinations … while "
     "using fewer prompt tokens each time", (("tsr", "wmt", "tree"),
                                             ("prompt_tokens", "tree", "wmt"))),
    ("Selection generally improves accuracy but increases token usage",
     (("tsr", "tree_selection", "tree"), ("prompt_tokens", "tree_selection", "tree"))),
    ("branch summarization reduces tokens with mixed accuracy effects",
     (("prompt_tokens", "tree", "tree_summary"),
      ("prompt_tokens", "tree_selection", "tree_selection_summary"))),
)


def _verdict(low: float, high: float, sign: int) -> str:
    """holds / fails / undecided for a paper direction ``sign`` (0: the paper ties)."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return "undecided"
    if sign == 0:
        return "holds" if low <= 0 <= high else "fails"
    if sign * low > 0 and sign * high > 0:
        return "holds"
    if sign * low < 0 and sign * high < 0:
        return "fails"
    return "undecided"


def _parts(frame: Any, metric: str) -> tuple[np.ndarray, np.ndarray | None]:
    def col(name: str) -> np.ndarray:
        return frame[f"n_{name}"].to_numpy().astype(np.float64)

    # As the metric declaration says (`wmtsim.core.metrics.DECLARED`): a pooled ratio
    # as Σ/Σ parts, any other metric (tokens per step included) as its per-trajectory value.
    if metric in RATIOS:
        num, den = RATIOS[metric]
        return sum(col(k) for k in num), sum(col(k) for k in den)  # type: ignore[return-value]
    return frame[metric].to_numpy().astype(np.float64), None


def table4_results(scenario: Any, n: int, seed: int) -> dict[str, Any]:
    from wmtsim.engine.simulation import simulate
    from wmtsim.engine.world import generate

    world = generate(scenario.world, seed=seed, n=n)
    return {p: simulate(world, p, params=scenario.params, stubs=scenario.stubs,
                        baselines=scenario.baselines).trajectories for p in TABLE4_POLICIES}


def difference(frames: dict[str, Any], metric: str, a: str, b: str) -> dict[str, Any]:
    """a − b on the pooled metric, paired over trajectories, with its 95% interval."""
    na, da = _parts(frames[a], metric)
    nb, db = _parts(frames[b], metric)
    r = paired_effect(na, nb, da, db, bound=metric_bound(metric), n_resamples=2000)
    return {"diff": r["mean"], "low": r["low"], "high": r["high"]}


def audit_table4(frames: dict[str, Any], sd: dict[tuple[str, str], float]) -> dict[str, Any]:
    """``sd``: each cell's SD over corpora of 100 scenarios (the fit's replicates), to
    say whether the paper's own difference is beyond the noise of its one corpus."""
    paper = paper_table4()
    orderings = []
    for m in T4_METRICS:
        for i, a in enumerate(TABLE4_POLICIES):
            for b in TABLE4_POLICIES[i + 1:]:
                d = paper[a][m] - paper[b][m]
                sign = 0 if abs(d) < 1e-12 else (1 if d > 0 else -1)
                sim = difference(frames, m, a, b)
                # Two cells of one corpus, as if independent (the paper's configurations
                # share scenarios, so this noise is if anything too large).
                noise = 1.96 * math.hypot(sd.get((a, m), math.nan), sd.get((b, m), math.nan))
                orderings.append({"metric": m, "a": a, "b": b, "paper_diff": d, **sim,
                                  "paper_noise": noise,
                                  "paper_resolved": bool(sign != 0 and abs(d) > noise),
                                  "verdict": _verdict(sim["low"], sim["high"], sign)})
    text = []
    for quote, where, triples in TEXT_T4:
        parts = []
        for m, a, b in triples:
            sim = difference(frames, m, a, b)
            parts.append({"metric": m, "a": a, "b": b, **sim,
                          "verdict": _verdict(sim["low"], sim["high"], 1)})
        text.append({"quote": quote, "where": where, "parts": parts})
    # What Table 4's token column can count: every call (§3's words, the default) or the
    # reasoner's prompt alone (every call less memory's own: selector, summariser).
    tokens = []
    for p in TABLE4_POLICIES:
        f = frames[p]  # per step, averaged over trajectories, as `avg_prompt_tokens` is
        steps = f["n_prompt_steps"].to_numpy().astype(np.float64)
        every = float(np.mean(f["avg_prompt_tokens"].to_numpy()))
        own = float(np.mean(f["n_memory_tokens"].to_numpy() / steps))
        tokens.append({"policy": p, "paper": paper[p]["avg_prompt_tokens"],
                       "every_call": every, "reasoner_only": every - own})
    return {"orderings": orderings, "text": text, "tokens": tokens}


def audit_table123(family: str, own: dict[str, Any], replicates: int) -> list[dict[str, Any]]:
    from wmtsim.studies.calibration.benchmarks import (
        BENCHMARKS,
        MODELS,
        benchmark_scenario,
        paper_cell,
        replicate_cell,
    )

    fam = FAMILIES[family]
    cells = []
    for bench in BENCHMARKS:
        for model in MODELS:
            sc = fam.apply(benchmark_scenario(bench, model)).with_overrides(own)
            rep = replicate_cell(sc, bench, replicates)
            paper = paper_cell(bench, model)
            rows = []
            for quote, triples in TEXT_T123:
                for m, a, b in triples:
                    x = rep.values[a][m] - rep.values[b][m]
                    x = x[np.isfinite(x)]
                    mean = float(x.mean())
                    half = 1.96 * float(x.std(ddof=1)) / math.sqrt(x.size)
                    d = paper[a][m] - paper[b][m]
                    rows.append({"quote": quote, "metric": m, "a": a, "b": b,
                                 "paper_diff": d, "diff": mean, "low": mean - half,
                                 "high": mean + half, "paper_sign": int(np.sign(d)),
                                 "verdict": _verdict(mean - half, mean + half, 1)})
            cells.append({"benchmark": bench, "model": model, "rows": rows})
    return cells


def family_scenario(family: str, fit_file: Path
                    ) -> tuple[Any, dict[str, Any], dict[tuple[str, str], float]]:
    """paper_poisoning under ``family``'s rules and the fit in ``fit_file``; the fitted own
    knob; each cell's SD over replicate corpora at the fit."""
    fam = FAMILIES[family]
    sc = fam.apply(load_scenario("paper_poisoning"))
    own: dict[str, Any] = {}
    sd: dict[tuple[str, str], float] = {}
    if fit_file.is_file():
        data = json.loads(fit_file.read_text("utf-8"))
        sc = sc.with_overrides(data["fitted"])
        own = {fam.own_knob.key: data["fitted"][fam.own_knob.key]}
        sd = {(c["policy"], c["metric"]): c["sd"] for c in data["cells"]}
    return sc, own, sd


# Where a Table 4 ordering that does not hold comes from, when it is not noise: the
# paper's own contradictions (scripts/paper_ledger.py) or a rule of ours, quoted in
# docs/model_decisions.md.
LEDGER_IP = ("the contradiction ledger: IP of A2 (\"complete infection persistence\") and of "
             "A3 (\"reintroduces … poisoned information\") against the table's 0.009")
SELECTOR_READ = ("our rule that the selector reads every candidate (§3 counts every call, "
                 "\"including … semantic selection\"): a selecting row's prompt holds its "
                 "pool twice, and the fit lowers the base prompt that would keep Linear above")


def trace(r: dict[str, Any]) -> str:
    """The quoted rule or ledger entry an ordering that does not hold comes from ('' if
    none)."""
    pair = {r["a"], r["b"]}
    if r["metric"] == "ip" and pair & {"a2_no_controller", "a3_no_semantic"}:
        return LEDGER_IP
    if r["metric"] == "avg_prompt_tokens" and (
            pair & {"a1_unweighted", "a2_no_controller", "wmt"} or "linear" in pair):
        return SELECTOR_READ
    return ""


def _traced_text(orderings: list[dict[str, Any]]) -> str:
    out = [r for r in orderings if r["verdict"] != "holds"]
    traced = sum(bool(trace(r)) for r in out)
    return (f"Of the {len(out)} that do not hold, {traced} are traced to the paper's "
            f"contradictions or to a quoted rule of ours and {len(out) - traced} are not "
            f"(held or traced: {len(orderings) - len(out) + traced} of {len(orderings)}).")


def counts(rows: list[dict[str, Any]]) -> dict[str, int]:
    return {v: sum(r["verdict"] == v for r in rows) for v in ("holds", "undecided", "fails")}


# The audit never runs on seed 0, the seed every fit was selected on.
SEEDS = (1, 2, 3)


def run(n: int, replicates: int, seeds: tuple[int, ...] = SEEDS) -> dict[str, Any]:
    """The shipped fit (the default family, docs/calibration/fit-paper.json) at each of
    ``seeds``; every family at its comparison fit (docs/calibration/families/) at the
    first seed."""
    out: dict[str, Any] = {"n": n, "replicates": replicates, "seeds": list(seeds),
                           "families": {}}
    t0 = time.perf_counter()
    sc, own, sd = family_scenario(DEFAULT_FAMILY, CAL / f"fit-{DEFAULT_FAMILY}.json")
    by_seed = {str(s): audit_table4(table4_results(sc, n, s), sd) for s in seeds}
    out["shipped"] = {"family": DEFAULT_FAMILY, "table4": by_seed[str(seeds[0])],
                      "by_seed": {s: {"orderings": counts(t["orderings"]),
                                      "text": counts([p for x in t["text"]
                                                      for p in x["parts"]])}
                                  for s, t in by_seed.items()},
                      "table123": audit_table123(DEFAULT_FAMILY, own, replicates)}
    print(f"[shipped fit] Table 4 orderings by seed "
          f"{ {s: v['orderings'] for s, v in out['shipped']['by_seed'].items()} }, Tables 1–3 "
          f"{counts([r for c in out['shipped']['table123'] for r in c['rows']])} "
          f"({time.perf_counter() - t0:.0f} s)", flush=True)
    for family in FAMILIES:
        t0 = time.perf_counter()
        sc, own, sd = family_scenario(family, CAL / "families" / f"fit-{family}.json")
        t4 = audit_table4(table4_results(sc, n, seeds[0]), sd)
        t123 = audit_table123(family, own, replicates)
        out["families"][family] = {"table4": t4, "table123": t123,
                                   "seconds": time.perf_counter() - t0}
        print(f"[{family}] Table 4 orderings {counts(t4['orderings'])}, text "
              f"{counts([p for s in t4['text'] for p in s['parts']])}, Tables 1–3 "
              f"{counts([r for c in t123 for r in c['rows']])} "
              f"({time.perf_counter() - t0:.0f} s)", flush=True)
    return out


# --- Markdown ------------------------------------------------------------------------------


def _label(p: str) -> str:
    return POLICIES[p].label


def _num(x: float) -> str:
    if not math.isfinite(x):
        return "–"
    return f"{x:+.3g}" if abs(x) < 10 else f"{x:+.1f}"


def _interval(r: dict[str, Any]) -> str:
    return f"{_num(r['diff'])} [{_num(r['low'])}, {_num(r['high'])}]"


def _count_text(c: dict[str, int]) -> str:
    return f"{c['holds']} hold, {c['fails']} fail, {c['undecided']} undecided"


def audit_markdown(audit: dict[str, Any]) -> str:
    """docs/calibration.md's audit block: the shipped fit in full, the families summed."""
    fam = audit["shipped"]
    t4, t123 = fam["table4"], fam["table123"]
    seeds = audit["seeds"]
    per_seed = "; ".join(f"seed {s}: {_count_text(v['orderings'])}"
                         for s, v in fam["by_seed"].items())
    lines = [f"Family **{FAMILIES[DEFAULT_FAMILY].label}** (the default), `paper_poisoning` "
             f"at its shipped fit, n = {audit['n']} at seed {seeds[0]} (never seed 0, the "
             f"seed the fit was selected on); Tables 1–3 on {audit['replicates']} "
             "replicate corpora per model × benchmark. Difference = first − second, pooled "
             "Σ/Σ, paired, 95% interval. Table 4's 80 orderings at each fresh seed: "
             f"{per_seed}.", "",
             "**The paper's text about Table 4's configurations** (§4):", "",
             "| statement (quoted) | as tested | simulated difference | verdict |",
             "|---|---|---|---|"]
    for s in t4["text"]:
        for k, p in enumerate(s["parts"]):
            head = f"\"{s['quote']}\"" if k == 0 else ""
            lines.append(f"| {head} | {LABELS.get(p['metric'], p['metric'])}: "
                         f"{_label(p['a'])} > {_label(p['b'])} | {_interval(p)} | "
                         f"{p['verdict']} |")
    resolved = [r for r in t4["orderings"] if r["paper_resolved"]]
    lines += ["", f"**Table 4's 80 pairwise orderings**: {_count_text(counts(t4['orderings']))}."
              f" Of the {len(resolved)} whose paper difference exceeds the noise of one "
              "100-scenario corpus (1.96 · √(SD_a² + SD_b²), the SDs of the simulator's "
              "replicate corpora at the fit; for tokens at least 5% of the paper's value, the "
              f"model-discrepancy SD): {_count_text(counts(resolved))}. "
              + _traced_text(t4["orderings"]) + " The ones that do not hold, each traced "
              "where it can be:", "",
              "| metric | first | second | paper's difference (corpus noise) | simulated | "
              "verdict | traced to |", "|---|---|---|---|---|---|---|"]
    for r in t4["orderings"]:
        if r["verdict"] != "holds":
            within = "" if r["paper_resolved"] else ", within noise"
            lines.append(f"| {LABELS.get(r['metric'], r['metric'])} | {_label(r['a'])} | "
                         f"{_label(r['b'])} | {_num(r['paper_diff'])} (± "
                         f"{abs(r['paper_noise']):.2g}{within}) | {_interval(r)} | "
                         f"{r['verdict']} | {trace(r) or '**not traced**'} |")
    lines += ["", "**What Table 4's \"avg prompt tokens\" counts.** §3: \"Prompt-token usage "
              "counts all language-model calls, including base reasoning, semantic selection, "
              "and branch summarization\"; App. A.2 says the same of Tables 1–3. So every "
              "table here counts every call; the reasoner's prompt alone is shown beside it "
              "for reference (tokens per prompt step, pooled):", "",
              "| configuration | paper | every call (compared) | the reasoner's prompt only |",
              "|---|---|---|---|"]
    for r in t4["tokens"]:
        lines.append(f"| {_label(r['policy'])} | {r['paper']:.1f} | {r['every_call']:.1f} | "
                     f"{r['reasoner_only']:.1f} |")
    lines += ["", "**Tables 1–3, per model × benchmark** (the text's statements, App. A.2 "
              "and §4; tokens per task):", "",
              "| statement (quoted) | as tested | " + " | ".join(
                  f"{c['benchmark']} {c['model']}" for c in t123) + " |",
              "|---|---|" + "---|" * len(t123)]
    for i, row in enumerate(t123[0]["rows"]):
        head = f"\"{row['quote']}\"" if i == 0 or t123[0]["rows"][i - 1]["quote"] != \
            row["quote"] else ""
        cells = []
        for c in t123:
            r = c["rows"][i]
            agrees = "" if r["paper_sign"] > 0 else " (paper: not so)"
            cells.append(f"{r['verdict']}{agrees}")
        lines.append(f"| {head} | {row['metric']}: {row['a']} > {row['b']} | "
                     + " | ".join(cells) + " |")
    lines += ["", "\"(paper: not so)\": the paper's own numbers in that cell go the other way "
              "(the text says \"generally\", \"mixed\")."]
    return "\n".join(lines)


def summary_markdown(audit: dict[str, Any]) -> str:
    """The README's count, per family."""
    lines = ["| family | Table 4's 80 orderings | the text on Table 4 (" + str(sum(
        len(s[2]) for s in TEXT_T4)) + ") | Tables 1–3 statements (" + str(
        6 * sum(len(t) for _, t in TEXT_T123)) + ") |", "|---|---|---|---|"]
    shipped = audit["shipped"]
    seeds = " / ".join(f"{v['orderings']['holds']}" for v in shipped["by_seed"].values())
    t4 = shipped["table4"]
    held_or_traced = sum(r["verdict"] == "holds" or bool(trace(r)) for r in t4["orderings"])
    lines.append(f"| {FAMILIES[DEFAULT_FAMILY].label}, shipped fit (default) | "
                 f"{_count_text(counts(t4['orderings']))} (holding at seeds "
                 f"{', '.join(shipped['by_seed'])}: {seeds}; held or traced to the "
                 f"paper's contradictions or a quoted rule: {held_or_traced}) | "
                 f"{_count_text(counts([p for s in t4['text'] for p in s['parts']]))} | "
                 f"{_count_text(counts([r for c in shipped['table123'] for r in c['rows']]))} |")
    for family, fam in audit["families"].items():
        t4 = fam["table4"]
        text = [p for s in t4["text"] for p in s["parts"]]
        t123 = [r for c in fam["table123"] for r in c["rows"]]
        lines.append(f"| {FAMILIES[family].label}, comparison fit | "
                     f"{_count_text(counts(t4['orderings']))}"
                     f" | {_count_text(counts(text))} | {_count_text(counts(t123))} |")
    lines += ["", f"*Generated by `python scripts/mechanism_audit.py --write-docs` (n = "
              f"{audit['n']} at seeds {', '.join(map(str, audit['seeds']))}, never the fits' "
              f"seed 0; {audit['replicates']} replicate corpora per Tables 1–3 cell; the "
              "families at their comparison fits, docs/calibration/families/; a few "
              "minutes; `make docs`; docs/calibration/audit.json holds every interval).*"]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=2000, help="Table 4 trajectories (default 2000)")
    ap.add_argument("--replicates", type=int, default=10,
                    help="replicate corpora per Tables 1–3 cell (default 10)")
    ap.add_argument("--json", type=Path, help="write the audit as JSON here")
    ap.add_argument("--write-docs", action="store_true",
                    help="rewrite docs/calibration.md's audit block, the README's summary "
                         "and docs/calibration/audit.json (a `make docs` step)")
    args = ap.parse_args()
    audit = run(args.n, args.replicates)
    if args.json:
        args.json.write_text(json.dumps(audit, indent=1, default=float), encoding="utf-8")
    if args.write_docs:
        from doc_blocks import replace_block

        (CAL / "audit.json").write_text(json.dumps(audit, indent=1, default=float),
                                        encoding="utf-8")
        cal = ROOT / "docs" / "calibration.md"
        cal.write_text(replace_block(cal.read_text("utf-8"), "mechanism-audit",
                                     audit_markdown(audit)), encoding="utf-8")
        readme = ROOT / "README.md"
        readme.write_text(replace_block(readme.read_text("utf-8"), "mechanism-audit",
                                        summary_markdown(audit)), encoding="utf-8")
        print("wrote docs/calibration.md, README.md and docs/calibration/audit.json")
    else:
        print(summary_markdown(audit))


if __name__ == "__main__":
    main()
