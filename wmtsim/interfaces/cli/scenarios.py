"""The scenario commands of the ``wmtsim`` CLI: run and calibrate, and the helpers the other
command modules share (loading a scenario with ``--set``, progress, checks of options).

`register` adds them to the app of `wmtsim.interfaces.cli.main`. Exit codes as there: 0 success,
1 a claim or check that does not hold (``compare --strict``), 2 bad input (a scenario that does not
load, a bad option); bad input writes nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from wmtsim.interfaces.cli import common as _cli_common
from wmtsim.interfaces.cli.common import (
    CsvOpt,
    NMaxOpt,
    PrecisionOpt,
    ProgressOpt,
    _fail,
    _out_folder,
    _print_table,
    _terminal_width,
    _writing,
    bar_columns,
    err_console,
    out_console,
    precision_problem,
)

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from wmtsim.studies.scenarios.scenario import Scenario

ScenarioArg = Annotated[str, typer.Argument(
    help="A scenario file (TOML, see docs/scenario_format.md) or the name of a shipped "
         f"scenario ({', '.join(_cli_common.shipped_scenario_names())}).",
    show_default=False)]
OutOpt = Annotated[Path | None, typer.Option(
    "--out", "-o", help="Output folder, replaced as a whole (default: results/<scenario "
                        "name>/<command>, the name reduced to letters, digits, . _ -).",
    show_default=False)]
NOpt = Annotated[int | None, typer.Option(
    "--n", "-n", min=1, max=10_000_000,
    help="Trajectories per configuration, 1 to 10,000,000 (default: the scenario's).",
    show_default=False)]
SeedOpt = Annotated[int | None, typer.Option(
    "--seed", "-s", min=0, max=2**63 - 1, help="Seed, 0 to 2^63 - 1 (default: the "
                                                "scenario's).", show_default=False)]
CorrectionOpt = Annotated[str, typer.Option(
    "--correction", help="Multiplicity correction over the family of claims: holm "
                         "(family-wise error, the default), bh (Benjamini–Hochberg, false "
                         "discovery rate: exploratory) or none.")]
SetOpt = Annotated[list[str] | None, typer.Option(
    "--set", help="Override a value, e.g. --set stubs.p_leak=0.5 --set rho=0.8 (TOML "
                  "values).", show_default=False)]


def _load(spec: str, sets: list[str] | None = None) -> Scenario:
    """Load (and override) a scenario; any problem exits with code 2 before any output.

    A problem with a ``--set`` value is reported as the command line's (``--set rh0=0.8
    (command line)``), not the scenario file's: the file is fine, the option is not."""
    import tomllib

    from wmtsim.studies.scenarios.scenario import ScenarioError, canonical_key, load_scenario

    try:
        s = load_scenario(spec)
    except ScenarioError as e:
        raise _fail(str(e)) from None
    if not sets:
        return s
    overrides: dict[str, object] = {}
    origin: dict[str, str] = {}  # canonical key -> the --set item that set it
    try:
        for item in sets:
            where = f"--set {item} (command line)"
            key, eq, value = item.partition("=")
            if not eq:
                raise ScenarioError(where, item, "expected key=value",
                                    "e.g. --set stubs.p_leak=0.5")
            origin[canonical_key(key.strip(), source=where)] = where
            try:
                overrides[key.strip()] = tomllib.loads(f"v = {value}")["v"]
            except tomllib.TOMLDecodeError:
                overrides[key.strip()] = value
        return s.with_overrides(overrides)
    except ScenarioError as e:
        import re

        every = re.sub(r"^poison\[\d+\]", "poison[*]", e.path)  # poison[0].x set by poison[*].x
        culprit = next((w for k, w in origin.items() if k in (e.path, every)), None)
        if culprit is None or e.source.startswith("--set "):
            raise _fail(str(e)) from None
        raised = ScenarioError(culprit, e.path, e.problem, e.allowed)
        raise _fail(f"{raised} (applied to {e.source})") from None


