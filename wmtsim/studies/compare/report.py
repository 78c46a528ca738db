"""The paper's tables and the simulated ones side by side (`wmtsim compare`).

`run_policies` runs a scenario's configurations on common random numbers (one generated
world); `compare` adds means with bootstrap intervals, paired differences against Full
WMT and the paper's claims as checks: Table 4's ordering and Full WMT's distance to the
paper (poisoning), or the directions of Tables 1–3 (benign). `render_*` build the rich
tables the CLI prints; `write_comparison` writes them to a directory.
"""

from __future__ import annotations

import csv
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wmtsim.core.formatting import num
from wmtsim.core.inference import ALPHA, HOLDS, SIGNIFICANT, resamples_for
from wmtsim.core.metrics import LABELS, PAPER_NAMES, SUMMARY_METRICS, compare_metrics
from wmtsim.core.output import atomic_write_bytes, atomic_write_parquet
from wmtsim.studies.compare.paper_checks import table4_checks, table123_checks

__all__ = ["Comparison", "compare"]

if TYPE_CHECKING:
    import polars as pl
    from rich.table import Table

    from wmtsim.engine.simulation import SimResult
    from wmtsim.studies.scenarios.scenario import Scenario


@cache
def paper_rows() -> tuple[dict[str, str], ...]:
    """Every row of the paper's tables (``wmtsim/data/paper_tables.csv``)."""
    from importlib import resources

    text = (resources.files("wmtsim") / "data" / "paper_tables.csv").read_text("utf-8")
    return tuple(csv.DictReader(text.splitlines()))


def paper_table4() -> dict[str, dict[str, float]]:
    """Table 4: policy -> metric -> value, for the metrics that name their row of the
    paper's tables (`wmtsim.core.metrics.Metric.paper`; the paper's memory-controller
    latency is not the simulated one, so it has none)."""
    out: dict[str, dict[str, float]] = {}
    for r in paper_rows():
        if r["table"] == "table4" and r["metric"] in PAPER_NAMES:
            out.setdefault(r["config"], {})[PAPER_NAMES[r["metric"]]] = float(r["value"])
    return out


# Tables 1–3 (benign study): the paper's per-configuration values, averaged over the
# models and both benchmarks (accuracy %, prompt tokens in millions), for reference.
def paper_table123() -> dict[str, dict[str, float]]:
    sums: dict[str, dict[str, list[float]]] = {}
    for r in paper_rows():
        if r["table"] in ("table1", "table2", "table3"):
            sums.setdefault(r["config"], {}).setdefault(r["metric"], []).append(
                float(r["value"]))
    return {c: {m: sum(v) / len(v) for m, v in d.items()} for c, d in sums.items()}


def paper_wmt_token_change() -> tuple[float, float]:
    """The range over models and benchmarks of WMT's token change vs Linear (fraction)."""
    by: dict[tuple[str, str], dict[str, float]] = {}
    for r in paper_rows():
        if r["table"] == "table1" and r["metric"] == "prompt_tokens_millions":
            by.setdefault((r["benchmark"], r["model"]), {})[r["config"]] = float(r["value"])
    changes = [d["wmt"] / d["linear"] - 1.0 for d in by.values()]
    return min(changes), max(changes)


# --- running and comparing -----------------------------------------------------------------

Progress = Callable[[str], None]


def run_policies(scenario: Scenario, policies: Sequence[str] | None = None,
                 n: int | None = None, seed: int | None = None, threads: int | None = None,
                 record_steps: int = 0, progress: Progress | None = None
                 ) -> dict[str, SimResult]:
    """Every configuration on the same generated trajectories (common random numbers)."""
    from wmtsim.engine.simulation import simulate
    from wmtsim.engine.world import generate

    policies = tuple(policies or scenario.policies)
    n = scenario.n if n is None else n
    seed = scenario.seed if seed is None else seed
    world = generate(scenario.world, seed=seed, n=n)
    out: dict[str, SimResult] = {}
    for p in policies:
        out[p] = simulate(world, p, params=scenario.params, stubs=scenario.stubs,
                          threads=threads, record_steps=record_steps,
                          baselines=scenario.baselines)
        if progress is not None:
            progress(p)
    return out


def summarise(results: dict[str, SimResult], n_resamples: int = resamples_for(ALPHA)
              ) -> pl.DataFrame:
    """policy, metric, mean, low, high, n (95% percentile-bootstrap intervals)."""
    import polars as pl

    from wmtsim.core.inference import metric_cis

    cis = iter(metric_cis([(r.trajectories, r.seed) for r in results.values()],
                          SUMMARY_METRICS, 0.95, n_resamples))
    return pl.DataFrame([{"policy": p, "metric": m, **next(cis)}
                         for p in results for m in SUMMARY_METRICS])


