"""The engine's mechanisms on purpose-built worlds (docs/model.md §2–5, §7; docs/world.md)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from wmtsim.core.codes import ACTION, FAILURE, SUCCESS, TASK
from wmtsim.core.params import Params
from wmtsim.core.policies import POLICIES
from wmtsim.core.stubs import Stubs
from wmtsim.core.world_spec import PoisonSpec, WorldSpec
from wmtsim.engine.simulation import SimResult, simulate
from wmtsim.engine.world import generate
from wmtsim.twins.simulator import simulate_reference

POISONED = WorldSpec(
    n_subtasks=(2, 3), n_actions=(2, 4), n_globals=1,
    poison=(PoisonSpec("plausible"), PoisonSpec("failed"), PoisonSpec("global"),
            PoisonSpec("summary", apparent_relevance=0.3)))
CLEAN = WorldSpec(n_subtasks=(3, 3), n_actions=(2, 2), p_success=1.0, p_resume=0.0)


def step_table(res: SimResult, i: int, step: int) -> pl.DataFrame:
    """The step record of trajectory ``i`` at prompt step ``step``, one row per slot."""
    return res.steps.filter((pl.col("trajectory") == i) & (pl.col("step") == step))


def last_step(res: SimResult, i: int) -> int:
    return int(res.steps.filter(pl.col("trajectory") == i)["step"].to_numpy().max())


def test_linear_keeps_everything_ip_1_ccr_1() -> None:
    res = simulate(POISONED, "linear", n=40, seed=1)
    t = res.trajectories
    assert (t["n_p_i"] > 0).all()
    assert (t["ip"] == 1.0).all()
    assert (t["ccr"] == 1.0).all()  # the whole candidate pool, every step
    assert (t["n_selector_calls"] == 0).all() and (t["n_folds"] == 0).all()


def test_no_memory_has_no_context() -> None:
    t = simulate(POISONED, "no_memory", n=20, seed=1).trajectories
    for name in ("n_h_p", "n_h_c", "n_ccr_steps", "n_p_r"):
        assert (t[name] == 0).all(), name
    assert (t["ip"] == 0.0).all()
    # Its prompts still hold the observation just made: a poisoned one counts for BR
    # (docs/model.md §5), and nothing else does.
    off = simulate(POISONED, "no_memory", n=20, seed=1,
                   stubs=Stubs(obs_in_context=False)).trajectories
    assert (off["n_contaminated_steps"] == 0).all()
    assert (t["n_contaminated_steps"] > 0).any()


def test_wmt_folds_finished_branches_into_summaries() -> None:
    """After a subtask's COMPLETE step its raw nodes leave the pool; its summary enters."""
    n = 10
    res = simulate(CLEAN, "wmt", n=n, seed=2, record_steps=n)
    f = res.forest
    folds_seen = 0
    for i in range(n):
        last = last_step(res, i)
        for k in range(last):
            now, nxt = step_table(res, i, k), step_table(res, i, k + 1)
            if now["event"][0] != "complete":
                continue
            states = nxt["state"].to_list()
            newly = [v for v in range(now.height)
                     if f.kind[i, v] == TASK and states[v] == "folded"
                     and now["state"][v] != "folded"]
            assert len(newly) == 1  # the subtask that just completed
            s = newly[0]
            actions = [v for v in range(now.height)
                       if f.parent[i, v] == s and f.kind[i, v] == ACTION]
            assert actions and all(now["eligible"][v] for v in actions)  # before the fold
            assert not any(nxt["eligible"][v] for v in actions)  # hidden after it
            z = int(f.summary[i, s])
            assert z >= now.height  # created by the fold
            assert nxt["kind"][z] == "summary" and nxt["eligible"][z]
            assert not nxt["eligible"][s]  # a folded task stands for itself via its summary
            folds_seen += 1
    assert folds_seen >= 2 * n


