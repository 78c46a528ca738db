"""The engine's population aggregates: their cost over the plain simulation,
and their memory as n grows. ``python -m benchmarks.run --only dynamics``.

Both runs are the engine alone (`wmtsim.engine.run`, world generated beforehand) on the
same 10,000 trajectories of ``paper_poisoning`` under Full WMT and A2, interleaved and
best of several repeats, so the ratio is measured in one run on one machine. Memory: the
bytes of the accumulators (`DynamicsAcc`, one row per numba thread) for 1,000 and 10,000
trajectories: flat means the same.
"""

from __future__ import annotations

import time
from typing import Any

GOAL_OVERHEAD = 0.15  # (with aggregates − plain) / plain, engine time, 10,000 trajectories


def bench_dynamics(sz: Any) -> dict[str, Any]:
    from wmtsim.core.policies import get_policy
    from wmtsim.core.world_spec import max_prompt_steps
    from wmtsim.engine import run
    from wmtsim.engine.dynamics import DynamicsAcc
    from wmtsim.engine.world import generate
    from wmtsim.studies.scenarios.scenario import load_scenario

    s = load_scenario("paper_poisoning")
    n = sz.dynamics_trajectories
    world = generate(s.world, seed=0, n=n)
    p, st, bl = s.params.pack(), s.stubs.pack(), s.baselines.pack()
    rows, runs = [], {}
    for policy in ("wmt", "a2_no_controller"):
        sw = get_policy(policy).pack()
        for dyn in (False, True):  # load the kernels outside the timing
            run(generate(s.world, seed=0, n=4), sw, p, st, 0, None, bl, dyn)
        best = {False: float("inf"), True: float("inf")}
        cpu = {False: float("inf"), True: float("inf")}
        for _ in range(max(sz.repeats, 5)):
            for dyn in (False, True):
                c0, t0 = time.process_time(), time.perf_counter()
                run(world, sw, p, st, 0, None, bl, dyn)
                best[dyn] = min(best[dyn], time.perf_counter() - t0)
                cpu[dyn] = min(cpu[dyn], time.process_time() - c0)
        overhead = best[True] / best[False] - 1.0
        cpu_overhead = cpu[True] / cpu[False] - 1.0
        runs[policy] = {"plain_seconds": best[False], "dynamics_seconds": best[True],
                        "overhead": overhead, "cpu_overhead": cpu_overhead}
        rows.append((f"aggregates vs plain engine, {policy} (n={n:,}; wall, best of "
                     f"{max(sz.repeats, 5)})", f"{overhead:+.1%} ({best[False]:.3f} s → "
                     f"{best[True]:.3f} s; CPU {cpu_overhead:+.1%})",
                     f"< {GOAL_OVERHEAD:.0%}",
                     "met" if overhead < GOAL_OVERHEAD else "missed"))
    steps = int(world.n_events.max())  # an upper bound of the prompt steps
    sizes_bytes = {}
    for m in (1_000, 10_000):
        w = generate(s.world, seed=0, n=m)
        counted = max_prompt_steps(w.op)
        acc = DynamicsAcc.allocate(counted, int(w.n_nodes.max()) + 8)
        sizes_bytes[m] = sum(a.nbytes for a in acc)
    flat = sizes_bytes[10_000] <= sizes_bytes[1_000] * 1.5
    rows.append(("aggregate memory, 1,000 → 10,000 trajectories",
                 f"{sizes_bytes[1_000] / 1024:.1f} → {sizes_bytes[10_000] / 1024:.1f} KiB",
                 "flat in n", "met" if flat else "missed"))
    return {"trajectories": n, "runs": runs, "accumulator_bytes": sizes_bytes,
            "event_bound": steps, "rows": [list(r) for r in rows]}
