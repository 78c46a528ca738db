"""``n_subtasks`` fixed, range or distribution (docs/world.md, "Trajectory generation").

The generator draws the number of top-level subtasks from one world draw (counter 1):
uniform over [min, max] for a range, the inverse CDF of ``n_subtasks_p`` for a
distribution. The readable twin of that draw below is written from the docs with the
pure-Python generator `uniform_py`; the engine must agree with it on every trajectory.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from wmtsim.core.codes import TASK
from wmtsim.core.draws import PURPOSE_WORLD, STEP_WORLD, uniform_py
from wmtsim.core.validation import KnobError
from wmtsim.core.world_spec import WorldSpec
from wmtsim.engine.world import generate
from wmtsim.studies.scenarios.scenario import ScenarioError, load_scenario, scenario_from_dict


def twin_n_top(spec: WorldSpec, seed: int, traj: int) -> int:
    """The docs' rule, written out: one uniform u; a range takes lo + floor(u · span); a
    distribution the first value whose running sum of probabilities exceeds u."""
    u = uniform_py(seed, traj, STEP_WORLD, 1, PURPOSE_WORLD)
    lo, hi = spec.n_subtasks
    if not spec.n_subtasks_p:
        return lo + min(int(u * (hi - lo + 1)), hi - lo)
    total = 0.0
    for k, p in enumerate(spec.n_subtasks_p):
        total += p
        if u < total or k == len(spec.n_subtasks_p) - 1:
            return lo + k
    raise AssertionError("unreachable")


def engine_n_top(spec: WorldSpec, seed: int, n: int) -> np.ndarray:
    world = generate(spec, seed=seed, n=n)
    return ((world.kind == TASK) & (world.parent == 0)).sum(axis=1)


FORMS = {
    "fixed": 3,
    "range": [2, 4],
    "values": {"values": [1, 3, 6], "p": [0.2, 0.5, 0.3]},
    "poisson": {"dist": "poisson", "mean": 2.97, "min": 1, "max": 7},
}


@pytest.mark.parametrize("form", list(FORMS))
def test_engine_draw_equals_the_twin(form: str) -> None:
    spec = WorldSpec(n_subtasks=FORMS[form], n_actions=(1, 2))
    got = engine_n_top(spec, seed=11, n=400)
    want = [twin_n_top(spec, 11, i) for i in range(400)]
    np.testing.assert_array_equal(got, want)


def test_frequencies_follow_the_distribution() -> None:
    """At n = 6000 each share is within 5 standard errors of its probability; a value of
    probability 0 (between listed values) never occurs."""
    spec = WorldSpec(n_subtasks={"values": [1, 3, 6], "p": [0.2, 0.5, 0.3]},
                     n_actions=(0, 1))
    got = engine_n_top(spec, seed=2, n=6000)
    for k, p in ((1, 0.2), (2, 0.0), (3, 0.5), (4, 0.0), (5, 0.0), (6, 0.3)):
        share = float((got == k).mean())
        assert abs(share - p) <= 5 * math.sqrt(p * (1 - p) / 6000) + 1e-12, (k, share)


def test_the_forms_held_as_support_and_probabilities() -> None:
    assert (WorldSpec(n_subtasks=3).n_subtasks, WorldSpec(n_subtasks=3).n_subtasks_p) == (
        (3, 3), ())
    w = WorldSpec(n_subtasks={"values": [5, 2], "p": [0.25, 0.75]})
    assert w.n_subtasks == (2, 5) and w.n_subtasks_p == (0.75, 0.0, 0.0, 0.25)
    # Zero-probability ends are cut from the support (they cannot be drawn).
    w = WorldSpec(n_subtasks={"values": [1, 2, 3], "p": [0.0, 1.0, 0.0]})
    assert w.n_subtasks == (2, 2) and w.n_subtasks_p == (1.0,)
    # Poisson(2) cut to [1, 3], by hand: weights 2, 2, 4/3 (e^-2 cancels), sum 16/3.
    w = WorldSpec(n_subtasks={"dist": "poisson", "mean": 2.0, "min": 1, "max": 3})
    assert w.n_subtasks == (1, 3)
    np.testing.assert_allclose(w.n_subtasks_p, (0.375, 0.375, 0.25), rtol=1e-12)
    # The range form keeps the old draw: its node bound is the support's max.
    assert WorldSpec(n_subtasks=(2, 4)).max_subtasks() == 4


def test_round_trip_through_a_scenario_file(tmp_path) -> None:
    data = {"name": "dist", "world": {"n_subtasks": FORMS["values"]}}
    sc = scenario_from_dict(data)
    path = tmp_path / "dist.toml"
    path.write_text(sc.to_toml(), encoding="utf-8")
    again = load_scenario(path)
    assert again.world == sc.world
    assert again.world.to_dict()["n_subtasks"] == {"values": [1, 2, 3, 4, 5, 6],
                                                   "p": [0.2, 0.0, 0.5, 0.0, 0.0, 0.3]}
    # An override replaces the distribution as a whole.
    flat = sc.with_overrides({"world.n_subtasks": [2, 2]})
    assert flat.world.n_subtasks == (2, 2) and flat.world.n_subtasks_p == ()


def test_errors_name_the_file_the_key_the_value_and_what_is_allowed(tmp_path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("[world]\nn_subtasks = {values = [2, 3], p = [0.5, 0.6]}\n")
    with pytest.raises(ScenarioError) as e:
        load_scenario(path)
    text = str(e.value)
    assert text.startswith(f"{path}: world.n_subtasks.p: [0.5, 0.6] is invalid; allowed: ")
    assert "sum to 1" in text
    with pytest.raises(KnobError, match="n_subtasks_p"):
        WorldSpec(n_subtasks=(2, 3), n_subtasks_p=(0.5, 0.4))
    with pytest.raises(KnobError, match="n_subtasks_p"):
        WorldSpec(n_subtasks=3, n_subtasks_p=(1.0,))
