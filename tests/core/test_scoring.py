"""Golden values derived by hand from the equations (docs/model.md §2–3, paper A.4).

Every expected number is written out as a literal with its arithmetic in a comment; none is
computed by the code under test. Default parameters unless stated: u_success 0.75,
u_failure 0.30, ρ 0.9, ρ_G 0.98, M 3, (α, β, γ, δ) = (0.6, 0.3, 0.2, 0.2), τ_obs 0.1.
"""

from __future__ import annotations

import numpy as np
import pytest

from wmtsim.core.params import Params
from wmtsim.core.scoring import (
    branch_priority,
    cumulative_exponent,
    decay_multiplier,
    event_score,
    selection_feedback,
)
from wmtsim.twins.reference import MemoryTree

REL = 1e-12


def approx(x: float) -> object:
    return pytest.approx(x, rel=REL, abs=1e-15)


# --------------------------------------------------------------------------- Eq. 2


def test_eq2_event_score() -> None:
    # success -> u_success = 0.75, failure -> u_failure = 0.30
    assert event_score([True, False, True]).tolist() == [0.75, 0.30, 0.75]
    p = Params(u_success=0.9, u_failure=0.1)
    assert event_score([False, True], p).tolist() == [0.1, 0.9]


def test_eq2_reference_replaces_and_keeps_m_by_default() -> None:
    """Eq. 3 changes m only on selection feedback: the event sets u and leaves m."""
    t = MemoryTree()
    t.add_action("a", "root")
    assert t.nodes["a"].u == 0.50  # u_init_action
    t.select([])  # missed once: 0.5 * 0.9 = 0.45, m = 1
    assert t.nodes["a"].u == approx(0.45)
    assert t.nodes["a"].m == 1
    t.record_outcome("a", success=True)
    assert (t.nodes["a"].u, t.nodes["a"].m, t.nodes["a"].outcome) == (0.75, 1, "success")
    t.select([])  # missed again: m = 2, u = 0.75 * 0.9^2
    assert (t.nodes["a"].u, t.nodes["a"].m) == (approx(0.75 * 0.81), 2)
    t.record_outcome("a", success=False)  # revised: replaces, does not blend
    assert (t.nodes["a"].u, t.nodes["a"].outcome) == (0.30, "failure")


def test_eq2_event_keeps_m_when_configured() -> None:
    t = MemoryTree(Params(event_resets_m=False))
    t.add_action("a", "root")
    t.select([])
    t.select([])
    t.record_outcome("a", success=True)
    assert (t.nodes["a"].u, t.nodes["a"].m) == (0.75, 2)


# --------------------------------------------------------------------------- Eq. 4


@pytest.mark.parametrize(("m", "g"), [
    (0, 1.0),      # 0.9^min(0,3) = 0.9^0
    (1, 0.9),      # 0.9^1
    (2, 0.81),     # 0.9·0.9
    (3, 0.729),    # 0.9·0.9·0.9
    (4, 0.729),    # capped at M = 3
    (5, 0.729),    # capped at M = 3
])
def test_eq4_non_global(m: int, g: float) -> None:
    assert decay_multiplier(m, False)[()] == approx(g)


@pytest.mark.parametrize("m", [0, 1, 2, 3, 7, 100])
def test_eq4_global_is_rho_g_whatever_m(m: int) -> None:
    assert decay_multiplier(m, True)[()] == 0.98


def test_eq4_other_params() -> None:
    p = Params(rho=0.5, rho_g=0.25, M=2)
    # 0.5^0, 0.5^1, 0.5^2, 0.5^min(3,2) ; globals 0.25
    assert decay_multiplier([0, 1, 2, 3], False, p).tolist() == [1.0, 0.5, 0.25, 0.25]
    assert decay_multiplier([0, 9], True, p).tolist() == [0.25, 0.25]


def test_eq4_rejects_negative_m() -> None:
    with pytest.raises(ValueError, match="m must be >= 0"):
        decay_multiplier(-1, False)


# --------------------------------------------------------------------------- Eqs. 3-5


def test_eq3_to_5_one_step() -> None:
    # nodes: selected; missed (m 0 -> 1, 0.5·0.9 = 0.45); missed (m 3 -> 4, 0.8·0.729 =
    # 0.5832); outside the pool (unchanged); missed global (0.6·0.98 = 0.588, m -> 1)
    u, m = selection_feedback(
        u=[0.7, 0.5, 0.8, 0.4, 0.6], m=[2, 0, 3, 5, 4],
        eligible=[True, True, True, False, True],
        selected=[True, False, False, False, False],
        is_global=[False, False, False, False, True])
    assert u[0] == 0.7
    assert u[1] == approx(0.45)
    assert u[2] == approx(0.5832)
    assert u[3] == 0.4
    assert u[4] == approx(0.588)
    assert m.tolist() == [0, 1, 4, 5, 1]


