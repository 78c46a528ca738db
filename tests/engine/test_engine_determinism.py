"""Same inputs, same bits: thread count, chunking and repeated runs (docs/world.md,
"Reproducibility and fairness")."""

from __future__ import annotations

from dataclasses import fields

import numpy as np
import polars as pl
import pytest
from conftest import counters

from wmtsim.core.metrics import COUNTERS
from wmtsim.core.params import Params
from wmtsim.core.stubs import Stubs
from wmtsim.core.world_spec import PoisonSpec, WorldSpec
from wmtsim.engine.forest import Forest
from wmtsim.engine.simulation import SimResult, simulate

SPEC = WorldSpec(n_subtasks=(2, 4), max_depth=2, p_nested=0.5, n_actions=(1, 4),
                 p_resume=0.5, n_globals=2,
                 poison=(PoisonSpec("plausible", p_supersede=0.5), PoisonSpec("failed"),
                         PoisonSpec("global"), PoisonSpec("summary", apparent_relevance=0.3)))
PARAMS = Params(budget=200, tau_obs=0.3)
STUBS = Stubs(top_k=4, p_guess=0.2)
N = 40
POLICIES = ("wmt", "a3_no_semantic", "linear")


def run(policy: str, n: int = N, seed: int = 7, start: int = 0,
        threads: int | None = None, record: int = 0) -> SimResult:
    return simulate(SPEC, policy, n=n, seed=seed, start=start, params=PARAMS, stubs=STUBS,
                    threads=threads, record_steps=record)


def assert_forests_equal(a: Forest, b: Forest, offset: int = 0) -> None:
    """Trajectory ``offset + i`` of ``a`` equals trajectory ``i`` of ``b`` (all slots in
    use; the two may be allocated with different capacities)."""
    for i in range(b.n):
        k = int(b.n_slots[i])
        assert int(a.n_slots[offset + i]) == k
        assert int(a.active[offset + i]) == int(b.active[i])
        for f in fields(Forest):
            if f.name in ("n_slots", "active"):
                continue
            x, y = getattr(a, f.name)[offset + i], getattr(b, f.name)[i]
            if f.name == "slot_of":
                m = min(x.shape[0], y.shape[0])
                np.testing.assert_array_equal(x[:m], y[:m], err_msg=f.name)
                assert (x[m:] == -1).all() and (y[m:] == -1).all()
            else:
                np.testing.assert_array_equal(x[:k], y[:k], err_msg=f.name)


@pytest.mark.parametrize("policy", POLICIES)
def test_one_thread_equals_two(policy: str) -> None:
    a = run(policy, threads=1, record=3)
    b = run(policy, threads=2, record=3)
    np.testing.assert_array_equal(counters(a), counters(b))
    assert_forests_equal(a.forest, b.forest)
    assert a.steps.equals(b.steps)


@pytest.mark.parametrize("policy", POLICIES)
def test_chunks_equal_one_call(policy: str) -> None:
    whole = run(policy)
    parts = [run(policy, n=n, start=start) for start, n in ((0, 13), (13, 1), (14, 26))]
    np.testing.assert_array_equal(counters(whole), np.vstack([counters(p) for p in parts]))
    assert whole.trajectories["trajectory"].to_list() == list(range(N))
    assert pl.concat([p.trajectories["trajectory"] for p in parts]).to_list() == list(range(N))
    for start, part in zip((0, 13, 14), parts, strict=True):
        assert_forests_equal(whole.forest, part.forest, offset=start)


def test_same_seed_twice_is_identical_and_another_seed_differs() -> None:
    a, b = run("wmt", record=2), run("wmt", record=2)
    np.testing.assert_array_equal(counters(a), counters(b))
    assert_forests_equal(a.forest, b.forest)
    assert a.steps.equals(b.steps)
    c = run("wmt", seed=8)
    assert not np.array_equal(counters(a), counters(c))


def test_policies_share_the_trajectories() -> None:
    """Common random numbers: the world (and so every node's static data) does not
    depend on the policy."""
    a, b = run("linear"), run("tree_selection")
    nodes = ("nodes", "p_i", "critical_steps", "prompt_steps")
    ca, cb = counters(a), counters(b)
    for name in nodes:
        k = COUNTERS.index(name)
        np.testing.assert_array_equal(ca[:, k], cb[:, k], err_msg=name)
    for i in range(N):
        k = int(a.forest.n_slots[i])
        np.testing.assert_array_equal(a.forest.wid[i, :k], b.forest.wid[i, :k])
        np.testing.assert_array_equal(a.forest.tokens[i, :k], b.forest.tokens[i, :k])
