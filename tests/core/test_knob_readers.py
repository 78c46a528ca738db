"""The declared table of which policy reads which knob (`wmtsim.core.knob_readers`) holds
against the engine: what a policy is said not to read does not change its results."""

from __future__ import annotations

import math
from dataclasses import fields
from typing import Any

import numpy as np
import pytest

from wmtsim.core.field_knobs import Baselines
from wmtsim.core.knob_readers import READS, WORLD_NEEDS, readers, unread
from wmtsim.core.knobs import knob_of
from wmtsim.core.params import Params
from wmtsim.core.policies import POLICIES
from wmtsim.core.stubs import Stubs
from wmtsim.studies.scenarios.scenario import load_scenario

SECTIONS: dict[str, type] = {"params": Params, "stubs": Stubs, "baselines": Baselines}


def test_every_knob_is_declared() -> None:
    for section, cls in SECTIONS.items():
        for f in fields(cls):
            assert f"{section}.{f.name}" in READS, f"{section}.{f.name}: add it to READS"
    assert set(READS) <= {f"{s}.{f.name}" for s, c in SECTIONS.items() for f in fields(c)}


def _moved(cls: type, name: str, side: str = "low") -> Any:
    """A valid value of knob ``name`` far from its default, on the ``side`` of it."""
    spec = knob_of(cls, name)
    assert spec is not None
    default = getattr(cls(), name)
    if spec.kind == "bool":
        return not default
    if spec.kind == "choice":  # a rule: its other choice (the previous rule)
        return next(c for c in spec.choices if c != default)
    if spec.kind == "int":
        up = min(default * 2 if default > 0 else 2, int(spec.hi))
        down = default // 2 if default // 2 >= spec.lo else default
        pick = up if side == "high" else down
        return pick if pick != default else (up if up != default else default - 1)
    lo = spec.lo if math.isfinite(spec.lo) else default - 1.0
    hi = spec.hi if math.isfinite(spec.hi) else default + 1.0
    if side == "high" and default < hi:
        return default + 0.5 * (hi - default)
    if default > lo:
        return default - 0.5 * (default - lo)
    return lo + 0.5 * (min(hi, lo + 1.0) - lo)


# mem0's three decision probabilities must sum to <= 1: they move on the low side only.
_KEEP_HIGH = {"baselines.mem0_p_update", "baselines.mem0_p_delete", "baselines.mem0_p_none"}


def _run(scenario: Any, policy: str, n: int = 24) -> np.ndarray:
    from wmtsim.engine.simulation import run_engine
    from wmtsim.engine.world import generate

    world = generate(scenario.world, seed=scenario.seed, n=n)
    raw, _, _ = run_engine(world, policy, scenario.params, scenario.stubs,
                           scenario.baselines, 1)
    return np.asarray(raw)


@pytest.mark.parametrize("scenario", ["paper_poisoning", "global_poison"])
def test_what_a_policy_does_not_read_changes_nothing(scenario: str) -> None:
    base = load_scenario(scenario)
    for policy in POLICIES:
        ours = _run(base, policy)
        for side in ("low", "high"):
            moved = {f"{s}.{f.name}": _moved(c, f.name, side) for s, c in SECTIONS.items()
                     for f in fields(c) if policy not in readers(f"{s}.{f.name}", [policy])
                     and not (side == "high" and f"{s}.{f.name}" in _KEEP_HIGH)}
            if not moved:
                continue
            other = base.with_overrides(moved)
            assert np.array_equal(ours, _run(other, policy)), (
                f"{policy} on {scenario}: results change when moving ({side}) knobs the "
                f"table says it does not read: {sorted(moved)}")


def test_world_conditions_hold_where_there_are_no_globals() -> None:
    base = load_scenario("paper_poisoning")
    assert base.world.n_globals == 0
    for side in ("low", "high"):
        moved = {k: _moved(Params, k.split(".")[1], side) for k in WORLD_NEEDS}
        assert np.array_equal(_run(base, "wmt"), _run(base.with_overrides(moved), "wmt"))


def test_a_read_knob_does_move_its_reader() -> None:
    """The table and the moves are not vacuous: ρ, τ_obs and the budget each move Full
    WMT on the poisoning scenario."""
    base = load_scenario("paper_poisoning")
    for key, value in (("rho", 0.3), ("tau_obs", 0.6), ("budget", 60)):
        moved = {key: value}
        assert not np.array_equal(_run(base, "wmt", 100),
                                  _run(base.with_overrides(moved), "wmt", 100)), key


def test_unread_names_the_knob_and_why() -> None:
    world = load_scenario("paper_poisoning").world
    found = unread(["baselines.ga_top_k", "params.rho", "params.rho_g"],
                   ["generative_agents", "wmt"], [world])
    assert set(found) == {"baselines.ga_top_k", "params.rho_g"}
    assert "Generative Agents (public code)" in found["baselines.ga_top_k"]
    assert set(unread(["params.rho"], ["a1_unweighted"])) == {"params.rho"}


def test_a_sweep_of_a_knob_nobody_reads_is_refused_and_named() -> None:
    from wmtsim.studies.sweeps.sweep import SweepError, sweep_from_dict

    def sweep(policies: list[str], key: str, values: list[Any]) -> Any:
        return sweep_from_dict({"scenario": "paper_poisoning", "policies": policies,
                                "parameters": {key: {"values": values}},
                                "design": {"kind": "grid", "trajectories": 2}})

    with pytest.raises(SweepError, match=r"parameters\.baselines\.ga_top_k: no policy of "
                       r"this sweep reads it .*generative_agents_code"):
        sweep(["generative_agents"], "baselines.ga_top_k", [10, 30])
    with pytest.raises(SweepError, match=r"parameters\.rho: no policy"):
        sweep(["a1_unweighted"], "rho", [0.5, 0.9])
    assert sweep(["wmt", "a1_unweighted"], "rho", [0.5, 0.9]).warnings == ()
    (note,) = sweep(["wmt"], "rho_g", [0.9, 0.99]).warnings
    assert "parameters.rho_g" in note and "global memories" in note


def test_readers_declared_at_the_knob() -> None:
    """A field policy's own knob names its readers where it is declared (issue 29: a new
    policy with a knob touches `core/field_knobs.py`, not `knob_readers.READS`)."""
    from dataclasses import dataclass

    from wmtsim.core.knob_readers import declared_at_knob
    from wmtsim.core.knobs import knob

    @dataclass(frozen=True)
    class Own:
        k: int = knob(3, reads=("generative_agents", "mem0"))
        j: int = knob(1)

    got = declared_at_knob(Own, "baselines")
    assert list(got) == ["baselines.k"]
    assert [n for n in POLICIES if got["baselines.k"].test(POLICIES[n])] == [
        "generative_agents", "mem0"]

    @dataclass(frozen=True)
    class Bad:
        k: int = knob(3, reads=("no_such_policy",))

    with pytest.raises(ValueError, match=r"no_such_policy.*not policies"):
        declared_at_knob(Bad, "baselines")
