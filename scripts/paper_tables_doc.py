"""Regenerate the generated parts of docs/calibration.md and the README's headline table
from the current engine: `wmtsim compare paper_poisoning --n 2000` and `wmtsim compare
gaia_like`, rendered as Markdown.

    python scripts/paper_tables_doc.py

The blocks between ``<!-- generated:NAME -->`` and ``<!-- /generated:NAME -->`` are
replaced; the prose around them is not (re-read it when the numbers move).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from wmtsim.studies.report import (
    LABELS,
    Comparison,
    compare,
    paper_table4,
    policy_label,
    table4_feasibility,
)
from wmtsim.studies.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[1]
T4_METRICS = ("asr", "prr", "ip", "br", "af", "tsr", "ccr", "avg_prompt_tokens")


def _num(x: float, big: bool = False) -> str:
    if x is None or not math.isfinite(x):
        return "–"
    return f"{x:,.0f}" if big or abs(x) >= 100 else f"{x:.3f}"


def _cell(c: dict[str, Any], value: str = "pooled") -> str:
    lo, hi = (c["pooled_low"], c["pooled_high"]) if value == "pooled" else (c["low"], c["high"])
    v = c[value]
    return f"{_num(v)} [{_num(lo)}, {_num(hi)}]"


def table4_markdown(comp: Comparison) -> str:
    pols = comp.policies
    head = "| metric | " + " | ".join(f"{policy_label(p)} | paper" for p in pols) + " |"
    lines = [head, "|---|" + "---|---|" * len(pols)]
    for m in T4_METRICS:
        row = [LABELS.get(m, m)]
        for p in pols:
            c = comp.cell(p, m)
            row += [_cell(c), "–" if c.get("paper") is None else f"{c['paper']:g}"]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def headline_markdown(comp: Comparison) -> str:
    """The README's short table: ASR, BR and TSR pooled, paper beside."""
    lines = ["| configuration | ASR ↓ (paper) | BR ↓ (paper) | TSR ↑ (paper) |",
             "|---|---|---|---|"]
    for p in comp.policies:
        cells = []
        for m in ("asr", "br", "tsr"):
            c = comp.cell(p, m)
            cells.append(f"{_num(c['pooled'])} ({c['paper']:.3f})")
        lines.append(f"| {policy_label(p)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def verdicts_markdown(comp: Comparison) -> str:
    """Per Table 4 metric: does Full WMT win, tie or lose against each other
    configuration (paired difference of pooled values, its test at two-sided 5%)?"""
    import polars as pl

    from wmtsim.studies.verdicts import effect_text

    out = []
    for m in ("asr", "prr", "br", "af", "tsr"):
        higher = m == "tsr"
        wins, ties, losses = [], [], []
        for p in comp.policies:
            if p == "wmt":
                continue
            d = comp.paired.filter((pl.col("policy") == p) & (pl.col("metric") == m)).row(
                0, named=True)
            pooled = d.get("pooled") is not None
            prefix = "pooled" if pooled else ""
            pv = d["pooled_p"] if pooled else d["p"]
            text = f"{policy_label(p)} {effect_text(d, prefix)}"
            mean = d["pooled"] if pooled else d["mean"]
            sig = pv <= 0.05
            better_other = sig and (mean > 0 if higher else mean < 0)
            worse_other = sig and (mean < 0 if higher else mean > 0)
            (losses if better_other else wins if worse_other else ties).append(text)
        parts = []
        if wins:
            parts.append("wins against " + "; ".join(wins))
        if ties:
            parts.append("**no significant difference** from " + "; ".join(ties))
        if losses:
            parts.append("**loses** to " + "; ".join(losses))
        out.append(f"* **{m.upper()}**: Full WMT " + ", ".join(parts) + ".")
    out.append("")
    out.append("(other − Full WMT, paired over the same trajectories: the difference of "
               "pooled values Σ/Σ with its 95% interval; significant = its own paired test "
               "at two-sided 5%, uncorrected — the claims above are the corrected family.)")
    return "\n".join(out)


def checks_markdown(comp: Comparison) -> str:
    family = comp.checks[0]["family"] if comp.checks else ""
    lines = [f"Family: {family}.", "", "| claim | verdict | test | p (adjusted) | detail |",
             "|---|---|---|---|---|"]
    for c in comp.checks:
        lines.append(f"| {c['claim']} | {c['verdict']} | {c['test']} | "
                     f"{c['p_adjusted']:.2g} | {c['detail']} |")
    return "\n".join(lines)


def errors_markdown(comp: Comparison) -> str:
    table = paper_table4()
    pols = comp.policies
    lines = ["| metric | " + " | ".join(policy_label(p) for p in pols) + " |",
             "|---|" + "---|" * len(pols)]
    for m in ("asr", "prr", "br", "af", "tsr", "ip", "ccr", "avg_prompt_tokens"):
        row = [LABELS.get(m, m) + ("" if m in ("asr", "prr", "br", "af", "tsr")
                                   else " (not fitted)")]
        for p in pols:
            sim = comp.cell(p, m)["pooled"]
            row.append(f"{sim - table[p][m]:+.3f}" if m in table[p] else "–")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def feasibility_markdown() -> str:
    lines = ["| configuration | paper ASR | paper TSR | TSR bound, ASR per trajectory | "
             "TSR bound, ASR pooled (best case) |", "|---|---|---|---|---|"]
    for r in table4_feasibility():
        def b(ok: bool, v: float) -> str:
            return f"{v:.3f}" + ("" if ok else " **violated**")
        lines.append(f"| {policy_label(r['policy'])} | {r['paper_asr']:.3f} | "
                     f"{r['paper_tsr']:.3f} | {b(r['holds_mean'], r['bound_mean'])} | "
                     f"{b(r['holds_pooled'], r['bound_pooled'])} |")
    return "\n".join(lines)


def table123_markdown(comp: Comparison) -> str:
    metrics = ("tsr", "accuracy", "prompt_tokens", "avg_prompt_tokens", "ccr")
    lines = ["| metric | " + " | ".join(policy_label(p) for p in comp.policies) + " |",
             "|---|" + "---|" * len(comp.policies)]
    for m in metrics:
        lines.append(f"| {LABELS.get(m, m)} | "
                     + " | ".join(_cell(comp.cell(p, m)) for p in comp.policies) + " |")
    lines += ["", checks_markdown(comp)]
    return "\n".join(lines)


def replace_block(text: str, name: str, body: str) -> str:
    pattern = re.compile(rf"(<!-- generated:{name} -->\n)(?:.*?\n)?(<!-- /generated:{name} -->)",
                         re.S)
    if not pattern.search(text):
        raise SystemExit(f"block generated:{name} not found")
    return pattern.sub(lambda m: m.group(1) + body.rstrip("\n") + "\n" + m.group(2), text)


def main() -> None:
    t4 = compare(load_scenario("paper_poisoning"), n=2000)
    from wmtsim.core.inference import VERDICTS

    counts = ", ".join(f"{sum(c['verdict'] == v for c in t4.checks)} {v}" for v in VERDICTS)
    summary_line = (f"{t4.significant} of the paper's {len(t4.checks)} Table 4 claims hold "
                    f"significantly ({counts}; paired tests, Holm over the "
                    f"{len(t4.checks)} claims, two-sided 5%)")
    t123 = compare(load_scenario("gaia_like"))
    cal = ROOT / "docs" / "calibration.md"
    text = cal.read_text(encoding="utf-8")
    for name, body in (("table4", table4_markdown(t4)), ("checks", checks_markdown(t4)),
                       ("errors", errors_markdown(t4)),
                       ("feasibility", feasibility_markdown()),
                       ("summary", f"**{summary_line}** (n = 2000, seed 0)."),
                       ("table123", table123_markdown(t123))):
        text = replace_block(text, name, body)
    cal.write_text(text, encoding="utf-8")
    readme = ROOT / "README.md"
    text = readme.read_text(encoding="utf-8")
    text = replace_block(text, "headline", headline_markdown(t4) + "\n\n"
                         f"**{summary_line}** (n = 2000, seed 0; pooled over trajectories, "
                         "as the paper's table).\n\n" + verdicts_markdown(t4))
    readme.write_text(text, encoding="utf-8")
    print(f"wrote {cal} and {readme}: {summary_line}")


if __name__ == "__main__":
    main()
