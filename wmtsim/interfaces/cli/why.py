"""The "why" commands of the ``wmtsim`` CLI: attribute and claims.

`register` adds them to the app of `wmtsim.interfaces.cli.main`. Exit codes as there: 0 success, 2
bad input (a scenario that does not load, an unknown configuration, metric or knob); bad input
writes nothing. The work is done by `wmtsim.studies.attribution.attribution` and
`wmtsim.studies.compare.claims`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from wmtsim.core.input_files import read_regular
from wmtsim.interfaces.cli.common import (
    ClaimsPrecisionOpt,
    CsvOpt,
    NMaxOpt,
    ProgressOpt,
    SchedulerOpt,
    WorkersOpt,
    _fail,
    _out_folder,
    _print_table,
    _writing,
    precision_problem,
)
from wmtsim.interfaces.cli.scenarios import (
    CorrectionOpt,
    NOpt,
    ScenarioArg,
    SeedOpt,
    SetOpt,
    _check_threads,
    _load,
    _say,
)

ThreadsOpt = Annotated[int | None, typer.Option(
    "--threads", "-t", min=1, help="Numba threads.", show_default=False)]
MAX_PERMUTATIONS = 1_000_000  # sampled orders of attribute: R·k marginal runs, bounded
KEEP = ("sweep",)  # the claims map's resumable sweep, carried into each new result
ChartsOpt = Annotated[bool, typer.Option(help="Write Altair charts (HTML and PNG).")]


def attribute(
    scenario: ScenarioArg,
    from_: Annotated[str, typer.Option(
        "--from", help="The configuration to start from (P), e.g. linear.",
        show_default=False)],
    to: Annotated[str, typer.Option(
        "--to", help="The configuration to explain (Q), e.g. wmt.", show_default=False)],
    metric: Annotated[list[str] | None, typer.Option(
        "--metric", "-m", help="Metric to decompose (repeatable; default: asr, prr, br, "
                               "tsr, prompt_tokens).", show_default=False)] = None,
    n: NOpt = None,
    seed: SeedOpt = None,
    permutations: Annotated[int | None, typer.Option(
        "--permutations", min=1, max=MAX_PERMUTATIONS,
        help="Sample this many orders of the switches (1 to 1,000,000) instead of the "
             "exact lattice.", show_default=False)] = None,
    out: Annotated[Path | None, typer.Option(
        "--out", "-o", help="Output folder, replaced as a whole: attribution.parquet, "
                            "coalitions.parquet, the waterfall chart and manifest.json "
                            "(default: write nothing).", show_default=False)] = None,
    threads: ThreadsOpt = None,
    charts: ChartsOpt = True,
    set_: SetOpt = None,
    progress: ProgressOpt = True,
    csv: CsvOpt = False,
) -> None:
    """Why does Q differ from P? Shapley values of each mechanism switch between them.

    Every subset of the switches in which P and Q differ runs on the same generated
    trajectories (common random numbers); each switch's contribution is its Shapley
    value, with a paired 95% bootstrap interval. The contributions sum exactly to
    mean(Q) − mean(P). Coalitions that are not meaningful configurations follow the
    dependency rule of `wmtsim.studies.attribution.attribution` (shown per coalition in
    coalitions.parquet).

    [bold]Examples[/bold]

      [cyan]wmtsim attribute paper_poisoning --from linear --to wmt --n 2000[/cyan]

      [cyan]wmtsim attribute gaia_like --from a2_no_controller --to wmt -m tsr -o results/why[/cyan]
    """
    from wmtsim.studies.attribution.attribution import DEFAULT_METRICS, write_attribution
    from wmtsim.studies.attribution.attribution import attribute as run_attribute
    from wmtsim.studies.attribution.table import render_table

    _check_threads(threads)
    s = _load(scenario, set_)
    out_dir = None if out is None else _out_folder(out, s.name, "attribute")
    from wmtsim.core.policies import POLICIES
    from wmtsim.interfaces.cli.scenarios import _compile_first, _progress

    _compile_first((from_, to) if from_ in POLICIES and to in POLICIES else (), progress)
    try:
        with _progress(progress) as bar:
            task = bar.add_task(f"{s.name}: coalitions", total=None)
            att = run_attribute(s, from_, to, metrics=tuple(metric or DEFAULT_METRICS), n=n,
                                seed=seed, threads=threads, permutations=permutations,
                                progress=lambda done, total: bar.update(
                                    task, completed=done, total=total))
    except ValueError as e:
        raise _fail(str(e)) from None
    _print_table(render_table(att))
    moved = att.coalitions.filter(att.coalitions["moved_by_rule"] != "")
    _say(f"{att.coalitions.height} coalitions, {att.runs} distinct configurations run in "
         f"{att.seconds:.1f} s; {moved.height} coalitions mapped by the dependency rule"
         + (f" ({', '.join(sorted(set(','.join(moved['moved_by_rule']).split(','))))})"
            if moved.height else ""))
    if out_dir is not None:
        with _writing(out_dir, "attribute", csv=csv) as work:
            written = write_attribution(att, work, charts=charts)
        _say(f"written to {out}/: {', '.join(p.name for p in written)}")


def claims(
    scenario: Annotated[str | None, typer.Argument(
        help="A scenario file or shipped name (with --vary).", show_default=False)] = None,
    vary: Annotated[list[str] | None, typer.Option(
        "--vary", help="A knob and its range, KNOB=lo:hi (twice), e.g. "
                       "'poison[*].p_supersede=0:1' or stubs.selector_noise=0:0.4.",
        show_default=False)] = None,
    sweep_file: Annotated[Path | None, typer.Option(
        "--sweep", help="A sweep file (grid over two parameters) instead of SCENARIO "
                        "--vary.", show_default=False)] = None,
    levels: Annotated[int, typer.Option(min=2, max=1000, help="Grid levels per knob "
                                        "(levels² cells).")] = 5,
    n: Annotated[int, typer.Option("--n", "-n", min=2, help="Trajectories per cell.")
                 ] = 500,
    seed: SeedOpt = None,
    out: Annotated[Path | None, typer.Option(
        "--out", "-o", help="Output folder [default: results/<scenario>/claims].",
        show_default=False)] = None,
    workers: WorkersOpt = 1,
    scheduler: SchedulerOpt = None,
    resume: Annotated[bool, typer.Option(
        "--resume", help="Continue the sweep in --out/sweep (which must exist).")] = False,
    charts: ChartsOpt = True,
    progress: ProgressOpt = True,
    set_: SetOpt = None,
    correction: CorrectionOpt = "holm",
    precision: ClaimsPrecisionOpt = None,
    n_max: NMaxOpt = 100_000,
    csv: CsvOpt = False,
) -> None:
    """Where do the paper's claims hold? Table 4's orderings over a grid of two knobs.

    Each claim ("Full WMT lowest ASR", "Linear highest BR", ...) is tested in every cell
    with paired tests on common random numbers (the paired t-test, or the exact
    permutation test when few trajectories differ), all (claim, cell) tests one family
    corrected by --correction (Holm by default; bh for an exploratory map): holds
    (significant), holds (not significant), tie, or fails (significant: another
    configuration is significantly better), at two-sided 5%. The grid runs on the sweep
    machinery (resumable, --workers, --scheduler) into --out/sweep; the table and
    heatmaps go to --out. --precision H grows the trajectories per cell until the margin
    interval of every claim on a rate (ASR, PRR, BR, TSR; not AF or other counts, whose
    units one half-width cannot share) has a 95% half-width of at most H in every cell
    (the manifest records the target, every n tried and the widest interval's Monte Carlo
    standard error).

    [bold]Examples[/bold]

      [cyan]wmtsim claims paper_poisoning --vary 'poison[*].p_supersede=0:1' \\
        --vary 'poison[*].persuasiveness=0.2:1'[/cyan]

      [cyan]wmtsim claims paper_poisoning --vary stubs.selector_noise=0:0.4 \\
        --vary stubs.poison_boost=-0.2:0.3 --n 300 -o results/claims_noise[/cyan]

      [cyan]wmtsim claims --sweep my_grid.toml -o results/my_claims --workers 2[/cyan]

      [cyan]wmtsim claims paper_poisoning --vary stubs.selector_noise=0:0.4 \\
        --vary stubs.poison_boost=-0.2:0.3 --levels 3 --n 200 --precision 0.03[/cyan]
    """
    from wmtsim.core.leftovers import recover_kept
    from wmtsim.studies.compare.claims import (
        claims_map,
        grid_sweep,
        parse_vary,
        render_summary,
        table4_claims,
        write_claims,
    )
    from wmtsim.studies.sweeps.sweep import SweepError, load_sweep

    try:
        if (problem := precision_problem(precision)) is not None:
            raise ValueError(problem)
        if precision is not None and resume:
            raise ValueError("--precision with --resume: allowed: one of them (a "
                             "--precision run replaces its sweep as n grows)")
        if sweep_file is not None:
            if scenario is not None or vary:
                raise ValueError("give either --sweep FILE or SCENARIO --vary ... --vary ...")
            spec = load_sweep(sweep_file)
        else:
            if scenario is None or not vary:
                raise ValueError("give SCENARIO and two --vary KNOB=lo:hi (or --sweep FILE)")
            s = _load(scenario, set_)
            spec = grid_sweep(s, [parse_vary(v) for v in vary], levels, n, seed,
                              table4_claims())
        out_dir = _out_folder(out, spec.scenarios[0].name, "claims", keep=KEEP)
        recover_kept(out_dir, KEEP)
        from wmtsim.interfaces.cli.scenarios import _compile_first, _watching

        _drop_other_sweep(out_dir, spec)
        _compile_first(spec.policies, progress)
        options: dict[str, Any] = {"workers": workers, "scheduler": scheduler,
                                   "progress": progress, "correction": correction}
        history: list[tuple[int, float]] = []
        with _watching():
            if precision is None:
                cm = claims_map(spec, out_dir, resume=resume, **options)
            else:
                from wmtsim.studies.compare.precision import claims_to_precision

                cm, history = claims_to_precision(spec, out_dir, precision, n_max,
                                                  **options)
    except (SweepError, ValueError) as e:
        raise _fail(str(e)) from None
    from wmtsim.studies.compare.claims import CRN_NOTE, render_flatness

    _print_table(render_summary(cm))
    flat_table = render_flatness(cm)
    if flat_table is not None:
        _print_table(flat_table)
    _say(CRN_NOTE)
    record = None
    if precision is not None:
        from wmtsim.studies.compare.precision import (
            claims_cells,
            claims_precision_text,
            precision_record,
        )

        _say(claims_precision_text(cm, history, precision, n_max))
        record = precision_record(claims_cells(cm.table), history, precision, n_max)
    with _writing(out_dir, "claims", keep=KEEP, csv=csv) as work:
        written = write_claims(cm, work, charts=charts, precision=record)
    _say(f"family: {cm.family}; {cm.seconds:.1f} s; written to "
         f"{out_dir}/: {', '.join(p.name for p in written)}")


def _drop_other_sweep(out_dir: Path, spec: Any) -> None:
    """A previous claims result in ``out_dir`` whose sweep is of another request (other
    knobs, levels, n or seed) is replaced as a whole, so its sweep is not carried over:
    delete it before the new sweep runs (its claims.parquet stays whole until the swap).
    An interrupted run's sweep (no manifest) is left to the sweep's own check."""
    import json
    import shutil

    from wmtsim.core.output import manifest_command
    from wmtsim.studies.sweeps.design import plan

    sweep = out_dir / KEEP[0]
    if manifest_command(out_dir) != "claims" or not sweep.is_dir():
        return
    try:
        found = json.loads(read_regular(sweep / "manifest.json"))
    except (OSError, ValueError):
        found = None
    if not isinstance(found, dict) or found.get("sweep_id") != plan(spec).sweep_id:
        shutil.rmtree(sweep)


def register(app: typer.Typer) -> None:
    """Add attribute and claims to ``app``."""
    app.command()(attribute)
    app.command()(claims)
