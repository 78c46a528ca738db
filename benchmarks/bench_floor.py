"""The engine against the floor: Full WMT's engine step vs `benchmarks.floor`.

Both play the same generated `World` on one thread, in one process, interleaved
(engine, floor, engine, floor, ...), so drifting load hits both alike; each side's best
wall time and best CPU time are kept. The floor does the same memory work and nothing
else (tests/test_bench_floor.py checks it against the readable twin), so the ratio is
what the engine spends beyond the memory work: the reasoner, summary leaks, the
counters, the records, and whatever it does less leanly.
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any

GOAL_VS_FLOOR = 2.5
FLOOR_WORLDS = {  # name -> (WorldSpec keyword arguments, trajectories at full size)
    "default": ({}, 3_000),
    "large": ({"n_subtasks": (8, 8), "n_actions": (14, 14)}, 300),
}


def bench_floor(sz: Any) -> dict[str, Any]:
    """Full WMT, 1 thread: engine ns per trajectory-step over the floor's, same World."""
    from wmtsim.core.metrics import C
    from wmtsim.core.world_spec import WorldSpec
    from wmtsim.engine.world import generate

    from .engine_calls import Engine, _warm
    from .floor import floor_knobs, run_floor

    _warm()
    eng = Engine("wmt")
    out: dict[str, Any] = {"policy": "wmt", "threads": 1, "goal": GOAL_VS_FLOOR,
                           "worlds": {}, "rows": []}
    for name, (kwargs, n_full) in FLOOR_WORLDS.items():
        n = n_full if sz.repeats > 1 else max(4, n_full // 30)
        world = generate(WorldSpec(**kwargs), seed=0, n=n)
        knobs = floor_knobs(world)
        counts = eng(world, 1)
        floor = run_floor(world, knobs)
        steps = int(counts[:, C.prompt_steps].sum())
        same_steps = steps == int(floor["steps"].sum())
        runs: dict[str, list[tuple[float, float]]] = {"engine": [], "floor": []}
        repeats = max(3, 2 * sz.repeats + 1)
        for _ in range(repeats):
            for side, fn in (("engine", partial(eng, world, 1)),
                             ("floor", partial(run_floor, world, knobs))):
                c0, t0 = time.process_time(), time.perf_counter()
                fn()
                runs[side].append((time.perf_counter() - t0, time.process_time() - c0))
        wall = {s: min(r[0] for r in v) for s, v in runs.items()}
        cpu = {s: min(r[1] for r in v) for s, v in runs.items()}
        ratio, cpu_ratio = wall["engine"] / wall["floor"], cpu["engine"] / cpu["floor"]
        nodes = float(counts[:, C.nodes].mean())
        out["worlds"][name] = {
            "trajectories": n, "prompt_steps": steps, "mean_nodes": nodes,
            "same_prompt_steps": same_steps, "repeats": repeats,
            "engine_ns_per_step": wall["engine"] / steps * 1e9,
            "floor_ns_per_step": wall["floor"] / steps * 1e9,
            "engine_cpu_ns_per_step": cpu["engine"] / steps * 1e9,
            "floor_cpu_ns_per_step": cpu["floor"] / steps * 1e9,
            "ratio": ratio, "cpu_ratio": cpu_ratio,
        }
        w = out["worlds"][name]
        label = f"{name} world (~{nodes:.0f} nodes, {n:,} trajectories)"
        out["rows"] += [
            _row(f"Full WMT engine, 1 thread, {label}",
                 f"{w['engine_ns_per_step']:,.0f} ns/step (CPU "
                 f"{w['engine_cpu_ns_per_step']:,.0f})"),
            _row(f"floor, same memory work, {label}",
                 f"{w['floor_ns_per_step']:,.0f} ns/step (CPU "
                 f"{w['floor_cpu_ns_per_step']:,.0f})"),
            _row(f"engine / floor, {label}", f"{ratio:.2f}x (CPU time: {cpu_ratio:.2f}x)",
                 f"<= {GOAL_VS_FLOOR}x", cpu_ratio <= GOAL_VS_FLOOR),
        ]
        if not same_steps:
            out["rows"].append(_row(f"prompt steps equal the engine's, {label}", "no"))
    return out


def _row(measurement: str, value: str, goal: str = "", met: bool | None = None
         ) -> list[str]:
    status = "" if met is None else ("met" if met else "missed")
    return [measurement, value, goal, status]