def test_eq3_global_miss_count_parameter() -> None:
    _, m = selection_feedback([0.6], [5], [True], [False], [True], Params(global_miss_count=0))
    assert m.tolist() == [0]


def test_eq3_selected_not_eligible_is_an_error() -> None:
    with pytest.raises(ValueError, match="node 1 is selected but not eligible"):
        selection_feedback([0.5, 0.5], [0, 0], [True, False], [False, True], [False, False])


def test_selection_feedback_does_not_modify_inputs() -> None:
    u = np.array([0.5])
    m = np.array([0])
    selection_feedback(u, m, [True], [False], [False])
    assert (u[0], m[0]) == (0.5, 0)


# --------------------------------------------------------------------------- Eq. 15


@pytest.mark.parametrize(("r", "h"), [
    (0, 0), (1, 1), (2, 3), (3, 6),  # r ≤ M: r(r+1)/2
    (4, 9), (5, 12), (10, 27),        # r > M: 3r − 3·2/2 = 3r − 3
])
def test_eq15_h_M3(r: int, h: int) -> None:
    assert cumulative_exponent(r, 3) == h


def test_eq15_other_M() -> None:
    # M = 1: h = r ; M = 5: r=5 -> 15, r=6 -> 5·6 − 10 = 20
    assert np.array_equal(cumulative_exponent(np.arange(5), 1), [0, 1, 2, 3, 4])
    assert np.array_equal(cumulative_exponent(np.array([5, 6]), 5), [15, 20])


@pytest.mark.parametrize(("r", "M"), [(-1, 3), (1.5, 3), (2, 0), (2, True)])
def test_eq15_invalid(r: object, M: object) -> None:
    with pytest.raises(ValueError, match="invalid"):
        cumulative_exponent(r, M)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- paper A.4

# failed poisoned blog lookup: 0.30, then 0.30·0.9^h(r)
BLOG = [
    0.30,           # r = 0
    0.27,           # r = 1: 0.30·0.9
    0.2187,         # r = 2: 0.30·0.9^3
    0.1594323,      # r = 3: 0.30·0.9^6
    0.1162261467,   # r = 4: 0.30·0.9^9
    0.0847288609443,  # r = 5: 0.30·0.9^12
]


def test_a4_failed_blog_lookup_reference() -> None:
    t = MemoryTree()
    t.add_task("t", "root")
    t.add_action("blog", "t", poisoned=True)
    t.record_outcome("blog", success=False)
    seen = [t.nodes["blog"].u]
    for _ in range(5):
        t.select([])
        seen.append(t.nodes["blog"].u)
    assert seen == [approx(x) for x in BLOG]


def test_a4_failed_blog_lookup_kernels() -> None:
    u, m = np.array([0.30]), np.array([0])
    for r in range(1, 6):
        u, m = selection_feedback(u, m, [True], [False], [False])
        assert u[0] == approx(BLOG[r])
        assert m[0] == r


def test_a4_plausible_mirror_page_same_as_clean() -> None:
    # a poisoned mirror page recorded as success scores 0.75, exactly like clean evidence,
    # and decays identically: 0.75, 0.675, 0.54675, 0.39858075
    t = MemoryTree()
    t.add_task("t", "root")
    t.add_action("mirror", "t", poisoned=True)
    t.add_action("clean", "t")
    t.record_outcome("mirror", success=True)
    t.record_outcome("clean", success=True)
    assert t.nodes["mirror"].u == t.nodes["clean"].u == 0.75
    expected = [0.675, 0.54675, 0.39858075]  # 0.75·0.9, ·0.81, ·0.729
    for x in expected:
        t.select([])
        assert t.nodes["mirror"].u == t.nodes["clean"].u == approx(x)
    # only selection feedback / supersession / obsolescence lower its influence
    t.supersede("mirror")
    assert "mirror" not in t.candidate_pool()
    assert "clean" in t.candidate_pool()


# --------------------------------------------------------------------------- Eq. 6


