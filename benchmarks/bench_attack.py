"""The attack search: the five Table 4 configurations at k = 4 on
paper_poisoning, and the search's overhead over the plain simulation of its points."""

from __future__ import annotations

import time
from typing import Any

GOAL_SECONDS = 600.0  # the five searches together, on 2 cores
GOAL_OVERHEAD = 0.10  # (search time − simulation time of its points) / simulation time


def bench_attack(sz: Any) -> dict[str, Any]:
    """`wmtsim.studies.attack.search.search` for each Table 4 configuration at budget 4."""
    from wmtsim.core.policies import TABLE4_POLICIES
    from wmtsim.studies.attack.search import SearchSettings, evaluate, scripted_at, search
    from wmtsim.studies.attack.space import AttackSpace
    from wmtsim.studies.scenarios.scenario import load_scenario

    s = load_scenario("paper_poisoning")
    space = AttackSpace()
    settings = SearchSettings(trials=sz.attack_trials, n_search=sz.attack_trajectories,
                              n_holdout=sz.attack_trajectories)
    warm = scripted_at(s, space, 4.0)
    assert warm is not None
    for p in TABLE4_POLICIES:  # load the kernels outside the timing
        evaluate(s, p, warm, space, 0, 10)
    runs = []
    start = time.perf_counter()
    for p in TABLE4_POLICIES:
        r = search(s, p, 4.0, space, settings)
        runs.append({"policy": p, "seconds": r.total_seconds, "sim_seconds": r.sim_seconds,
                     "scripted_harm": r.trials[0]["harm"],
                     "best_search_harm": r.extra["best_search_harm"],
                     "held_out_worst": r.chosen_eval.value("asr")})
    seconds = time.perf_counter() - start
    sim = sum(r["sim_seconds"] for r in runs)
    overhead = (sum(r["seconds"] for r in runs) - sim) / sim
    full = sz.attack_trials >= 100 and sz.attack_trajectories >= 2000
    label = (f"attack search, 5 Table 4 configurations at k=4 ({sz.attack_trials} trials, "
             f"n={sz.attack_trajectories:,} search + held-out)")
    rows = [[label, f"{seconds:.1f} s", f"< {GOAL_SECONDS:.0f} s",
             ("met" if seconds < GOAL_SECONDS else "missed") if full else ""],
            ["attack search overhead over simulating its points", f"{overhead:.1%}",
             f"< {GOAL_OVERHEAD:.0%}",
             ("met" if overhead < GOAL_OVERHEAD else "missed") if full else ""]]
    return {"seconds": seconds, "overhead": overhead, "trials": sz.attack_trials,
            "trajectories": sz.attack_trajectories, "runs": runs, "rows": rows}
