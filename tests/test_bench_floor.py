"""The benchmark's floor kernel (`benchmarks/floor.py`) does Full WMT's memory work.

A floor that did less work than the engine would flatter the engine's ratio to it. So
the floor must make, at every prompt step, the selections the readable twin makes
(`wmtsim.twins.simulator`), and end with the twin's scores u, miss counts m and states z
on every node, on small trees of several shapes (nesting, globals, poison, supersession,
revisions, resumed subtasks). No time is measured here.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # benchmarks/ is a top-level package of the repository
    sys.path.insert(0, str(REPO))

from benchmarks.floor import floor_knobs, run_floor  # noqa: E402
from wmtsim.core.codes import STATE_NAMES  # noqa: E402
from wmtsim.core.metrics import C  # noqa: E402
from wmtsim.core.params import Params  # noqa: E402
from wmtsim.core.policies import get_policy  # noqa: E402
from wmtsim.core.stubs import Stubs  # noqa: E402
from wmtsim.core.world_spec import PoisonSpec, WorldSpec  # noqa: E402
from wmtsim.engine.world import generate  # noqa: E402
from wmtsim.twins.simulator import _Trajectory  # noqa: E402

pytestmark = pytest.mark.slow  # the floor's own kernels compile here, 26 s: make test-all

WORLDS = {
    "default": WorldSpec(),
    "nested, globals, resumed": WorldSpec(max_depth=3, p_nested=0.6, n_globals=3,
                                          p_resume=0.5, n_actions=(1, 6)),
    "poisoned, superseded, revised": WorldSpec(
        poison=(PoisonSpec(kind="plausible", p_supersede=0.7, count=2),
                PoisonSpec(kind="failed"), PoisonSpec(kind="global"),
                PoisonSpec(kind="summary")), p_revise=0.3, n_globals=2),
    "~130 nodes": WorldSpec(n_subtasks=(8, 8), n_actions=(14, 14)),
}
# Tight budgets make the greedy pick skip items; decay knobs make Eq. 7 suppress branches.
KNOBS = {
    "defaults": (Params(), Stubs()),
    "tight budget, top-k, fast decay": (
        Params(budget=150, rho=0.5, M=2, tau_obs=0.65, u_init_summary=0.5),
        Stubs(top_k=2, warning_tokens=7)),
}


class _Logged(_Trajectory):
    """The twin's trajectory, remembering which slots each prompt step selected."""

    def __init__(self, *args: object) -> None:
        super().__init__(*args)  # type: ignore[arg-type]
        self.log: dict[int, set[int]] = {}

    def select_items(self, pool: list[str], topic_now: int,
                     priority: dict[str, float]) -> set[str]:
        chosen = super().select_items(pool, topic_now, priority)
        self.log[self.step] = {self.slot[v] for v in chosen}
        return chosen


@pytest.mark.parametrize("world_name", list(WORLDS))
@pytest.mark.parametrize("knobs_name", list(KNOBS))
def test_floor_selects_and_scores_like_the_twin(world_name: str, knobs_name: str) -> None:
    spec = WORLDS[world_name]
    params, stubs = KNOBS[knobs_name]
    world = generate(spec, seed=7, n=3 if world_name == "~130 nodes" else 12)
    got = run_floor(world, floor_knobs(world, params, stubs), record=True)
    pol = get_policy("wmt")
    suppressed = 0
    for i in range(world.n):
        twin = _Logged(world, i, pol, params, stubs)
        suppressed += twin.play()[C.suppressed]
        nodes = list(twin.tree.nodes.values())
        n_steps = int(twin.step)
        assert got["steps"][i] == n_steps
        assert got["n_slots"][i] == len(nodes)
        for step in range(n_steps):
            floor_sel = set(np.flatnonzero(got["log"][i, step]).tolist())
            assert floor_sel == twin.log.get(step, set()), (world_name, i, step)
        assert got["selected"][i] == sum(len(s) for s in twin.log.values())
        for slot, node in enumerate(nodes):
            assert got["u"][i, slot] == node.u, (world_name, i, node.id)  # to the bit
            assert got["m"][i, slot] == node.m, (world_name, i, node.id)
            assert STATE_NAMES[got["state"][i, slot]] == node.state, (world_name, i, node.id)
    if knobs_name != "defaults":
        assert suppressed > 0  # the tight knobs do exercise Eq. 7 (twin's count)


def test_without_record_the_floor_does_the_same_work() -> None:
    world = generate(WorldSpec(), seed=3, n=20)
    a = run_floor(world, record=True)
    b = run_floor(world)
    for key in ("steps", "selected", "u", "m", "state", "n_slots"):
        assert np.array_equal(a[key], b[key]), key
    assert b["log"].shape == (1, 1, 1)


def test_profiling_masks_change_nothing() -> None:
    """`benchmarks.phases` times a phase by running it twice: each must be idempotent."""
    from benchmarks import floor as F

    world = generate(WORLDS["poisoned, superseded, revised"], seed=5, n=10)
    params, stubs = KNOBS["tight budget, top-k, fast decay"]
    base = run_floor(world, F.floor_knobs(world, params, stubs))
    for mask in (F.PH_POOL, F.PH_PRIORITIES, F.PH_SELECT, F.PH_DRAWS, F.PH_SUPPRESS, 31):
        got = run_floor(world, F.floor_knobs(world, params, stubs, twice=mask))
        for key in ("steps", "selected", "u", "m", "state"):
            assert np.array_equal(got[key], base[key]), (mask, key)