def test_eq6_small_branch_with_failure() -> None:
    # V_b = [t 0.9, ok 0.75, bad 0.30], |V_b| = 3, max 0.9, Σ = 1.95, F = 1/3, O = 0
    # U = 0.6·0.9 + (0.3/3)·1.95 − 0.2·(1/3) = 0.54 + 0.195 − 0.0666… = 0.6683333…
    t = MemoryTree()
    t.add_task("t", "root")
    t.add_action("ok", "t")
    t.add_action("bad", "t")
    t.record_outcome("ok", True)
    t.record_outcome("bad", False)
    assert t.branch_nodes("t") == ["t", "ok", "bad"]
    assert t.branch_priority("t") == approx(0.6683333333333333)
    assert branch_priority([0.9, 0.75, 0.30], [False, False, True],
                           [False, False, False]) == approx(0.6683333333333333)


def test_eq6_with_obsolete_subtree() -> None:
    # V_b(t) = [t 0.9, s 0.9 (obsolete), a 0.5 (under s), b 0.30 failed], |V_b| = 4
    # max 0.9, Σ 2.6, F = 1/4, O = 2/4 (s and a, whose ancestor s is obsolete)
    # U = 0.54 + 0.075·2.6 − 0.2·0.25 − 0.2·0.5 = 0.54 + 0.195 − 0.05 − 0.1 = 0.585
    t = MemoryTree()
    t.add_task("t", "root")
    t.add_task("s", "t")
    t.add_action("a", "s")
    t.add_action("b", "t")
    t.record_outcome("b", False)
    t.supersede("s")
    assert t.branch_priority("t") == approx(0.585)
    assert branch_priority([0.9, 0.9, 0.5, 0.3], [False, False, False, True],
                           [False, True, True, False]) == approx(0.585)
    # the sub-branch alone: [s 0.9, a 0.5], O = 2/2
    # U = 0.54 + 0.15·1.4 − 0 − 0.2·1 = 0.54 + 0.21 − 0.2 = 0.55
    assert t.branch_priority("s") == approx(0.55)


def test_eq6_obsolete_above_branch_root_does_not_count() -> None:
    # obsolete parent p above branch s: inside V_b(s) nothing is obsolete.
    # V_b(s) = [s 0.9] -> U = 0.54 + 0.3·0.9 = 0.81
    t = MemoryTree()
    t.add_task("p", "root")
    t.add_task("s", "p")
    t.supersede("p")
    assert t.branch_priority("s") == approx(0.81)


def test_eq6_folded_branch_includes_summary() -> None:
    # fold t: V_b = [t 0.9, a 0.5, t/summary 0.8], Σ 2.2, max 0.9
    # U = 0.54 + 0.1·2.2 = 0.76
    t = MemoryTree()
    t.add_task("t", "root")
    t.add_action("a", "t")
    assert t.complete("t") == "t/summary"
    assert t.branch_nodes("t") == ["t", "a", "t/summary"]
    assert t.branch_priority("t") == approx(0.76)


# --------------------------------------------------------------------------- Eq. 7


def test_eq7_branch_falls_below_tau() -> None:
    # Single-node branch "weak", missed every step: U = (0.6 + 0.3)·u = 0.9·u.
    # After r misses u = 0.9·0.9^h(r): r = 7 -> h = 18, u = 0.9^19 = 0.135085…,
    # U = 0.121576… ≥ 0.1 ; r = 8 -> h = 21, u = 0.9^22 = 0.098477…, U = 0.088629… < 0.1.
    t = MemoryTree()
    t.add_task("weak", "root")
    t.add_task("kept", "root")
    for _ in range(7):
        rep = t.select(["kept"])
        assert rep.suppressed == []
    assert rep.priorities["weak"] == approx(0.12157665459056936)
    assert t.nodes["weak"].state == "active"
    rep = t.select(["kept"])
    assert rep.priorities["weak"] == approx(0.08862938119652507)
    assert rep.suppressed == ["weak"]
    assert t.nodes["weak"].state == "obsolete"
    assert t.nodes["kept"].state == "active"
    # kept: selected every step, u stays 0.9: U = 0.81
    assert rep.priorities["kept"] == approx(0.81)
    assert t.candidate_pool() == ["kept"]
    u_frozen = t.nodes["weak"].u
    t.select([])
    assert t.nodes["weak"].u == u_frozen  # out of the pool: no further decay


def test_eq7_active_path_is_never_suppressed() -> None:
    t = MemoryTree(Params(tau_obs=0.95))  # every branch is below 0.95
    t.add_task("a", "root")
    t.add_task("b", "a")
    t.add_task("c", "root")
    t.activate("b")
    rep = t.select([])
    assert rep.suppressed == ["c"]
    assert (t.nodes["a"].state, t.nodes["b"].state) == ("active", "active")
