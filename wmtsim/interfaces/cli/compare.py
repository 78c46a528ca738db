"""The compare command of the ``wmtsim`` CLI (`register` adds it to the app of
`wmtsim.interfaces.cli.main`): the scenario's configurations on common random numbers beside
the paper, the paper's claims as tested verdicts (`wmtsim.studies.compare.paper_checks`),
``--precision`` and ``--budget``. Exit codes as there.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from wmtsim.interfaces.cli.common import (
    CsvOpt,
    NMaxOpt,
    PrecisionOpt,
    ProgressOpt,
    _fail,
    _out_folder,
    _print_table,
    _writing,
    precision_problem,
)
from wmtsim.interfaces.cli.scenarios import (
    CorrectionOpt,
    NOpt,
    OutOpt,
    ScenarioArg,
    SeedOpt,
    SetOpt,
    _check_policies,
    _check_threads,
    _compile_first,
    _load,
    _progress,
    _say,
)

if TYPE_CHECKING:
    import polars as pl
    from rich.table import Table

    from wmtsim.studies.scenarios.scenario import Scenario


def compare(
    scenario: ScenarioArg,
    n: NOpt = None,
    seed: SeedOpt = None,
    out: OutOpt = None,
    threads: Annotated[int | None, typer.Option(
        "--threads", "-t", min=1, help="Numba threads.", show_default=False)] = None,
    strict: Annotated[bool, typer.Option(
        "--strict", help="Exit 1 unless every paper claim holds (significant).")] = False,
    set_: SetOpt = None,
    policy: Annotated[list[str] | None, typer.Option(
        "--policy", "-p", help="Configuration to compare (repeatable; default: the "
                               "scenario's policies), e.g. memgpt, traceretain_z.",
        show_default=False)] = None,
    budget: Annotated[str | None, typer.Option(
        "--budget", help="Token budgets B, comma-separated (e.g. 200,400,800): run every "
                         "policy (or each --policy) at each B on the same trajectories and "
                         "write curves.parquet, curves.md, curves.png.",
        show_default=False)] = None,
    parity: Annotated[bool, typer.Option(
        "--parity", help="Print the parity table instead (share of B used, item cap, calls "
                         "and memory tokens per step, what the ranking reads) and write "
                         "parity.md, parity.parquet.")] = False,
    correction: CorrectionOpt = "holm",
    precision: PrecisionOpt = None,
    n_max: NMaxOpt = 100_000,
    progress: ProgressOpt = True,
    csv: CsvOpt = False,
) -> None:
    """Compare the scenario's configurations on common random numbers, beside the paper.

    Prints, per metric, each configuration's mean and 95% interval beside the paper's
    value (Table 4 for [bold]paper = "table4"[/bold]; the directions of Tables 1–3 for
    [bold]paper = "table123"[/bold]), paired differences against Full WMT, and whether
    each of the paper's claims holds, as a verdict — holds (significant), holds (not
    significant), tie, fails (significant) — of a paired test on the table's estimand,
    the claims corrected as one family (--correction, Holm by default). Writes
    summary.parquet, paired.parquet, checks.json, report.txt and manifest.json to --out.

    [bold]Examples[/bold]

      [cyan]wmtsim compare scenarios/paper_poisoning.toml[/cyan]

      [cyan]wmtsim compare gaia_like --n 400 --out results/gaia[/cyan]

      [cyan]wmtsim compare paper_poisoning --budget 200,380,800 --n 300[/cyan]
    """
    from dataclasses import replace

    from wmtsim.core.inference import CORRECTIONS
    from wmtsim.studies.compare.report import compare as run_compare
    from wmtsim.studies.compare.report import compare_steps, comparison_tables, write_comparison

    if correction not in CORRECTIONS:
        raise _fail(f"--correction {correction!r} is unknown; allowed: "
                    f"{', '.join(CORRECTIONS)}")
    if (problem := precision_problem(precision)) is not None:
        raise _fail(problem)
    mode = "--budget" if budget is not None else "--parity" if parity else None
    if budget is not None and parity:
        raise _fail("--budget with --parity: allowed: one of them (each writes a "
                    "result of its own)")
    if mode and (precision is not None or strict):  # not silently ignored
        raise _fail(f"{'--precision' if precision is not None else '--strict'} with "
                    f"{mode}: allowed: only for the plain comparison")
    _check_policies(policy)
    _check_threads(threads)
    s = _load(scenario, set_)
    if policy:
        s = replace(s, policies=tuple(dict.fromkeys(policy)))
    if budget is not None:
        _budget_curves(s, budget, policy, n, seed, threads, out, progress, csv)
        return
    if parity:
        _parity(s, policy, n, seed, threads, out, progress, csv)
        return
    out_dir = _out_folder(out, s.name, "compare")
    _compile_first(s.policies, progress)
    history: list[tuple[int, float]] = []
    if precision is None:
        with _progress(progress) as bar:
            task = bar.add_task(f"{s.name}: simulating", total=compare_steps(s.policies))

            def done(what: str) -> None:  # a configuration, then the statistics' steps
                bar.update(task, advance=1, description=f"{s.name}: {what} done")

            comp = run_compare(s, n, seed, threads, progress=done, correction=correction)
    else:
        from wmtsim.studies.compare.precision import compare_to_precision

        with _progress(progress):
            comp, history = compare_to_precision(s, precision, n, n_max, seed=seed,
                                                 threads=threads, correction=correction)
    report = str(out_dir / "report.txt")
    for t in comparison_tables(comp, brief=f"{report}, checks.json"):
        _print_table(t, full=report, pinned=())  # each configuration shown once
    fields = {}
    if history and precision is not None:
        from wmtsim.studies.compare.precision import precision_record

        fields["precision"] = precision_record(comp, history, precision, n_max)
    with _writing(out_dir, "compare", csv=csv) as work:
        written = write_comparison(comp, work, fields)
    if history and precision is not None:
        from wmtsim.studies.compare.precision import precision_text

        _say(precision_text(comp, history, precision, n_max))
    passed = comp.significant
    if comp.checks:
        from wmtsim.core.inference import VERDICTS

        counts = ", ".join(f"{sum(c['verdict'] == v for c in comp.checks)} {v}"
                           for v in VERDICTS)
        _say(f"{passed} of the paper's {len(comp.checks)} claims hold significantly "
             f"({counts}; {comp.checks[0]['family']}; n={comp.n}, {comp.seconds:.1f} s)")
    _say(f"tables written to {out_dir}/: {', '.join(p.name for p in written)}")
    if strict and passed < len(comp.checks):
        raise typer.Exit(1)


BUDGET_COMMAND = "compare-budget"  # compare --budget: its manifest's command, its folder


def _budget_curves(s: Scenario, budget: str, policy: list[str] | None, n: int | None,
                   seed: int | None, threads: int | None, out: Path | None,
                   progress: bool = True, csv: bool = False) -> None:
    """``compare --budget``: every policy at each budget
    (`wmtsim.studies.field.curves.budget_curves`), a result of its own (command
    ``compare-budget``, default folder ``results/<name>/compare-budget``) beside, never
    over, the plain comparison."""
    from wmtsim.core.inference import ALPHA
    from wmtsim.core.output import write_manifest
    from wmtsim.core.policies import POLICIES
    from wmtsim.core.provenance import provenance
    from wmtsim.studies.field.curves import (
        CORRECTION,
        CURVE_RESAMPLES,
        budget_curves,
        curves_family,
        flat_note,
        parse_budgets,
        write_curves,
    )

    try:
        budgets = parse_budgets(budget)
    except ValueError as e:
        raise _fail(str(e)) from None
    out_dir = _out_folder(out, s.name, BUDGET_COMMAND)
    pols = tuple(dict.fromkeys(policy)) if policy else tuple(POLICIES)
    _compile_first(pols, progress)  # the field's kernels too, with their notice
    with _progress(progress) as bar:
        task = bar.add_task(f"{s.name}: budgets", total=len(budgets))
        frame = budget_curves(s, budgets, pols, n, seed, threads,
                              progress=lambda b: bar.advance(task))
    for table in curves_tables(frame):
        _print_table(table, full=str(out_dir / "curves.md"))
    note = flat_note(frame)
    if note:
        _say(note)
    with _writing(out_dir, BUDGET_COMMAND, csv=csv) as work:
        written = write_curves(frame, work, title=f"{s.name}: TSR vs prompt tokens over B")
        written.append(write_manifest(work, BUDGET_COMMAND, {
            "scenario": s.to_dict(), "source": s.source, "budgets": list(budgets),
            "policies": list(frame["policy"].unique(maintain_order=True)),
            "n": s.n if n is None else n, "seed": s.seed if seed is None else seed,
            "threads": threads, "family": curves_family(frame)},
            extra=provenance(s.seed if seed is None else seed, s.n if n is None else n,
                             CURVE_RESAMPLES, ALPHA, CORRECTION)))
    _say(f"curves written to {out_dir}/: {', '.join(p.name for p in written)}")


def curves_tables(frame: pl.DataFrame) -> list[Table]:
    """``compare --budget`` for the terminal: one table per metric, a row per policy, a
    column per budget; each cell the policy's mean and, below it, Δ = policy − wmt at the
    same budget with its paired 95% interval and WMT's verdict (on TSR and ASR). Numbers
    follow the precision policy (`wmtsim.core.formatting`); curves.md has the same."""
    from rich.table import Table

    from wmtsim.core.formatting import interval, num
    from wmtsim.core.metrics import LABELS
    from wmtsim.studies.field.curves import ADJUSTMENT, VERDICT_LABEL

    budgets = sorted(set(frame["budget"].to_list()))
    policies = list(dict.fromkeys(frame["policy"].to_list()))
    index = {(r["policy"], r["budget"], r["metric"]): r for r in frame.iter_rows(named=True)}
    tables = []
    for metric in dict.fromkeys(frame["metric"].to_list()):
        better = {"tsr": True, "asr": False}.get(metric)
        t = Table(title=f"{LABELS.get(metric, metric)} by token budget B: each policy's mean; "
                        "Δ = policy − wmt at the same B (paired 95% interval)"
                        + ("; the verdict of \"WMT better\" (Holm per metric)"
                           if better is not None else ""),
                  caption=ADJUSTMENT if better is not None else None,
                  caption_justify="left", title_justify="left")
        t.add_column("policy")
        for b in budgets:
            t.add_column(f"B = {b:,}", justify="right")
        for p in policies:
            cells = []
            for b in budgets:
                r = index.get((p, b, metric))
                if r is None:
                    cells.append("–")
                    continue
                cell = num(r["mean"])
                if r["d_mean"] is not None:
                    cell += "\nΔ " + interval(r["d_mean"], r["d_low"], r["d_high"], sign=True)
                    if better is not None and r.get("verdict"):
                        cell += f"\n{VERDICT_LABEL}: " + r["verdict"]
                cells.append(cell)
            t.add_row(p, *cells, style="bold" if p == "wmt" else None)
        tables.append(t)
    return tables


PARITY_COMMAND = "compare-parity"  # compare --parity: its manifest's command, its folder


def _parity(s: Scenario, policy: list[str] | None, n: int | None, seed: int | None,
            threads: int | None, out: Path | None, progress: bool = True,
            csv: bool = False) -> None:
    """``compare --parity``: the parity table (`wmtsim.studies.field.parity`), a result of
    its own (command ``compare-parity``)."""
    from wmtsim.core.output import write_manifest
    from wmtsim.core.policies import POLICIES
    from wmtsim.core.provenance import provenance
    from wmtsim.studies.field.parity import parity_markdown, parity_table, write_parity

    out_dir = _out_folder(out, s.name, PARITY_COMMAND)
    pols = tuple(dict.fromkeys(policy)) if policy else tuple(POLICIES)
    _compile_first(pols, progress)
    with _progress(progress):
        frame = parity_table(s, pols, n, seed, threads)
    _say(parity_markdown(frame))
    with _writing(out_dir, PARITY_COMMAND, csv=csv) as work:
        written = write_parity(frame, work)
        written.append(write_manifest(work, PARITY_COMMAND, {
            "scenario": s.to_dict(), "source": s.source, "policies": list(pols),
            "n": s.n if n is None else n, "seed": s.seed if seed is None else seed,
            "threads": threads},
            extra=provenance(s.seed if seed is None else seed, s.n if n is None else n,
                             None, None, None)))
    _say(f"parity table written to {out_dir}/: {', '.join(p.name for p in written)}")


def register(app: typer.Typer) -> None:
    """Add compare to ``app``."""
    app.command()(compare)
