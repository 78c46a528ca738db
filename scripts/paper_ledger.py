"""The ledger of the paper's internal contradictions: where its text and its Table 4 cannot
both hold under its own definitions, each with both quotes and the numbers, and what
wmtsim does about it. Also the paper's numeric statements about Tables 1–3, checked
against its own tables (they all agree: the ledger is not a selection of the awkward
ones).

    python scripts/paper_ledger.py            # print
    python scripts/paper_ledger.py --write    # README.md and docs/calibration.md blocks

The quotes are the paper's (arXiv 2608.20631v1, §4 and Appendix A) as its source-linked
summary reproduces them; the numbers are read from wmtsim/data/paper_tables.csv.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from wmtsim.studies.compare.report import paper_rows, paper_table4

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

IP_DEFINITION = ("IP measures injected poisoned memories that remain active or eligible for "
                 "ordinary context construction")


@dataclass(frozen=True)
class Contradiction:
    """Two things the paper says that cannot both be true: the text, the table, why, and what
    wmtsim does (a rule of ours, named)."""

    name: str
    text: str  # the paper's sentence(s), quoted, with where
    table: Callable[[dict[str, dict[str, float]]], str]  # the table's numbers, rendered
    why: str
    wmtsim: str


LEDGER = (
    Contradiction(
        "A2's infection persistence",
        '§4: "A2 yields complete infection persistence"; App. A.1: "' + IP_DEFINITION + '"',
        lambda t: (f"Table 4: IP = {t['a2_no_controller']['ip']:.3f} for A2, the same "
                   f"{t['a1_unweighted']['ip']:.3f} as A1, A3 and Full WMT"),
        "complete persistence of the injected poison is IP near 1 under the paper's own "
        "definition; the table gives A2 the lowest value, tied with configurations that keep "
        "the lifecycle controller A2 removes",
        "A2 has no memory controller, so nothing retires its poison and its IP is 1 (Eq. 10 "
        "as defined). IP is not fitted; the cell is reported outside its interval and "
        "explained in the reachability table"),
    Contradiction(
        "A3's infection persistence",
        '§4: "removing semantic retrieval reintroduces irrelevant or poisoned information '
        'through whole-branch retrieval" and "A3 increases prompt size and contamination '
        'metrics"; App. A.1: "' + IP_DEFINITION + '"',
        lambda t: (f"Table 4: A3's IP = {t['a3_no_semantic']['ip']:.3f} (as Full WMT's), "
                   f"while its BR = {t['a3_no_semantic']['br']:.3f} and AF = "
                   f"{t['a3_no_semantic']['af']:.3f} exceed A1's {t['a1_unweighted']['br']:.3f} "
                   f"and {t['a1_unweighted']['af']:.3f}"),
        "poison that A3's ordinary context construction brings back into its prompts is "
        "poison that remains eligible for that construction; an IP of 0.009 says almost none "
        "does",
        "IP counts exactly the pool A3's retrieval reaches (one pool for both, "
        "`agent._context_pool`), so A3's IP is well above 0.009 under whole-branch retrieval "
        "(`stubs.branch_folded` = nodes); the previous rule (summary) keeps 0.009 within "
        "reach but reverses the text's 'A3 above' on contamination and tokens "
        "(docs/model_decisions.md)"),
)


def _acc(bench: str, model: str, config: str, metric: str) -> float:
    for r in paper_rows():
        if (r["table"] in ("table1", "table2", "table3") and r["benchmark"] == bench
                and r["model"] == model and r["config"] == config and r["metric"] == metric):
            return float(r["value"])
    raise KeyError((bench, model, config, metric))


BENCHES = ("GAIA-Text", "GAIA")
MODELS = ("Qwen3-8B", "Gemma 4 E4B", "Llama-3.1-8B")


def numeric_checks() -> list[tuple[str, str, bool]]:
    """The paper's numeric statements about Tables 1–3 against its own tables:
    (quote, what the tables give, agrees)."""
    acc = lambda b, m, c: _acc(b, m, c, "accuracy_pct")  # noqa: E731
    tok = lambda b, m, c: _acc(b, m, c, "prompt_tokens_millions")  # noqa: E731
    out = []
    gains = [acc("GAIA-Text", m, "wmt") - acc("GAIA-Text", m, "linear") for m in MODELS]
    out.append(('"WMT improves accuracy over linear history by 9.97 percentage points on '
                'GAIA-Text" (per model "13.39, 8.66, and 7.87")',
                f"{sum(gains) / 3:.2f} ({', '.join(f'{g:.2f}' for g in gains)})",
                abs(sum(gains) / 3 - 9.97) < 0.006))
    red = [1 - tok("GAIA-Text", m, "wmt") / tok("GAIA-Text", m, "linear") for m in MODELS]
    out.append(('"a 32.8% average reduction in prompt-token usage" ("25.6%, 42.0%, and '
                '30.8%")', f"{sum(red) / 3:.1%} ({', '.join(f'{r:.1%}' for r in red)})",
                abs(sum(red) / 3 - 0.328) < 0.0006))
    gaia = [acc("GAIA", m, "wmt") - acc("GAIA", m, "linear") for m in MODELS]
    out.append(('"10.10 percentage points on GAIA"', f"{sum(gaia) / 3:.2f}",
                abs(sum(gaia) / 3 - 10.10) < 0.006))
    diffs = [acc(b, m, "wmt") - acc(b, m, "tree") for b in BENCHES for m in MODELS]
    fewer = all(tok(b, m, "wmt") < tok(b, m, "tree") for b in BENCHES for m in MODELS)
    out.append(('"WMT outperforms the unweighted tree in all six model–benchmark combinations '
                'by 5.46–18.11 percentage points while using fewer prompt tokens each time"',
                f"{min(diffs):.2f}–{max(diffs):.2f} points, fewer tokens in "
                f"{'all six' if fewer else 'not all'}",
                abs(min(diffs) - 5.46) < 0.006 and abs(max(diffs) - 18.11) < 0.006 and fewer))
    more = sum(tok(b, m, "tree_selection") > tok(b, m, "tree") for b in BENCHES
               for m in MODELS)
    more_s = sum(tok(b, m, "tree_selection_summary") > tok(b, m, "tree_summary")
                 for b in BENCHES for m in MODELS)
    out.append(('"Selection generally improves accuracy but increases token usage"',
                f"Tree + Selection uses more tokens than Tree in {more} of 6 cells, Tree + "
                f"Selection + Summary more than Tree + Summary in {more_s} of 6",
                more >= 4 and more_s >= 4))
    return out


def ledger_markdown(short: bool = False) -> str:
    t = paper_table4()
    lines = ["| contradiction | the text | the table | why they conflict | what wmtsim "
             "does |", "|---|---|---|---|---|"]
    for c in LEDGER:
        lines.append(f"| {c.name} | {c.text} | {c.table(t)} | {c.why} | {c.wmtsim} |")
    checks = numeric_checks()
    agree = sum(ok for _, _, ok in checks)
    lines += ["", f"The paper's numeric statements about Tables 1–3 agree with its tables "
              f"({agree} of {len(checks)} checked"
              + (")." if short else "):")]
    if not short:
        lines += ["", "| the text | the tables give | agrees |", "|---|---|---|"]
        lines += [f"| {q} | {g} | {'yes' if ok else '**no**'} |" for q, g, ok in checks]
    lines += ["", "*Generated by `python scripts/paper_ledger.py --write` (`make docs`).*"]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write", action="store_true",
                    help="rewrite the contradictions blocks of README.md and docs/calibration.md")
    args = ap.parse_args()
    if not args.write:
        print(ledger_markdown())
        return
    from doc_blocks import replace_block

    for path, short in ((ROOT / "README.md", True), (ROOT / "docs" / "calibration.md", False)):
        path.write_text(replace_block(path.read_text("utf-8"), "contradictions",
                                      ledger_markdown(short)), encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
