"""The synthetic world generator (docs/world.md, "Trajectory generation")."""

from __future__ import annotations

import numpy as np
import pytest

from wmtsim.core.codes import ACTION, FAILURE, GLOBAL, NO_PARENT, ROOT, SUCCESS, TASK
from wmtsim.core.node_arrays import WORLD_ARRAYS
from wmtsim.core.world_spec import (
    OP_ACTION,
    OP_COMPLETE,
    OP_FINAL,
    OP_GLOBAL,
    OP_REOPEN,
    OP_SUPERSEDE,
    OP_TASK,
    PoisonSpec,
    World,
    WorldSpec,
)
from wmtsim.engine.simulation import simulate
from wmtsim.engine.world import generate

SPEC = WorldSpec(
    n_subtasks=(2, 4), max_depth=3, p_nested=0.5, n_actions=(0, 4), p_resume=0.5,
    n_globals=2,
    poison=(PoisonSpec("failed", p_supersede=0.5), PoisonSpec("plausible", p_supersede=0.5),
            PoisonSpec("global"), PoisonSpec("summary", count=2, p_inject=0.5)))
NODE_ARRAYS = tuple(a.name for a in WORLD_ARRAYS if not a.per_event)


def row(w: World, i: int) -> dict[str, np.ndarray]:
    """Trajectory ``i`` of a batch without its padding."""
    k, e = int(w.n_nodes[i]), int(w.n_events[i])
    out = {name: getattr(w, name)[i, :k] for name in NODE_ARRAYS}
    out["op"], out["arg"] = w.op[i, :e], w.arg[i, :e]
    return out