def test_wmt_suppresses_low_priority_branches() -> None:
    params = Params(tau_obs=0.9)  # every finished branch's U_b falls below τ_obs
    res = simulate(CLEAN, "wmt", n=10, seed=3, params=params, record_steps=10)
    t = res.trajectories
    assert (t["n_suppressed"] > 0).all()
    f = res.forest
    obsolete_tasks = (f.kind == TASK) & (f.state == 3)
    assert obsolete_tasks.sum() == t["n_suppressed"].sum()
    # Once suppressed (Eq. 7 runs at the end of a step), nothing inside the branch is a
    # candidate at any later step.
    hidden_steps = 0
    for i in range(10):
        last = last_step(res, i)
        for k in range(1, last + 1):
            before, now = step_table(res, i, k - 1), step_table(res, i, k)
            obsolete = [st == "obsolete" for st in before["state"]]
            for v in range(now.height):
                a = v
                while a >= 0 and not (a < len(obsolete) and obsolete[a]):
                    a = int(f.parent[i, a])
                if a >= 0:
                    assert not now["eligible"][v]
                    hidden_steps += 1
    assert hidden_steps > 0
    # Without lifecycle control (A2) the same threshold suppresses nothing.
    a2 = simulate(CLEAN, "a2_no_controller", n=10, seed=3, params=params)
    assert (a2.trajectories["n_suppressed"] == 0).all()


def test_a2_keeps_poison_eligible_wmt_supersedes_it() -> None:
    spec = WorldSpec(n_subtasks=(2, 3), n_actions=(3, 4),
                     poison=(PoisonSpec("plausible", p_supersede=1.0, position=0),
                             PoisonSpec("failed", p_supersede=1.0, position=0)))
    a2 = simulate(spec, "a2_no_controller", n=30, seed=4).trajectories
    assert (a2["n_p_i"] == 2).all()
    assert (a2["ip"] == 1.0).all()  # no controller: supersession events are ignored
    assert (a2["n_superseded"] == 0).all()
    wmt = simulate(spec, "wmt", n=30, seed=4).trajectories
    assert (wmt["n_superseded"] == 2).all()
    assert (wmt["ip"] == 0.0).all()


@pytest.mark.parametrize("policy", ["tree_selection", "wmt"])
def test_poison_starts_at_its_event_score(policy: str) -> None:
    """Eq. 2: failed poison starts at u_failure, plausible poison at u_success (A.4)."""
    params = Params(u_success=0.7, u_failure=0.2)
    spec = WorldSpec(n_subtasks=(2, 2), n_actions=(1, 3),
                     poison=(PoisonSpec("plausible"), PoisonSpec("failed")))
    n = 10
    res = simulate(spec, policy, n=n, seed=5, params=params, record_steps=n)
    f = res.forest
    seen = {SUCCESS: 0, FAILURE: 0}
    for i in range(n):
        for v in range(int(f.n_slots[i])):
            if not (f.poisoned[i, v] and f.kind[i, v] == ACTION):
                continue
            row = step_table(res, i, int(f.created[i, v])).row(v, named=True)
            start = params.u_success if f.outcome[i, v] == SUCCESS else params.u_failure
            if policy == "wmt" and row["eligible"] and not row["selected"]:
                # Missed at its first prompt: Eqs. 3–5 decay it once (m = 1).
                assert (row["u"], row["m"]) == (start * params.rho, 1)
            else:
                assert (row["u"], row["m"]) == (start, 0)
            seen[int(f.outcome[i, v])] += 1
    assert seen[SUCCESS] == n and seen[FAILURE] == n


def test_global_poison_and_riders_are_injected_as_specified() -> None:
    res = simulate(POISONED, "tree_selection_summary", n=20, seed=6)
    f = res.forest
    assert ((f.kind == 3) & f.poisoned).sum(axis=1).tolist() == [1] * 20
    assert (f.rider.sum(axis=1) == 1).all()
    assert (res.trajectories["n_p_i"] == 4).all()


