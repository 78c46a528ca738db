"""The fit-stubs and simulate-log commands of the ``wmtsim`` CLI (`register` adds them to
the app of `wmtsim.interfaces.cli.main`): stubs fitted to an agent's log, and logs drawn from
wmtsim's own stubs (`wmtsim.studies.stub_fit`; docs/stub_logs.md). Exit codes: 0 success,
2 bad input (a log line that breaks the format, a scenario that does not load, an output
path that is not ``.toml`` / ``.jsonl``); bad input writes nothing.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from wmtsim.interfaces.cli.common import ProgressOpt, _fail, _print_table
from wmtsim.interfaces.cli.scenarios import _load, _note, _progress, _say

if TYPE_CHECKING:
    from wmtsim.studies.stub_fit.fit import StubFit

LogArg = Annotated[Path, typer.Argument(
    help="A stub log: JSON Lines, one decision per line (see docs/stub_logs.md).",
    show_default=False)]


def fit_stubs(
    log: LogArg,
    out: Annotated[Path, typer.Option(
        "--out", "-o", help="The stubs section to write (.toml); the calibration chart "
                            "goes beside it (<stem>.calibration.png).", show_default=False)],
    scenario: Annotated[str | None, typer.Option(
        "--scenario", help="Scenario whose stubs an unidentified parameter keeps and whose "
                           "world gives the relevance of a candidate logged by "
                           "same_subtask (default: the defaults).", show_default=False)] = None,
    max_events: Annotated[int, typer.Option(
        "--max-events", min=1, max=100_000_000,
        help="Refuse a log of more events (memory grows with the events kept).")] = 500_000,
    chart: Annotated[bool, typer.Option(help="Write the calibration chart.")] = True,
    progress: ProgressOpt = True,
) -> None:
    """Which stub parameters make an agent's log most likely? Maximum likelihood with 95%
    profile-likelihood intervals.

    Reads LOG (selection, answer and fold events), fits each parameter the log identifies
    (the selector's select_threshold, selector_noise, poison_boost, w_u, w_b; the
    reasoner's p_persuade, p_persuade_vs_evidence, p_misled, p_guess, p_use_max,
    dilution_tokens; the summariser's p_leak, p_leak_rider), leaves the others at their
    defaults and says why, and writes a [stubs] section that run, compare, sweep and tune
    read (paste it into a scenario, or run the file itself). Prints observed vs predicted
    rates by decile (Hosmer–Lemeshow) to say whether the stub family describes the log.

    [bold]Examples[/bold]

      [cyan]wmtsim fit-stubs examples/stub_fit/agent_log.jsonl --out results/stubs.toml[/cyan]
    """
    from wmtsim.core.output import OutputError, atomic_write_text, check_out_file, manifest
    from wmtsim.core.provenance import provenance
    from wmtsim.studies.stub_fit import goodness
    from wmtsim.studies.stub_fit.fit import STEPS, fit_log, stubs_toml
    from wmtsim.studies.stub_fit.log import Relevance, StubLogError, read_log

    t0 = time.perf_counter()
    if out.suffix != ".toml":
        raise _fail(f"--out {str(out)!r}: not a .toml file; allowed: a path ending in .toml")
    if out.is_dir():
        raise _fail(f"--out {str(out)!r}: is a folder; allowed: a .toml file path")
    try:  # a user's file, or another command's result, is refused before any work
        target = check_out_file(out, "fit-stubs")
    except OutputError as e:
        raise _fail(str(e)) from None
    s = _load(scenario) if scenario is not None else None
    from wmtsim.engine.warm import ensure_compiled

    ensure_compiled(("stub_fit",), say=_note)  # the first run says it compiles, once
    relevance = Relevance.of_world(s.world if s else None)
    size = log.stat().st_size if log.is_file() else 0
    with _progress(progress) as bar:
        reading = bar.add_task(f"reading {log.name}", total=max(size, 1))
        try:
            data = read_log(log, max_events=max_events, relevance=relevance,
                            progress=lambda done: bar.update(reading, completed=done))
        except StubLogError as e:
            raise _fail(str(e)) from None
        bar.update(reading, completed=max(size, 1))
        fitting = bar.add_task("fitting", total=STEPS)

        def step(what: str) -> None:
            bar.update(fitting, advance=1, description=f"fitting: {what}")

        result = fit_log(data, base=s.stubs if s else None, progress=step)
        bar.update(fitting, completed=STEPS, description="goodness of fit")
        table = goodness.calibration(result)
        header = (f"Fitted by `wmtsim fit-stubs {log.name}` (docs/stub_logs.md): "
                  f"{data.events} events, {data.lines} lines.\n"
                  "Maximum likelihood; 95% profile-likelihood intervals in comments.")
        try:
            written = [atomic_write_text(target, stubs_toml(result, header), manifest(
                "fit-stubs", {"log": str(log), "events": data.events},
                provenance(None, data.events, None, 0.05, None)))]
            if chart:
                written.append(goodness.write_chart(
                    table, out.with_name(out.stem + ".calibration.png"),
                    f"{log.name}: observed vs predicted by decile"))
        except OutputError as e:
            raise _fail(str(e)) from None
    _print_table(summary_table(result))
    for row in goodness.misfit(table).iter_rows(named=True):
        verdict = "described" if row["described"] else "NOT described by the stub family"
        _say(f"{row['kind']}: Hosmer–Lemeshow χ² {row['statistic']:.1f} on {row['df']} df, "
             f"p = {row['p']:.3g}: {verdict}")
    censored = data.selections.censored_events
    _say(f"{data.events} events ({censored} selections censored: their budget or top-k "
         f"could bind) fitted in {time.perf_counter() - t0:.1f} s; written: "
         + ", ".join(str(p) for p in written))


def summary_table(fit: StubFit) -> Table:
    """The estimates as a table of at most 80 columns: parameter, estimate, 95% interval,
    observations (an unidentified parameter: its default and why)."""
    table = Table(title="stubs fitted (95% profile-likelihood intervals)", title_justify="left")
    table.add_column("parameter", no_wrap=True)
    table.add_column("estimate", justify="right", no_wrap=True)
    table.add_column("95% interval", no_wrap=True)
    table.add_column("obs.", justify="right", no_wrap=True)
    for e in fit.estimates:
        if e.identified:
            table.add_row(e.name, f"{e.estimate:.4g}", f"[{e.low:.4g}, {e.high:.4g}]",
                          str(e.observations))
        else:
            table.add_row(e.name, f"{e.default:g}", "not identified: default",
                          str(e.observations))
    return table


def _truth(stubs: str | None, sets: list[str] | None) -> Any:
    """The stubs a log is drawn from: ``stubs`` (a scenario, by file or name) with
    ``--set`` overrides (``p_leak=0.3`` or ``stubs.p_leak=0.3``), or the defaults."""
    import tomllib

    from wmtsim.core.stubs import Stubs

    base = _load(stubs).stubs if stubs is not None else Stubs()
    values = base.to_dict()
    for item in sets or ():
        key, eq, text = item.partition("=")
        name = key.strip().removeprefix("stubs.")
        if not eq or name not in values:
            raise _fail(f"--set {item!r}: not NAME=VALUE of a stub field; allowed: "
                        + ", ".join(values))
        try:
            values[name] = tomllib.loads(f"v = {text}")["v"]
        except tomllib.TOMLDecodeError:
            raise _fail(f"--set {item!r}: {text!r} is not a TOML value") from None
    try:
        return Stubs.from_dict(values)
    except ValueError as e:
        raise _fail(f"--set: {e}") from None


def simulate_log(
    out: Annotated[Path, typer.Argument(help="The log to write (.jsonl).",
                                        show_default=False)],
    events: Annotated[int, typer.Option("--events", "-n", min=1, max=100_000_000,
                                        help="Events to draw.")] = 10_000,
    seed: Annotated[int, typer.Option("--seed", min=0, max=2**63 - 1,
                                      help="Seed of the stubs' draws and the agent's "
                                           "memories.")] = 0,
    stubs: Annotated[str | None, typer.Option(
        "--stubs", help="Scenario (file or shipped name) whose stubs draw the log "
                        "(default: the defaults).", show_default=False)] = None,
    set_: Annotated[list[str] | None, typer.Option(
        "--set", help="A stub value, e.g. --set p_leak=0.3 (TOML values).",
        show_default=False)] = None,
    budget: Annotated[float | None, typer.Option(
        "--budget", min=1.0, help="Give selections a token budget (candidates then have "
                                  "tokens; some fates are censored).",
        show_default=False)] = None,
    progress: ProgressOpt = True,
) -> None:
    """Draw a stub log from wmtsim's own stubs at known parameters (to check a fit).

    Selections, answers and folds of a synthetic agent whose selector, reasoner and
    summariser are wmtsim's stubs (docs/stub_logs.md, "Recovery"); fit it back with
    fit-stubs.

    [bold]Examples[/bold]

      [cyan]wmtsim simulate-log results/sim.jsonl -n 20000 --set p_leak=0.3[/cyan]
    """
    from wmtsim.core.output import OutputError, atomic_write, check_out_file, manifest
    from wmtsim.core.provenance import provenance
    from wmtsim.studies.stub_fit.fit import FITTED
    from wmtsim.studies.stub_fit.simulate import LogDesign, write_log

    if out.suffix != ".jsonl":
        raise _fail(f"{str(out)!r}: not a .jsonl file; allowed: a path ending in .jsonl")
    try:  # a user's file, or another command's result, is refused before any work
        target = check_out_file(out, "simulate-log", option="OUT")
    except OutputError as e:
        raise _fail(str(e)) from None
    truth = _truth(stubs, set_)
    t0 = time.perf_counter()
    with _progress(progress) as bar:
        task = bar.add_task(f"drawing {out.name}", total=events)
        try:  # all or nothing: the log and its manifest appear together
            atomic_write(target, lambda tmp: write_log(
                str(tmp), truth, events, seed, LogDesign(budget=budget),
                progress=lambda done: bar.update(task, completed=done)), manifest(
                "simulate-log", {"stubs": {n: getattr(truth, n) for n in FITTED},
                                 "budget": budget},
                provenance(seed, events, None, None, None)))
        except OutputError as e:
            raise _fail(str(e)) from None

    values = ", ".join(f"{n} = {getattr(truth, n):g}" for n in FITTED)
    _note(f"stubs: {values}")
    _say(f"{events} events written to {out} in {time.perf_counter() - t0:.1f} s")


def register(app: typer.Typer) -> None:
    """Add fit-stubs and simulate-log to ``app``."""
    app.command("fit-stubs")(fit_stubs)
    app.command("simulate-log")(simulate_log)
