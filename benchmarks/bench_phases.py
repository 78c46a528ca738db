"""Where a step's time goes, without touching the engine's kernels.

Two views on the same default-world `World`, 1 thread, CPU time, repeats interleaved:

* **The floor, phase by phase.** `benchmarks.floor` runs chosen phases twice (``PH_*``:
  each is idempotent, so the trajectories do not change); a phase's cost is the time it
  adds per trajectory-step. What no phase claims is the script, node creation, the
  selection feedback (Eqs. 3–5) and the fold.
* **The engine, policy by policy.** The configurations of docs/model.md §7 switch parts of
  the step on one at a time (`wmtsim.core.policies`); the difference between two rows is
  what the switched-on parts cost in the engine (it also changes the trees: folding
  makes pools smaller, so it is an estimate, not an exact split).
"""

from __future__ import annotations

import time
from typing import Any

FLOOR_PHASES = {  # name -> the floor's PH_* mask
    "candidate pool (§4 step 2)": "PH_POOL",
    "Eq. 6 after feedback (full pass)": "PH_PRIORITIES",
    "selector: utility, draws, order, greedy pick": "PH_SELECT",
    "of which the selector's noise draws": "PH_DRAWS",
    "Eq. 7 suppression": "PH_SUPPRESS",
}
ENGINE_LADDER = (  # policy, what it adds over the row before
    ("no_memory", "the script, node creation, active path, accounting, the reasoner"),
    ("linear", "+ candidate pool, everything selected"),
    ("tree_selection", "+ the semantic selector (noise, order, greedy under B)"),
    ("tree_selection_summary", "+ fold and summaries (smaller pools)"),
    ("wmt", "+ feedback, priorities, weighted utility, suppression, supersession"),
)


def bench_phases(sz: Any) -> dict[str, Any]:
    """Per-phase cost of the floor (phase doubling) and of the engine (policy ladder)."""
    from wmtsim.core.metrics import C
    from wmtsim.core.world_spec import WorldSpec
    from wmtsim.engine.world import generate

    from . import floor as F
    from .engine_calls import Engine, _warm

    _warm()
    n = 3_000 if sz.repeats > 1 else 100
    repeats = max(3, 2 * sz.repeats + 1)
    world = generate(WorldSpec(), seed=0, n=n)
    masks = {"all phases once": 0} | {k: getattr(F, v) for k, v in FLOOR_PHASES.items()}
    knobs = {name: F.floor_knobs(world, twice=m) for name, m in masks.items()}
    engines = {p: Engine(p) for p, _ in ENGINE_LADDER}
    steps = {p: int(e(world, 1)[:, C.prompt_steps].sum()) for p, e in engines.items()}
    floor_steps = int(F.run_floor(world)["steps"].sum())
    cpu: dict[str, list[float]] = {f"floor: {k}": [] for k in masks}
    cpu |= {f"engine: {p}": [] for p in engines}
    for _ in range(repeats):
        for name, k in knobs.items():
            c0 = time.process_time()
            F.run_floor(world, k)
            cpu[f"floor: {name}"].append(time.process_time() - c0)
        for p, eng in engines.items():
            c0 = time.process_time()
            eng(world, 1)
            cpu[f"engine: {p}"].append(time.process_time() - c0)
    ns = {k: min(v) * 1e9 for k, v in cpu.items()}
    base = ns["floor: all phases once"] / floor_steps
    floor_rows = {name: ns[f"floor: {name}"] / floor_steps - base for name in FLOOR_PHASES}
    ladder = {p: ns[f"engine: {p}"] / steps[p] for p in engines}
    rows = [_row(f"floor, all phases once ({n:,} trajectories, default world)",
                 f"{base:,.0f} ns/step (CPU)")]
    rows += [_row(f"floor: {name}", f"{cost:,.0f} ns/step") for name, cost in
             floor_rows.items()]
    claimed = sum(c for k, c in floor_rows.items() if not k.startswith("of which"))
    rows.append(_row("floor: the rest (script, nodes, Eqs. 3–5 feedback, fold, "
                     "pre-selection Eq. 6 update)", f"{base - claimed:,.0f} ns/step"))
    before = 0.0
    for p, what in ENGINE_LADDER:
        rows.append(_row(f"engine {p}: {what}",
                         f"{ladder[p]:,.0f} ns/step (+{ladder[p] - before:,.0f})"))
        before = ladder[p]
    return {"trajectories": n, "threads": 1, "repeats": repeats, "floor_steps": floor_steps,
            "floor_ns_per_step": base, "floor_phase_ns": floor_rows,
            "engine_ns_per_step": ladder, "engine_steps": steps, "rows": rows}


def _row(measurement: str, value: str) -> list[str]:
    return [measurement, value, "", ""]
