"""``wmtsim attack``: the strongest attacker with k injections (docs/attack.md).

`register` adds it to the app of `wmtsim.interfaces.cli.main`. Exit codes as there: 0 success,
2 bad input (a scenario that does not load, a bad option); bad input writes nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from wmtsim.interfaces.cli.common import (
    ProgressOpt,
    SchedulerOpt,
    WorkersOpt,
    _fail,
    _out_folder,
    _writing,
)
from wmtsim.interfaces.cli.markdown import _print_markdown
from wmtsim.interfaces.cli.scenarios import (
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

COMMAND = "attack"


def parse_budgets(text: str) -> list[float]:
    """``"1,2,3,4.09"`` → [1.0, 2.0, 3.0, 4.09]; ValueError naming the bad item."""
    import math

    from wmtsim.studies.attack.space import MAX_BUDGET

    out: list[float] = []
    for part in text.split(","):
        try:
            k = float(part.strip())
        except ValueError:
            k = math.nan
        if not (math.isfinite(k) and 0 < k <= MAX_BUDGET) or len(part.strip()) > 20:
            raise ValueError(f"--budget {part.strip()[:40]!r} is invalid; allowed: numbers in "
                             f"(0, {MAX_BUDGET:g}] separated by commas, e.g. 1,2,3,4")
        out.append(k)
    if len(out) > 16:
        raise ValueError(f"--budget: {len(out)} budgets; allowed: at most 16")
    return sorted(dict.fromkeys(out))


def parse_space(items: list[str] | None, kinds: str | None) -> object:
    """The attack space from ``--kinds`` and ``--space KEY=VALUE`` (TOML values)."""
    import tomllib

    from wmtsim.core.validation import KnobError
    from wmtsim.studies.attack.space import AttackSpace

    values: dict[str, object] = {}
    names = set(AttackSpace.__dataclass_fields__)
    for item in items or []:
        key, eq, text = item.partition("=")
        key = key.strip()
        if not eq or key not in names:
            raise ValueError(f"--space {item!r}: allowed: KEY=VALUE with KEY one of "
                             f"{', '.join(sorted(names))}")
        try:
            values[key] = tomllib.loads(f"v = {text}")["v"]
        except tomllib.TOMLDecodeError:
            raise ValueError(f"--space {item!r}: the value is not a TOML number or boolean"
                             ) from None
    try:
        if kinds is not None:
            chosen = tuple(k.strip() for k in kinds.split(",") if k.strip())
            return AttackSpace.from_kinds(chosen, **values)
        return AttackSpace(**values)  # type: ignore[arg-type]
    except KnobError as e:
        raise ValueError(f"--space {e.name}={e.value!r} is invalid; allowed: {e.allowed}"
                         ) from None
    except TypeError as e:
        raise ValueError(f"--space: {e}") from None


def attack(
    scenario: ScenarioArg,
    policy: Annotated[list[str] | None, typer.Option(
        "--policy", "-p", help="Configuration to attack (repeatable; default: the "
                               "scenario's policies).", show_default=False)] = None,
    budget: Annotated[str | None, typer.Option(
        "--budget", "-k", help="Attacker budgets k, expected injections per task, "
                               "comma-separated (e.g. 1,2,3,4; default: the scenario's "
                               "scripted count, 4.09 for paper_poisoning).",
        show_default=False)] = None,
    harm: Annotated[str, typer.Option(
        "--harm", help="What the attacker maximises: asr | 1-tsr | br | ip.")] = "asr",
    trials: Annotated[int, typer.Option(
        "--trials", min=1, max=100_000, help="Trials per configuration and budget "
                                             "(the scripted attack is the first).")] = 60,
    n: Annotated[int, typer.Option(
        "--n", "-n", min=1, max=1_000_000, help="Search trajectories per trial.")] = 2000,
    n_holdout: Annotated[int, typer.Option(
        "--n-holdout", min=1, max=1_000_000,
        help="Held-out trajectories (the reported numbers).")] = 2000,
    seed: SeedOpt = None,
    holdout_seed: Annotated[int | None, typer.Option(
        "--holdout-seed", min=0, max=2**63 - 1,
        help="Seed of the held-out trajectories (default: the search seed + 1).",
        show_default=False)] = None,
    kinds: Annotated[str | None, typer.Option(
        "--kinds", help="Poison kinds the attacker may use, comma-separated (default: "
                        "failed,plausible,global,summary).", show_default=False)] = None,
    space: Annotated[list[str] | None, typer.Option(
        "--space", help="An attack-space knob, KEY=VALUE (repeatable), e.g. "
                        "--space stealth_relevance=0 --space choose_place=false.",
        show_default=False)] = None,
    threads: Annotated[int | None, typer.Option(
        "--threads", "-t", min=1, help="Numba threads.", show_default=False)] = None,
    workers: WorkersOpt = 1,
    scheduler: SchedulerOpt = None,
    restart: Annotated[bool, typer.Option(
        "--restart", help="Search afresh, ignoring the trial log in --out/search (the old "
                          "result stays whole until the new one replaces it; default: "
                          "continue the searches it holds).")] = False,
    charts: Annotated[bool, typer.Option(help="Write harm_vs_budget.png.")] = True,
    progress: ProgressOpt = True,
    out: OutOpt = None,
    set_: SetOpt = None,
) -> None:
    """Search for the most harmful poisoning attack with k injections against each
    configuration, on common random numbers, and report it on held-out trajectories.

    Each search (Optuna's TPE sampler) starts from the scenario's scripted attack at that
    budget and is resumable (the trial log in --out/search). Writes the worst case found
    per configuration and budget as a scenario file that [bold]wmtsim run[/bold] replays
    (attacks/), search.parquet (every trial), results.parquet (scripted and worst-case
    ASR/TSR with paired intervals), transfer.parquet (each attack against every
    configuration), claims.json (Table 4's claims under the worst case), report.md and
    harm_vs_budget.png.

    [bold]Examples[/bold]

      [cyan]wmtsim attack paper_poisoning --policy wmt --budget 4[/cyan]

      [cyan]wmtsim attack paper_poisoning --budget 1,2,3,4 --trials 80 --out results/atk[/cyan]

      [cyan]wmtsim attack paper_poisoning -p wmt --harm 1-tsr --kinds failed,plausible[/cyan]

    With --workers N or --scheduler ADDRESS the searches (one per configuration and
    budget) run whole on local processes or a dask cluster, with the same results.
    """
    import contextlib
    import os
    import shutil

    from wmtsim.core.inference import ALPHA
    from wmtsim.core.leftovers import WORK_MARK, recover_kept
    from wmtsim.core.output import write_manifest
    from wmtsim.core.provenance import provenance
    from wmtsim.studies.attack.log import LogLocked, log_lock
    from wmtsim.studies.attack.search import HARMS, SearchSettings
    from wmtsim.studies.attack.search import RESAMPLES as PAIRED_RESAMPLES
    from wmtsim.studies.attack.space import scripted_attack
    from wmtsim.studies.attack.study import (
        CLAIMS_CORRECTION,
        LOG,
        report_markdown,
        write_study,
    )

    _check_policies(policy)
    _check_threads(threads)
    s = _load(scenario, set_)
    try:
        if harm not in HARMS:
            raise ValueError(f"--harm {harm!r} is unknown; allowed: {', '.join(HARMS)}")
        atk_space = parse_space(space, kinds)
        if budget is not None:
            budgets = parse_budgets(budget)
        else:
            scripted = scripted_attack(s.world).budget if s.world.poison else 1.0
            budgets = [round(scripted, 9)]
    except ValueError as e:
        raise _fail(str(e)) from None
    policies = tuple(dict.fromkeys(policy or s.policies))
    if scheduler is not None:
        _reach(scheduler)
    search_seed = s.seed if seed is None else seed
    settings = SearchSettings(harm=harm, trials=trials, n_search=n, n_holdout=n_holdout,
                              search_seed=search_seed,
                              holdout_seed=search_seed + 1 if holdout_seed is None
                              else holdout_seed, threads=threads)
    if settings.holdout_seed == settings.search_seed:
        raise _fail(f"--holdout-seed {settings.holdout_seed}: allowed: a seed other "
                    "than the search seed (held-out trajectories are other tasks)")
    if settings.holdout_seed > 2**63 - 1:
        raise _fail("--seed 2^63 - 1 needs --holdout-seed (seed + 1 is too large)")
    keep = (LOG,)
    out_dir = _out_folder(out, s.name, COMMAND, keep=keep, kept=_is_log)
    recover_kept(out_dir, keep)
    # --restart: the old result, its log included, stays whole until the new one is swapped
    # in; the new search logs to a hidden sibling (deleted by the next write if killed)
    # that becomes the new result's search/.
    fresh = out_dir.with_name(f".{out_dir.name}.restart-{os.getpid()}") if restart else None
    log_dir = out_dir / LOG if fresh is None else fresh / LOG
    with contextlib.ExitStack() as held:
        try:
            # One run per result, as tune: the lock on the kept search/ is held until the
            # new result (with search/ moved in) is in place.
            held.enter_context(log_lock(out_dir / LOG))
        except (LogLocked, OSError) as e:
            raise _fail(str(e) if isinstance(e, LogLocked) else
                        f"{out_dir / LOG}: cannot lock the search log: "
                        f"{e.strerror or e}") from None
        try:
            if fresh is not None:
                shutil.rmtree(fresh, ignore_errors=True)
                fresh.mkdir()
                (fresh / WORK_MARK).touch()  # a kill leaves a folder known to be ours
            _compile_first(policies, progress)
            study = _search(s, policies, budgets, atk_space, settings, log_dir, workers,
                            scheduler, progress)
            _print_markdown(report_markdown(study), full=str(out_dir / "report.md"))
            with _writing(out_dir, COMMAND, keep=keep if fresh is None else ()) as work:
                if fresh is not None and log_dir.exists():
                    os.rename(log_dir, work / LOG)
                written = write_study(study, work, charts=charts)
                names = sorted([p.name for p in written] + [LOG])
                write_manifest(work, COMMAND, {
                    "scenario": s.to_dict(), "source": s.source, "policies": list(policies),
                    "budgets": list(budgets), "settings": settings.to_dict(),
                    "space": study.space.to_dict(), "seconds": round(study.seconds, 3),
                    "sim_seconds": round(study.sim_seconds, 3), "files": names,
                    "family": study.claims[0]["family"] if study.claims else None},
                    extra=provenance({"search": settings.search_seed,
                                      "held_out": settings.holdout_seed},
                                     {"search": settings.n_search, "held_out": settings.n_holdout},
                                     PAIRED_RESAMPLES, ALPHA, CLAIMS_CORRECTION))
        finally:
            if fresh is not None:
                shutil.rmtree(fresh, ignore_errors=True)
        _say(f"{sum(len(r.trials) for r in study.results.values())} trials "
             f"({sum(r.new_trials for r in study.results.values())} run now) in "
             f"{study.seconds:.1f} s; written to {out_dir}/: {', '.join(names)}")


def _reach(scheduler: str) -> None:
    """Connect to ``--scheduler`` once, before any output (exit 2 after the timeout)."""
    from wmtsim.studies.sweeps.run import reach_scheduler
    from wmtsim.studies.sweeps.spec import SweepError

    try:
        reach_scheduler(scheduler)
    except SweepError as e:
        raise _fail(str(e)) from None


def _search(s: Any, policies: tuple[str, ...], budgets: list[float], atk_space: Any,
            settings: Any, log_dir: Path, workers: int = 1,
            scheduler: str | None = None, progress: bool = True) -> Any:
    """`attack_study` with a progress bar, logging to ``log_dir``; bad input or a trial log
    that cannot be written (a full disk) exits 2."""
    from wmtsim.studies.attack.study import attack_study

    try:
        with _progress(progress) as bar:
            # Counted in trials, so that the time left is estimated from the first ones
            # (a search takes minutes); a finished search counts all its trials (resumed
            # ones, and a worker's, which report only when done).
            searches = [0]
            task = bar.add_task(f"{s.name}: searching (trials)",
                                total=len(policies) * len(budgets) * settings.trials)

            def searched(what: str) -> None:
                searches[0] += 1
                bar.update(task, completed=searches[0] * settings.trials,
                           description=f"{s.name}: {what} searched")

            return attack_study(s, policies, budgets, atk_space, settings,
                                log=log_dir / "trials.jsonl", progress=searched,
                                workers=workers, scheduler=scheduler,
                                trial_done=lambda: bar.advance(task))
    except ValueError as e:
        raise _fail(str(e)) from None
    except Exception as e:
        from wmtsim.core.output import write_failure

        failure = write_failure(log_dir / "trials.jsonl", e)
        if failure is None:
            raise
        raise _fail(str(failure)) from None


def _is_log(folder: Path) -> bool:
    """Whether ``folder``'s ``search/`` is the trial log an interrupted attack left (only
    ``trials.jsonl``, whose lines are logged trials), not a user's folder of that name."""
    import json

    from wmtsim.core.input_files import open_regular
    from wmtsim.studies.attack.study import LOG

    log = folder / LOG
    try:
        if not log.is_dir() or {p.name for p in log.iterdir()} - {"trials.jsonl"}:
            return False
        with open_regular(log / "trials.jsonl", inside=True) as f:
            first = f.readline(1 << 20)
    except OSError:
        return False
    try:
        return not first or isinstance(json.loads(first).get("study"), str)
    except (ValueError, AttributeError):
        return False


def register(app: typer.Typer) -> None:
    """Add attack to ``app``."""
    app.command()(attack)

