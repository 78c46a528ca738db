"""No command compiles numba kernels silently: a compile says so on
stderr as it starts, in any cache state — a fresh cache, one holding only some kernel
groups, or one whose markers (`wmtsim.engine.warm`) say "compiled" for kernels numba
does not find — and a warm cache says nothing.

The in-process tests use throwaway kernels (cheap); the command-line ones run in fresh
processes on a fresh ``NUMBA_CACHE_DIR``: the trace commands (their kernels compile in a
few seconds) always, and `wmtsim run` (world generation and WMT's engine, about a minute
of compiling) as a slow test."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from wmtsim.engine import warm


def _wmtsim(args: list[str], cache: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "COLUMNS": "200"}
    code = ("import sys\nfrom wmtsim.interfaces.cli.main import app\n"
            f"sys.argv = ['wmtsim', *{args!r}]\napp()\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=1800, check=False, env=env, cwd=cwd)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def test_watching_says_so_before_a_kernel_compiles() -> None:
    import numba

    said: list[tuple[str, int]] = []
    counts: list[list[int]] = []
    with warm.watching(lambda text: said.append((text, counts[0][0]))) as count:
        counts.append(count)
        numba.njit(lambda x: x + 2)(1)  # a new function: compiled, never cached
    assert said[0] == (warm.UNCACHED, 0)  # said as the compile starts, none done yet
    assert said[-1][0].startswith("  compiled ") and count[0] >= 1
    quiet: list[str] = []
    with warm.watching(quiet.append):
        pass
    assert quiet == []


def test_a_group_is_announced_only_when_it_compiles(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A group without its marker whose kernels numba has after all (here: none to
    compile) loads silently; one that compiles is announced before, then timed."""
    import numba

    monkeypatch.setattr(warm, "_cache_folder", lambda: tmp_path / "cache")
    monkeypatch.setattr(warm, "_times_file", lambda: tmp_path / "compile_times.json")
    fresh = {"trace": lambda: numba.njit(lambda x: x * 3)(2), "world": lambda: None}
    monkeypatch.setattr(warm, "_compile", lambda group: fresh[group]())
    said: list[str] = []
    warm.ensure_compiled(("world",), say=said.append)
    assert said == [] and warm._marker("world").exists()
    warm.ensure_compiled(("world", "trace"), say=said.append)
    assert said[0].startswith("compiling wmtsim's numba kernels")
    assert said[1].startswith("  [1/1] trace replay (~") and "done in" in said[2]
    assert not (tmp_path / "compile_times.json").read_text().count('"world"')
    said.clear()
    warm.ensure_compiled(("world", "trace"), say=said.append)
    assert said == []  # warm: nothing to say


def test_markers_belong_to_this_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    """numba caches a kernel by its source path: another checkout sharing the cache folder
    compiles its own kernels, so it must not read this one's markers."""
    from wmtsim import numba_cache

    here = warm._marker("world").name
    monkeypatch.setattr(numba_cache, "PACKAGE_DIR", Path("/elsewhere/wmtsim"))
    assert warm._marker("world").name != here
    assert here.startswith(".compiled-world-")


@pytest.mark.slow  # compiles trace replay on a fresh cache, 14 s: make test-all
def test_trace_commands_say_so_on_a_fresh_cache_and_not_when_warm(tmp_path: Path) -> None:
    cache = tmp_path / "numba"
    demo = _wmtsim(["demo", "--out", str(tmp_path / "demo.parquet")], cache, tmp_path)
    assert warm.UNCACHED in demo.stderr, demo.stderr
    assert "  compiled " in demo.stderr
    for args in (["demo", "--out", str(tmp_path / "demo2.parquet")],
                 ["check", str(Path(__file__).parents[2] / "scenarios" / "traces" /
                               "paper_a4.jsonl")]):
        again = _wmtsim(args, cache, tmp_path)
        assert "compil" not in again.stderr, (args, again.stderr)


