"""Compile the numba kernels ahead of use, group by group, saying so.

A fresh numba cache (a new wmtsim version, or a new machine) costs tens of seconds of
compilation before the first result; without a word that looks like a hang. The commands
that run the engine call `ensure_compiled` first: every kernel group the job needs that
is not in the cache yet is compiled on a tiny input, with one line per group saying what
is compiling and roughly how long it takes. A marker file per group in the cache folder
(`wmtsim.numba_cache.cache_dir`) records what is done, so a warm start prints nothing;
markers are kept per checkout (numba keys its cache files by the kernels' source paths).
A group's lines are said when numba starts compiling it, so a group numba finds cached
after all loads silently instead of announcing a compile that does not happen. Where
there are two groups or more to compile and a second core, a second process compiles
part of them into the same cache meanwhile (the engine groups compile on a hand-made
one-node world, `_tiny_world`, so they need no world generation).

The estimate is calibrated on the machine it runs on: each compile records its CPU seconds
and kernel count in ``compile_times.json`` beside the versioned cache folders, and the
next cold compile (a new version) is estimated from them, scaled by the current load
(`slowdown`); the notice then reports the actual time and kernels. A marker cannot see
numba's own invalidation of a cached kernel (a kernel's file changed), so the commands
also watch for kernels compiled during their work (`watching`, `counting_compiles`) and
say so as the first one starts.

Groups, each compiled only when a job needs it:

============  =================================================================
``world``     world generation (`wmtsim.engine.world`)
``engine``    the engine for WMT's own configurations (no field kernels)
``field``     the engine for the field's policies (`wmtsim.engine.field.dispatch`)
``trace``     trace replay (`wmtsim.engine.trace.trace`)
``dynamics``  both engines with the population aggregates (`wmtsim.engine.dynamics`)
============  =================================================================
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from wmtsim.numba_cache import cache_dir

if TYPE_CHECKING:
    from wmtsim.core.world_spec import World

# label, CPU seconds a group's cold compile takes on an idle reference core (2-core Intel
# Xeon, `wmtsim warmup`, 2026-12-04). The estimate a notice gives is calibrated: the CPU
# seconds this machine took the last time it compiled the group (any wmtsim version;
# `compile_times.json` beside the cache folders) scaled by the machine's current load.
GROUPS: dict[str, tuple[str, int]] = {
    "world": ("world generation", 12),
    "engine": ("the engine for WMT's configurations", 24),
    "field": ("the engine for the field's policies", 53),
    "trace": ("trace replay", 1),
    "dynamics": ("the engines with population aggregates", 47),
    "stub_fit": ("the stub fit's selector likelihood", 2),
}

Say = Callable[[str], None]
# A live display while a group compiles: (label, estimated seconds, kernels expected or
# None) -> a context whose value is told the number of kernels compiled so far.
Live = Callable[[str, float, "int | None"], AbstractContextManager[Callable[[int], None]]]


def _cache_folder() -> Path:
    """The folder numba caches into (the user's ``NUMBA_CACHE_DIR``, else wmtsim's)."""
    chosen = os.environ.get("NUMBA_CACHE_DIR")
    return Path(chosen) if chosen else cache_dir()


def _tree() -> str:
    """A short name of this copy of wmtsim's sources: numba keys its cache files by the
    kernel's source path, so two checkouts sharing a cache folder (the same sources, or
    one ``NUMBA_CACHE_DIR``) each compile their own kernels, and each needs its own
    markers, or the second one's compile would be silent."""
    import hashlib

    from wmtsim.numba_cache import PACKAGE_DIR

    return hashlib.sha256(str(PACKAGE_DIR).encode()).hexdigest()[:8]


def _marker(group: str) -> Path:
    return _cache_folder() / f".compiled-{group}-{_tree()}"


def _times_file() -> Path:
    """Where this machine's compile times are kept, beside (not inside) the versioned
    cache folders, so that a new version's first compile is estimated from the last."""
    return _cache_folder().parent / "compile_times.json"


