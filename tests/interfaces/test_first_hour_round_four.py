"""Issue 52, a researcher's first hour (round four), at the command line: the column of
a malformed trace line, the attack report at 80 columns, attribute's numbers, progress
bars at 80 columns, shipped examples by name from any folder, `wmtsim --help`'s
examples, the tables a command writes as numbers. The dashboard's rows are in
test_dashboard_browser_round_four.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from wmtsim.interfaces.cli.main import app


def test_a_malformed_line_names_the_column_in_the_line(tmp_path: Path) -> None:
    """A line cut after its last comma: the decoder fails at the line's end, column 43,
    not "column 1" of the line break after it (issue 52, row 3)."""
    trace = tmp_path / "cut.jsonl"
    line = '{"op": "action", "id": "a", "parent": "r",'
    trace.write_text('{"op": "query"}\n' + line + "\n", encoding="utf-8")
    res = CliRunner().invoke(app, ["replay", str(trace)])
    assert res.exit_code == 2, res.output
    assert f"line 2: malformed JSON: Expecting property name enclosed in double quotes " \
           f"(column {len(line) + 1})" in res.output, res.output


def test_the_attack_report_fits_80_columns_and_names_a_rival(tmp_path: Path) -> None:
    """`wmtsim attack` at 80 columns prints its report as tables (no raw Markdown), no
    line wider, no name cut, no interval broken across lines; each claim's detail names
    the leader and a runner-up other than it (issue 52, row 6: "best is a1_unweighted;
    closest rival a1_unweighted")."""
    import re

    out = tmp_path / "atk"
    res = CliRunner().invoke(app, ["attack", "paper_poisoning", "-p", "wmt", "-p", "linear",
                                   "-p", "a1_unweighted", "--budget", "1", "--trials", "2",
                                   "--n", "20", "--n-holdout", "20", "--no-charts",
                                   "--no-progress", "--out", str(out)],
                             env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert not [line for line in lines if line.startswith("|")], res.stdout
    assert "…" not in res.stdout
    assert all(line.count("[") == line.count("]") for line in lines), res.stdout
    # The transfer matrix's cells, each a value and its interval whole on one line.
    assert re.search(r"\d\.\d{3} \[-?\d\.\d{3}, -?\d\.\d{3}\]", res.stdout), res.stdout
    details = re.findall(r"\| ((?:best|worst) is [^|]*) \|$",
                         (out / "report.md").read_text(encoding="utf-8"), re.M)
    assert len(details) == 8, details
    for d in details:
        m = re.match(r"(?:best|worst) is (.+?) \([\d.]+\); (?:then (.+?) \(|no rival)", d)
        assert m, d
        leaders = set(m.group(1).split(" = "))
        assert m.group(2) is None or not leaders & set(m.group(2).split(" = ")), d


def test_the_field_table_says_its_verdict_is_adjusted_and_its_interval_not(
        tmp_path: Path) -> None:
    """`compare --budget` with a field policy: each verdict is named Holm-adjusted and
    the table says its Δ intervals are not, on the terminal and in curves.md (issue 52,
    row 4: ASR Δ −0.0324 [−0.0569, −0.0079] beside "tie", unexplained)."""
    out = tmp_path / "curves"
    res = CliRunner().invoke(app, ["compare", "paper_poisoning", "-p", "wmt", "-p",
                                   "traceretain_conflict", "--budget", "200,400", "--n", "40",
                                   "--no-progress", "--out", str(out)])
    assert res.exit_code == 0, res.output
    md = (out / "curves.md").read_text(encoding="utf-8")
    for text in (res.stdout, md):
        assert "WMT better:" not in text
        assert text.count("WMT better (Holm):") == 4, text  # TSR and ASR at two budgets
        assert "Δ intervals are paired 95% intervals, not adjusted" in " ".join(text.split())


def test_attribute_writes_numbers_as_the_project_does(tmp_path: Path) -> None:
    """`wmtsim attribute` at 80 columns: three significant digits at each metric's
    resolution, no "+0", no 6.403e-37, intervals whole on one line, no name cut (issue
    52, row 8)."""
    import re

    res = CliRunner().invoke(app, ["attribute", "paper_poisoning", "--from", "linear",
                                   "--to", "wmt", "--n", "50", "--no-progress"],
                             env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    out = res.stdout
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "…" not in out
    assert not re.search(r"\de[-+]\d", out), out  # no scientific notation
    assert not re.search(r"│ +\+0 +│", out), out
    assert all(line.count("[") == line.count("]") for line in lines), out
    assert "everything→items" in out  # the mechanism's name whole
    for cell in re.findall(r"[-+]?\d+\.\d+", out):
        assert len(cell.lstrip("+-0.").replace(".", "")) <= 4, cell  # 3 digits (or 0.0001)


def test_a_bar_with_a_long_label_keeps_one_line_at_80_columns(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A bar at 80 columns with a long label and a time left: one line per task, the
    label cut with "…", "elapsed" and "left" whole (issue 52, row 7: "elapsed … le…"
    and the bar wrapping)."""
    import time

    from rich.console import Console
    from rich.progress import Progress

    from wmtsim.interfaces.cli import common as cli_common

    monkeypatch.setattr(cli_common.err_console, "width", 80)  # the terminal the bar is on
    console = Console(width=80, record=True, force_terminal=False)
    bar = Progress(*cli_common.bar_columns(), console=console)
    task = bar.add_task("paper_poisoning: a2_no_controller at k = 4 searched, then the "
                        "held-out trajectories", total=1000)
    bar.update(task, completed=1)
    time.sleep(0.05)
    bar.update(task, completed=400)  # a rate: the time left is shown
    console.print(bar.make_tasks_table(bar.tasks))
    lines = console.export_text().rstrip("\n").splitlines()
    assert len(lines) == 1, lines
    line = lines[0]
    assert len(line) <= 80 and "…" in line, line
    assert "400/1000 elapsed 0:00:00 left 0:00:" in line, line


def test_the_main_help_shows_dynamics_and_attack_examples() -> None:
    """`wmtsim --help` leads with what the README leads with (issue 52, row 10)."""
    res = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "80"})
    assert res.exit_code == 0
    text = " ".join(res.stdout.split())
    assert "wmtsim dynamics paper_poisoning --policy wmt" in text, text
    assert "wmtsim attack paper_poisoning --budget 1,2" in text, text


def _wmtsim() -> list[str]:
    import sys

    exe = Path(sys.executable).with_name("wmtsim")
    return [str(exe)] if exe.is_file() else [sys.executable, "-m", "wmtsim.interfaces.cli.main"]


def test_every_shipped_example_is_named_from_any_folder(tmp_path: Path) -> None:
    """From a folder outside the checkout: a shipped trace by name and by its repository
    path, a shipped sweep, a scenario by its repository path, the example adapter of
    `conformance run`'s help, and `wmtsim.replay` given the guide's path (issue 52, row
    9: all failed outside the repository root)."""
    import subprocess
    import sys

    from conftest import REPO

    assert REPO not in tmp_path.resolve().parents
    commands = [["replay", "paper_a4"], ["check", "scenarios/traces/paper_a4.jsonl"],
                ["sweep", "rho_m_grid", "--out", "rho_m", "--no-progress"],
                ["compare", "scenarios/paper_poisoning.toml", "--n", "20", "--no-progress"],
                ["conformance", "run", "examples.naive_wmt:NaiveWMT"]]
    for command in commands:
        res = subprocess.run([*_wmtsim(), *command], cwd=tmp_path, capture_output=True,
                             text=True, env={"PATH": "/usr/bin:/bin", "COLUMNS": "100"})
        assert res.returncode == 0, (command, res.stdout[-2000:], res.stderr[-2000:])
    res = subprocess.run([sys.executable, "-c", "import wmtsim; print(wmtsim.replay("
                          "'scenarios/traces/paper_a4.jsonl').height)"], cwd=tmp_path,
                         capture_output=True, text=True)
    assert res.returncode == 0 and int(res.stdout) > 0, res.stderr
    res = subprocess.run([*_wmtsim(), "sweep", "sweeps/rho_m_gird.toml", "-o", "x"],
                         cwd=tmp_path, capture_output=True, text=True)
    assert res.returncode == 2 and "rho_m_grid, sobol_gaia" in res.stderr, res.stderr


def test_the_shipped_examples_are_the_repositorys() -> None:
    """Each shipped trace, sweep and example adapter is a copy of the repository's."""
    from conftest import REPO

    from wmtsim.core.shipped import EXAMPLES, SWEEPS, TRACES, shipped

    for kind, pattern in ((TRACES, "*.jsonl"), (SWEEPS, "*.toml")):
        repo = {p.name[: -len(kind.suffix)]: p for p in (REPO / kind.repo_folder).glob(pattern)}
        copies = shipped(kind)
        assert set(repo) == set(copies), kind
        for name, p in repo.items():
            assert p.read_bytes() == copies[name].read_bytes(), p
    for name, copy in shipped(EXAMPLES).items():
        assert copy.read_bytes() == (REPO / "examples" / f"{name}.py").read_bytes(), name
    assert "naive_wmt" in shipped(EXAMPLES)


def test_make_demo_compiles_every_kernel_first_and_the_readme_says_so() -> None:
    """`make demo` runs `wmtsim warmup` (every kernel group: world generation, both
    engines, trace replay, the population aggregates) before its commands, and the
    README says which (issue 52, item 2: `dynamics` and the field policies compiled
    229 kernels after `make demo`)."""
    from conftest import REPO

    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    demo = makefile.split("\ndemo:", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    assert demo[0].strip().startswith("$(BIN)/wmtsim warmup"), demo
    readme = " ".join((REPO / "README.md").read_text(encoding="utf-8").split())
    assert "`make demo` first runs `wmtsim warmup`" in readme


@pytest.mark.slow
def test_after_warmup_no_command_compiles(tmp_path: Path) -> None:
    """On a fresh cache, `wmtsim warmup`; then the families of commands (dynamics, the
    field policies, budget curves, an attack, attribution, a sweep, a replay) compile
    nothing: "compiles once" holds (issue 52, item 2)."""
    import os
    import subprocess

    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba"), "COLUMNS": "200"}
    commands = [["warmup"],
                ["dynamics", "paper_poisoning", "--n", "20", "--out", "d"],
                ["compare", "paper_poisoning", "-p", "wmt", "-p", "generative_agents",
                 "-p", "memgpt", "-p", "mem0", "-p", "traceretain_conflict", "--n", "20",
                 "--out", "c"],
                ["compare", "paper_poisoning", "-p", "wmt", "-p", "traceretain_z",
                 "--budget", "100,200", "--n", "20", "--out", "b"],
                ["attack", "paper_poisoning", "-p", "wmt", "-p", "linear", "--budget", "1",
                 "--trials", "2", "--n", "20", "--n-holdout", "20", "--no-charts", "--out",
                 "a"],
                ["attribute", "paper_poisoning", "--from", "linear", "--to", "wmt", "--n",
                 "20"],
                ["sweep", "rho_m_grid", "--out", "s"], ["replay", "paper_a4"]]
    for command in commands:
        res = subprocess.run([*_wmtsim(), *command, *(["--no-progress"] if command[0] in
                                                      ("dynamics", "compare", "attack",
                                                       "attribute", "sweep") else [])],
                             cwd=tmp_path, capture_output=True, text=True, env=env,
                             timeout=3600)
        assert res.returncode == 0, (command, res.stderr[-3000:])
        if command != ["warmup"]:
            assert "compil" not in res.stderr, (command, res.stderr)
