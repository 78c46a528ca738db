"""Success as the paper counts it, one final-answer rule for every policy, and BR that
counts what persuades (issue 19). Each test would have caught a row of the issue's table:
TSR pinned at 0 for Linear whatever p_misled, a bare subtask node counted as a result,
the final answer's rule hidden, BR blind to the poisoned observation just made."""

from __future__ import annotations

import numpy as np
import pytest

from wmtsim.core.policies import FAM_WMT, POLICIES
from wmtsim.core.stubs import Stubs
from wmtsim.core.world_spec import PoisonSpec, WorldSpec
from wmtsim.engine.simulation import simulate
from wmtsim.engine.world import generate
from wmtsim.studies.scenarios.scenario import load_scenario

N = 200


def _pooled(policy: str, spec: WorldSpec, stubs: Stubs, metric: str = "tsr") -> float:
    t = simulate(generate(spec, seed=3, n=N), policy, stubs=stubs).trajectories
    if metric == "br":
        return float(t["n_contaminated_steps"].sum() / t["n_prompt_steps"].sum())
    return float(t[metric].mean())


def test_a_compromised_step_is_not_a_failed_task() -> None:
    """Linear's TSR was 0.000 even at p_misled = 0 (the final answer had to be
    uncompromised); now p_misled = 0 means poison never changes an answer."""
    sc = load_scenario("paper_poisoning")
    clean = sc.with_overrides({"stubs.p_persuade": 0.0, "stubs.p_persuade_vs_evidence": 0.0})
    sway = sc.with_overrides({"stubs.p_misled": 0.0, "stubs.p_persuade": 1.0})
    for p in ("linear", "wmt"):
        a = simulate(generate(clean.world, seed=0, n=N), p, params=clean.params,
                     stubs=clean.stubs).trajectories
        b = simulate(generate(sway.world, seed=0, n=N), p, params=sway.params,
                     stubs=sway.stubs).trajectories
        assert b["n_compromised_steps"].sum() > 0
        # Compromised but never misled: every answer as in the poison-free world.
        np.testing.assert_array_equal(a["tsr"].to_numpy(), b["tsr"].to_numpy())
        assert (b["tsr"] == b["final_correct"]).all()


def test_no_result_memory_no_result_for_any_policy() -> None:
    """No evidence anywhere and nothing folded: no subtask result can be in context, so
    with p_recover = 0 no task succeeds, for every policy (a bare subtask node selected by
    the field's policies used to count as the result)."""
    spec = WorldSpec(n_subtasks=(2, 3), n_actions=(1, 3), p_evidence=0.0, p_resume=0.0,
                     p_recover=0.0)
    st = Stubs(p_guess=1.0, p_use_max=1.0, dilution_tokens=1e9)
    # (Policies that write summaries are left out: a summary is a result.)
    plain = [n for n, p in POLICIES.items() if p.family == FAM_WMT and not p.fold]
    plain += ["sliding_window", "token_buffer", "traceretain_z", "mem0", "memorybank"]
    for name in plain:
        assert _pooled(name, spec, st) == 0.0, name
    # The same world with every missing result recovered: every task succeeds.
    spec1 = WorldSpec(n_subtasks=(2, 3), n_actions=(1, 3), p_evidence=0.0, p_resume=0.0,
                      p_recover=1.0)
    for name in POLICIES:
        assert _pooled(name, spec1, st) == 1.0, name


@pytest.mark.parametrize("policy", ["linear", "wmt", "tree_summary", "mem0"])
def test_final_share_is_one_rule_for_every_policy(policy: str) -> None:
    st = Stubs(p_guess=0.5, p_use_max=1.0, dilution_tokens=1e9)
    tsr = [_pooled(policy, WorldSpec(n_subtasks=(3, 4), final_share=f, p_recover=0.2), st)
           for f in (0.0, 0.5, 1.0)]
    assert tsr[0] == 1.0  # needs nothing: used and not misled is enough here
    assert tsr[0] >= tsr[1] >= tsr[2]


def test_br_counts_the_poisoned_observation() -> None:
    """No Memory selects nothing, yet a poisoned observation is in its prompt and can
    persuade: its prompt counts as contaminated, unless the reasoner does not read it."""
    spec = WorldSpec(n_subtasks=(2, 3), n_actions=(2, 4),
                     poison=(PoisonSpec("plausible", count=2),))
    on = _pooled("no_memory", spec, Stubs(), "br")
    off = _pooled("no_memory", spec, Stubs(obs_in_context=False), "br")
    assert on > 0.0 and off == 0.0
    # A policy that selects it already counted it; the observation adds to the others.
    assert _pooled("wmt", spec, Stubs(), "br") >= _pooled("wmt", spec,
                                                         Stubs(obs_in_context=False), "br")
