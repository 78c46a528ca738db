"""The reference MemoryTree: API, errors and the lifecycle rules of docs/model.md §3–4."""

from __future__ import annotations

import math

import pytest

from wmtsim.core.params import Params
from wmtsim.twins.reference import MemoryTree, Node


def small_tree() -> MemoryTree:
    """root ─ t1 ─ a1, t2 ─ a2 ; root ─ t3 ; global g."""
    t = MemoryTree(root_tokens=7)
    t.add_task("t1", "root", tokens=3)
    t.add_action("a1", "t1", tokens=5)
    t.add_task("t2", "t1")
    t.add_action("a2", "t2")
    t.add_task("t3", "root")
    t.add_global("g", tokens=2)
    return t


def test_initial_nodes() -> None:
    t = small_tree()
    assert list(t.nodes) == ["root", "t1", "a1", "t2", "a2", "t3", "g"]
    root = t.nodes["root"]
    assert (root.kind, root.parent, root.u, root.tokens, root.state) == ("root", None, 1.0, 7,
                                                                         "active")
    assert (t.nodes["t1"].u, t.nodes["a1"].u, t.nodes["g"].u) == (0.9, 0.5, 0.6)
    assert t.nodes["g"].parent is None
    assert t.nodes["a1"].outcome is None
    assert t.active == "root"
    assert t.step == 0
    assert t.active_path() == ["root"]


def test_created_is_step() -> None:
    t = MemoryTree()
    t.select([])
    t.select([])
    assert t.add_task("x", "root").created == 2


def test_node_requires_valid_fields() -> None:
    with pytest.raises(ValueError, match="u=nan"):
        Node("x", "task", "root")
    with pytest.raises(ValueError, match="kind='leaf'"):
        Node("x", "leaf", "root", u=0.5)
    with pytest.raises(ValueError, match="state='done'"):
        Node("x", "task", "root", state="done", u=0.5)
    assert Node("x", "task", "root", "active", 0.5).u == 0.5


@pytest.mark.parametrize(("call", "match"), [
    (lambda t: t.add_task("t1", "root"), "duplicate node id 't1'"),
    (lambda t: t.add_task("new", "nope"), "unknown node id 'nope'"),
    (lambda t: t.add_task("new", "a1"), "parent 'a1' is a action node"),
    (lambda t: t.add_action("new", "g"), "parent 'g' is a global node"),
    (lambda t: t.add_global("root"), "duplicate node id 'root'"),
    (lambda t: t.record_outcome("t1", True), "outcomes belong to action nodes"),
    (lambda t: t.record_outcome("zz", True), "unknown node id 'zz'"),
    (lambda t: t.activate("a1"), "active task 'a1' is a action node"),
    (lambda t: t.complete("root"), "cannot complete the root"),
    (lambda t: t.complete("a1"), "not a task"),
    (lambda t: t.reopen("t1"), "it is active"),
    (lambda t: t.supersede("root"), "cannot supersede the root"),
    (lambda t: t.select(["t1"], candidates=["t3"]), r"\['t1'\] are not candidates"),
    (lambda t: t.select(["root"]), r"\['root'\] are not candidates"),
    (lambda t: t.select(["nope"]), "unknown node id 'nope'"),
    (lambda t: t.branch_priority("g"), "not a task"),
    (lambda t: t.add_task("neg", "root", tokens=-1), "tokens=-1"),
])
def test_errors(call: object, match: str) -> None:
    t = small_tree()
    with pytest.raises(ValueError, match=match):
        call(t)  # type: ignore[operator]


def test_candidate_pool_basic() -> None:
    t = small_tree()
    assert t.candidate_pool() == ["t1", "a1", "t2", "a2", "t3", "g"]
    t.activate("t2")
    assert t.active_path() == ["root", "t1", "t2"]
    assert t.candidate_pool() == ["a1", "a2", "t3", "g"]


def test_fold_hides_branch_and_shows_summary() -> None:
    t = small_tree()
    t.activate("t2")
    sid = t.complete("t1", summary_tokens=4)
    assert sid == "t1/summary"
    assert t.active == "root"  # t1 was on the active path
    s = t.nodes[sid]
    assert (s.kind, s.parent, s.u, s.m, s.tokens, s.state) == ("summary", "t1", 0.8, 0, 4,
                                                                "active")
    assert t.nodes["t1"].state == "folded"
    assert t.nodes["t1"].summary == sid
    assert t.candidate_pool() == ["t3", "g", "t1/summary"]


def test_nested_fold_hides_inner_summary() -> None:
    t = small_tree()
    t.complete("t2")
    assert t.candidate_pool() == ["t1", "a1", "t3", "g", "t2/summary"]
    t.complete("t1")
    assert t.candidate_pool() == ["t3", "g", "t1/summary"]
    t.reopen("t1")
    assert t.candidate_pool() == ["t1", "a1", "t3", "g", "t2/summary", "t1/summary"]