PAIRED_SCHEMA = {"mean": "f", "low": "f", "high": "f", "n": "i", "n_nonzero": "i",
                 "p": "f", "test": "s", "interval": "s", "pooled": "f", "pooled_low": "f",
                 "pooled_high": "f", "pooled_p": "f", "pooled_n_nonzero": "i",
                 "pooled_test": "s", "pooled_interval": "s"}


def paired_vs(results: dict[str, SimResult], reference: str = "wmt",
              n_resamples: int = resamples_for(ALPHA), progress: Progress | None = None
              ) -> pl.DataFrame:
    """Per metric, each configuration minus ``reference`` on the same trajectories
    (`wmtsim.core.inference.paired_difference`: the per-trajectory mean and, for
    ratio metrics, the pooled value, each with its test, interval and ``n_nonzero``)."""
    import polars as pl

    from wmtsim.core.inference import paired_difference

    rows = []
    if reference in results:
        for p, r in results.items():
            if p == reference:
                continue
            for m in SUMMARY_METRICS:
                d = paired_difference(r, results[reference], m, 0.95, n_resamples)
                rows.append({"policy": p, "reference": reference, "metric": m,
                             **{k: d.get(k) for k in PAIRED_SCHEMA}})
            if progress is not None:
                progress(f"paired differences of {p}")
    types = {"f": pl.Float64, "i": pl.Int64, "s": pl.Utf8}
    return pl.DataFrame(rows, schema={"policy": pl.Utf8, "reference": pl.Utf8,
                                      "metric": pl.Utf8,
                                      **{k: types[t] for k, t in PAIRED_SCHEMA.items()}})


@dataclass(kw_only=True)
class Comparison:
    scenario: Scenario
    n: int
    seed: int
    policies: tuple[str, ...]
    summary: pl.DataFrame  # policy, metric, mean, low, high, n, paper
    paired: pl.DataFrame  # policy, reference, metric, mean, low, high, n
    checks: list[dict[str, Any]]  # claim, verdict, test, p, p_adjusted, detail, passed
    seconds: float
    results: dict[str, SimResult] = field(default_factory=dict, repr=False)
    correction: str = "holm"
    resamples: int = resamples_for(ALPHA)

    @property
    def significant(self) -> int:
        """Checks with a significant verdict that the claim holds (the headline count)."""
        return sum(c["verdict"] == HOLDS for c in self.checks)

    def cell(self, policy: str, metric: str) -> dict[str, Any]:
        import polars as pl

        rows = self.summary.filter((pl.col("policy") == policy) & (pl.col("metric") == metric))
        return rows.row(0, named=True)


def compare_steps(policies: Sequence[str]) -> int:
    """How many times `compare` calls its ``progress``: each configuration simulated,
    the intervals, each configuration's paired differences against wmt, the claims."""
    return len(policies) + 1 + (len(policies) - 1 if "wmt" in policies else 0) + 1


def compare(scenario: Scenario, n: int | None = None, seed: int | None = None,
            threads: int | None = None, policies: Sequence[str] | None = None,
            n_resamples: int = resamples_for(ALPHA), progress: Progress | None = None,
            correction: str = "holm", results: dict[str, SimResult] | None = None
            ) -> Comparison:
    """Run the scenario's configurations (or take ``results``) and test the paper's
    claims on them, as one family (``correction``: holm, bh or none). ``progress`` is
    called with what was just done (`compare_steps` times): the bootstrap intervals
    take longer than the simulation."""
    import polars as pl

    t0 = time.perf_counter()
    if results is None:
        results = run_policies(scenario, policies, n, seed, threads, progress=progress)
    summary = summarise(results, n_resamples)
    if progress is not None:
        progress("intervals")
    paper = _paper_cells(scenario.paper)
    summary = summary.with_columns(pl.struct("policy", "metric").map_elements(
        lambda r: paper.get((r["policy"], r["metric"])), return_dtype=pl.Float64)
        .alias("paper"))
    paired = paired_vs(results, "wmt", n_resamples, progress)
    first = next(iter(results.values()))
    comp = Comparison(scenario=scenario, n=first.trajectories.height, seed=first.seed,
                      policies=tuple(results), summary=summary, paired=paired, checks=[],
                      seconds=0.0, results=results, correction=correction,
                      resamples=n_resamples)
    if scenario.paper == "table4":
        comp.checks = table4_checks(comp, correction)
    elif scenario.paper == "table123":
        comp.checks = table123_checks(comp, correction, paper_wmt_token_change())
    if progress is not None:
        progress("claims")
    comp.seconds = time.perf_counter() - t0
    return comp


def _paper_cells(paper: str | None) -> dict[tuple[str, str], float]:
    if paper == "table4":
        return {(p, m): v for p, row in paper_table4().items() for m, v in row.items()}
    return {}


