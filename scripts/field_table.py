"""The field's generated text: README's field table, docs/field.md's budget curves,
parity tables and robustness table, and the curve figures (docs/figures/).

    python scripts/field_table.py readme             # README's <!-- generated:field --> block
    python scripts/field_table.py docs               # docs/field.md's generated blocks
    python scripts/field_table.py table paper_poisoning gaia_like --n 300   # all metrics

Every number comes from the engine (`wmtsim.studies.field`: `curves`, `parity`,
`robustness`); a block is replaced between its ``<!-- generated:NAME -->`` and
``<!-- /generated:NAME -->`` markers, nothing else in the file changes.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import polars as pl

from wmtsim.core.bootstrap import mean_ci
from wmtsim.core.formatting import interval, num
from wmtsim.core.inference import FAILS, HOLDS, HOLDS_NS, TIE, VERDICTS, paired_difference
from wmtsim.core.metrics import SUMMARY_METRICS
from wmtsim.core.policies import FIELD_POLICIES, POLICIES
from wmtsim.studies.compare.report import run_policies
from wmtsim.studies.field.curves import (
    budget_curves,
    curve_chart,
    curves_family,
    curves_markdown,
)
from wmtsim.studies.field.parity import parity_markdown, parity_table
from wmtsim.studies.field.robustness import robustness, robustness_markdown
from wmtsim.studies.scenarios.scenario import Scenario, load_scenario

ROOT = Path(__file__).resolve().parents[1]
SHOWN = [m for m in SUMMARY_METRICS if m not in ("steps", "llm_calls")] + ["llm_calls"]
# The shipped comparisons, each over ½B, B and 2B of its own (fitted) budget B, so every
# curve crosses the point where B starts to bind; `stubs.top_k` is 0 (no item cap) in both.
SCENARIOS = ("paper_poisoning", "gaia_like")


def budgets_for(sc: Scenario) -> tuple[int, int, int]:
    """½B, B and 2B of the scenario's own budget."""
    b = int(sc.params.budget)
    return (b // 2, b, 2 * b)


README_POLICIES = ("traceretain_z", "traceretain_conflict", "generative_agents",
                   "generative_agents_code", "memorybank", "memorybank_code", "memgpt",
                   "mem0")
N = 300


def replace_block(path: Path, name: str, body: str) -> None:
    """Put ``body`` between the ``generated:name`` markers of ``path``."""
    text = path.read_text(encoding="utf-8")
    pattern = re.compile(rf"(<!-- generated:{re.escape(name)} -->\n).*?(<!-- /generated:"
                         rf"{re.escape(name)} -->)", re.S)
    if not pattern.search(text):
        raise SystemExit(f"{path}: no <!-- generated:{name} --> block")
    path.write_text(pattern.sub(lambda m: m.group(1) + body + m.group(2), text),
                    encoding="utf-8")


def readme_block(n: int = N) -> str:
    """README's field table: TSR of WMT, then Δ TSR [95%] per field policy and budget."""
    name = "paper_poisoning"
    sc = load_scenario(name)
    frame = budget_curves(sc, budgets_for(sc), ("wmt", *README_POLICIES), n=n,
                          metrics=("tsr",))
    return readme_table(frame, n)


def readme_table(frame: pl.DataFrame, n: int = N) -> str:
    """The README's field block from a budget-curves frame (`budget_curves`, or
    ``curves.parquet`` as `wmtsim compare --budget` writes it)."""
    name = "paper_poisoning"
    sc = load_scenario(name)
    budgets = budgets_for(sc)
    frame = frame.filter(pl.col("metric") == "tsr")
    rows = {(r["policy"], r["budget"]): r for r in frame.iter_rows(named=True)}
    head = "| policy | " + " | ".join(f"B = {b}" for b in budgets) + " |"
    lines = [head, "|---" * (len(budgets) + 1) + "|",
             "| `wmt` (TSR) | " + " | ".join(num(rows['wmt', b]['mean'])
                                             for b in budgets) + " |"]

    for p in README_POLICIES:
        cells = []
        for b in budgets:
            r = rows[p, b]
            tag = {HOLDS: "", FAILS: " WMT worse (significant)"}.get(r["verdict"],
                                                                     " not significant")
            # The precision policy, with the minus sign of typeset text.
            d = interval(r["d_mean"], r["d_low"], r["d_high"], sign=True).replace("-", "−")
            cells.append(f"{d}{tag}")
        lines.append(f"| `{p}` | " + " | ".join(cells) + " |")
    lines.append("")
    for b in budgets:
        by = {v: [f"`{p}`" for p in README_POLICIES if rows[p, b]["verdict"] == v]
              for v in VERDICTS}
        parts = [f"significantly better than {len(by[HOLDS])} of {len(README_POLICIES)}"]
        if by[HOLDS_NS] or by[TIE]:
            parts.append("not significantly different from "
                         + ", ".join(by[HOLDS_NS] + by[TIE]))
        if by[FAILS]:
            parts.append("significantly worse than " + ", ".join(by[FAILS]))
        lines.append(f"At B = {b} WMT is " + "; ".join(parts) + ".")
        lines.append("")
    lines.append(curves_family(frame))
    lines.append("")
    lines.append(f"*Generated by `{readme_command(n)}`* (seed {sc.seed}; TSR; Δ = policy − "
                 f"WMT at the same B, paired 95% interval; B = {sc.params.budget} is the "
                 "scenario's fitted budget; tests/test_readme_numbers.py re-runs it and "
                 "compares every cell.)")
    return "\n".join(lines) + "\n"


def readme_command(n: int = N) -> str:
    """The command line that prints the README field table's numbers."""
    budgets = ",".join(map(str, budgets_for(load_scenario("paper_poisoning"))))
    return (f"wmtsim compare paper_poisoning --budget {budgets} --n {n} "
            + " ".join(f"-p {p}" for p in ("wmt", *README_POLICIES)))


def docs_blocks(n: int = N, seeds: int = 3) -> None:
    """docs/field.md's curves, parity and robustness blocks, and the figures."""
    import vl_convert as vlc

    doc = ROOT / "docs" / "field.md"
    rob = []
    for name in SCENARIOS:
        sc = load_scenario(name)
        budgets = budgets_for(sc)
        frame = budget_curves(sc, budgets, tuple(POLICIES), n=n)
        replace_block(doc, f"field-curves.{name}",
                      f"### {name} (B = {', '.join(map(str, budgets))})\n\n"
                      + curves_markdown(frame))
        spec = curve_chart(frame, f"{name}: TSR vs prompt tokens over B").to_json()
        (ROOT / "docs" / "figures" / f"field_curves_{name}.png").write_bytes(
            vlc.vegalite_to_png(spec, scale=2))
        replace_block(doc, f"parity.{name}",
                      f"### {name} (B = {sc.params.budget}, item cap `stubs.top_k` = "
                      f"{sc.stubs.top_k or 'none'}, n = {n})\n\n"
                      + parity_markdown(parity_table(sc, tuple(POLICIES), n=n)))
        r = robustness(sc, budgets, [sc.seed + k for k in range(seeds)], FIELD_POLICIES, n=n)
        rob.append(f"### {name} (seeds {sc.seed}–{sc.seed + seeds - 1}, n = {n})\n\n"
                   + robustness_markdown(r, sc.seed))
    replace_block(doc, "robustness", "\n".join(rob))


def table(name: str, n: int, seed: int | None, shown: list[str] = SHOWN) -> str:
    """Every policy on a scenario, every metric: mean [95%] and Δ vs wmt (paired)."""
    sc = load_scenario(name)
    res = run_policies(sc, tuple(POLICIES), n=n, seed=seed)
    ref = res["wmt"]
    lines = [f"### {name} (n = {n}, seed = {ref.seed}; Δ = policy − wmt, paired)", "",
             "| policy | " + " | ".join(shown) + " |",
             "|---|" + "---|" * len(shown)]
    for p, r in res.items():
        cells = []
        for m in shown:
            x = r.trajectories[m].to_numpy().astype(float)
            s = mean_ci(x, n_resamples=2000, seed=0)
            cell = f"{s['mean']:.3g} [{s['low']:.3g}, {s['high']:.3g}]"
            if p != "wmt":
                d = paired_difference(r, ref, m, n_resamples=2000)
                cell += f"<br>Δ {d['mean']:+.3g} [{d['low']:+.3g}, {d['high']:+.3g}]"
            cells.append(cell)
        lines.append(f"| {p} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="command", required=True)
    sub.add_parser("readme", help="README's <!-- generated:field --> block")
    docs = sub.add_parser("docs", help="docs/field.md's generated blocks and figures")
    docs.add_argument("--seeds", type=int, default=3)
    t = sub.add_parser("table", help="every metric of every policy (Markdown)")
    t.add_argument("scenarios", nargs="+")
    t.add_argument("--seed", type=int, default=None)
    t.add_argument("--metrics", default=",".join(SHOWN),
                   help="comma-separated metrics (default: all)")
    for p in (sub.choices["readme"], docs, t):
        p.add_argument("--n", type=int, default=N)
    a = ap.parse_args()
    if a.command == "readme":
        replace_block(ROOT / "README.md", "field", readme_block(a.n))
    elif a.command == "docs":
        docs_blocks(a.n, a.seeds)
    else:
        shown = [m.strip() for m in a.metrics.split(",")]
        unknown = sorted(set(shown) - set(SUMMARY_METRICS))
        if unknown:
            ap.error(f"unknown metric(s) {', '.join(unknown)}; allowed: "
                     f"{', '.join(SUMMARY_METRICS)}")
        for name in a.scenarios:
            print(table(name, a.n, a.seed, shown))


if __name__ == "__main__":
    main()
