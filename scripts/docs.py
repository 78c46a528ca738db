"""Regenerate every generated block of README.md and docs/ from one entry point.

    python scripts/docs.py            # every generator, at the sizes the docs state
    python scripts/docs.py --list     # which generator owns which block
    python scripts/docs.py --only field_table

A generated block is the text between ``<!-- generated:NAME -->`` and
``<!-- /generated:NAME -->``; a generated file is written whole. Every block and file is
owned by exactly one generator below, which names the command that writes it: the
registry is the record of how each number in the docs was made, and
tests/test_docs_generated.py fails when a block has no owner (a table pasted by hand),
when an owned block is missing, or when a cheap generator no longer rewrites its block.
``make docs`` runs this script; ``make study`` (the "why" study) is one of its generators.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"<!-- generated:([A-Za-z0-9_.-]+) -->")


@dataclass(frozen=True)
class Generator:
    """One command and what it writes: ``blocks`` as (file, block name) pairs, ``files``
    written whole."""

    name: str
    argv: tuple[str, ...]
    blocks: tuple[tuple[str, str], ...] = ()
    files: tuple[str, ...] = ()


GENERATORS: tuple[Generator, ...] = (
    Generator("paper_tables", ("scripts/paper_tables_doc.py",), blocks=(
        ("README.md", "headline"),
        *(("docs/calibration.md", b) for b in
          ("summary", "table4", "checks", "errors", "paper-reading", "paper-counts",
           "table123")))),
    # capability → folder → door → command → page, from the packages' docstrings, checked
    # against the registered commands and the dashboard's pages.
    Generator("architecture_map", ("scripts/architecture_map.py",),
              blocks=(("docs/architecture.md", "map"),)),
    Generator("metrics_table", ("scripts/metrics_table.py",),
              blocks=(("docs/guide.md", "metrics"),)),
    # docs/field.md's policies table, from the rows that register the field's policies
    # (`wmtsim.core.field_policies.FIELD_ROWS`): a new policy's rules are written there.
    Generator("field_policies", ("scripts/field_policies_table.py",),
              blocks=(("docs/field.md", "field-policies"),)),
    Generator("field_table", ("scripts/field_table.py", "readme"),
              blocks=(("README.md", "field"),)),
    Generator("field_docs", ("scripts/field_table.py", "docs"), blocks=tuple(
        ("docs/field.md", b) for b in (
            "parity.paper_poisoning", "parity.gaia_like", "field-curves.paper_poisoning",
            "field-curves.gaia_like", "robustness")),
        files=("docs/figures/field_curves_paper_poisoning.png",
               "docs/figures/field_curves_gaia_like.png")),
    # Every statement of the paper about a configuration beside the simulator's interval,
    # for each mechanism family at its fit (docs/calibration/fit-*.json); about a minute.
    Generator("mechanism_audit", ("scripts/mechanism_audit.py", "--write-docs"), blocks=(
        ("docs/calibration.md", "mechanism-audit"), ("README.md", "mechanism-audit")),
        files=("docs/calibration/audit.json",)),
    # The docs stage renders docs/calibration/*.json (shipped), which the fit, held-out,
    # noise and robustness stages of the same script write (docs/calibration.md says
    # how); the family comparison reads the audit's JSON too.
    Generator("calibration", ("scripts/calibrate_table4.py", "docs", "--dir",
                              "docs/calibration"), blocks=(
        *(("docs/calibration.md", b) for b in ("table4-predictive", "held-out",
                                               "reachability", "robustness",
                                               "family-comparison")),
        ("README.md", "calibration-summary"), ("README.md", "claims-robustness"))),
    Generator("paper_ledger", ("scripts/paper_ledger.py", "--write"), blocks=(
        ("README.md", "contradictions"), ("docs/calibration.md", "contradictions"))),
    Generator("benchmarks_fit", ("scripts/fit_benchmarks.py", "check", "--docs"),
              blocks=(("docs/calibration.md", "table123-cells"),)),
    Generator("knob_tables", ("scripts/knob_tables.py",), blocks=(
        ("docs/model.md", "params"), ("docs/world.md", "world"), ("docs/world.md", "poison"),
        ("docs/world.md", "stubs"))),
    # The scenario format's JSON Schema, from the knob declarations (a new knob changes it;
    # tests/studies/test_scenario.py fails when the shipped file differs).
    # (`wmtsim schema scenario` prints it and writes nothing; this step writes the copy.)
    Generator("scenario_schema", ("-m", "wmtsim.studies.scenarios.schema"),
              files=("wmtsim/schemas/scenario.schema.json",)),
    Generator("model_decisions", ("scripts/model_decisions.py",),
              files=("docs/model_decisions.md",)),
    Generator("coverage_study", ("scripts/coverage_study.py", "--runs", "400", "--out",
                                 "docs/statistics.md"),
              blocks=(("docs/statistics.md", "coverage"),)),
    Generator("why_study", ("-m", "why_study.run"), blocks=tuple(
        ("docs/findings.md", b) for b in (
            "provenance", "why_paper_poisoning_linear_wmt",
            "why_paper_poisoning_a2_no_controller_wmt", "why_gaia_like_linear_wmt",
            "why_gaia_like_a2_no_controller_wmt", "claims_detection", "claims_noise"))),
    Generator("replicate_seeds", ("-m", "why_study.replicates", "--seeds", "5"),
              blocks=(("docs/findings.md", "replicates"),)),
    Generator("design_study", ("-m", "why_study.design_study"),
              blocks=(("docs/atlas.md", "atlas"), ("docs/findings.md", "transfer"))),
    Generator("dynamics_findings", ("scripts/dynamics_findings.py", "--n", "5000"),
              blocks=(("docs/findings.md", "dynamics"),),
              files=("docs/figures/dynamics_survival_paper_poisoning.png",)),
    # `wmtsim fit-stubs` on the shipped example log, and Full WMT under the fitted stubs
    # vs the defaults (docs/stub_logs.md); about a minute.
    Generator("stub_fit_example", ("scripts/stub_fit_example.py", "--n", "2000"),
              blocks=(("README.md", "stub-fit"),),
              files=("examples/stub_fit/stubs.toml",
                     "examples/stub_fit/stubs.calibration.png")),
    # Coverage of fit-stubs' intervals over 300 simulated logs; about 20 minutes.
    Generator("stub_fit_coverage", ("-m", "benchmarks.stub_fit_coverage", "--logs", "300",
                                    "--events", "5000", "--docs"),
              blocks=(("docs/stub_logs.md", "stub-fit-coverage"),)),
    Generator("attack_findings", ("scripts/attack_findings.py", "--n", "1000", "--trials",
                                  "40"),
              blocks=(("README.md", "attack"),
                      *(("docs/findings.md", b) for b in
                        ("attack_robust", "attack_transfer", "attack_claims"))),
              files=("docs/figures/attack_harm_vs_budget.png",)),
)


def doc_files(root: Path = ROOT) -> list[Path]:
    """README.md and every Markdown page under docs/."""
    return [root / "README.md", *sorted((root / "docs").glob("**/*.md"))]


def found_blocks(root: Path = ROOT) -> set[tuple[str, str]]:
    """Every generated block in the docs, as (file relative to ``root``, name)."""
    out = set()
    for path in doc_files(root):
        for name in BLOCK.findall(path.read_text(encoding="utf-8")):
            out.add((str(path.relative_to(root)), name))
    return out


def run(gen: Generator) -> float:
    """Run one generator from the repository root; returns its wall time in seconds."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, *gen.argv], cwd=ROOT, check=True)
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python scripts/docs.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--list", action="store_true", help="list the generators and stop")
    ap.add_argument("--only", action="append", default=None,
                    help="run only this generator (repeatable)")
    args = ap.parse_args(argv)
    names = [g.name for g in GENERATORS]
    unknown = sorted(set(args.only or ()) - set(names))
    if unknown:
        ap.error(f"--only {', '.join(unknown)}: unknown; allowed: {', '.join(names)}")
    for gen in GENERATORS:
        if args.list:
            owned = [f"{f}:{b}" for f, b in gen.blocks] + list(gen.files)
            print(f"{gen.name}: python {' '.join(gen.argv)}\n    " + "\n    ".join(owned))
        elif args.only is None or gen.name in args.only:
            print(f"[{gen.name}] python {' '.join(gen.argv)}", flush=True)
            print(f"[{gen.name}] done in {run(gen):.0f} s", flush=True)


if __name__ == "__main__":
    main()
