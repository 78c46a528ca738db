"""Honest progress: bars move during the work, not only at its end; elapsed
and remaining time are labelled; the time printed is the time taken."""

from __future__ import annotations

import io
import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console
from rich.progress import Progress
from typer.testing import CliRunner

from wmtsim.interfaces.cli.main import app
from wmtsim.studies.scenarios.scenario import load_scenario

runner = CliRunner()

SWEEP = ('name = "p"\nscenario = "paper_poisoning"\npolicies = ["wmt"]\n'
         '[parameters.rho]\nvalues = [0.7, 0.8, 0.9, 0.95]\n'
         '[design]\nkind = "grid"\ntrajectories = 5\n')


def _line(bar: Progress) -> str:
    """The bar's line as a terminal shows it."""
    console = Console(width=200, record=True, force_terminal=False)
    console.print(bar.make_tasks_table(bar.tasks))
    return console.export_text()


def test_an_in_process_sweep_moves_per_point(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Its four points are one chunk: the bar advanced once, by 4, when all was done."""
    from wmtsim.studies.sweeps import run as sweep_run
    from wmtsim.studies.sweeps.sweep import load_sweep, run_sweep

    steps: list[int] = []

    class Recorded:
        def __init__(self, enabled: bool, total: int, done: int) -> None:
            pass

        def __enter__(self) -> Callable[[int], None]:
            return steps.append

        def __exit__(self, *exc: object) -> None:
            pass

    monkeypatch.setattr(sweep_run, "_progress", Recorded)
    (tmp_path / "s.toml").write_text(SWEEP, encoding="utf-8")
    report = run_sweep(load_sweep(tmp_path / "s.toml"), tmp_path / "out")
    assert report.chunks == 1 and report.computed == 4
    assert steps == [1, 1, 1, 1]


def test_the_sweep_bar_labels_elapsed_and_left() -> None:
    from wmtsim.studies.sweeps.run import _progress

    bar = _progress(True, 10, 0)
    advance = bar.start(Console(force_terminal=True, width=200, file=io.StringIO()))
    try:
        advance(1)
        time.sleep(0.2)
        advance(1)
        line = _line(bar.bar)
    finally:
        bar.__exit__(None, None, None)
    assert re.search(r"elapsed \d:\d\d:\d\d left \d:\d\d:\d\d", line), line


def test_the_command_bars_label_elapsed_and_left() -> None:
    from wmtsim.interfaces.cli.common import bar_columns

    bar = Progress(*bar_columns(), console=Console(file=io.StringIO()),
                   auto_refresh=False)
    task = bar.add_task("work", total=10)
    bar.advance(task)
    time.sleep(0.2)
    bar.advance(task)
    line = _line(bar)
    assert re.search(r"2/10 +elapsed \d:\d\d:\d\d left \d:\d\d:\d\d", line), line


def test_compare_reports_the_statistics_too() -> None:
    """The intervals and paired tests take longer than the simulation: the bar counted
    only the configurations and then sat at its end."""
    from wmtsim.studies.compare.report import compare, compare_steps

    s = load_scenario("paper_poisoning")
    seen: list[str] = []
    compare(s, n=10, progress=seen.append)
    assert len(seen) == compare_steps(s.policies) == 2 * len(s.policies) + 1
    assert seen[:len(s.policies)] == list(s.policies)
    assert seen[len(s.policies)] == "intervals" and seen[-1] == "claims"


def test_dynamics_prints_the_time_taken_and_reports_each_configuration(
        tmp_path: Path) -> None:
    from wmtsim.studies.dynamics.dynamics import population_dynamics

    s = load_scenario("paper_poisoning")
    seen: list[str] = []
    population_dynamics(s, ("linear", "wmt"), n=10, progress=seen.append)
    assert seen == ["linear", "wmt", "tables"]
    t0 = time.perf_counter()
    res = runner.invoke(app, ["dynamics", "paper_poisoning", "-p", "wmt", "--n", "10",
                              "--out", str(tmp_path / "d")])
    taken = time.perf_counter() - t0
    assert res.exit_code == 0, res.output
    said = float(re.search(r"trajectories in ([\d.]+) s", res.stdout).group(1))
    assert 0.6 * taken <= said <= taken + 0.1, (said, taken)  # it said 1.2 s of 17


def test_an_attack_reports_each_trial() -> None:
    from wmtsim.studies.attack.search import SearchSettings
    from wmtsim.studies.attack.space import AttackSpace
    from wmtsim.studies.attack.study import attack_study

    trials: list[float] = []
    searches: list[str] = []
    settings = SearchSettings(trials=4, n_search=10, n_holdout=10, startup=2)
    attack_study(load_scenario("paper_poisoning"), ("wmt",), (1.0,), AttackSpace(),
                 settings, progress=searches.append,
                 trial_done=lambda: trials.append(time.perf_counter()))
    assert searches == ["wmt k=1"]
    assert len(trials) >= settings.trials - 1  # trial 0 may be the scripted attack


def test_attack_takes_no_progress_like_every_command(tmp_path: Path) -> None:
    """`attack` had no --no-progress (run, compare, sweep, claims, dynamics do)."""
    r = CliRunner().invoke(app, ["attack", "paper_poisoning", "-p", "wmt", "--budget", "1",
                                 "--trials", "2", "--n", "20", "--n-holdout", "20",
                                 "--no-charts", "--no-progress", "--out",
                                 str(tmp_path / "atk")])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "atk" / "results.parquet").exists()