def paper_table4_policies() -> tuple[str, ...]:
    from wmtsim.core.policies import TABLE4_POLICIES

    return TABLE4_POLICIES


def _compile_first(policies: Sequence[str], progress: bool = True) -> None:
    """On a fresh numba cache, compile the kernel groups these policies need first,
    saying so on stderr with an estimate calibrated on this machine and, on a terminal, a
    live count of the kernels compiled (`wmtsim.engine.warm`): a silent compile looks like
    a hang."""
    from wmtsim.engine.warm import ensure_compiled, groups_for

    ensure_compiled(groups_for(policies), say=_note, live=_live if _shown(progress) else None)


@contextmanager
def _watching() -> Iterator[list[int]]:
    """`wmtsim.engine.warm.watching` on stderr: a kernel that compiles inside the block
    after `_compile_first` (one its markers could not see was stale) is announced before
    it compiles, never silent. For the commands without a progress bar (`_progress` does
    the same)."""
    from wmtsim.engine.warm import watching

    with watching(_note) as count:
        yield count


def _note(text: str) -> None:
    err_console.print(text, markup=False, highlight=False)


def _shown(progress: bool) -> bool:
    """Bars and spinners only on a terminal, and not with --no-progress."""
    return progress and bool(err_console.is_terminal)


@contextmanager
def _live(label: str, seconds: float, kernels: int | None) -> Iterator[Callable[[int], None]]:
    """A spinner with the count of kernels compiled so far and the time elapsed."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    of = f" of ~{kernels}" if kernels else ""
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                  TextColumn(f"(~{seconds:.0f} s)"), console=err_console,
                  transient=True) as bar:
        task = bar.add_task(f"    {label}: 0{of} kernels compiled", total=None)
        yield lambda n: bar.update(task, description=f"    {label}: {n}{of} kernels compiled")


@contextmanager
def _progress(enabled: bool = True) -> Iterator[Progress]:
    """A progress bar on stderr (none off a terminal or with --no-progress) that also
    counts numba kernels compiled during the work: a cache the markers call warm can
    still be stale for numba (a kernel's file changed), and that compile is said, not
    silent."""
    from rich.progress import Progress

    from wmtsim.engine.warm import UNCACHED, counting_compiles

    bar = Progress(*bar_columns(), console=err_console, transient=True,
                   disable=not _shown(enabled))
    compiling: list[TaskID] = []

    def first() -> None:  # said as the first compile starts, not after it
        _note(f"note: {UNCACHED}")
        if not bar.disable:
            compiling.append(bar.add_task("compiling numba kernels that were not in the "
                                          "cache: 0", total=None))

    def tick(count: int) -> None:
        if compiling:
            bar.update(compiling[0], description="compiling numba kernels that were not "
                                                 f"in the cache: {count}")

    with bar, counting_compiles(tick, first):
        yield bar


def _check_policies(policies: list[str] | None) -> None:
    from wmtsim.core.formatting import did_you_mean
    from wmtsim.core.policies import POLICIES

    for p in policies or []:
        if p not in POLICIES:
            raise _fail(f"--policy {p!r} is unknown{did_you_mean(p, POLICIES)}; "
                        f"allowed: {', '.join(POLICIES)}")


def _check_threads(threads: int | None) -> None:
    from numba import config

    most = int(config.NUMBA_NUM_THREADS)  # type: ignore[attr-defined]  # numba's own limit
    if threads is not None and not 1 <= threads <= most:
        raise _fail(f"--threads {threads}: allowed: an integer in [1, {most}] "
                    "(this machine's numba threads)")


def run(
    scenario: ScenarioArg,
    policy: Annotated[list[str] | None, typer.Option(
        "--policy", "-p", help="Configuration to run (repeatable; default: the "
                               "scenario's policies).", show_default=False)] = None,
    n: NOpt = None,
    seed: SeedOpt = None,
    threads: Annotated[int | None, typer.Option(
        "--threads", "-t", min=1, help="Numba threads for this run (results do not "
                                       "depend on it).", show_default=False)] = None,
    out: OutOpt = None,
    record_steps: Annotated[int, typer.Option(
        "--record-steps", min=0, help="Keep per-step u, m, state and selections of the "
                                      "first K trajectories (steps.parquet).")] = 0,
    set_: SetOpt = None,
    progress: ProgressOpt = True,
    csv: CsvOpt = False,
    precision: PrecisionOpt = None,
    n_max: NMaxOpt = 100_000,
) -> None:
    """Simulate a scenario's configurations and write the results.

    Writes [bold]trajectories.parquet[/bold] (one row per trajectory and configuration,
    with provenance), [bold]summary.parquet[/bold] (mean and 95% interval per metric),
    [bold]steps.parquet[/bold] with --record-steps, and [bold]manifest.json[/bold]
    (scenario, params, seed, version, timings). Files are replaced atomically.

    [bold]Examples[/bold]

      [cyan]wmtsim run paper_poisoning[/cyan]

      [cyan]wmtsim run scenarios/gaia_like.toml -p wmt -p linear --n 2000 --out results/g[/cyan]

      [cyan]wmtsim run long_horizon --record-steps 5 --set params.rho=0.8[/cyan]
    """
    import polars as pl

    from wmtsim.core.inference import ALPHA, resamples_for
    from wmtsim.core.output import atomic_write_parquet, write_manifest
    from wmtsim.core.provenance import provenance
    from wmtsim.studies.compare.report import (
        render_summary,
        run_policies,
        summarise,
    )

    _check_policies(policy)
    _check_threads(threads)
    if (problem := precision_problem(precision)) is not None:
        raise _fail(problem)
    s = _load(scenario, set_)
    policies = tuple(dict.fromkeys(policy or s.policies))
    out_dir = _out_folder(out, s.name, "run")
    _compile_first(policies, progress)
    t0 = time.perf_counter()
    timings: dict[str, float] = {}
    with _progress(progress) as bar:
        task = bar.add_task(f"{s.name}: simulating", total=len(policies))
        last = [time.perf_counter()]

        def tick(p: str) -> None:
            now = time.perf_counter()
            timings[p] = round(now - last[0], 3)
            last[0] = now
            bar.advance(task)

        def run_at(k: int | None) -> tuple[Any, Any]:
            bar.reset(task, description=f"{s.name}: simulating"
                      + (f" (n = {k})" if precision is not None else ""))
            res = run_policies(s, policies, k, seed, threads, record_steps, progress=tick)
            bar.update(task, description=f"{s.name}: bootstrap intervals")
            return res, summarise(res)

        history: list[tuple[int, float]] = []
        if precision is None:
            results, summary = run_at(n)
        else:
            from wmtsim.studies.compare.precision import grow_n, widest

            (results, summary), history = grow_n(
                run_at, lambda r: widest(r[1]), s.n if n is None else n, precision, n_max)
    first = next(iter(results.values()))
    fields: dict[str, Any] = {}
    if precision is not None:
        from wmtsim.studies.compare.precision import precision_record, precision_text

        fields["precision"] = precision_record(summary, history, precision, n_max)
        _say(precision_text(summary, history, precision, n_max))
    with _writing(out_dir, "run", csv=csv) as work:
        written = [atomic_write_parquet(pl.concat([r.trajectories for r in results.values()],
                                                  how="diagonal_relaxed"),
                                        work / "trajectories.parquet"),
                   atomic_write_parquet(summary, work / "summary.parquet")]
        if record_steps:
            steps = pl.concat([r.steps.with_columns(pl.lit(p).alias("policy"))
                               for p, r in results.items()], how="diagonal_relaxed")
            written.append(atomic_write_parquet(steps, work / "steps.parquet"))
        written.append(write_manifest(work, "run", {
            "scenario": s.to_dict(), "source": s.source, "params": s.params.to_dict(),
            "stubs": s.stubs.to_dict(), "policies": list(policies),
            "n": first.trajectories.height, "seed": first.seed, "threads": threads,
            "record_steps": record_steps,
            "timings": {"total_seconds": round(time.perf_counter() - t0, 3),
                        "per_policy_seconds": timings},
            "files": [p.name for p in written], **fields},
            extra=provenance(first.seed, first.trajectories.height, resamples_for(ALPHA),
                             ALPHA, "none")))
    _print_table(render_summary(
        summary, policies, title=f"{s.name}: n={first.trajectories.height}, "
                                 f"seed={first.seed} — mean [95% CI]"),
        full=str(out_dir / "summary.parquet"), pinned=())  # each configuration once
    _say(f"wrote {', '.join(p.name for p in written)} to {out_dir}/")


def _say(text: str) -> None:
    """A line of the result on stdout, wrapped to the terminal (a pipe gets it whole)."""
    from rich.console import Console

    width = _terminal_width()
    console = out_console if width is None else Console(width=width, soft_wrap=False)
    console.print(text, markup=False, highlight=False)


def calibrate(
    scenario: ScenarioArg,
    target: Annotated[str, typer.Option(
        "--target", help="The table to fit: paper-table4.")] = "paper-table4",
    fit_on: Annotated[list[str] | None, typer.Option(
        "--fit-on", help="Configuration (row) to fit (repeatable; default: all five). "
                         "The other rows are predictions.", show_default=False)] = None,
    knob: Annotated[list[str] | None, typer.Option(
        "--knob", help="A free knob key=low:high[:int], e.g. stubs.p_leak=0:1 "
                       "(repeatable; default: the selector, persuasion and leak knobs).",
        show_default=False)] = None,
    n: Annotated[int, typer.Option("--n", "-n", min=1, max=10_000_000,
                                   help="Trajectories per evaluation, 1 to 10,000,000.")
                 ] = 200,
    seed: SeedOpt = None,
    weight: Annotated[list[str] | None, typer.Option(
        "--weight", help="ROW=W: multiply a row's squared errors by W (repeatable), "
                         "e.g. --weight wmt=5 to hold Full WMT closest to the paper.",
        show_default=False)] = None,
    maxiter: Annotated[int, typer.Option("--maxiter", min=1, max=100_000,
                                         help="Optimizer generations, 1 to 100,000.")
                       ] = 20,
    order_weight: Annotated[float, typer.Option(
        "--order-weight", min=0.0, max=1e12,
        help="Weight of a penalty when the paper's ordering (Full WMT best, Linear worst) "
             "breaks. Default 0: fit the cells only; `compare` then tests the ordering.")
    ] = 0.0,
    method: Annotated[str, typer.Option(
        "--method", help="differential_evolution | nelder-mead")] = "differential_evolution",
    out: Annotated[Path | None, typer.Option(
        "--out", "-o", help="Output folder, replaced as a whole: calibrated.toml (the "
                            "fitted scenario), errors.csv (per cell) and manifest.json "
                            "(default: results/<name>/calibrate).", show_default=False)
    ] = None,
) -> None:
    """Fit the world's free knobs to a paper table with scipy.optimize.

    Runs the table's configurations on common random numbers at each evaluation and
    minimises the squared error of the fitted cells (pooled over trajectories, as
    `compare` reports them; with --order-weight, plus a penalty when the paper's ordering
    breaks). Writes the scenario with the fitted values (comments of the source
    file kept) and a per-cell error report, fitted and held-out cells marked.

    [bold]Examples[/bold]

      [cyan]wmtsim calibrate paper_poisoning --target paper-table4[/cyan]

      [cyan]wmtsim calibrate paper_poisoning --fit-on linear --fit-on wmt --out results/fit[/cyan]
    """
    from rich.table import Table

    from wmtsim.core.output import atomic_write_bytes, write_manifest
    from wmtsim.core.provenance import provenance
    from wmtsim.studies.calibration.calibrate import calibrate as run_calibrate
    from wmtsim.studies.calibration.calibrate import parse_knob, parse_weight
    from wmtsim.studies.scenarios.scenario import ScenarioError
    from wmtsim.studies.scenarios.toml_files import update_toml_text

    s = _load(scenario)
    if method not in ("differential_evolution", "nelder-mead"):
        raise _fail(f"--method {method!r}; allowed: differential_evolution, "
                    "nelder-mead")
    if out is not None and out.suffix == ".toml":
        raise _fail(f"--out {str(out)!r}: calibrate writes a folder (calibrated.toml, "
                    "errors.csv, manifest.json); allowed: a folder path")
    out_dir = _out_folder(out, s.name, "calibrate")
    try:
        knobs = [parse_knob(k) for k in knob] if knob else None
        row_weights = dict(parse_weight(text) for text in weight or [])
        _compile_first(paper_table4_policies())
        with _progress() as bar:
            task = bar.add_task(f"{s.name}: calibrating (best objective –)", total=None)

            def tick(i: int, best: float) -> None:
                bar.update(task, completed=i,
                           description=f"{s.name}: calibrating (best objective {best:.4f})")

            res = run_calibrate(s, target, fit_on, knobs, n=n, seed=seed, maxiter=maxiter,
                                method=method, row_weights=row_weights, progress=tick,
                                order_weight=order_weight)
    except ScenarioError as e:
        raise _fail(str(e)) from None
    except ValueError as e:
        raise _fail(str(e)) from None
    if s.source and Path(s.source).is_file():
        text = update_toml_text(Path(s.source).read_text("utf-8"), res.fitted)
    else:
        text = res.scenario.to_toml()
    header = (f"# Calibrated by `wmtsim calibrate --target {target}` on rows "
              f"{', '.join(res.fit_on)} (n={n}, objective {res.objective:.4f}).\n")
    lines = ["policy,metric,paper,simulated,error,fitted"]
    lines += [f"{c['policy']},{c['metric']},{c['paper']},{c['simulated']:.6g},"
              f"{c['error']:.6g},{c['fitted']}" for c in res.cells]
    with _writing(out_dir, "calibrate") as work:
        atomic_write_bytes(work / "calibrated.toml", (header + text).encode())
        atomic_write_bytes(work / "errors.csv", ("\n".join(lines) + "\n").encode())
        write_manifest(work, "calibrate", {
            "scenario": s.to_dict(), "source": s.source, "target": target,
            "fit_on": list(res.fit_on), "fitted": res.fitted, "objective": res.objective,
            "n": n, "seed": s.seed if seed is None else seed, "method": method,
            "maxiter": maxiter, "order_weight": order_weight, "row_weights": row_weights,
            "evaluations": res.evaluations, "seconds": round(res.seconds, 3)},
            extra=provenance(s.seed if seed is None else seed, n, None, None, None))
    out_path, err_path = out_dir / "calibrated.toml", out_dir / "errors.csv"
    t = Table(title="Fitted knobs", title_justify="left")
    t.add_column("knob")
    t.add_column("value", justify="right")
    for k, v in res.fitted.items():
        t.add_row(k, f"{v:g}")
    _print_table(t)
    et = Table(title="Per-cell error (simulated − paper); * = fitted", title_justify="left")
    et.add_column("metric")
    pols = list(dict.fromkeys(c["policy"] for c in res.cells))
    for p in pols:
        et.add_column(p, justify="right")
    for m in dict.fromkeys(c["metric"] for c in res.cells):
        row = [m]
        for p in pols:
            c = next(x for x in res.cells if x["policy"] == p and x["metric"] == m)
            row.append(f"{c['simulated']:.3f} ({c['error']:+.3f}){'*' if c['fitted'] else ''}")
        et.add_row(*row)
    _print_table(et, full=str(err_path))
    _say(f"{res.evaluations} evaluations in {res.seconds:.0f} s; wrote {out_path} and "
         f"{err_path}")


def register(app: typer.Typer) -> None:
    """Add run and calibrate to ``app`` (compare: `wmtsim.interfaces.cli.compare`; schema:
    `wmtsim.interfaces.cli.schema`)."""
    app.command()(run)
    app.command()(calibrate)
