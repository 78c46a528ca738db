"""Properties stated directly by the paper (docs/model.md §2, Eqs. 3–5, 15), checked with
Hypothesis on the public functions of `wmtsim.core.scoring` and on the reference tree."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from wmtsim.core.params import Params
from wmtsim.core.scoring import cumulative_exponent, selection_feedback
from wmtsim.twins.reference import MemoryTree

SETTINGS = settings(max_examples=150, deadline=None)

unit = st.floats(0.0, 1.0, allow_nan=False)
rho_s = st.floats(0.05, 1.0, allow_nan=False)


@st.composite
def params_s(draw: st.DrawFn) -> Params:
    return Params(rho=draw(rho_s), rho_g=draw(rho_s), M=draw(st.integers(1, 8)),
                  global_miss_count=draw(st.integers(0, 3)))


@st.composite
def feedback_case(draw: st.DrawFn) -> tuple[np.ndarray, ...]:
    n = draw(st.integers(1, 30))
    u = np.array(draw(st.lists(unit, min_size=n, max_size=n)))
    m = np.array(draw(st.lists(st.integers(0, 40), min_size=n, max_size=n)), dtype=np.int64)
    eligible = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    pick = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    selected = eligible & pick
    is_global = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    return u, m, eligible, selected, is_global


def rho_pow(rho: float, k: int) -> float:
    g = 1.0
    for _ in range(k):
        g *= rho
    return g


@SETTINGS
@given(feedback_case(), params_s())
def test_feedback_invariants(case: tuple[np.ndarray, ...], p: Params) -> None:
    u, m, eligible, selected, is_global = case
    u2, m2 = selection_feedback(u, m, eligible, selected, is_global, p)
    # scores stay in [0, 1]
    assert np.all((u2 >= 0.0) & (u2 <= 1.0))
    # selected: m = 0 and u unchanged
    assert np.all(m2[selected] == 0)
    assert np.array_equal(u2[selected], u[selected])
    # not eligible: unchanged
    out = ~eligible
    assert np.array_equal(u2[out], u[out])
    assert np.array_equal(m2[out], m[out])
    missed = eligible & ~selected
    # global missed: multiplied by exactly ρ_G whatever m was
    gm = missed & is_global
    assert np.array_equal(u2[gm], u[gm] * p.rho_g)
    assert np.all(m2[gm] == p.global_miss_count)
    # non-global missed: m + 1, multiplied by ρ^min(m+1, M)
    for i in np.flatnonzero(missed & ~is_global):
        assert m2[i] == m[i] + 1
        assert u2[i] == u[i] * rho_pow(p.rho, min(int(m[i]) + 1, p.M))
        assert u2[i] <= u[i]


@SETTINGS
@given(unit, st.integers(0, 40), params_s())
def test_eq15_closed_form(u0: float, r: int, p: Params) -> None:
    u, m = np.array([u0]), np.array([0])
    for _ in range(r):
        u, m = selection_feedback(u, m, [True], [False], [False], p)
    h = cumulative_exponent(r, p.M)
    assert isinstance(h, int)
    closed = u0 * p.rho ** h
    assert abs(u[0] - closed) <= 1e-12 * max(closed, 1e-300)
    assert m[0] == r


@SETTINGS
@given(unit, st.integers(0, 40), st.booleans())
def test_rho_one_never_decays(u0: float, r: int, is_global: bool) -> None:
    p = Params(rho=1.0, rho_g=1.0)
    u, m = np.array([u0]), np.array([0])
    for _ in range(r):
        u, m = selection_feedback(u, m, [True], [False], [is_global], p)
    assert u[0] == u0


@SETTINGS
@given(feedback_case())
def test_selected_not_eligible_raises(case: tuple[np.ndarray, ...]) -> None:
    u, m, eligible, _, is_global = case
    selected = ~eligible
    if not selected.any():
        return
    try:
        selection_feedback(u, m, eligible, selected, is_global)
    except ValueError as e:
        assert "selected but not eligible" in str(e)
    else:
        raise AssertionError("selection_feedback accepted s > eps")


# ------------------------------------------------------------------- the reference tree


@st.composite
def tree_and_steps(draw: st.DrawFn) -> tuple[MemoryTree, list[list[bool]]]:
    t = MemoryTree(draw(params_s()))
    parents = ["root"]
    for i in range(draw(st.integers(0, 12))):
        what = draw(st.sampled_from(["task", "action", "global"]))
        par = draw(st.sampled_from(parents))
        if what == "task":
            t.add_task(f"t{i}", par)
            parents.append(f"t{i}")
        elif what == "action":
            t.add_action(f"a{i}", par)
            if draw(st.booleans()):
                t.record_outcome(f"a{i}", draw(st.booleans()))
        else:
            t.add_global(f"g{i}")
    steps = draw(st.lists(st.lists(st.booleans(), min_size=len(t.nodes),
                                   max_size=len(t.nodes)), max_size=8))
    return t, steps


@SETTINGS
@given(tree_and_steps())
def test_reference_step_invariants(case: tuple[MemoryTree, list[list[bool]]]) -> None:
    t, steps = case
    p = t.params
    for picks in steps:
        pool = t.candidate_pool()
        sel = [i for i, pick in zip(t.nodes, picks, strict=False) if pick and i in pool]
        before = {i: (n.u, n.m) for i, n in t.nodes.items()}
        t.select(sel)
        for i, n in t.nodes.items():
            u0, m0 = before[i]
            assert 0.0 <= n.u <= 1.0
            if i in sel:
                assert (n.u, n.m) == (u0, 0)
            elif i not in pool:
                assert (n.u, n.m) == (u0, m0)
            elif n.kind == "global":
                assert n.u == u0 * p.rho_g
            else:
                assert n.u == u0 * rho_pow(p.rho, min(m0 + 1, p.M))
        assert "root" not in pool
        assert t.nodes["root"].u == p.u_init_root


@SETTINGS
@given(tree_and_steps(), st.integers(0, 10))
def test_time_alone_changes_nothing(case: tuple[MemoryTree, list[list[bool]]],
                                    steps: int) -> None:
    """Steps in which a node is not a candidate, and new unrelated nodes, leave it be."""
    t, _ = case
    before = {i: (n.u, n.m, n.state) for i, n in t.nodes.items()}
    for k in range(steps):
        t.add_task(f"new{k}", "root")
        t.add_global(f"newg{k}")
        t.select([f"new{k}"], candidates=[f"new{k}", f"newg{k}"])
    for i, (u, m, z) in before.items():
        n = t.nodes[i]
        assert (n.u, n.m) == (u, m)
        # undecayed branches score >= 0.54 - 0.2 - 0.2 > τ_obs = 0.1: never suppressed
        assert n.state == z


@SETTINGS
@given(unit, st.integers(0, 30), params_s())
def test_reference_matches_closed_form(u0: float, r: int, p: Params) -> None:
    t = MemoryTree(p.with_(u_failure=0.0, u_success=1.0))
    t.add_action("a", "root")
    t.nodes["a"].u = u0
    for _ in range(r):
        t.select([])
    h = cumulative_exponent(r, p.M)
    assert isinstance(h, int)
    closed = u0 * p.rho ** h
    assert abs(t.nodes["a"].u - closed) <= 1e-12 * max(closed, 1e-300)
