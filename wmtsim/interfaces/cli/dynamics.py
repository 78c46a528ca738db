"""The dynamics command of the ``wmtsim`` CLI (`register` adds it to the app of
`wmtsim.interfaces.cli.main`): how poison lives, spreads and dies over a population of
trajectories, per configuration (`wmtsim.studies.dynamics.dynamics`). Exit codes as there: 0
success, 2 bad input (a scenario that does not load, an unknown configuration); bad input
writes nothing.
"""

from __future__ import annotations

import time
from typing import Annotated

import typer

from wmtsim.interfaces.cli.common import (
    ProgressOpt,
    _out_folder,
    _writing,
)
from wmtsim.interfaces.cli.scenarios import (
    NOpt,
    OutOpt,
    ScenarioArg,
    SeedOpt,
    SetOpt,
    _check_policies,
    _check_threads,
    _compile_first,
    _load,
    _note,
    _progress,
    _say,
)

COMMAND = "dynamics"


def dynamics(
    scenario: ScenarioArg,
    policy: Annotated[list[str] | None, typer.Option(
        "--policy", "-p", help="Configuration to follow (repeatable; default: the "
                               "scenario's policies).", show_default=False)] = None,
    n: NOpt = None,
    seed: SeedOpt = None,
    out: OutOpt = None,
    threads: Annotated[int | None, typer.Option(
        "--threads", "-t", min=1, help="Numba threads (results do not depend on it).",
        show_default=False)] = None,
    charts: Annotated[bool, typer.Option(help="Write Altair charts (HTML and PNG).")] = True,
    set_: SetOpt = None,
    progress: ProgressOpt = True,
) -> None:
    """How long does poison stay eligible, and how does it get out? Per configuration.

    Runs the scenario's configurations (or each --policy) on the same trajectories with
    the engine's population aggregates (no step records): per prompt step the share of
    prompts with contaminated context and of poisons still eligible, selected and
    compromising; per injected poison its fate (superseded, suppressed with its branch,
    folded clean, laundered into an eligible summary, still eligible at the end, dropped
    by a field policy's store, never eligible) and when; Kaplan–Meier survival of poison
    (censored at the trajectory's end, log–log 95% band) and the median lifetime with its
    interval, per poison kind. Writes steps, since, survival, lifetimes, fates and spread
    as Parquet, the survival, fate and contamination charts and manifest.json to --out.

    [bold]Examples[/bold]

      [cyan]wmtsim dynamics paper_poisoning -p a2_no_controller -p wmt --n 5000[/cyan]

      [cyan]wmtsim dynamics late_poison --out results/late_dynamics[/cyan]
    """
    from dataclasses import replace

    from wmtsim.studies.dynamics.dynamics import population_dynamics, write_dynamics

    t0 = time.perf_counter()  # the time printed is the time taken, compiles included
    _check_policies(policy)
    _check_threads(threads)
    s = _load(scenario, set_)
    if policy:
        s = replace(s, policies=tuple(dict.fromkeys(policy)))
    out_dir = _out_folder(out, s.name, COMMAND)
    _compile_first(s.policies, progress)
    from wmtsim.engine.warm import ensure_compiled

    ensure_compiled(("dynamics",), say=_note)
    with _progress(progress) as bar:
        task = bar.add_task(f"{s.name}: following poison", total=len(s.policies) + 2)

        def done(what: str) -> None:  # each configuration, then the tables
            bar.update(task, advance=1, description=f"{s.name}: {what} done")

        rep = population_dynamics(s, s.policies, n, seed, threads, progress=done)
        bar.update(task, description=f"{s.name}: writing tables"
                                     + (" and charts" if charts else ""))
        with _writing(out_dir, COMMAND) as work:
            written = write_dynamics(rep, work, charts=charts)
        bar.advance(task)
    _say(lifetimes_text(rep.lifetimes, rep.fates))
    _say(f"{len(rep.policies)} configurations × {rep.n} trajectories in "
         f"{time.perf_counter() - t0:.1f} s ({rep.seconds:.1f} s of them simulating and "
         f"tabulating); written to {out_dir}/: {', '.join(p.name for p in written)}")


def lifetimes_text(lifetimes: object, fates: object) -> str:
    """One line per configuration: the median lifetime of poison (all kinds) with its
    interval, and its three most common fates."""
    import polars as pl

    assert isinstance(lifetimes, pl.DataFrame) and isinstance(fates, pl.DataFrame)
    lines = []
    for row in lifetimes.filter(pl.col("kind") == "all").iter_rows(named=True):
        f = fates.filter((pl.col("policy") == row["policy"]) & (pl.col("kind") == "all")
                         ).sort("share", descending=True).head(3)
        top = ", ".join(f"{r['fate']} {r['share']:.0%}" for r in f.iter_rows(named=True)
                        if r["poisons"])
        median = ("never reaches 1/2" if row["median"] != row["median"] else
                  f"{row['median']:.0f} steps [{row['median_low']:.0f}, "
                  f"{row['median_high']:.0f}]".replace("nan", "∞"))
        lines.append(f"{row['policy']}: median poison lifetime {median}; {top}")
    return "\n".join(lines)


def register(app: typer.Typer) -> None:
    """Add dynamics to ``app``."""
    app.command()(dynamics)