def assert_rows_equal(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    assert a.keys() == b.keys()
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def test_trajectory_depends_only_on_seed_spec_and_index() -> None:
    whole = generate(SPEC, seed=9, n=25)
    parts = [generate(SPEC, seed=9, n=n, start=s) for s, n in ((0, 10), (10, 1), (11, 14))]
    i = 0
    for part in parts:
        for j in range(part.n):
            assert_rows_equal(row(whole, i), row(part, j))
            assert whole.n_injected[i] == part.n_injected[j]
            i += 1
    assert i == 25
    alone = generate(SPEC, seed=9, n=1, start=17)
    assert_rows_equal(row(whole, 17), row(alone, 0))
    np.testing.assert_array_equal(parts[2].trajectories, np.arange(11, 25))


def test_seed_changes_the_world() -> None:
    a, b = generate(SPEC, seed=1, n=10), generate(SPEC, seed=2, n=10)
    assert any(a.n_nodes[i] != b.n_nodes[i]
               or not np.array_equal(row(a, i)["tokens"], row(b, i)["tokens"])
               for i in range(10))


def test_injections_are_counted() -> None:
    w = generate(SPEC, seed=3, n=40)
    np.testing.assert_array_equal(w.n_injected, w.poisoned.sum(axis=1))
    assert w.n_injected.min() >= 3 and w.n_injected.max() <= 5
    res = simulate(w, "wmt")
    np.testing.assert_array_equal(res.trajectories["n_p_i"].to_numpy(), w.n_injected)


def test_script_is_a_well_formed_depth_first_execution() -> None:
    w = generate(SPEC, seed=4, n=40)
    for i in range(w.n):
        r = row(w, i)
        parent, kind, op, arg = r["parent"], r["kind"], r["op"], r["arg"]
        assert kind[0] == ROOT and parent[0] == NO_PARENT
        assert op[-1] == OP_FINAL and (op == OP_FINAL).sum() == 1
        # Globals come first; they (and the root) are the only nodes without a parent.
        n_glob = int((op == OP_GLOBAL).sum())
        assert (op[:n_glob] == OP_GLOBAL).all()
        assert ((kind == GLOBAL) == (parent == NO_PARENT)).sum() == len(kind) - 1
        started: set[int] = set()
        open_tasks: list[int] = [0]
        seen_actions: set[int] = set()
        completions: dict[int, int] = {}
        for o, a in zip(op.tolist(), arg.tolist(), strict=True):
            if o == OP_TASK:
                assert kind[a] == TASK and parent[a] in started | {0}
                assert parent[a] == open_tasks[-1]  # depth-first
                started.add(a)
                open_tasks.append(a)
            elif o == OP_ACTION:
                assert kind[a] == ACTION and parent[a] == open_tasks[-1]
                seen_actions.add(a)
            elif o == OP_SUPERSEDE:
                assert w.poisoned[i, a] and a in seen_actions and kind[a] == ACTION
            elif o == OP_COMPLETE:
                assert open_tasks.pop() == a
                completions[a] = completions.get(a, 0) + 1
            elif o == OP_REOPEN:
                assert parent[a] == 0 and a in completions and open_tasks == [0]
                open_tasks.append(a)
        assert open_tasks == [0]
        assert started == set(np.flatnonzero(kind == TASK).tolist())
        assert seen_actions == set(np.flatnonzero(kind == ACTION).tolist())
        assert sum(completions.values()) == len(started) + int((op == OP_REOPEN).sum())
        # Nesting respects max_depth.
        for t in started:
            depth, a = 0, t
            while a != 0:
                a, depth = int(parent[a]), depth + 1
            assert depth <= SPEC.max_depth
        # At most one evidence action per subtask, on a clean successful action.
        ev = np.flatnonzero(r["evidence"])
        assert len(set(r["topic"][ev].tolist())) == len(ev)
        assert (r["outcome"][ev] == SUCCESS).all() and not r["poisoned"][ev].any()


def test_poison_kinds_are_placed_as_specified() -> None:
    spec = WorldSpec(n_subtasks=(3, 3), n_actions=(2, 3), p_resume=0.0, poison=(
        PoisonSpec("failed", subtask=0, position=0, tokens=77, persuasiveness=0.4),
        PoisonSpec("plausible", subtask=4, position=99),
        PoisonSpec("global", subtask=2, apparent_relevance=0.55),
        PoisonSpec("summary", subtask=2, count=2),
        PoisonSpec("failed", p_inject=0.0, count=5)))
    w = generate(spec, seed=5, n=20)
    assert (w.n_injected == 5).all()
    for i in range(w.n):
        r = row(w, i)
        actions = [a for o, a in zip(r["op"].tolist(), r["arg"].tolist(), strict=True)
                   if o == OP_ACTION]
        failed = np.flatnonzero(r["poisoned"] & (r["outcome"] == FAILURE))
        assert len(failed) == 1
        f = int(failed[0])
        assert r["parent"][f] == 1 and r["tokens"][f] == 77 and r["persuasiveness"][f] == 0.4
        assert next(a for a in actions if r["parent"][a] == 1) == f  # position 0
        plausible = np.flatnonzero(r["poisoned"] & (r["outcome"] == SUCCESS) & ~r["rider"])
        assert len(plausible) == 1
        p = int(plausible[0])
        assert r["parent"][p] == 2  # subtask 4 modulo 3 subtasks
        assert [a for a in actions if r["parent"][a] == 2][-1] == p  # clipped to the end
        glob = np.flatnonzero(r["poisoned"] & (r["kind"] == GLOBAL))
        assert len(glob) == 1 and r["topic"][glob[0]] == 3 and r["rel"][glob[0]] == 0.55
        riders = np.flatnonzero(r["rider"])
        assert len(riders) == 2 and (r["parent"][riders] == 3).all()
        assert r["poisoned"][riders].all() and (r["outcome"][riders] == SUCCESS).all()


def test_spec_round_trip_and_generate_arguments() -> None:
    assert WorldSpec.from_dict(SPEC.to_dict()) == SPEC
    with pytest.raises(ValueError, match="unknown WorldSpec field"):
        WorldSpec.from_dict({"n_subtask": (1, 2)})
    for kwargs, name in (({"n": 0}, "generate.n"), ({"start": -1}, "generate.start"),
                         ({"seed": -1}, "generate.seed")):
        with pytest.raises(ValueError, match=name):
            generate(SPEC, **kwargs)


@pytest.mark.parametrize("p_stale", [0.4, 1.0])
def test_stale_observations_are_superseded_by_the_next_reading(p_stale: float) -> None:
    """`WorldSpec.p_stale` (docs/world.md, "Stale observations"): the same tree, tokens and
    outcomes as without it; its events are the others plus supersessions, each of a clean
    success right after the next clean success of the same subtask; a subtask's evidence
    only moves to a later action of that subtask."""
    from dataclasses import replace

    base = generate(SPEC, seed=5, n=40)
    stale = generate(replace(SPEC, p_stale=p_stale), seed=5, n=40)
    moved = 0
    for i in range(base.n):
        a, b = row(base, i), row(stale, i)
        for name in NODE_ARRAYS:
            if name != "evidence":
                np.testing.assert_array_equal(a[name], b[name], err_msg=name)
        extra = [k for k in range(len(b["op"])) if b["op"][k] == OP_SUPERSEDE
                 and not b["poisoned"][b["arg"][k]]]
        keep = np.ones(len(b["op"]), bool)
        keep[extra] = False
        np.testing.assert_array_equal(b["op"][keep], a["op"])
        np.testing.assert_array_equal(b["arg"][keep], a["arg"])
        for k in extra:
            old, new = b["arg"][k], b["arg"][k - 1]
            assert b["op"][k - 1] == OP_ACTION and new > old
            assert b["parent"][old] == b["parent"][new]
            assert b["outcome"][old] == b["outcome"][new] == SUCCESS
            assert not b["poisoned"][new]
        for s in np.unique(a["parent"][a["kind"] == ACTION]):
            mine = a["parent"] == s
            assert a["evidence"][mine].sum() == b["evidence"][mine].sum()
            if a["evidence"][mine].any() and not (a["evidence"] == b["evidence"])[mine].all():
                assert np.argmax(b["evidence"] & mine) > np.argmax(a["evidence"] & mine)
                moved += 1
    assert moved > 0
