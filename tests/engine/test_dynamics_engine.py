"""The engine's population aggregates (`wmtsim.engine.dynamics`): fates and lifetimes on
hand-built trajectories, the same counts for any thread count or chunking, nothing
changed in a plain run, and accumulators whose size does not grow with n."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import counters

from wmtsim.core.codes import ACTION, FAILURE, ROOT, SUCCESS, TASK
from wmtsim.core.params import Params
from wmtsim.core.stubs import Stubs
from wmtsim.core.world_spec import (
    OP_ACTION,
    OP_COMPLETE,
    OP_FINAL,
    OP_SUPERSEDE,
    OP_TASK,
    PoisonSpec,
    World,
    WorldSpec,
)
from wmtsim.engine.dynamics import FATES, POISON_KINDS, Dynamics, DynamicsAcc
from wmtsim.engine.simulation import simulate
from wmtsim.engine.world import _empty_arrays
from wmtsim.twins.dynamics_reference import dynamics_reference


def hand_world(outcomes: list[int], poisoned: list[bool], script: list[tuple[int, int]]
               ) -> World:
    """One trajectory: the root (w0), one subtask (w1) and its actions w2, w3, ...
    (``outcomes``, ``poisoned``), played by ``script``."""
    nodes = 2 + len(outcomes)

    def row(values: list[object], dtype: object) -> np.ndarray:
        return np.array([values], dtype=dtype)

    kind = [ROOT, TASK] + [ACTION] * len(outcomes)
    # Every node array not set here keeps the generator's empty value (`_empty_arrays`),
    # so a new per-node world array needs no edit here.
    rows = _empty_arrays(1, nodes, len(script))._replace(
        parent=row([-1, 0] + [1] * len(outcomes), np.int32),
        kind=row(kind, np.int8), tokens=row([20] * nodes, np.int32),
        topic=row([-1, 1] + [1] * len(outcomes), np.int32),
        rel=row([0.0, 0.5] + [0.9] * len(outcomes), np.float64),
        poisoned=row([False, False, *poisoned], np.bool_),
        persuasiveness=row([0.0, 0.0] + [1.0] * len(outcomes), np.float64),
        outcome=row([0, 0, *outcomes], np.int8),
        top=row([-1, 1] + [1] * len(outcomes), np.int32),
        op=row([o for o, _ in script], np.int8), arg=row([a for _, a in script], np.int32))
    return World(seed=0, start=0, spec=WorldSpec(), **rows._asdict(),
                 n_nodes=np.array([nodes]), n_events=np.array([len(script)]),
                 n_injected=np.array([sum(poisoned)]))


# w2: a plausible poison, w3: a clean action that detects it (the supersede event).
SUPERSEDED = hand_world([SUCCESS, SUCCESS], [True, False], [
    (OP_TASK, 1), (OP_ACTION, 2), (OP_ACTION, 3), (OP_SUPERSEDE, 2), (OP_COMPLETE, 1),
    (OP_FINAL, 0)])
# w2: a failed poison in a subtask that fails; no detection.
FAILING = hand_world([FAILURE, FAILURE], [True, False], [
    (OP_TASK, 1), (OP_ACTION, 2), (OP_ACTION, 3), (OP_COMPLETE, 1), (OP_FINAL, 0)])

PLAUSIBLE, FAILED = POISON_KINDS.index("plausible"), POISON_KINDS.index("failed")


def fate_of(world: World, policy: str, kind: int, **knobs: object) -> tuple[str, int, int]:
    """(fate, steps after injection, step index) of the world's one poison; and the
    engine's counts equal the twin's."""
    params = Params(**knobs.pop("params", {}))  # type: ignore[arg-type]
    stubs = Stubs(**knobs)  # type: ignore[arg-type]
    dyn = simulate(world, policy, params=params, stubs=stubs, dynamics=True).dynamics()
    ref = dynamics_reference(world, policy, params, stubs)
    for name, a in ref.items():
        np.testing.assert_array_equal(dyn.counts[name], a, err_msg=name)
    fate, k = np.argwhere(dyn.counts["fate_k"][kind])[0]
    t = int(np.argwhere(dyn.counts["fate_t"][kind, fate])[0][0])
    return FATES[fate], int(k), t


def test_fates_on_hand_built_trajectories() -> None:
    # Steps: 0 and 1 are the two actions' prompts, 2 the completion, 3 the final answer.
    # Full WMT acts on the supersede event after step 1: the poison remained at steps 0-1.
    assert fate_of(SUPERSEDED, "wmt", PLAUSIBLE) == ("superseded", 2, 2)
    # A2 has no controller: still eligible at the end (k, t: the end).
    assert fate_of(SUPERSEDED, "a2_no_controller", PLAUSIBLE) == ("eligible_at_end", 4, 4)
    # Fold without supersession: the branch folds after step 2's prompt; clean when
    # nothing leaks (p_leak = 0), laundered into the eligible summary when it does.
    assert fate_of(SUPERSEDED, "tree_summary", PLAUSIBLE, p_leak=0.0) == (
        "folded_clean", 3, 3)
    assert fate_of(SUPERSEDED, "tree_summary", PLAUSIBLE, p_leak=1.0) == (
        "laundered", 4, 4)
    # No memory: never in any pool.
    assert fate_of(SUPERSEDED, "no_memory", PLAUSIBLE) == ("never_eligible", 0, 0)
    # Eq. 7 with τ_obs above every priority: the folded branch is suppressed after the
    # final step's selection (an obsolete ancestor outranks its fold). Leaked, the poison
    # rode the summary through step 3's pool and goes with the branch at the end;
    # not leaked, it left the pool with the fold (after step 2).
    assert fate_of(FAILING, "wmt", FAILED, p_leak=1.0, params={"tau_obs": 2.0}) == (
        "suppressed", 4, 4)
    assert fate_of(FAILING, "wmt", FAILED, p_leak=0.0, params={"tau_obs": 2.0}) == (
        "suppressed", 3, 3)


def test_lifetimes_on_hand_built_trajectories() -> None:
    def survival(policy: str, **stubs: object) -> np.ndarray:
        res = simulate(SUPERSEDED, policy, stubs=Stubs(**stubs), dynamics=True)  # type: ignore[arg-type]
        return res.dynamics().counts["survival"][PLAUSIBLE]

    # Superseded after 2 prompt steps: a lifetime of 2, an event.
    assert np.argwhere(survival("wmt")).tolist() == [[2, 0]]
    # Still eligible at the end: censored at the last prompt step (k = 3).
    assert np.argwhere(survival("a2_no_controller")).tolist() == [[3, 1]]
    assert np.argwhere(survival("no_memory")).tolist() == [[0, 0]]


def test_the_step_counts_on_a_hand_built_trajectory() -> None:
    s = simulate(SUPERSEDED, "wmt", dynamics=True).dynamics().counts["steps"]
    col = {c: j for j, c in enumerate(("prompts", "contaminated", "via_original",
                                       "via_summary", "critical", "compromised",
                                       "poisons", "eligible", "carried", "selected",
                                       "compromising"))}
    assert s[:, col["prompts"]].tolist() == [1, 1, 1, 1]
    assert s[:, col["poisons"]].tolist() == [1, 1, 1, 1]
    assert s[:, col["eligible"]].tolist() == [1, 1, 0, 0]  # superseded before step 2
    assert s[:, col["critical"]].tolist() == [0, 0, 1, 1]  # completion, final answer
    # Step 0: the poisoned observation was just made, so its prompt is contaminated.
    assert s[0, col["contaminated"]] == 1 and s[0, col["via_original"]] == 1


SPEC = WorldSpec(n_subtasks=(2, 4), max_depth=2, p_nested=0.4, p_resume=0.4, n_globals=1,
                 poison=tuple(PoisonSpec(k, p_supersede=0.4) for k in POISON_KINDS))


def test_a_poison_that_persuades_the_reasoner_is_counted_compromising() -> None:
    """The ``compromising`` columns count the injected poisons that persuaded the reasoner
    at a critical step. Linear keeps no summary, so every compromised step was persuaded
    by at least one injected poison (a selected one or the observation just made):
    Σ compromising ≥ Σ compromised, and a step index with a compromising poison has a
    compromised step. A poison is counted only at critical steps (completions, the final
    answer), and never more often than it exists."""
    from wmtsim.engine.dynamics import SINCE_COLUMNS, STEP_COLUMNS

    col = {c: j for j, c in enumerate(STEP_COLUMNS)}
    for policy in ("linear", "wmt"):
        d = simulate(SPEC, policy, n=400, seed=5, dynamics=True).dynamics().counts
        s = d["steps"]
        comp, ing = s[:, col["compromised"]], s[:, col["compromising"]]
        assert ing.sum() > 0
        assert ((ing > 0) <= (comp > 0)).all()
        assert (ing <= s[:, col["poisons"]]).all()
        assert (ing[s[:, col["critical"]] == 0] == 0).all()
        since = d["since"][..., SINCE_COLUMNS.index("compromising")]
        assert since.sum() == ing.sum()
        if policy == "linear":
            assert ing.sum() >= comp.sum()


@pytest.mark.parametrize("policy", ["wmt", "a2_no_controller", "traceretain_z"])
def test_the_same_counts_for_any_threads_or_chunking(policy: str) -> None:
    from numba import config

    whole = simulate(SPEC, policy, n=300, seed=3, threads=1, dynamics=True).dynamics()
    most = int(config.NUMBA_NUM_THREADS)  # type: ignore[attr-defined]
    threaded = simulate(SPEC, policy, n=300, seed=3, threads=most, dynamics=True).dynamics()
    parts = [simulate(SPEC, policy, n=m, seed=3, start=a, dynamics=True).dynamics()
             for a, m in ((0, 7), (7, 150), (157, 143))]
    merged = parts[0].merge(parts[1]).merge(parts[2])
    for name, a in whole.counts.items():
        np.testing.assert_array_equal(threaded.counts[name], a, err_msg=name)
        np.testing.assert_array_equal(merged.counts[name], a, err_msg=name)
    assert whole.counts["fate_k"].sum() == 300 * 4  # every poison has one fate


def test_a_plain_run_is_unchanged_and_the_accumulators_are_flat_in_n() -> None:
    plain = simulate(SPEC, "wmt", n=200, seed=1)
    with_dyn = simulate(SPEC, "wmt", n=200, seed=1, dynamics=True)
    np.testing.assert_array_equal(counters(plain), counters(with_dyn))
    assert plain.aggregates is None
    # The accumulators are sized by steps, never by trajectories: under the same bound
    # (the spec's event bound, which does not know n) for 20 and 2000 trajectories.
    bound = DynamicsAcc.allocate(SPEC.event_bound(), 1).totals()
    for n in (20, 2000):
        counts = simulate(SPEC, "wmt", n=n, seed=1, dynamics=True).dynamics().counts
        for name, a in counts.items():
            assert a.nbytes <= bound[name].nbytes, (n, name)
    # SimResult.dynamics() without dynamics=True plays the same trajectories again.
    again = plain.dynamics()
    for name, a in with_dyn.dynamics().counts.items():
        np.testing.assert_array_equal(again.counts[name], a, err_msg=name)


def test_merge_refuses_another_configuration() -> None:
    a = simulate(SPEC, "wmt", n=5, dynamics=True).dynamics()
    b = simulate(SPEC, "linear", n=5, dynamics=True).dynamics()
    with pytest.raises(ValueError, match="the same policy"):
        a.merge(b)
    assert isinstance(a, Dynamics)