def _ci(cell: dict[str, Any], sign: bool = False, value: str = "mean") -> str:
    """``value [low, high]`` of a summary cell (`wmtsim.core.formatting.interval`); ``value`` is
    ``mean`` (per-trajectory mean) or ``pooled`` (Σ/Σ over trajectories)."""
    from wmtsim.core.formatting import interval

    if value == "pooled":
        return interval(cell["pooled"], cell["pooled_low"], cell["pooled_high"], sign=sign)
    return interval(cell["mean"], cell["low"], cell["high"], sign=sign)


# --- rendering -----------------------------------------------------------------------------


def policy_label(p: str) -> str:
    from wmtsim.core.policies import POLICIES

    return POLICIES[p].label


def render_summary(comp_summary: pl.DataFrame, policies: Sequence[str],
                   metrics: Sequence[str] = SUMMARY_METRICS, title: str = "",
                   paper: bool = False, value: str = "mean") -> Table:
    """Rows = metrics; per configuration its mean (or pooled value) [95% CI] (and the
    paper's value)."""
    from rich.table import Table

    t = Table(title=title or None, title_justify="left")
    t.add_column("metric")
    cells = {(r["policy"], r["metric"]): r for r in comp_summary.iter_rows(named=True)}
    shown = {(p, m): _ci(cells[(p, m)], value=value) if (p, m) in cells else "–"
             for p in policies for m in metrics}
    papers = {(p, m): num(cells[(p, m)].get("paper") if (p, m) in cells else None)
              for p in policies for m in metrics}  # one precision policy for every number
    for p in policies:
        # An interval is never broken across lines: a narrow terminal splits the table
        # into parts instead (`wmtsim.interfaces.cli.common._print_table`).
        t.add_column(policy_label(p), justify="right",
                     min_width=max(len(shown[(p, m)]) for m in metrics))
        if paper:
            t.add_column("paper", justify="right", style="dim",
                         min_width=max(len(papers[(p, m)]) for m in metrics))
    for m in metrics:
        row = [LABELS.get(m, m)]
        for p in policies:
            row.append(shown[(p, m)])
            if paper:
                row.append(papers[(p, m)])
        t.add_row(*row)
    return t


def render_paired(paired: pl.DataFrame, metrics: Sequence[str] = SUMMARY_METRICS,
                  value: str = "mean") -> Table:
    """Paired differences against Full WMT; ``value`` ``pooled`` shows the difference of
    pooled values (Σ/Σ) for ratio metrics, as the pooled table ranks them."""
    from rich.table import Table

    from wmtsim.core.verdicts import effect_text

    what = "pooled Σ/Σ where a ratio" if value == "pooled" else "per-trajectory mean"
    t = Table(title=f"Paired differences vs Full WMT (configuration − wmt, {what}; 95% "
                    "interval; few differing trajectories: exact permutation p, no "
                    "differing one: rule of three)", title_justify="left")
    t.add_column("metric")
    policies = list(dict.fromkeys(paired["policy"].to_list()))
    cells = {(r["policy"], r["metric"]): r for r in paired.iter_rows(named=True)}

    def text(c: dict[str, Any]) -> str:
        pooled = value == "pooled" and c.get("pooled") is not None
        return effect_text(c, "pooled" if pooled else "")

    shown = {(p, m): text(cells[(p, m)]) if (p, m) in cells else "–"
             for p in policies for m in metrics}
    for p in policies:
        # The interval stays on one line (a narrow terminal splits the table into parts);
        # only the note after it, "(12 of 200 differ; ...)", wraps.
        widest = max(len(shown[(p, m)].split(" (")[0]) for m in metrics)
        t.add_column(policy_label(p), justify="right", min_width=widest)
    for m in metrics:
        t.add_row(LABELS.get(m, m), *[shown[(p, m)] for p in policies])
    return t


VERDICT_STYLE = {"holds (significant)": "green", "holds (not significant)": "",
                 "tie": "dim", "fails (significant)": "red"}


def render_checks(checks: list[dict[str, Any]], title: str, brief: str | None = None
                  ) -> Table:
    """The checks with their verdicts, tests and corrected p-values; the title states
    the family and its level. ``brief`` (the name of the file with the rest): one line
    per claim, its verdict and corrected p, for a terminal."""
    from rich.table import Table

    from wmtsim.core.formatting import num

    family = checks[0]["family"] if checks else ""
    t = Table(title=f"{title} — family: {family}", title_justify="left",
              caption=None if brief is None else f"tests and details: {brief}",
              caption_justify="left")
    columns = ("claim", "verdict", "p (adjusted)") if brief is not None else (
        "claim", "verdict", "test", "p (adjusted)", "detail")
    for col in columns:
        t.add_column(col, no_wrap=brief is not None and col != "claim")
    for c in checks:
        style = VERDICT_STYLE.get(c["verdict"], "")
        verdict = f"[{style}]{c['verdict']}[/{style}]" if style else c["verdict"]
        if brief is not None:
            t.add_row(c["claim"], verdict, num(c["p_adjusted"], 2))
        else:
            t.add_row(c["claim"], verdict, c["test"], num(c["p_adjusted"], 2), c["detail"])
    return t


