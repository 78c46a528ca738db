"""The engine's population aggregates against the readable twin, exactly (issue 28).

`wmtsim.engine.dynamics` (accumulated inside the numba step loop) and
`wmtsim.twins.dynamics_reference` (counted from the readable simulator's tree) must give
the same integers on the differential worlds of test_engine_differential.py and on random
worlds: per step, per step since injection, fates with their steps, lifetimes.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_engine_differential import SCENARIOS, random_scenario, scenario_world

from wmtsim.core.policies import FAM_WMT, POLICIES, get_policy
from wmtsim.core.world_spec import World
from wmtsim.engine import dynamics as engine_dynamics
from wmtsim.engine.simulation import simulate
from wmtsim.engine.world import generate
from wmtsim.twins import dynamics_reference as twin
from wmtsim.twins.dynamics_reference import dynamics_reference

# WMT's ten configurations and the field's policies that supersede, summarise or forget.
CHECKED = (*[p for p in POLICIES if get_policy(p).family == FAM_WMT], "traceretain_z",
           "traceretain_conflict", "traceretain_cluster", "memgpt", "sliding_window_summary",
           "token_buffer_summary", "mem0", "memorybank")


def assert_same(world: World, policy: str, params: object, stubs: object) -> None:
    eng = simulate(world, policy, params=params, stubs=stubs, dynamics=True).dynamics()
    ref = dynamics_reference(world, policy, params, stubs)  # type: ignore[arg-type]
    for name, a in ref.items():
        np.testing.assert_array_equal(eng.counts[name], a, err_msg=f"{policy}: {name}")


def test_the_twin_names_what_the_engine_names() -> None:
    assert twin.STEP_COLUMNS == engine_dynamics.STEP_COLUMNS
    assert twin.SINCE_COLUMNS == engine_dynamics.SINCE_COLUMNS
    assert twin.FATES == engine_dynamics.FATES


@pytest.mark.parametrize("policy", CHECKED)
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_engine_dynamics_equal_the_twin(scenario: str, policy: str) -> None:
    _, params, stubs, _ = SCENARIOS[scenario]
    assert_same(scenario_world(scenario), policy, params, stubs)


@pytest.mark.parametrize("seed", [101, 202, 303, 404])
def test_engine_dynamics_equal_the_twin_on_random_points(seed: int) -> None:
    spec, params, stubs = random_scenario(seed)
    world = generate(spec, seed=seed, n=10, start=seed)
    for policy in CHECKED:
        assert_same(world, policy, params, stubs)


def test_the_worlds_reach_every_fate() -> None:
    """The differential worlds above end poisons in every fate (else the test is weak)."""
    seen = np.zeros(len(engine_dynamics.FATES), np.int64)
    for scenario in SCENARIOS:
        _, params, stubs, _ = SCENARIOS[scenario]
        for policy in ("wmt", "a2_no_controller", "no_memory", "tree_summary", "mem0",
                       "traceretain_z"):
            res = simulate(scenario_world(scenario), policy, params=params, stubs=stubs,
                           dynamics=True)
            seen += res.dynamics().counts["fate_k"].sum(axis=(0, 2))
    assert (seen > 0).all(), dict(zip(engine_dynamics.FATES, seen.tolist(), strict=True))
