"""Conversation mode (issue 19 item 6, issue 22 item 1): several tasks per trajectory, a
finished task's summary promoted to a global memory (docs/model.md §3, docs/world.md).

On the shipped `conversation` world, with common random numbers (every arm plays the same
trajectories), promotion and ρ_G each move a metric beyond noise: the paired mean
difference's 95% interval excludes 0. The default one-task world is untouched."""

from __future__ import annotations

from dataclasses import replace
from functools import cache

import numpy as np
import pytest

from wmtsim.core.codes import GLOBAL, OBSOLETE, ROOT
from wmtsim.core.knob_readers import unread
from wmtsim.core.metrics import COUNTERS, C
from wmtsim.core.world_spec import OP_PROMOTE, OP_ROOT, WorldSpec
from wmtsim.engine.simulation import SimResult, simulate
from wmtsim.engine.world import generate
from wmtsim.studies.scenarios.scenario import load_scenario

N = 400


@cache
def _world():  # type: ignore[no-untyped-def]
    sc = load_scenario("conversation")
    return generate(sc.world, seed=sc.seed, n=N)


@cache
def _run(policy: str, branch_retrieval: str | None = None, **params: object) -> SimResult:
    sc = load_scenario("conversation")
    stubs = sc.stubs if branch_retrieval is None else replace(
        sc.stubs, branch_retrieval=branch_retrieval)
    return simulate(_world(), policy, params=sc.params.with_(**params), stubs=stubs,
                    baselines=sc.baselines)


def _counts(res: SimResult) -> np.ndarray:
    return res.trajectories.select([f"n_{k}" for k in COUNTERS]).to_numpy()


def _metric(res: SimResult, name: str) -> np.ndarray:
    c = _counts(res)
    if name == "tsr":  # successful tasks / tasks
        return c[:, C.success] / c[:, C.tasks]
    if name == "br":
        return c[:, C.contaminated_steps] / c[:, C.prompt_steps]
    raise ValueError(name)


def _paired(a: SimResult, b: SimResult, name: str) -> tuple[float, float]:
    """Mean of a − b over the same trajectories and its 95% half-width."""
    d = _metric(a, name) - _metric(b, name)
    return float(d.mean()), float(1.96 * d.std(ddof=1) / np.sqrt(d.size))


def test_promotion_helps_later_tasks_beyond_noise() -> None:
    mean, half = _paired(_run("wmt"), _run("wmt", promote_summaries=False), "tsr")
    assert mean - half > 0, (mean, half)  # measured: +0.037 ± 0.007


def test_rho_g_moves_tsr_and_the_laundered_poison_beyond_noise() -> None:
    # Full WMT: a slower decay keeps an earlier task's promoted result selectable.
    mean, half = _paired(_run("wmt", rho_g=1.0), _run("wmt", rho_g=0.5), "tsr")
    assert mean - half > 0, (mean, half)  # measured: +0.023 ± 0.006
    # A3 retrieves every eligible branch and global whole (`Stubs.branch_retrieval` =
    # "whole", the paper's whole-branch retrieval): nothing ranks its globals out, so ρ_G
    # cannot decide what it shows. Bounded by B (the previous rule "fit"), A3 ranks by
    # score alone and a slower decay keeps a laundered summary in context.
    mean, half = _paired(_run("a3_no_semantic", rho_g=1.0), _run("a3_no_semantic", rho_g=0.5),
                         "br")
    assert mean == 0.0 and half == 0.0, (mean, half)
    mean, half = _paired(_run("a3_no_semantic", rho_g=1.0, branch_retrieval="fit"),
                         _run("a3_no_semantic", rho_g=0.5, branch_retrieval="fit"), "br")
    assert mean - half > 0, (mean, half)


def test_a_poison_laundered_into_a_promoted_summary_persists() -> None:
    w, f = _world(), _run("wmt").forest
    used = np.arange(f.kind.shape[1])[None, :] < f.n_slots[:, None]
    injected = np.take_along_axis(w.poisoned, np.maximum(f.wid, 0), axis=1)
    promoted = used & (f.kind == GLOBAL) & (f.wid >= 0) & ~injected
    laundered = promoted & f.poisoned
    assert laundered.any()
    assert not (f.state[laundered] == OBSOLETE).any()  # a global memory is never retired
    # Without promotion nothing of an earlier task is a memory any more.
    off = _run("wmt", promote_summaries=False).forest
    assert not ((off.kind == GLOBAL) & (off.wid >= 0)).any()


def test_tasks_are_counted_per_task_and_boundaries_are_policy_rules() -> None:
    w = _world()
    tasks = w.spec.tasks
    assert ((w.op == OP_PROMOTE).sum(axis=1) == tasks - 1).all()
    assert ((w.op == OP_ROOT).sum(axis=1) == tasks - 1).all()
    for policy in ("wmt", "linear", "memorybank"):
        res = _run(policy)
        c = _counts(res)
        assert (c[:, C.tasks] == tasks).all()
        assert ((c[:, C.success] >= 0) & (c[:, C.success] <= tasks)).all()
        assert np.array_equal(res.trajectories["tsr"].to_numpy(), _metric(res, "tsr"))
        f = res.forest
        used = np.arange(f.kind.shape[1])[None, :] < f.n_slots[:, None]
        roots = (f.kind == ROOT) & used
        assert (roots.sum(axis=1) == tasks).all()
        retired = (f.state == OBSOLETE) & roots
        if policy == "memorybank":
            assert not retired.any()  # a field policy's store carries over as it is
        else:
            assert (retired.sum(axis=1) == tasks - 1).all()  # every finished tree retired


@pytest.mark.parametrize("related", [0.0, 0.7])
def test_one_task_worlds_are_unchanged(related: float) -> None:
    base = WorldSpec(n_subtasks=(2, 4), n_globals=2, p_resume=0.5)
    a = generate(base, seed=3, n=40)
    b = generate(replace(base, p_related=related), seed=3, n=40)
    for name in ("parent", "kind", "tokens", "topic", "rel", "evidence", "op", "arg"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert not (a.op == OP_PROMOTE).any()


def test_rho_g_and_promotion_count_as_read_in_a_conversation() -> None:
    conv = load_scenario("conversation").world
    one = load_scenario("paper_poisoning").world
    keys = ["params.rho_g", "params.promote_summaries"]
    assert unread(keys, ["wmt"], [conv]) == {}
    assert set(unread(keys, ["wmt"], [one])) == set(keys)
    assert set(unread(["params.promote_summaries"], ["linear"], [conv])) == {
        "params.promote_summaries"}  # Linear has no summariser