def render_paper_reading() -> Table:
    """What the paper's own (ASR, TSR) rows imply (`wmtsim.studies.compare.paper_reading`)."""
    from rich.table import Table

    from wmtsim.studies.compare.paper_reading import two_parameter_reading

    r = two_parameter_reading(paper_table4())
    t = Table(title="The paper's own rows, read with two parameters: TSR = s_clean·(1 − ASR) "
                    f"+ s_compromised·ASR; s_clean = P(success | no compromise) = "
                    f"{r.s_clean:.3f} ± {1.96 * r.se_clean:.3f}, s_compromised = "
                    f"P(success | compromised) = {r.s_compromised:.3f} ± "
                    f"{1.96 * r.se_compromised:.3f}", title_justify="left")
    for col in ("configuration", "paper ASR", "paper TSR", "reading's TSR", "residual"):
        t.add_column(col, justify="left" if col == "configuration" else "right")
    for row in r.rows:
        t.add_row(policy_label(str(row["policy"])), f"{row['asr']:.3f}", f"{row['tsr']:.3f}",
                  f"{row['predicted']:.3f}", f"{float(row['residual']):+.4f}")
    return t


def comparison_tables(comp: Comparison, brief: str | None = None) -> list[Table]:
    """The tables `wmtsim compare` prints, in order; ``brief`` (the name of the written
    report): the claims one line each, their tests and details left to that file."""
    metrics = compare_metrics(comp.scenario.paper)
    if comp.scenario.paper == "table4":
        main = render_summary(comp.summary, comp.policies, metrics, paper=True,
                              value="pooled",
                              title=f"Simulated Table 4 ({comp.scenario.name}, n={comp.n}, "
                                    f"seed={comp.seed}) beside the paper: pooled over "
                                    "trajectories (Σ/Σ, as the paper's table) [95% CI]")
        title = "Table 4 claims (paired tests of pooled values)"
    else:
        main = render_summary(comp.summary, comp.policies, metrics,
                              title=f"{comp.scenario.name} (n={comp.n}, seed={comp.seed}): "
                                    "mean [95% CI]; accuracy = TSR")
        title = "Tables 1–3 directions (paired tests of per-trajectory means)"
    tables = [main, render_paired(comp.paired, metrics,
                                  "pooled" if comp.scenario.paper == "table4" else "mean")]
    if comp.checks:
        tables.append(render_checks(comp.checks, title, brief))
    if comp.scenario.paper == "table4":
        tables.append(render_paper_reading())
    return tables


# --- writing -------------------------------------------------------------------------------


def tables_markdown(tables: Sequence[Table]) -> str:
    """Plain-text renderings of rich tables (for report.md)."""
    from rich.console import Console

    console = Console(width=240, record=True, file=open(os.devnull, "w"))
    try:
        for t in tables:
            console.print(t)
        return console.export_text()
    finally:
        console.file.close()


def write_comparison(comp: Comparison, out: Path,
                     fields: dict[str, Any] | None = None) -> list[Path]:
    """summary.parquet, paired.parquet, checks.json, report.txt and manifest.json, into
    ``out`` (the hidden folder of `wmtsim.core.output.result_folder`); ``fields`` are
    added to the manifest (e.g. ``precision``, `wmtsim.studies.compare.precision`)."""
    from wmtsim.core.output import write_manifest
    from wmtsim.core.provenance import provenance

    out.mkdir(parents=True, exist_ok=True)
    written = [atomic_write_parquet(comp.summary, out / "summary.parquet"),
               atomic_write_parquet(comp.paired, out / "paired.parquet"),
               atomic_write_bytes(out / "checks.json",
                                  json.dumps(comp.checks, indent=2).encode())]
    text = tables_markdown(comparison_tables(comp))
    written.append(atomic_write_bytes(out / "report.txt", text.encode()))
    written.append(write_manifest(out, "compare", {
        "scenario": comp.scenario.to_dict(), "source": comp.scenario.source, "n": comp.n,
        "seed": comp.seed, "policies": list(comp.policies),
        "seconds": round(comp.seconds, 3),
        "checks_passed": comp.significant,
        "checks_significant": sum(c["verdict"] in SIGNIFICANT for c in comp.checks),
        "checks_total": len(comp.checks),
        "family": comp.checks[0]["family"] if comp.checks else None, **(fields or {})},
        extra=provenance(comp.seed, comp.n, comp.resamples, ALPHA, comp.correction)))
    return written
