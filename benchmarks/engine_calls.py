"""The engine, called the way `simulate` calls it minus the result frame: the helpers every
timing section shares (`cases`, `bench_floor`, `bench_phases`), kept apart so that no
benchmark module imports the module that lists the sections."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np


def best_cpu_time(fn: Callable[[], object], repeat: int = 3, min_time: float = 0.0,
                  max_time: float = 30.0) -> tuple[float, float]:
    """Best wall time and best process CPU time (all threads) of ``fn()``.

    On a loaded machine wall time includes waiting for a core; CPU time does not, so a
    ratio of CPU times is the load-insensitive view of the same comparison.
    """
    walls: list[float] = []
    cpus: list[float] = []
    while len(walls) < repeat or sum(walls) < min_time:
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
        if sum(walls) > max_time:
            break
    return min(walls), min(cpus)


class Engine:
    """`wmtsim.engine.run` on one World under one policy with default parameters."""

    def __init__(self, policy: str = "wmt") -> None:
        from wmtsim.core.params import Params
        from wmtsim.core.policies import get_policy
        from wmtsim.core.stubs import Stubs

        self.policy = policy
        self.switches = get_policy(policy).pack()
        self.p = Params().pack()
        self.st = Stubs().pack()

    def __call__(self, world: Any, threads: int | None = None) -> np.ndarray:
        from wmtsim.engine import run

        counts, _, _ = run(world, self.switches, self.p, self.st, 0, threads)
        return counts


def _prompt_steps(counts: Any) -> int:
    from wmtsim.core.metrics import C

    return int(np.asarray(counts)[:, C.prompt_steps].sum())


def _generate(spec: Any, n: int, seed: int = 0) -> Any:
    from wmtsim.engine.world import generate

    return generate(spec, seed=seed, n=n)


def _warm() -> None:
    """Load (or compile) the kernels so no section times compilation."""
    from wmtsim.core.world_spec import WorldSpec

    w = _generate(WorldSpec(), 4)
    eng = Engine()
    eng(w, 1)
    eng(w)