@pytest.mark.slow
def test_run_says_so_on_a_fresh_cache_and_not_when_warm(tmp_path: Path) -> None:
    """`wmtsim run` on a fresh cache: the headline and one line per group (world
    generation, WMT's engine), each said before it compiles (one of them in a second
    process where there is a second core), and what each compiled; the same run again:
    nothing."""
    cache = tmp_path / "numba"
    args = ["run", "paper_poisoning", "-p", "wmt", "--n", "2", "--no-progress", "--out"]
    cold = _wmtsim([*args, str(tmp_path / "a")], cache, tmp_path).stderr
    lines = cold.splitlines()
    assert lines[0].startswith("compiling wmtsim's numba kernels"), cold
    said = {x.split(" (~")[0] for x in lines[1:3]}
    assert said == {"  [1/2] world generation",
                    "  [2/2] the engine for WMT's configurations"}, cold
    assert sum("done in" in x for x in lines) == 2, cold
    assert warm.UNCACHED not in cold  # nothing left to compile after the groups
    again = _wmtsim([*args, str(tmp_path / "b")], cache, tmp_path).stderr
    assert "compil" not in again, again


def test_groups_split_between_two_processes_longest_first(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.delenv("WMTSIM_COMPILE_PROCESSES", raising=False)
    plans = {"world": (12.0, None, True), "engine": (24.0, None, True),
             "field": (50.0, None, True), "trace": (1.0, None, True)}
    # field (50) here, engine (24) beside, world (12) beside (36 < 50), trace beside:
    # each lane keeps the order asked for.
    here, beside = warm._lanes(("world", "engine", "field", "trace"), plans)
    assert (here, beside) == (["field"], ["world", "engine", "trace"])
    assert warm._lanes(("world",), plans) == (["world"], [])  # one group: one process
    monkeypatch.setenv("WMTSIM_COMPILE_PROCESSES", "1")
    assert warm._lanes(("world", "engine"), plans) == (["world", "engine"], [])
    monkeypatch.delenv("WMTSIM_COMPILE_PROCESSES")
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert warm._lanes(("world", "engine"), plans) == (["world", "engine"], [])


def test_a_second_process_that_fails_leaves_its_groups_to_this_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(warm, "_cache_folder", lambda: tmp_path / "cache")
    monkeypatch.setattr(warm, "_times_file", lambda: tmp_path / "compile_times.json")
    monkeypatch.setattr(warm, "_lanes", lambda todo, plans: (["world"], ["trace"]))
    failing = [sys.executable, "-c", "import sys; print('boom', file=sys.stderr); "
               "sys.exit(3)"]
    monkeypatch.setattr(warm, "_start_child", lambda groups: subprocess.Popen(
        failing, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    compiled: list[str] = []
    monkeypatch.setattr(warm, "_compile", compiled.append)
    said: list[str] = []
    warm.ensure_compiled(("world", "trace"), say=said.append)
    assert compiled == ["world", "trace"]  # trace compiled here after the child failed
    assert said[0].startswith("compiling wmtsim's numba kernels for this version (once) "
                              "in two processes")
    assert said[1].startswith("  [2/2] trace replay (~") and said[1].endswith(
        "in a second process…")
    assert any("the second process stopped (boom)" in x for x in said), said
    assert warm._marker("world").exists() and warm._marker("trace").exists()


def test_a_second_process_reports_each_group_it_compiled(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(warm, "_cache_folder", lambda: tmp_path / "cache")
    monkeypatch.setattr(warm, "_times_file", lambda: tmp_path / "compile_times.json")
    monkeypatch.setattr(warm, "_lanes", lambda todo, plans: (["world"], ["trace"]))
    line = json.dumps({"group": "trace", "seconds": 3.0, "cpu": 2.4, "kernels": 7})
    monkeypatch.setattr(warm, "_start_child", lambda groups: subprocess.Popen(
        [sys.executable, "-c", f"print({line!r})"], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True))
    compiled: list[str] = []
    monkeypatch.setattr(warm, "_compile", compiled.append)
    said: list[str] = []
    warm.ensure_compiled(("world", "trace"), say=said.append)
    assert compiled == ["world"]
    assert said[-1] == ("  [2/2] trace replay: done in 3 s in the second process (7 kernels, "
                        "2 s of CPU)")
    assert warm._marker("trace").exists()
    assert json.loads((tmp_path / "compile_times.json").read_text())["trace"]["kernels"] == 7