@pytest.mark.parametrize(("make", "field"), [
    (lambda: Params(rho=0.0), "Params.rho"),
    (lambda: Params(budget=0), "Params.budget"),
    (lambda: Params(u_success=0.2, u_failure=0.3), "u_success"),
    (lambda: WorldSpec(p_success=1.5), "WorldSpec.p_success"),
    (lambda: WorldSpec(n_actions=(3, 1)), "WorldSpec.n_actions"),
    (lambda: WorldSpec(max_depth=0), "WorldSpec.max_depth"),
    (lambda: WorldSpec(poison=("failed",)),  # type: ignore[arg-type]
     "WorldSpec.poison[0]"),
    (lambda: PoisonSpec("sneaky"), "PoisonSpec.kind"),
    (lambda: PoisonSpec("failed", p_supersede=2.0), "PoisonSpec.p_supersede"),
    (lambda: PoisonSpec("failed", count=-1), "PoisonSpec.count"),
    (lambda: Stubs(p_leak=-0.1), "Stubs.p_leak"),
    (lambda: Stubs(top_k=-1), "Stubs.top_k"),
    (lambda: Stubs(dilution_tokens=0.0), "Stubs.dilution_tokens"),
    (lambda: simulate(CLEAN, "wmt", n=2, record_steps=-1), "record_steps"),
    (lambda: simulate(CLEAN, "wmt", n=2, threads=0), "threads"),
    (lambda: simulate(CLEAN, "wmt", n=0), "n"),
])
def test_bad_values_raise_naming_the_field(make: object, field: str) -> None:
    with pytest.raises(ValueError, match=field.replace("[", r"\[").replace("]", r"\]")):
        make()  # type: ignore[operator]


def test_unknown_policy_lists_the_allowed_ones() -> None:
    for call in (lambda: simulate(CLEAN, "full_wmt", n=2),
                 lambda: simulate_reference(generate(CLEAN, n=1), "full_wmt", Params(),
                                            Stubs())):
        with pytest.raises(ValueError, match="full_wmt") as err:
            call()
        assert all(name in str(err.value) for name in POLICIES)


def test_selection_respects_budget_and_top_k() -> None:
    stubs = Stubs(top_k=2)
    res = simulate(POISONED, "tree_selection", n=10, seed=7, params=Params(budget=120),
                   stubs=stubs, record_steps=10)
    f = res.forest
    per_step = res.steps.filter(pl.col("selected")).group_by(["trajectory", "step"]).agg(
        pl.len().alias("k"), pl.col("slot"))
    assert int(per_step["k"].to_numpy().max()) <= 2
    for row in per_step.iter_rows(named=True):
        i = row["trajectory"]
        cost = sum(int(f.tokens[i, v]) + stubs.struct_tokens for v in row["slot"])
        assert cost <= 120
    assert np.isfinite(res.trajectories["ccr"].to_numpy()).all()


@pytest.mark.parametrize("policy", ["wmt", "a3_no_semantic", "tree_summary",
                                    "traceretain_cluster", "memgpt"])
def test_step_records_reproduce_the_selection_counters(policy: str) -> None:
    """Counting poisoned and clean selections from the per-step records gives the engine's
    H_p and H_c (Eq. 9) exactly, even when a reopened branch is re-folded and its summary's
    contamination changes (the records keep each step's poisoned flag)."""
    spec = WorldSpec(n_subtasks=(3, 4), n_actions=(2, 4), p_resume=0.9,
                     poison=(PoisonSpec("summary", count=2), PoisonSpec("plausible")))
    n = 40
    res = simulate(spec, policy, n=n, seed=5, record_steps=n,
                   stubs=Stubs(p_leak=0.5, p_leak_rider=0.5))
    per = (res.steps.group_by("trajectory")
           .agg((pl.col("selected") & pl.col("poisoned")).sum().alias("h_p"),
                (pl.col("selected") & ~pl.col("poisoned")).sum().alias("h_c"))
           .sort("trajectory"))
    t = res.trajectories.sort("trajectory")
    assert per["h_p"].to_list() == t["n_h_p"].cast(pl.Int64).to_list()
    assert per["h_c"].to_list() == t["n_h_c"].cast(pl.Int64).to_list()


def test_too_many_threads_is_a_clear_error() -> None:
    from numba import config

    with pytest.raises(ValueError, match=r"simulate\.threads=.*allowed: an integer in \[1, "):
        simulate(WorldSpec(), "wmt", n=2, threads=int(config.NUMBA_NUM_THREADS) + 1)