def test_complete_without_fold() -> None:
    t = small_tree()
    t.activate("t2")
    assert t.complete("t2", fold=False) is None
    assert t.active == "t1"
    assert t.nodes["t2"].state == "completed"
    assert "t2" in t.candidate_pool()  # completed (unfolded) stays a candidate
    assert "a2" in t.candidate_pool()
    t.reopen("t2")
    assert t.nodes["t2"].state == "active"


def test_complete_off_path_keeps_active() -> None:
    t = small_tree()
    t.activate("t3")
    t.complete("t2")
    assert t.active == "t3"


def test_complete_ancestor_of_active_moves_to_its_parent() -> None:
    t = small_tree()
    t.activate("t2")
    t.complete("t1")
    assert t.active == "root"


def test_reopen_and_refold_reuses_summary() -> None:
    t = small_tree()
    t.complete("t1", summary_tokens=4)
    t.select([])  # summary missed: 0.8·0.9 = 0.72, m = 1
    assert t.nodes["t1/summary"].u == pytest.approx(0.72, rel=1e-12)
    t.reopen("t1")
    assert t.active == "root"  # reopen does not move the active task
    assert "t1/summary" in t.candidate_pool()
    assert t.nodes["t1/summary"].u == pytest.approx(0.72, rel=1e-12)  # summary stays as is
    n_before = len(t.nodes)
    assert t.complete("t1", summary_tokens=9) == "t1/summary"
    assert len(t.nodes) == n_before
    s = t.nodes["t1/summary"]
    assert (s.u, s.m, s.tokens) == (0.8, 0, 9)


def test_cannot_complete_folded_or_obsolete() -> None:
    t = small_tree()
    t.complete("t1")
    with pytest.raises(ValueError, match="it is folded"):
        t.complete("t1")
    t.supersede("t3")
    with pytest.raises(ValueError, match="it is obsolete"):
        t.complete("t3")
    with pytest.raises(ValueError, match="it is obsolete"):
        t.reopen("t3")


def test_supersede_excludes_subtree() -> None:
    t = small_tree()
    t.supersede("t2")
    assert t.candidate_pool() == ["t1", "a1", "t3", "g"]
    t.supersede("g")
    assert "g" not in t.candidate_pool()
    t.complete("t1")
    t.supersede("t1/summary")
    assert t.candidate_pool() == ["t3"]


def test_select_report_and_feedback() -> None:
    t = small_tree()
    rep = t.select(["a1", "g"])
    assert rep.candidates == ["t1", "a1", "t2", "a2", "t3", "g"]
    assert rep.selected == ["a1", "g"]
    assert list(rep.priorities) == ["t1", "t2", "t3"]
    assert rep.suppressed == []
    assert t.step == 1
    assert (t.nodes["a1"].u, t.nodes["a1"].m) == (0.5, 0)
    assert (t.nodes["g"].u, t.nodes["g"].m) == (0.6, 0)
    assert t.nodes["t1"].m == 1
    assert t.nodes["root"].u == 1.0  # never a candidate, never decays
    for b, u_b in rep.priorities.items():
        assert u_b == t.branch_priority(b)


def test_select_with_explicit_candidates() -> None:
    t = small_tree()
    rep = t.select([], candidates=["g", "a2"])
    assert rep.candidates == ["a2", "g"]
    assert t.nodes["a2"].m == 1
    assert t.nodes["a1"].m == 0  # not in the given pool: unchanged
    rep = t.select([], candidates=[])
    assert rep.candidates == []
    assert t.nodes["a2"].m == 1


def test_priorities_before_suppression() -> None:
    # τ_obs above every priority: all off-path tasks suppressed in one step, and the
    # reported priorities are those before any suppression took effect
    t = small_tree()
    t.activate("t3")
    rep = t.select([], candidates=[])
    assert rep.priorities["t1"] == t.branch_priority("t1")  # nothing decayed
    t2 = MemoryTree(Params(tau_obs=2.0))
    t2.add_task("p", "root")
    t2.add_task("c", "p")
    rep = t2.select([], candidates=[])
    # V_b(p) = [p 0.9, c 0.9]: U = 0.54 + 0.15·1.8 = 0.81, no obsolete counted yet
    assert rep.priorities["p"] == pytest.approx(0.81, rel=1e-12)
    assert rep.suppressed == ["p", "c"]


def test_activate_root_and_path() -> None:
    t = small_tree()
    t.activate("t2")
    t.activate("root")
    assert t.active_path() == ["root"]


def test_rho_one_params_in_tree() -> None:
    t = MemoryTree(Params(rho=1.0, rho_g=1.0))
    t.add_action("a", "root")
    t.add_global("g")
    for _ in range(20):
        t.select([])
    assert (t.nodes["a"].u, t.nodes["g"].u, t.nodes["a"].m) == (0.5, 0.6, 20)
    assert not math.isnan(t.nodes["a"].u)


def test_reference_is_independent_of_the_kernels() -> None:
    """The oracle must not share code with what it checks (only Params is shared)."""
    import ast
    import inspect

    import wmtsim.twins.reference as reference

    tree = ast.parse(inspect.getsource(reference))
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module or "")
    assert not {m for m in imported if "numba" in m or "scoring" in m or "lifecycle" in m}
    assert not {m for m in imported if m.startswith("numpy")}
