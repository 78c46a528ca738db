"""The adaptive attack rules (issue 24, `PoisonSpec.adaptive`, docs/attack.md): poison that
reacts to the run. Each test would fail on a rule that did nothing, or did it for every
policy alike."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from wmtsim.core.field_knobs import Baselines
from wmtsim.core.metrics import C
from wmtsim.core.params import Params
from wmtsim.core.policies import FAM_WMT, POLICIES
from wmtsim.core.stubs import Stubs
from wmtsim.core.world_spec import (
    OP_ACTION,
    OP_REINJECT,
    OP_SUPERSEDE,
    OP_TASK,
    PoisonSpec,
    World,
    WorldSpec,
)
from wmtsim.engine.simulation import run_engine
from wmtsim.engine.world import generate


def _spec(adaptive: str, **kw: object) -> WorldSpec:
    return WorldSpec(n_subtasks=(2, 4), n_actions=(2, 5), p_evidence=0.7,
                     poison=(PoisonSpec("plausible", adaptive=adaptive, count=2,  # type: ignore[arg-type]
                                        p_supersede=0.9, **kw),))


def _counts(world: World, policy: str) -> np.ndarray:
    counts, _, _ = run_engine(world, policy, Params(), Stubs(), Baselines())
    return counts


def _events(world: World, i: int) -> list[tuple[int, int]]:
    n = int(world.n_events[i])
    return list(zip(world.op[i, :n].tolist(), world.arg[i, :n].tolist(), strict=True))


def test_after_evidence_lands_right_after_the_evidence() -> None:
    """Every injection of the rule follows the action carrying its subtask's evidence,
    with nothing but other injections between (two injections in one subtask both land
    right after it); a subtask without evidence gets none."""
    world = generate(_spec("after_evidence"), seed=1, n=400)
    seen = waited = 0
    for i in range(world.n):
        prev = -1  # the previous clean action of this subtask visit
        for op, w in _events(world, i):
            if op == OP_TASK:
                prev = -1
            elif op == OP_ACTION:
                if world.poisoned[i, w]:
                    seen += 1
                    assert prev >= 0 and world.evidence[i, prev], (i, w)
                    assert world.parent[i, prev] == world.parent[i, w]
                else:
                    prev = w
        waited += 2 - int(world.n_injected[i])
    assert seen > 100
    assert waited > 20  # p_evidence = 0.7: some targeted subtasks never find evidence


def test_after_evidence_differs_from_the_scripted_placement() -> None:
    a = generate(_spec("after_evidence"), seed=1, n=200)
    b = generate(_spec("none"), seed=1, n=200)
    assert not np.array_equal(a.op, b.op) or not np.array_equal(a.arg, b.arg)


@pytest.mark.parametrize("policy", ["wmt", "a3_no_semantic", "linear", "a1_unweighted",
                                    "a2_no_controller", "traceretain_conflict"])
def test_a_copy_enters_only_where_its_supersession_took_effect(policy: str) -> None:
    """P_i counts the injected poison a policy's memory ever held: the originals, plus a
    copy exactly when the supersession just before it took effect. Full WMT and A3 act on
    supersessions (every one takes effect, each followed by its copy); Linear, A1 and A2
    do not (no copy ever enters)."""
    world = generate(_spec("reinject"), seed=2, n=300)
    counts = _counts(world, policy)
    originals = np.array([sum(1 for op, w in _events(world, i)
                              if op == OP_ACTION and world.poisoned[i, w])
                          for i in range(world.n)])
    copies = np.array([sum(1 for op, _ in _events(world, i) if op == OP_REINJECT)
                       for i in range(world.n)])
    assert copies.sum() > 50
    pol = POLICIES[policy]
    if not pol.supersede:
        np.testing.assert_array_equal(counts[:, C.p_i], originals)
    elif pol.family == FAM_WMT:  # WMT's own configurations: every supersession takes effect
        np.testing.assert_array_equal(counts[:, C.p_i], originals + copies)
        np.testing.assert_array_equal(counts[:, C.superseded] >= copies, True)
    else:  # a field policy: a copy only where its store held the superseded poison
        assert (counts[:, C.p_i] >= originals).all()
        assert (counts[:, C.p_i] <= originals + copies).all()


def test_every_copy_follows_its_supersession() -> None:
    world = generate(_spec("reinject"), seed=3, n=200)
    for i in range(world.n):
        ev = _events(world, i)
        for e, (op, w) in enumerate(ev):
            if op == OP_REINJECT:
                sop, q = ev[e - 1]
                assert sop == OP_SUPERSEDE and world.poisoned[i, q]
                assert world.parent[i, q] == world.parent[i, w]
                assert world.persuasiveness[i, q] == world.persuasiveness[i, w]


def test_reinjection_keeps_poison_in_full_wmt() -> None:
    """The rule's point: supersession no longer clears a poison for good. Full WMT's
    poisoned selections (H_p) rise, paired by trajectory. (Its injected poison still
    eligible at the end, IP's P_r, does not: every subtask folds before the end, and by
    default no poison rides into a summary; `Stubs.p_leak`.)"""
    spec = _spec("reinject")
    a = _counts(generate(spec, seed=4, n=2000), "wmt")
    b = _counts(generate(replace(spec, poison=(replace(spec.poison[0], adaptive="none"),)),
                         seed=4, n=2000), "wmt")
    d = a[:, C.h_p] - b[:, C.h_p]
    se = d.std(ddof=1) / np.sqrt(d.size)
    assert d.mean() > 4 * se > 0


def test_a_global_injection_cannot_be_adaptive() -> None:
    from wmtsim.core.validation import KnobError

    with pytest.raises(KnobError, match="adaptive"):
        PoisonSpec("global", adaptive="reinject")
