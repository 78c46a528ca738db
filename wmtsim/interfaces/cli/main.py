"""The ``wmtsim`` command line (``[project.scripts] wmtsim = "wmtsim.interfaces.cli.main:app"``).

One `typer.Typer` app, one function per command. Exit codes: 0 success, 1 a check that
failed (an ``expect`` line does not hold), 2 bad input (a malformed trace, an unsupported
output format, a missing file). Library work lives in the library (`wmtsim.engine.trace.trace`);
this module only parses arguments and renders results.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from wmtsim.core.formatting import num, plural

if TYPE_CHECKING:
    import polars as pl

    from wmtsim.engine.trace.trace import Replay, Streamed

from wmtsim.interfaces.cli import common as _cli_common
from wmtsim.interfaces.cli import conformance as _conformance
from wmtsim.interfaces.cli.common import (
    ProgressOpt,
    SchedulerOpt,
    WorkersOpt,
    _check_out,
    _fail,
    _print_table,
    app,
    err_console,
    file_manifest,
    out_console,
)

DEMO_TRACE = "paper_a4.jsonl"
DEMO_OUT = Path("results/demo/paper_a4_replay.parquet")

TraceArg = Annotated[Path, typer.Argument(
    help="A trace file: JSON Lines, one event per line (see docs/trace_format.md).",
    show_default=False)]


def _run_trace(trace: Path) -> Replay:
    """Replay ``trace``; any problem with the input exits with code 2."""
    from wmtsim.engine.trace.trace import TraceError, run

    try:
        return run(trace)
    except TraceError as e:
        raise _fail(f"{trace}: {e}") from None
    except OSError as e:
        raise _fail(f"{trace}: cannot read: {e.strerror or e}") from None


def _stream_trace(trace: Path, out: Path | None, rules: bool = False) -> Streamed:
    """Replay ``trace`` with bounded memory (writing ``out`` in batches, if given, with its
    sidecar manifest); any problem with the input or the output exits with code 2 and
    leaves ``out`` as it was."""
    from wmtsim.core.output import write_failure
    from wmtsim.engine.trace.trace import TraceError, stream

    manifest = None if out is None else file_manifest("replay", {"trace": str(trace)})
    try:
        return stream(trace, out=out, rules=rules, manifest=manifest)
    except TraceError as e:
        raise _fail(f"{trace}: {e}") from None  # the error names the file
    except IsADirectoryError:
        raise _fail(f"cannot read {str(trace)!r}: it is a folder, not a trace file") from None
    except Exception as e:
        if isinstance(e, OSError) and (out is None or e.filename == str(trace)):
            raise _fail(f"cannot read {str(trace)!r}: {e.strerror or e}") from None
        failure = write_failure(out or trace, e)  # a full disk, from any library
        if failure is None:
            raise
        raise _fail(str(failure)) from None


def _write(frame: pl.DataFrame, out: Path, manifest: dict[str, object]) -> Path:
    from wmtsim.core.output import write_failure
    from wmtsim.engine.trace.trace import write_frame

    try:
        return write_frame(frame, out, manifest)
    except Exception as e:
        failure = write_failure(out, e)  # a full disk, from any library
        if failure is None:
            raise
        raise _fail(str(failure)) from None


def _fmt(x: float | None) -> str:
    return num(x)  # the precision policy (wmtsim.core.formatting); None is a dash


def _final_table(last: pl.DataFrame, steps: int) -> Table:
    """The tree after the last select step (``last``: its rows): one row per node."""
    table = Table(title=f"after step {steps} (line {last['line'][0]})",
                  title_justify="left")
    for col in ("node", "kind", "state", "u", "m", "eligible", "selected", "priority",
                "poisoned"):
        table.add_column(col, justify="right" if col in ("u", "m", "priority") else "left")
    for row in last.iter_rows(named=True):
        table.add_row(row["node"], row["kind"], row["state"], _fmt(row["u"]), str(row["m"]),
                      "yes" if row["eligible"] else "", "yes" if row["selected"] else "",
                      _fmt(row["priority"]), "yes" if row["poisoned"] else "",
                      style="red" if row["poisoned"] else None)
    return table


@app.command()
def replay(
    trace: TraceArg,
    out: Annotated[Path | None, typer.Option(
        "--out", "-o",
        help="Write the per-step, per-node replay here (.parquet or .csv, by extension).",
        show_default=False)] = None,
) -> None:
    """Replay a trace through the WMT kernels and summarise the final tree.

    Each [bold]select[/bold] line is one prompt-construction step (Eqs. 3-7); the output
    has one row per (step, node). Bad traces exit with code 2 and write nothing.

    [bold]Examples[/bold]

      [cyan]wmtsim replay scenarios/traces/paper_a4.jsonl[/cyan]

      [cyan]wmtsim replay my_trace.jsonl --out results/my_trace.parquet[/cyan]

      [cyan]wmtsim replay my_trace.jsonl -o my_trace.csv[/cyan]
    """
    out = _check_out(out, "replay")
    with _watching():
        result = _stream_trace(trace, out)
    nodes = result.last.height
    out_console.print(f"{trace}: {plural(result.steps, 'select step')}, "
                      f"{plural(nodes, 'node')}, {plural(result.expectations, 'expectation')}",
                      markup=False, highlight=False)
    if result.steps:
        _print_table(_final_table(result.last, result.steps),
                     full=None if out is None else str(out))
    if result.divergence is not None:
        out_console.print(f"note: an expectation does not hold: {result.divergence} "
                          "(run `wmtsim check` for an exit status)", markup=False,
                          highlight=False)
    if out is not None:
        out_console.print(f"wrote {result.rows} rows to {out}", markup=False,
                          highlight=False)


@app.command()
def check(trace: TraceArg, coverage: _conformance.CoverageOpt = False,
          all_: _conformance.AllOpt = False) -> None:
    """Replay a trace and verify its [bold]expect[/bold] lines.

    Exit 0 when every expectation holds, 1 at the first that does not (printing its line,
    node, field, expected and actual values and the tolerance), 2 for a bad trace.

    [bold]Example[/bold]

      [cyan]wmtsim check scenarios/traces/paper_a4.jsonl --coverage --all[/cyan]
    """
    with _watching():
        result = _stream_trace(trace, None, rules=coverage or all_)
    _conformance.report_rules(trace, result, coverage, all_)  # exits 1 if --all found some
    d = result.divergence
    if d is not None:
        tol = "exact" if d.tol is None else f"{d.tol:g}"
        out_console.print(
            f"FAIL: {trace}: line {d.line}, node {d.node!r}, field {d.field}: expected "
            f"{d.expected!r}, got {d.got!r}, tolerance {tol}", markup=False, highlight=False)
        raise typer.Exit(1)
    holds = "holds" if result.expectations == 1 else "hold"
    out_console.print(f"OK: {plural(result.expectations, 'expectation')} {holds}",
                      markup=False, highlight=False)


def demo_trace_path() -> Path:
    """The paper A.4 trace: the repository copy if present, else the packaged one."""
    repo_copy = Path(__file__).resolve().parents[3] / "scenarios" / "traces" / DEMO_TRACE
    if repo_copy.is_file():
        return repo_copy
    from importlib import resources

    return Path(str(resources.files("wmtsim") / "data" / DEMO_TRACE))


def _decay_table(frame: pl.DataFrame) -> Table:
    """Step by step u (and m) of every action and global memory, poisoned ones first."""
    import polars as pl

    mem = frame.filter(pl.col("kind").is_in(["action", "global"]))
    order = (mem.group_by("node", maintain_order=True)
             .agg(pl.col("poisoned").first())
             .sort("poisoned", descending=True, maintain_order=True))
    nodes = order["node"].to_list()
    poisoned = dict(zip(order["node"], order["poisoned"], strict=True))
    table = Table(title="Retention scores u (miss count m) per select step",
                  title_justify="left",
                  caption="green = selected, red = missed (Eq. 5 decay), "
                          "dim = outside the candidate pool",
                  caption_justify="left")
    table.add_column("step", justify="right")
    table.add_column("line", justify="right")
    for node in nodes:
        label = f"{node}\n(poisoned)" if poisoned[node] else f"{node}\n(clean)"
        table.add_column(label, justify="right",
                         header_style="bold red" if poisoned[node] else "bold green")
    cells = {(r["step"], r["node"]): r for r in mem.iter_rows(named=True)}
    for step, line in frame.select("step", "line").unique(maintain_order=True).iter_rows():
        row = [str(step), str(line)]
        for node in nodes:
            r = cells.get((step, node))
            if r is None:
                row.append("")
                continue
            text = f"{num(r['u'])} (m={r['m']})"
            if r["state"] != "active":
                text += f" {r['state']}"
            if r["selected"]:
                row.append(f"[green]{text}[/green]")
            elif r["eligible"]:
                row.append(f"[red]{text}[/red]")
            else:
                row.append(f"[dim]{text}[/dim]")
        table.add_row(*row)
    return table


@app.command()
def demo(
    out: Annotated[Path, typer.Option(
        "--out", "-o", help="Where to write the replay (.parquet or .csv).")] = DEMO_OUT,
) -> None:
    """Replay the paper's worked example (Appendix A.4) and show how poison decays.

    A failed poisoned blog lookup (u = 0.30) and a plausible poisoned mirror page recorded
    as success (u = 0.75, like clean evidence) lose score each time the selector passes
    them over (Eqs. 3-5: ρ = 0.9, M = 3); the mirror page is finally superseded.

    [bold]Example[/bold]

      [cyan]wmtsim demo --out results/demo/paper_a4_replay.csv[/cyan]
    """
    checked = _check_out(out, "demo")
    out = checked if checked is not None else out
    trace = demo_trace_path()
    with _watching():
        result = _run_trace(trace)
    out_console.print(f"Paper A.4 worked example: {trace}", markup=False, highlight=False)
    _print_table(_decay_table(result.frame), full=f"{out} (every step and node)")
    if result.divergence is None:
        out_console.print(f"OK: {result.expectations} hand-derived expectations hold",
                          markup=False, highlight=False)
    else:
        out_console.print(f"FAIL: {trace}: {result.divergence}", markup=False,
                          highlight=False)
    written = _write(result.frame, out, file_manifest("demo", {
        "trace": str(trace), "rows": result.frame.height,
        "expectations_hold": result.divergence is None}))
    out_console.print(f"replay ({result.frame.height} rows) written to {written}",
                      markup=False, highlight=False)
    if result.divergence is not None:
        raise typer.Exit(1)


@app.command()
def warmup() -> None:
    """Compile every numba kernel now (and cache it), so later runs start fast.

    Generates a tiny world, runs it under every policy and replays the demo trace; with
    the numba cache on disk, a second process skips compilation.

    [bold]Example[/bold]

      [cyan]wmtsim warmup[/cyan]
    """
    import time

    from wmtsim.core.policies import POLICIES
    from wmtsim.core.world_spec import PoisonSpec, WorldSpec
    from wmtsim.engine.simulation import simulate
    from wmtsim.engine.trace.trace import run as run_trace
    from wmtsim.engine.warm import GROUPS, ensure_compiled
    from wmtsim.engine.world import generate

    t0 = time.perf_counter()
    ensure_compiled(tuple(GROUPS), say=lambda text: err_console.print(
        text, markup=False, highlight=False))
    # Then every configuration once (they share the groups' kernels).
    world = generate(WorldSpec(n_globals=1, poison=(PoisonSpec("plausible"),)), n=4)
    for name in POLICIES:
        simulate(world, policy=name, record_steps=1)
    run_trace(demo_trace_path())
    out_console.print(f"warmup: compiled {len(POLICIES)} policies, world generation and "
                      f"trace replay in {time.perf_counter() - t0:.2f} s", markup=False,
                      highlight=False)


def _installed(module: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # ValueError: sys.modules holds None for it
        return False


@app.command()
def dashboard(
    port: Annotated[int, typer.Option(help="Port to serve on.")] = 8501,
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    results: Annotated[Path | None, typer.Option(
        help="Folder of results to show (default: ./results).", show_default=False)] = None,
) -> None:
    """Open the Streamlit dashboard (poisoning dynamics, comparisons, sweeps, traces).

    Needs the [bold]dashboard[/bold] extra (the app ships inside the package, in
    wmtsim/interfaces/dashboard/). The pages list the sweeps, attacks, claims maps and
    screenings in results/ of the folder it is started in (or --results DIR).

    [bold]Example[/bold]

      [cyan]wmtsim dashboard --port 8502[/cyan]
    """
    import os
    import subprocess
    import sys

    import wmtsim.interfaces.dashboard as shipped  # its __init__ is a docstring: cheap

    app_file = Path(shipped.__file__).resolve().parent / "app.py"
    if not app_file.is_file():
        raise _fail(f"the dashboard app was not found at {app_file} (it ships inside the "
                    "wmtsim package: reinstall wmtsim)")
    if not _installed("streamlit"):
        raise _fail("the dashboard needs the 'dashboard' extra (Streamlit), which is not "
                    "installed: pip install 'wmtsim[dashboard]'")
    env = dict(os.environ)  # the app reads results/ of this folder, or --results
    if results is not None:
        if not results.is_dir():
            raise _fail(f"--results {results}: no such folder")
        env["WMTSIM_RESULTS"] = str(results.absolute())
    cmd = [sys.executable, "-m", "streamlit", "run", str(app_file), "--server.port",
           str(port), "--server.address", host, "--server.headless", "true",
           "--browser.gatherUsageStats", "false",
           "--client.toolbarMode", "minimal"]  # no "Deploy" button, no developer menu
    if os.name == "posix":  # become the server, so that stopping this process stops it
        os.execve(sys.executable, cmd, env)
    try:
        raise typer.Exit(subprocess.call(cmd, env=env))
    except KeyboardInterrupt:
        raise typer.Exit(0) from None


@app.command()
def sweep(
    sweep_file: Annotated[Path, typer.Argument(
        help="A sweep file (TOML, see docs/sweeps.md).", show_default=False)],
    out: Annotated[Path, typer.Option(
        "--out", "-o", help="Output folder (chunked Parquet + manifest).",
        show_default=False)],
    workers: WorkersOpt = 1,
    scheduler: SchedulerOpt = None,
    resume: Annotated[bool, typer.Option(
        "--resume", help="Continue a sweep in --out (which must exist).")] = False,
    progress: ProgressOpt = True,
) -> None:
    """Run a parameter sweep; only points missing from --out are computed.

    Results are keyed by a hash of each point's parameters, seed, scenario content and
    wmtsim version, so re-running (or --resume) after a crash computes only what is
    missing, and results do not depend on --workers or --scheduler. On a dask cluster
    (the cluster extra), add --scheduler with its address, e.g. tcp://HOST:8786.

    [bold]Examples[/bold]

      [cyan]wmtsim sweep sweeps/rho_m_grid.toml --out results/rho_m[/cyan]

      [cyan]wmtsim sweep sweeps/rho_m_grid.toml -o results/rho_m --resume --workers 2[/cyan]
    """
    from wmtsim.core.output import OutputError
    from wmtsim.studies.sweeps.sweep import SweepError, load_sweep, run_sweep

    try:
        spec = load_sweep(sweep_file)
        for note in spec.warnings:
            err_console.print(f"warning: {note}", markup=False, highlight=False)
        from wmtsim.interfaces.cli.scenarios import _compile_first

        if scheduler is None:  # here, not in each local worker, and said (a cluster's
            _compile_first(spec.policies, progress)  # workers compile on their machines)
        with _watching():
            report = run_sweep(spec, out, workers=workers, scheduler=scheduler,
                               resume=resume, progress=progress)
    except (SweepError, OutputError) as e:  # OutputError: a failed write (a full disk)
        raise _fail(str(e)) from None
    out_console.print(
        f"{spec.name}: {report.total} points, {report.already} already done, "
        f"{report.computed} computed in {report.seconds:.1f} s "
        f"({report.rate:.1f} points/s) -> {out}", markup=False, highlight=False)


@app.command()
def analyze(
    sweep_dir: Annotated[Path, typer.Argument(
        help="A folder written by `wmtsim sweep`.", show_default=False)],
    out: Annotated[Path | None, typer.Option(
        "--out", "-o", help="Output folder for tables, charts and manifest.json, replaced "
                            "as a whole [default: DIR/analysis].",
        show_default=False)] = None,
    metric: Annotated[str, typer.Option(help="Metric for Sobol, robustness, heatmap.")
                      ] = "tsr",
    charts: Annotated[bool, typer.Option(help="Write Altair charts (HTML and PNG).")] = True,
) -> None:
    """Summarise a sweep: bootstrap means, Pareto front, robust settings, Sobol indices.

    [bold]Example[/bold]

      [cyan]wmtsim analyze results/rho_m --out results/rho_m/analysis[/cyan]
    """
    from wmtsim.core.output import OutputError
    from wmtsim.studies.sweeps.analysis import analyze as run_analysis
    from wmtsim.studies.sweeps.analysis import incomplete
    from wmtsim.studies.sweeps.sweep import SweepError

    try:
        written = run_analysis(sweep_dir, out, metric=metric, charts=charts)
        missing = incomplete(sweep_dir)
    except OutputError as e:  # --out unusable, or a failed write (a full disk)
        raise _fail(str(e)) from None
    except (SweepError, ValueError) as e:
        text = str(e)
        raise _fail(text if str(sweep_dir) in text else f"{sweep_dir}: {text}") from None
    if missing is not None:
        err_console.print(f"warning: {sweep_dir} is an incomplete sweep ({missing[0]} of "
                          f"{missing[1]} points computed); these results cover only those "
                          "points. Resume it with `wmtsim sweep SWEEP --out "
                          f"{sweep_dir}`.", markup=False, highlight=False)
    from wmtsim.interfaces.cli.analyze import analysis_summary

    for line in analysis_summary(sweep_dir, written, metric):
        out_console.print(line, markup=False, highlight=False)
    tables = [n for n, p in written.items() if not isinstance(p, list)]
    chart_files = [n for n, p in written.items() if isinstance(p, list)]
    folder = next(iter(written.values()))
    folder = (folder[0] if isinstance(folder, list) else folder).parent
    out_console.print(f"wrote {plural(len(tables), 'table')} (.csv, .parquet: "
                      f"{', '.join(tables)})" + (f" and {plural(len(chart_files), 'chart')} "
                      f"(.html, .png: {', '.join(chart_files)})" if chart_files else "")
                      + f" to {folder}/", markup=False, highlight=False)


# Commands in their own modules: scenarios (run, calibrate), schema, compare
# (compare: the paper's claims as tested verdicts), why (attribute, claims: mechanism
# attribution, the claims map), design (screen, tune), conformance (expect,
# conformance), attack (attack: the worst-case poisoning search), dynamics
# (dynamics: how poison lives and dies over a population), stub_fit (fit-stubs,
# simulate-log: stubs fitted to an agent's log).
from wmtsim.interfaces.cli.attack import register as _register_attack  # noqa: E402
from wmtsim.interfaces.cli.compare import register as _register_compare  # noqa: E402
from wmtsim.interfaces.cli.design import register as _register_design_commands  # noqa: E402
from wmtsim.interfaces.cli.dynamics import register as _register_dynamics  # noqa: E402
from wmtsim.interfaces.cli.scenarios import _watching  # noqa: E402
from wmtsim.interfaces.cli.scenarios import register as _register_scenario_commands  # noqa: E402
from wmtsim.interfaces.cli.schema import register as _register_schema  # noqa: E402
from wmtsim.interfaces.cli.stub_fit import register as _register_stub_fit  # noqa: E402
from wmtsim.interfaces.cli.why import register as _register_why_commands  # noqa: E402

_register_scenario_commands(app)
_register_schema(app)
_register_compare(app)
_register_why_commands(app)
_register_design_commands(app)
_register_attack(app)
_register_dynamics(app)
_register_stub_fit(app)
_conformance.register(app)
_cli_common.unwrap_help(app)


if __name__ == "__main__":  # pragma: no cover - `python -m wmtsim.interfaces.cli.main`
    app()
