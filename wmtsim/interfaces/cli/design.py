"""The design commands of the ``wmtsim`` CLI: screen (which knobs matter) and tune (a
multi-objective search with held-out validation).

`register` adds them to the app of `wmtsim.interfaces.cli.main`. Exit codes as there: 0
success, 2 bad input (nothing written). Both run on the sweep machinery (--workers,
--scheduler) and write through `wmtsim.core.output`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from wmtsim.core.formatting import did_you_mean
from wmtsim.interfaces.cli.common import (
    ProgressOpt,
    SchedulerOpt,
    WorkersOpt,
    _fail,
    _out_folder,
    _print_table,
    _writing,
    out_console,
)

if TYPE_CHECKING:
    from wmtsim.studies.scenarios.scenario import Scenario

ScenariosArg = Annotated[list[str], typer.Argument(
    help="Scenario files or shipped names (see `wmtsim run --help`).", show_default=False)]
OutOpt = Annotated[Path | None, typer.Option(
    "--out", "-o", help="Output folder, replaced as a whole (default: results/<first "
                        "scenario>/<command>).", show_default=False)]
PolicyOpt = Annotated[str, typer.Option("--policy", "-p", help="The configuration to study.")]
KnobOpt = Annotated[list[str] | None, typer.Option(
    "--knob", help="A knob to include (repeat; default: every WMT parameter with a declared "
                   "range, see docs/design.md).", show_default=False)]
NOpt = Annotated[int, typer.Option("--n", "-n", min=2, max=100_000,
                                   help="Simulated trajectories per point.")]
SeedOpt = Annotated[int, typer.Option("--seed", "-s", min=0, max=2**62,
                                      help="Trajectory seed (and design seed).")]
ChartsOpt = Annotated[bool, typer.Option(help="Write charts (HTML and PNG).")]


def _say(text: str) -> None:
    out_console.print(text, markup=False, highlight=False)


def _scenarios(refs: list[str]) -> list[Scenario]:
    from wmtsim.studies.scenarios.scenario import ScenarioError, load_scenario

    try:
        return [load_scenario(r) for r in refs]
    except ScenarioError as e:
        raise _fail(str(e)) from None


def screen(
    scenarios: ScenariosArg,
    policy: PolicyOpt = "wmt",
    knob: KnobOpt = None,
    trajectories: Annotated[int, typer.Option(
        "--trajectories", "-r", min=2, max=1000, help="Morris trajectories (each d + 1 "
                                                     "points).")] = 10,
    n: NOpt = 200,
    seed: SeedOpt = 0,
    metric: Annotated[list[str] | None, typer.Option(
        "--metric", help="Metrics to screen (repeat; default: tsr, asr, prompt_tokens).",
        show_default=False)] = None,
    workers: WorkersOpt = 1,
    scheduler: SchedulerOpt = None,
    out: OutOpt = None,
    charts: ChartsOpt = True,
) -> None:
    """Which knobs matter for which metric: Morris elementary effects with intervals.

    μ* (mean |elementary effect|, the metric's change per whole range of the knob) with a
    bootstrap interval over Morris trajectories; a knob "matters" when its test (a
    bootstrap over the simulated trajectories) says it moves the metric's mean,
    Benjamini–Hochberg over the screening's tests at 5% (docs/statistics.md,
    "Screening"); "inert" when it changes nothing, "not read" when the policy does not
    read it (docs/design.md).

    [bold]Example[/bold]

      [cyan]wmtsim screen decay_pressure --n 200 -r 10[/cyan]
    """
    from wmtsim.core.metrics import METRICS
    from wmtsim.core.policies import POLICIES
    from wmtsim.studies.sweeps.evaluate import check_held
    from wmtsim.studies.sweeps.knob_ranges import ranges_for
    from wmtsim.studies.sweeps.screen import SCREEN_METRICS, write_screen
    from wmtsim.studies.sweeps.screen import screen as run_screen

    scs = _scenarios(scenarios)
    metrics = tuple(metric or SCREEN_METRICS)
    try:
        if policy not in POLICIES:
            raise ValueError(f"--policy {policy!r}: unknown{did_you_mean(policy, POLICIES)}; "
                             f"allowed: {', '.join(POLICIES)}")
        for m in metrics:
            if m not in METRICS:
                raise ValueError(f"--metric {m!r}: unknown; allowed: {', '.join(METRICS)}")
        ranges = ranges_for(knob)
        for sc in scs:
            for r in ranges:
                sc.with_overrides({r.key: r.spec(sc).from_unit(0.5)})
        check_held(len(scs) * trajectories * (len(ranges) + 1), n,
                   "scenarios × --trajectories × (knobs + 1)")
    except ValueError as e:
        raise _fail(str(e)) from None
    folder = _out_folder(out, scs[0].name, "screen")
    from wmtsim.interfaces.cli.scenarios import _compile_first, _watching

    if scheduler is None:  # here, not in each local worker, and said
        _compile_first((policy,))
    try:
        with _watching():
            result = run_screen(scs, policy, ranges, trajectories, n, seed, metrics,
                                workers, scheduler)
    except ValueError as e:
        raise _fail(str(e)) from None
    _print_table(_screen_table(result.table), str(folder / "screen.csv"))
    from wmtsim.core.output import write_manifest
    from wmtsim.core.provenance import provenance

    with _writing(folder, "screen") as work:
        written = write_screen(result, work, charts)
        write_manifest(work, "screen", {
            "scenarios": [s.name for s in scs], "policy": policy, "metrics": list(metrics),
            "knobs": [r.key for r in ranges], "morris_trajectories": trajectories,
            "levels": 4, "n": n, "seed": seed, "points": result.points,
            "intervals": "percentile bootstrap over Morris trajectories, B = 1000, 95%"},
            extra=provenance(seed, n, 1000, 0.05, "none"))
    _say(f"{result.points} points ({trajectories} Morris trajectories × "
         f"(d + 1), n = {n}) in {result.seconds:.1f} s; written to {folder}/: "
         f"{', '.join(p.name for p in written)}")


def _screen_table(table: Any) -> Any:
    import polars as pl
    from rich.table import Table

    t = Table("scenario", "metric", "knob", "μ* [95%]", "noise", "verdict")
    top = table.filter(pl.col("verdict") == "matters").sort("mu_star", descending=True)
    for r in top.iter_rows(named=True):
        t.add_row(r["scenario"], r["metric"], r["parameter"],
                  f"{r['mu_star']:.3g} [{r['mu_star_low']:.3g}, {r['mu_star_high']:.3g}]",
                  f"{r['noise']:.2g}", r["verdict"])
    if not top.height:
        t.add_row("-", "-", "no knob matters beyond noise", "", "", "")
    return t


def tune(
    scenarios: ScenariosArg,
    objective: Annotated[list[str] | None, typer.Option(
        "--objective", help="metric:max|min (repeat; default: tsr:max, asr:min, "
                            "prompt_tokens:min).", show_default=False)] = None,
    robust: Annotated[str, typer.Option(
        help="Across fit scenarios: worst, or a bad-side quantile qX (e.g. q0.25).")] = "worst",
    trials: Annotated[int, typer.Option(min=1, max=100_000, help="Trials in all.")] = 40,
    batch: Annotated[int, typer.Option(min=2, max=10_000,
                                       help="Trials per generation (evaluated together).")] = 8,
    n: NOpt = 200,
    seed: SeedOpt = 0,
    fit_seeds: Annotated[int, typer.Option(min=1, max=100, help="Fit seeds: seed, seed+1, "
                                                              "...")] = 1,
    holdout_seeds: Annotated[int, typer.Option(min=0, max=100, help="Held-out seeds "
                                               "(seed + 10000 + j); 0 = no validation.")] = 2,
    validate_on: Annotated[list[str] | None, typer.Option(
        "--validate-on", help="Held-out scenarios (repeat; default: the fit scenarios on "
                              "held-out seeds).", show_default=False)] = None,
    choose: Annotated[int, typer.Option(min=1, max=100, help="Pareto points written as "
                                        "params TOML and validated.")] = 3,
    policy: PolicyOpt = "wmt",
    knob: KnobOpt = None,
    workers: WorkersOpt = 1,
    scheduler: SchedulerOpt = None,
    out: OutOpt = None,
    charts: ChartsOpt = True,
    progress: ProgressOpt = True,
) -> None:
    """Multi-objective search over WMT's parameters (Optuna NSGA-II), resumable.

    Robust over the fit scenarios, on common random numbers; writes the Pareto set
    (Parquet, CSV, a chart), a params TOML per chosen point, and a held-out validation
    against the shipped setting with paired intervals (docs/design.md). Re-running into
    the same --out continues the study in its optuna.journal.

    [bold]Example[/bold]

      [cyan]wmtsim tune decay_pressure late_poison --trials 32 --batch 8 --n 150[/cyan]
    """
    from wmtsim.core.leftovers import recover_kept
    from wmtsim.core.policies import POLICIES
    from wmtsim.studies.sweeps.evaluate import check_held
    from wmtsim.studies.sweeps.knob_ranges import ranges_for
    from wmtsim.studies.tune.tune import (
        STORAGE,
        Fit,
        TuneError,
        check_study,
        parse_objective,
        parse_robust,
    )

    scs = _scenarios(scenarios)
    held = _scenarios(validate_on) if validate_on else None
    try:
        if policy not in POLICIES:
            raise ValueError(f"--policy {policy!r}: unknown{did_you_mean(policy, POLICIES)}; "
                             f"allowed: {', '.join(POLICIES)}")
        objs = tuple(parse_objective(o) for o in
                     (objective or ["tsr:max", "asr:min", "prompt_tokens:min"]))
        fit = Fit(tuple(scs), tuple(seed + j for j in range(fit_seeds)), n, objs, policy,
                  ranges_for(knob), parse_robust(robust), workers, scheduler)
        check_held(min(batch, trials) * len(scs) * fit_seeds, n,
                   "--batch × scenarios × --fit-seeds")
        check_held((choose + 1) * len(held or scs) * holdout_seeds, n,
                   "(--choose + 1) × held-out scenarios × --holdout-seeds")
    except (TuneError, ValueError) as e:
        raise _fail(str(e)) from None
    keep = (STORAGE,)
    folder = _out_folder(out, scs[0].name, "tune", keep=keep,
                         kept=lambda f: _is_study(f / STORAGE))
    if scheduler is not None:  # reached before the folder (and its storage) is created
        _reach(scheduler)
    try:
        # Every refusal before the first change on disk: another --batch (recorded in the
        # manifest, which recovery does not touch), then a dead run's journal of another
        # study, refused where it lies instead of being moved in.
        history = _history(folder, batch)
        recover_kept(folder, keep, check=lambda journal: check_study(fit, journal))
    except (TuneError, ValueError) as e:
        raise _fail(str(e)) from None
    from wmtsim.interfaces.cli.scenarios import _compile_first, _watching

    if scheduler is None:  # here, not in each local worker, and said
        _compile_first((policy,), progress)
    with _watching():
        _run_tune(fit, folder, trials, batch, seed, holdout_seeds, held, choose, charts,
                  progress, keep, history)


def _run_tune(fit: Any, folder: Path, trials: int, batch: int, seed: int, holdout: int,
              held: list[Scenario] | None, choose: int, charts: bool, progress: bool,
              keep: tuple[str, ...], history: dict[str, Any]) -> None:
    from wmtsim.core.output import OutputError
    from wmtsim.studies.tune.journal import study_lock
    from wmtsim.studies.tune.tune import STORAGE, TuneError, check_study, chosen
    from wmtsim.studies.tune.tune import tune as run_tune
    from wmtsim.studies.tune.validate import summary, validate
    from wmtsim.studies.tune.write import write_tuning

    def tick(done: int, total: int) -> None:
        if progress:
            _say(f"tune: {done} of {total} trials")

    journal = folder / STORAGE
    try:
        check_study(fit, journal)  # a journal of another request: refused, nothing written
        folder.mkdir(parents=True, exist_ok=True)
        # One run per study: the lock is held until the result (with the journal) is in
        # place, so a second run waits for nothing and interleaves nothing.
        with study_lock(journal):
            tuning = run_tune(fit, journal, trials, batch, seed, tick)
            _record_run(tuning, history, batch, trials)
            picked = chosen(tuning, choose)
            seeds = [seed + 10_000 + j for j in range(holdout)]
            table = validate(tuning, picked, seeds, held) if holdout else None
            with _writing(folder, "tune", keep=keep) as work:
                written = write_tuning(tuning, picked, table, work, charts, seed, holdout)
    except (TuneError, ValueError) as e:
        raise _fail(str(e)) from None
    except OutputError as e:  # the storage cannot be written
        raise _fail(str(e)) from None
    except OSError as e:
        raise _storage_failure(journal, e) from None
    _say(f"{tuning.trials.height} trials ({tuning.computed} computed now, "
         f"{len(fit.scenarios)} scenario(s) × {len(fit.seeds)} seed(s) × n = {fit.n}) in "
         f"{tuning.seconds:.1f} s ({tuning.sim_seconds:.1f} s simulating); Pareto set: "
         f"{tuning.pareto.height} points")
    for line in summary(table) if table is not None else []:
        _say(line)
    _say(f"written to {folder}/: {', '.join(p.name for p in written)}")


def _history(folder: Path, batch: int) -> dict[str, Any]:
    """The runs an earlier result in ``folder`` recorded (its manifest's ``runs``, its
    trials and whether they were the uninterrupted schedule); refused (ValueError) when
    they ran with another --batch: a study's generations are --batch trials each, so
    another batch continues a different search."""
    import json

    from wmtsim.core.input_files import read_regular

    path = folder / "manifest.json"
    try:
        data = json.loads(read_regular(path, inside=True))
    except (OSError, ValueError):
        return {"runs": [], "trials": 0, "uninterrupted": False, "known": False}
    runs = data.get("runs") if isinstance(data, dict) else None
    if not isinstance(runs, list) or not all(isinstance(r, dict) for r in runs):
        return {"runs": [], "trials": 0, "uninterrupted": False, "known": False}
    batches = sorted({r.get("batch") for r in runs}, key=str)
    if batches and batches != [batch]:
        raise ValueError(f"--batch {batch}: {path} records this study's runs with --batch "
                         f"{', '.join(map(str, batches))}; allowed: --batch "
                         f"{batches[0]} to continue it, or another --out folder")
    last = runs[-1].get("finished") if runs else None
    return {"runs": runs, "trials": last if isinstance(last, int) else 0,
            "uninterrupted": data.get("equals_uninterrupted") is True, "known": bool(runs)}


def _record_run(tuning: Any, history: dict[str, Any], batch: int, trials: int) -> None:
    """This run added to the study's history, and ``equals_uninterrupted`` true only when
    the whole history is the uninterrupted schedule: a new study, or one whose recorded
    runs were (same --batch, each resumed at a generation boundary) and which holds no
    trial the last recorded run did not leave (a run that left no record, killed or with
    another --batch, added them; a journal cut back to fewer keeps a prefix of them)."""
    start = tuning.extra.get("resumed_from", 0)
    here = start % batch == 0
    if start:
        here = here and history["known"] and history["uninterrupted"] and \
            start <= history["trials"]
    tuning.extra["equals_uninterrupted"] = here
    tuning.extra["runs"] = [*history["runs"], {
        "batch": batch, "trials": trials, "resumed_from": start,
        "finished": start + tuning.computed, "equals_uninterrupted": here}]


def _is_study(path: Path) -> bool:
    """Whether ``path`` is an Optuna journal holding only wmtsim's tuning study (the
    storage an interrupted `tune` left), not a user's file or another Optuna study."""
    from wmtsim.studies.tune.tune import is_journal

    return path.is_file() and path.stat().st_size > 0 and is_journal(path)


def _storage_failure(path: Path, exc: OSError) -> typer.Exit:
    """Exit 2 for a tuning storage that cannot be read or written (the journal's file: a
    full disk, no permission)."""
    reason = (exc.strerror or str(exc)).splitlines()[0]
    return _fail(f"{path}: cannot use the tuning study ({reason}); allowed: the "
                 f"{path.name} an earlier `wmtsim tune` wrote here, on a disk with free "
                 "space; its complete records are kept, a line cut short is dropped")


def _reach(scheduler: str) -> None:
    """Connect to ``--scheduler`` once (exit 2 after the connect timeout)."""
    from wmtsim.studies.sweeps.run import reach_scheduler
    from wmtsim.studies.sweeps.sweep import SweepError

    try:
        reach_scheduler(scheduler)
    except SweepError as e:
        raise _fail(str(e)) from None


def register(app: typer.Typer) -> None:
    """Add screen and tune to ``app``."""
    app.command()(screen)
    app.command()(tune)
