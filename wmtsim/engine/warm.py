"""Compile the numba kernels ahead of use, group by group, saying so.

A fresh numba cache (a new wmtsim version, or a new machine) costs tens of seconds of
compilation before the first result; without a word that looks like a hang. The commands
that run the engine call `ensure_compiled` first: every kernel group the job needs that
is not in the cache yet is compiled on a tiny input, with one line per group saying what
is compiling and roughly how long it takes. A marker file per group in the cache folder
(`wmtsim.numba_cache.cache_dir`) records what is done, so a warm start prints nothing.

Groups, each compiled only when a job needs it:

============  =================================================================
``world``     world generation (`wmtsim.engine.world`)
``engine``    the engine for WMT's own configurations (no field kernels)
``field``     the engine for the field's policies (`wmtsim.engine.field`)
``trace``     trace replay (`wmtsim.engine.trace`)
``dynamics``  both engines with the population aggregates (`wmtsim.engine.dynamics`)
============  =================================================================
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from wmtsim.numba_cache import cache_dir

# label, rough cold-compile seconds on a 2-core machine (measured by `make bench`)
GROUPS: dict[str, tuple[str, int]] = {
    "world": ("world generation", 18),
    "engine": ("the engine for WMT's configurations", 20),
    "field": ("the engine for the field's policies", 25),
    "trace": ("trace replay", 5),
    "dynamics": ("the engines with population aggregates", 60),
}

Say = Callable[[str], None]


def _cache_folder() -> Path:
    """The folder numba caches into (the user's ``NUMBA_CACHE_DIR``, else wmtsim's)."""
    chosen = os.environ.get("NUMBA_CACHE_DIR")
    return Path(chosen) if chosen else cache_dir()


def _marker(group: str) -> Path:
    return _cache_folder() / f".compiled-{group}"


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


def _compile(group: str) -> None:
    """Run the group's kernels once on a tiny input (numba compiles and caches them)."""
    from wmtsim.engine.simulation import simulate
    from wmtsim.engine.world import PoisonSpec, WorldSpec, generate

    world = generate(WorldSpec(n_subtasks=(1, 2), n_globals=1, poison=(
        PoisonSpec("plausible"),)), n=2)
    if group == "engine":
        simulate(world, "wmt", record_steps=1)
    elif group == "field":
        simulate(world, "traceretain_z", record_steps=1)
    elif group == "dynamics":
        simulate(world, "wmt", dynamics=True)
        simulate(world, "traceretain_z", dynamics=True)
    elif group == "trace":
        from importlib import resources

        from wmtsim.engine.trace import run

        run(Path(str(resources.files("wmtsim") / "data" / "paper_a4.jsonl")))


def ensure_compiled(groups: Sequence[str], say: Say | None = None) -> float:
    """Compile every group of ``groups`` not compiled yet, one line per group through
    ``say``; returns the seconds spent (0 on a warm cache)."""
    todo = [g for g in groups if not _marker(g).exists()]
    if not todo:
        return 0.0
    total = sum(GROUPS[g][1] for g in todo)
    if say is not None:
        say(f"compiling wmtsim's numba kernels for this version (once; ~{total} s on 2 "
            f"cores; cached in {_cache_folder()})")
    spent = 0.0
    for k, group in enumerate(todo, 1):
        label, estimate = GROUPS[group]
        if say is not None:
            say(f"  [{k}/{len(todo)}] {label} (~{estimate} s)…")
        t0 = time.perf_counter()
        _compile(group)
        seconds = time.perf_counter() - t0
        spent += seconds
        try:
            _marker(group).parent.mkdir(parents=True, exist_ok=True)
            _marker(group).write_text(f"{seconds:.1f}\n", encoding="utf-8")
        except OSError:
            pass  # a read-only cache: numba compiles in memory, nothing to remember
        if say is not None:
            say(f"  [{k}/{len(todo)}] {label}: done in {seconds:.0f} s")
    return spent