def _recorded() -> dict[str, dict[str, float]]:
    try:
        data = json.loads(_times_file().read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _load_per_core() -> float:
    try:
        return os.getloadavg()[0] / (os.cpu_count() or 1)
    except OSError:  # no load average on this platform
        return 0.0


def slowdown() -> float:
    """How much slower than on an idle core a compile runs now: ``1 + k · load per
    core``, where ``k`` is fitted on this machine's recorded compiles (wall ÷ CPU time
    against the load they ran at; other jobs may be niced, so k is often below 1) and 1
    (a fair share of the cores) before any compile was recorded."""
    ks = [(r["wall"] / r["cpu"] - 1.0) / r["load_per_core"] for r in _recorded().values()
          if r.get("cpu", 0) > 1.0 and r.get("load_per_core", 0) > 0.5 and "wall" in r]
    k = max(0.0, sum(ks) / len(ks)) if ks else 1.0
    return 1.0 + k * _load_per_core()


def estimate(group: str) -> tuple[float, int | None, bool]:
    """Seconds a cold compile of ``group`` should take now, the kernels it compiled last
    time (None: never measured here), and whether the estimate was measured here."""
    record = _recorded().get(group)
    if record and record.get("cpu", 0) > 0:
        return record["cpu"] * slowdown(), int(record.get("kernels", 0)) or None, True
    return GROUPS[group][1] * slowdown(), None, False


def _remember(group: str, cpu: float, wall: float, kernels: int) -> None:
    data = _recorded()
    data[group] = {"cpu": round(cpu, 1), "wall": round(wall, 1), "kernels": kernels,
                   "load_per_core": round(_load_per_core(), 2), "cores": os.cpu_count() or 1}
    try:
        _times_file().parent.mkdir(parents=True, exist_ok=True)
        _times_file().write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    except OSError:
        pass  # a read-only cache: the next estimate falls back to the reference


@contextmanager
def counting_compiles(tick: Callable[[int], None] | None = None,
                      first: Callable[[], None] | None = None) -> Iterator[list[int]]:
    """Count the numba kernels compiled (not loaded from the cache) inside the block:
    the value is a one-item list holding the count; ``tick`` hears each new count,
    ``first`` is called once, as the first compile starts (numba reports a compile, not
    a kernel loaded from the cache, and before it begins)."""
    from numba.core import event

    count = [0]
    started = [False]

    class _Counter(event.Listener):
        def on_start(self, ev: object) -> None:
            if not started[0]:
                started[0] = True
                if first is not None:
                    first()

        def on_end(self, ev: object) -> None:
            count[0] += 1
            if tick is not None:
                tick(count[0])

    listener = _Counter()
    event.register("numba:compile", listener)
    try:
        yield count
    finally:
        event.unregister("numba:compile", listener)


UNCACHED = ("compiling numba kernels not found in numba's cache (a fresh cache, or "
            "sources changed since they were cached; once: the next run starts "
            "without it)…")


@contextmanager
def watching(say: Say) -> Iterator[list[int]]:
    """Say so, before it begins, when a kernel compiles inside the block after all
    (`ensure_compiled`'s markers cannot see every stale kernel: numba also recompiles a
    kernel whose file's modification time changed), then how many compiled and how long
    it took. The value is `counting_compiles`'."""
    t0 = [0.0]

    def begin() -> None:
        t0[0] = time.perf_counter()
        say(UNCACHED)

    with counting_compiles(first=begin) as count:
        yield count
    if count[0]:
        say(f"  compiled {count[0]} kernels in {time.perf_counter() - t0[0]:.0f} s "
            f"(cached in {_cache_folder()})")


def groups_for(policies: Sequence[str]) -> tuple[str, ...]:
    """World generation, plus each engine flavour the policies use."""
    from wmtsim.core.policies import SEL_BASELINE, get_policy

    out = ["world"]
    kinds = {get_policy(p).selection == SEL_BASELINE for p in policies}
    if False in kinds:
        out.append("engine")
    if True in kinds:
        out.append("field")
    return tuple(out)


def _tiny_world() -> World:
    """A one-trajectory world of a root and its final answer, made by hand with the very
    arrays (and dtypes) `generate` makes, so that the engine groups compile without world
    generation (numba compiles for the types; every kernel a run reaches is compiled,
    whatever the script) and can compile beside it in another process."""
    import numpy as np

    from wmtsim.core.codes import ROOT
    from wmtsim.core.world_spec import OP_FINAL, World, WorldSpec
    from wmtsim.engine.world import _empty_arrays

    rows = _empty_arrays(1, 1, 1)
    rows.kind[0, 0] = ROOT
    rows.op[0, 0] = OP_FINAL
    rows.arg[0, 0] = 0
    return World(seed=0, start=0, spec=WorldSpec(), **rows._asdict(),
                 n_nodes=np.ones(1, np.int64), n_events=np.ones(1, np.int64),
                 n_injected=np.zeros(1, np.int64))


def _compile(group: str) -> None:
    """Run the group's kernels once on a tiny input (numba compiles and caches them)."""
    from wmtsim.engine.simulation import simulate

    if group == "world":
        from wmtsim.core.world_spec import PoisonSpec, WorldSpec
        from wmtsim.engine.world import generate

        generate(WorldSpec(n_subtasks=(1, 2), n_globals=1, poison=(
            PoisonSpec("plausible"),)), n=2)
        return
    if group == "stub_fit":
        import numpy as np

        from wmtsim.engine.stub_likelihood import _selector_kernel

        one = np.ones(2)
        _selector_kernel(np.array([0.4, 0.2, 0.1, 0.5, 0.3]), one, one, one, one, one)
        return
    world = _tiny_world()
    if group == "engine":
        simulate(world, "wmt", record_steps=1)
    elif group == "field":
        simulate(world, "traceretain_z", record_steps=1)
    elif group == "dynamics":
        simulate(world, "wmt", dynamics=True)
        simulate(world, "traceretain_z", dynamics=True)
    elif group == "trace":
        from importlib import resources

        from wmtsim.engine.trace.trace import run

        run(Path(str(resources.files("wmtsim") / "data" / "paper_a4.jsonl")))


def ensure_compiled(groups: Sequence[str], say: Say | None = None,
                    live: Live | None = None) -> float:
    """Compile every group of ``groups`` not compiled yet, one line per group through
    ``say`` with its estimate (calibrated on this machine, at its current load) and then
    its actual time and kernel count; ``live`` shows the count of kernels compiled while
    a group compiles. Returns the seconds spent (0 on a warm cache).

    A group without its marker is run on its tiny input, and its lines are said as numba
    starts compiling it, not before: a group whose kernels numba finds in its cache after
    all (markers written by an older wmtsim, a cache copied in) loads in a second,
    silently, instead of announcing a compile that does not happen.

    With two groups or more to compile and a second core, a second process compiles
    some of them into the same cache meanwhile (`_lanes`; numba compiles in one thread):
    a cold ``wmtsim run`` waits for the longer share, not the sum. Those groups are said
    when it starts and when it is done; a group it did not finish is compiled here.
    ``WMTSIM_COMPILE_PROCESSES=1`` keeps everything in this process."""
    todo = [g for g in groups if not _marker(g).exists()]
    if not todo:
        return 0.0
    plans = {g: estimate(g) for g in todo}
    here, beside = _lanes(todo, plans)
    announced = [False]
    t_start = time.perf_counter()
    child = _start_child(beside)
    if child is None:
        here = todo
    elif say is not None:
        announced[0] = True
        say(_headline([plans[g] for g in here], [plans[g] for g in beside]))
        for group in beside:
            say(f"  [{todo.index(group) + 1}/{len(todo)}] {GROUPS[group][0]} "
                f"(~{plans[group][0]:.0f} s), in a second process…")
    spent = _compile_here(here, todo, plans, announced, say, live)
    if child is not None:
        missing = _finish_child(child, beside, todo, say)
        spent = time.perf_counter() - t_start
        # The second process failed: what it did not compile is compiled here.
        spent += _compile_here(missing, todo, plans, announced, say, live)
    return spent


def _compile_here(here: Sequence[str], todo: Sequence[str],
                  plans: dict[str, tuple[float, int | None, bool]], announced: list[bool],
                  say: Say | None, live: Live | None) -> float:
    """`ensure_compiled`'s groups ``here`` (of ``todo``) compiled in this process, in
    turn, each said as numba starts compiling it; returns the seconds spent."""
    spent = 0.0
    for group in here:
        k = todo.index(group) + 1
        label = GROUPS[group][0]
        seconds_left, kernels, _ = plans[group]
        ticks: list[Callable[[int], None] | None] = []
        stack = ExitStack()

        def first(k: int = k, label: str = label, seconds_left: float = seconds_left,
                  kernels: int | None = kernels, stack: ExitStack = stack,
                  ticks: list[Callable[[int], None] | None] = ticks) -> None:
            if say is not None:
                if not announced[0]:
                    announced[0] = True
                    say(_headline([plans[g] for g in todo[k - 1:]]))
                expect = f", ~{kernels} kernels" if kernels else ""
                say(f"  [{k}/{len(todo)}] {label} (~{seconds_left:.0f} s{expect})…")
            if live is not None:
                ticks.append(stack.enter_context(live(label, seconds_left, kernels)))

        def tick(n: int, ticks: list[Callable[[int], None] | None] = ticks) -> None:
            for each in ticks:
                if each is not None:
                    each(n)

        t0, c0 = time.perf_counter(), time.process_time()
        with stack, counting_compiles(tick, first) as count:
            _compile(group)
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        spent += seconds
        if count[0]:  # a compile, not kernels loaded from numba's cache: a measurement
            _remember(group, cpu, seconds, count[0])
        _write_marker(group, seconds)
        if say is not None and count[0]:
            say(f"  [{k}/{len(todo)}] {label}: done in {seconds:.0f} s "
                f"({count[0]} kernels, {cpu:.0f} s of CPU)")
    return spent


def _lanes(todo: Sequence[str], plans: dict[str, tuple[float, int | None, bool]]
           ) -> tuple[list[str], list[str]]:
    """Split the groups to compile between this process and a second one (longest first
    to the less loaded), when there are two groups or more and a second core to use:
    numba compiles in one thread, so two processes halve a cold start's wait."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    if cores < 2 or len(todo) < 2 or os.environ.get("WMTSIM_COMPILE_PROCESSES") == "1":
        return list(todo), []
    here: list[str] = []
    beside: list[str] = []
    load = [0.0, 0.0]
    for group in sorted(todo, key=lambda g: -plans[g][0]):
        lane = 0 if load[0] <= load[1] else 1
        (here if lane == 0 else beside).append(group)
        load[lane] += plans[group][0]
    order = {g: i for i, g in enumerate(todo)}
    return sorted(here, key=lambda g: order[g]), sorted(beside, key=lambda g: order[g])


def _start_child(groups: Sequence[str]) -> subprocess.Popen[str] | None:
    """A second process compiling ``groups`` into the same cache (`_child`), or None."""
    if not groups:
        return None
    import sys

    env = {**os.environ, "NUMBA_CACHE_DIR": str(_cache_folder())}
    try:
        return subprocess.Popen([sys.executable, "-m", "wmtsim.engine.warm", *groups],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env)
    except OSError:
        return None


def _finish_child(child: subprocess.Popen[str], beside: Sequence[str],
                  todo: Sequence[str], say: Say | None) -> list[str]:
    """Wait for the second process, say what it compiled and mark it done; returns the
    groups it did not finish (to be compiled here)."""
    if child.poll() is None and say is not None:
        say("  waiting for the second process…")
    out, err = child.communicate()
    done: dict[str, dict[str, float]] = {}
    for line in out.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("group") in beside:
            done[str(record["group"])] = record
    for group in beside:
        record = done.get(group)
        if record is None:
            continue
        seconds, cpu, kernels = record["seconds"], record["cpu"], int(record["kernels"])
        if kernels:
            _remember(group, cpu, seconds, kernels)
        _write_marker(group, seconds)
        if say is not None:
            head = f"  [{todo.index(group) + 1}/{len(todo)}] {GROUPS[group][0]}:"
            say(f"{head} done in {seconds:.0f} s in the second process ({kernels} kernels, "
                f"{cpu:.0f} s of CPU)" if kernels else
                f"{head} found in numba's cache after all (nothing compiled)")
    missing = [g for g in beside if g not in done]
    if missing and say is not None:
        last = err.strip().splitlines()[-1:] or ["no output"]
        say(f"  the second process stopped ({last[0]}); compiling the rest here")
    return missing


def _write_marker(group: str, seconds: float) -> None:
    try:
        _marker(group).parent.mkdir(parents=True, exist_ok=True)
        _marker(group).write_text(f"{seconds:.1f}\n", encoding="utf-8")
    except OSError:
        pass  # a read-only cache: numba compiles in memory, nothing to remember


def _child(groups: Sequence[str]) -> None:
    """The second process of `ensure_compiled`: compile each group in turn and print one
    JSON line per group (its seconds, CPU seconds and kernels compiled)."""
    for group in groups:
        t0, c0 = time.perf_counter(), time.process_time()
        with counting_compiles() as count:
            _compile(group)
        print(json.dumps({"group": group, "seconds": time.perf_counter() - t0,
                          "cpu": time.process_time() - c0, "kernels": count[0]}),
              flush=True)


def _headline(plans: Sequence[tuple[float, int | None, bool]],
              beside: Sequence[tuple[float, int | None, bool]] = ()) -> str:
    """The first line of a compile: the estimate of the groups left (the longer of the
    two processes' shares when a second one compiles ``beside``), and its basis."""
    total = max(sum(p[0] for p in plans), sum(p[0] for p in beside))
    both = [*plans, *beside]
    basis = ("as measured on this machine" if all(p[2] for p in both) else
             "from a reference 2-core machine; measured here from now on")
    where = " in two processes" if beside else ""
    return (f"compiling wmtsim's numba kernels for this version (once){where}: "
            f"~{total:.0f} s at this machine's current load ({_load_per_core():.1f} per "
            f"core: ×{slowdown():.1f} an idle core; {basis}); cached in {_cache_folder()}")


if __name__ == "__main__":  # `ensure_compiled`'s second process
    import sys

    _child(sys.argv[1:])
