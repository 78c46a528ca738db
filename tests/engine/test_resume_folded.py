"""Resumed subtasks under fold-without-reopen (`WorldSpec.resume_folded`, docs/world.md).

The hand-derived world: two subtasks of two actions each, and the agent always returns to
the first after the second (``p_resume = 1``) for two more actions. Its script and its
slots (creation order) are fixed:

    slot 0 root, 1 t1, 2 a, 3 a, [t1 completes: fold, 4 = t1's summary],
    5 t2, 6 a, 7 a, [t2 completes: 8 = t2's summary], reopen t1, 9 r, 10 r, [re-fold], final

Under ``tree_summary`` (fold, no reopen, everything selected) the candidate pool at the
prompt after the first resumed action (slot 9) is, by docs/model.md §4 step 2:

* ``hidden`` (the old rule): t1 stays folded and hides all its children, the new action
  too: {4, 8} (the two summaries);
* ``new`` (the default): t1's fold covers what it folded (slots 2, 3), not slot 9:
  {4, 8, 9};
* ``unfold``: the fold is undone (t1 active again): {2, 3, 4, 8, 9}.

Folded t2 (slot 5) and its actions (6, 7) are hidden in every case; t1 is on the active
path, never a candidate.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import counters

from wmtsim.core.params import Params
from wmtsim.core.stubs import Stubs
from wmtsim.core.validation import KnobError
from wmtsim.core.world_spec import OP_ACTION, OP_REOPEN, WorldSpec
from wmtsim.engine.simulation import simulate
from wmtsim.engine.world import generate
from wmtsim.twins.simulator import simulate_reference

HAND = dict(n_subtasks=(2, 2), n_actions=(2, 2), p_resume=1.0, resume_actions=(2, 2),
            p_distractor=0.0)
EXPECTED = {"hidden": {4, 8}, "new": {4, 8, 9}, "unfold": {2, 3, 4, 8, 9}}


def _pool_after_first_resumed_action(rule: str, policy: str) -> set[int]:
    world = generate(WorldSpec(**HAND, resume_folded=rule), seed=3, n=1)
    ops = world.op[0, : int(world.n_events[0])].tolist()
    assert ops.count(OP_REOPEN) == 1
    # Prompt steps are the ACTION / COMPLETE / FINAL events; the first resumed action's
    # prompt is the 5th action + 2 completions before it: step index 6.
    first_resumed = ops.index(OP_REOPEN) + 1
    assert ops[first_resumed] == OP_ACTION
    step = sum(1 for o in ops[:first_resumed] if o in (2, 4, 6))
    res = simulate(world, policy, record_steps=1)
    s = res.steps
    rows = s.filter((s["step"] == step) & s["eligible"])
    return set(rows["slot"].to_list())


@pytest.mark.parametrize("rule", list(EXPECTED))
def test_hand_derived_pool_of_a_resumed_folded_subtask(rule: str) -> None:
    assert _pool_after_first_resumed_action(rule, "tree_summary") == EXPECTED[rule]


@pytest.mark.parametrize("rule", list(EXPECTED))
def test_configurations_that_reopen_do_not_read_the_rule(rule: str) -> None:
    """Full WMT reopens a resumed folded subtask (§3), whatever the world's rule says."""
    assert _pool_after_first_resumed_action(rule, "wmt") >= {2, 3, 9}
    spec = WorldSpec(n_subtasks=(2, 4), n_actions=(1, 4), p_resume=0.8)
    base = counters(simulate(spec, "wmt", n=60, seed=5))
    for other in ("hidden", "unfold"):
        moved = simulate(WorldSpec.from_dict({**spec.to_dict(), "resume_folded": other}),
                         "wmt", n=60, seed=5)
        np.testing.assert_array_equal(counters(moved), base)


def test_new_actions_reach_the_pool_only_under_the_new_default() -> None:
    """The issue's finding (gaia_like: none of 558 resumed actions ever in the pool) no
    longer holds under the default; it still holds under ``hidden``."""
    spec = dict(n_subtasks=(2, 4), n_actions=(2, 5), p_resume=0.9, resume_actions=(1, 3))
    for rule, reach in (("new", True), ("hidden", False)):
        world = generate(WorldSpec(**spec, resume_folded=rule), seed=1, n=40)
        res = simulate(world, "tree_selection_summary", record_steps=40)
        s = res.steps
        resumed = set()
        for i in range(world.n):
            ops = world.op[i, : int(world.n_events[i])]
            args = world.arg[i, : int(world.n_events[i])]
            inside = False
            for o, a in zip(ops.tolist(), args.tolist(), strict=True):
                inside = inside or o == OP_REOPEN
                if o == 4:  # the resumed subtask completes (or a first visit ends)
                    inside = False
                if inside and o == OP_ACTION:
                    resumed.add((i, a))
        assert resumed
        hit = s.filter(s["eligible"]).select("trajectory", "world_id").unique()
        reached = {(int(t), int(w)) for t, w in hit.iter_rows()} & resumed
        assert bool(reached) is reach, rule
        if reach:
            assert len(reached) == len(resumed)  # each is a candidate when it is made


@pytest.mark.parametrize("rule", list(EXPECTED))
def test_engine_equals_twin_under_each_rule(rule: str) -> None:
    spec = WorldSpec(n_subtasks=(2, 4), max_depth=2, p_nested=0.5, n_actions=(1, 4),
                     p_resume=0.9, resume_actions=(1, 3), resume_folded=rule)
    world = generate(spec, seed=7, n=25)
    stubs = Stubs(p_leak=0.7)
    for policy in ("tree_summary", "tree_selection_summary", "a1_unweighted", "wmt"):
        res = simulate(world, policy, stubs=stubs)
        counts, trees = simulate_reference(world, policy, Params(), stubs)
        np.testing.assert_array_equal(counters(res), counts, err_msg=f"{rule} {policy}")
        for i, tree in enumerate(trees):
            for v, node in enumerate(tree.nodes.values()):
                assert node.state == ("active", "completed", "folded", "obsolete")[
                    int(res.forest.state[i, v])]
                assert node.folded_at == int(res.forest.folded_at[i, v])


def test_the_rule_is_a_checked_world_knob() -> None:
    with pytest.raises(KnobError, match="resume_folded"):
        WorldSpec(resume_folded="sometimes")
    assert WorldSpec().resume_folded == "new"
