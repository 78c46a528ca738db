"""A3's whole-branch retrieval of folded branches (`Stubs.branch_folded`): hand-derived pools
on one small tree, and IP counting exactly what that retrieval reaches (docs/world.md,
docs/model_decisions.md)."""

from __future__ import annotations

import numpy as np
import pytest

from wmtsim.core.codes import (
    ACTION,
    ACTIVE,
    COMPLETED,
    FOLDED,
    NO_PARENT,
    OBSOLETE,
    ROOT,
    SUMMARY,
    TASK,
)
from wmtsim.core.lifecycle import _candidate_pool_into, _lifecycle_scratch, _replay_folded
from wmtsim.core.params import Params
from wmtsim.core.stubs import Stubs
from wmtsim.core.world_spec import PoisonSpec, WorldSpec
from wmtsim.engine.simulation import simulate
from wmtsim.engine.world import generate

# slot: (parent, kind, state)
#   0 root                        on the active path
#   1 task A          folded
#   2   action                    hidden by A's fold
#   3   action        obsolete    (superseded poison, say)
#   4   task A.1      folded      nested fold
#   5     action
#   6     summary of A.1
#   7   summary of A
#   8 task B          active      on the active path
#   9   action                    a candidate in every pool
TREE = [(NO_PARENT, ROOT, ACTIVE), (0, TASK, FOLDED), (1, ACTION, COMPLETED),
        (1, ACTION, OBSOLETE), (1, TASK, FOLDED), (4, ACTION, COMPLETED),
        (4, SUMMARY, COMPLETED), (1, SUMMARY, COMPLETED), (0, TASK, ACTIVE),
        (8, ACTION, COMPLETED)]
ON_PATH = {0, 8}


def pool(rule: str) -> set[int]:
    parent = np.array([t[0] for t in TREE], np.int64)
    kind = np.array([t[1] for t in TREE], np.int8)
    state = np.array([t[2] for t in TREE], np.int8)
    n = len(TREE)
    on_path = np.array([v in ON_PATH for v in range(n)])
    eligible = np.zeros(n, np.bool_)
    scratch = _lifecycle_scratch(n)
    _candidate_pool_into(parent, kind, state, on_path, n, eligible, scratch)
    if rule != "summary":
        _replay_folded(parent, kind, state, on_path, n, eligible, scratch, rule == "both")
    return {int(v) for v in np.flatnonzero(eligible)}


def test_pools_by_hand() -> None:
    # WMT's pool: A is represented by its summary (7); everything A's fold hides is out.
    assert pool("summary") == {7, 9}
    # Whole-branch retrieval replays A as its nodes: the folded tasks themselves, their
    # actions, the nested fold's contents; no fold summary; the obsolete action stays out.
    assert pool("nodes") == {1, 2, 4, 5, 9}
    # ... and with "both", the summaries too (the literal subtree).
    assert pool("both") == {1, 2, 4, 5, 6, 7, 9}


# A world where poison sits in subtasks that finish (and fold) and is never detected: A3's
# IP under whole-branch retrieval counts it; under the previous rule its fold hides it.
WORLD = WorldSpec(n_subtasks=(3, 3), n_actions=(2, 2), p_success=1.0,
                  poison=(PoisonSpec("plausible", subtask=0, position=0),))


@pytest.mark.parametrize("rule", ["nodes", "both"])
def test_ip_counts_what_whole_branch_retrieval_reaches(rule: str) -> None:
    from wmtsim.core.metrics import frame_parts

    world = generate(WORLD, seed=3, n=200)

    def ip_and_tokens(folded: str) -> tuple[float, float]:
        t = simulate(world, "a3_no_semantic", params=Params(),
                     stubs=Stubs(branch_folded=folded)).trajectories
        num, den = frame_parts(t, "ip")
        return float(num.sum() / den.sum()), float(frame_parts(t, "prompt_tokens")[0].sum())

    ip_summary, tokens_summary = ip_and_tokens("summary")
    ip_rule, tokens_rule = ip_and_tokens(rule)
    # The first subtask's poison is folded away by the end: the previous rule's IP does not
    # see it; whole-branch retrieval does (it is never superseded here: p_supersede = 0).
    assert ip_summary == 0.0
    assert ip_rule == 1.0
    # Replaying folded branches costs more prompt tokens than their summaries.
    assert tokens_rule > tokens_summary


def test_other_configurations_ignore_the_rule() -> None:
    from wmtsim.core.metrics import frame_parts

    world = generate(WORLD, seed=3, n=100)
    for policy in ("wmt", "a1_unweighted", "a2_no_controller", "linear"):
        got = [frame_parts(simulate(world, policy, params=Params(),
                                    stubs=Stubs(branch_folded=rule)).trajectories,
                           "prompt_tokens")[0].sum() for rule in ("nodes", "summary", "both")]
        assert got[0] == got[1] == got[2], policy
