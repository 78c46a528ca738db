"""Mechanism attribution (`wmtsim.studies.attribution.attribution`): Shapley values, the
dependency rule, efficiency against `simulate`, intervals, outputs and the ``attribute`` command."""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import field, make_dataclass, replace
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from wmtsim.core.policies import (
    POLICIES,
    SEL_BRANCHES,
    SEL_EVERYTHING,
    SEL_ITEMS,
    SWITCH,
    Policy,
)
from wmtsim.engine import run
from wmtsim.engine.simulation import simulate
from wmtsim.engine.world import generate
from wmtsim.interfaces.cli.main import app
from wmtsim.studies.attribution.attribution import (
    DEPENDENCIES,
    Attribution,
    attribute,
    coalition_policy,
    differing_switches,
    is_meaningful,
    permutation_masks,
    resolve,
    shapley_exact,
    shapley_sampled,
    switch_names,
    waterfall_frame,
    write_attribution,
)
from wmtsim.studies.scenarios.scenario import Scenario, load_scenario

# --- Shapley values on toy games -----------------------------------------------------------


def test_two_player_game_by_hand() -> None:
    # v(∅)=0, v({0})=1, v({1})=2, v({0,1})=4:
    # φ0 = ½(1 − 0) + ½(4 − 2) = 1.5, φ1 = ½(2 − 0) + ½(4 − 1) = 2.5
    phi = shapley_exact(np.array([0.0, 1.0, 2.0, 4.0]))
    assert phi.tolist() == [1.5, 2.5]


def test_glove_game_by_hand() -> None:
    # Player 0 holds a left glove, players 1 and 2 a right glove each; a coalition is
    # worth 1 when it can make a pair. Player 0 is pivotal in 4 of the 6 orders (φ = 2/3);
    # each right glove is pivotal only when it follows player 0 and comes before the other
    # right glove: 1 order of 6 (φ = 1/6).
    v = np.array([float(bool(m & 1) and bool(m & 6)) for m in range(8)])
    assert shapley_exact(v) == pytest.approx([2 / 3, 1 / 6, 1 / 6], abs=1e-15)


def test_exact_rejects_a_table_that_is_not_a_lattice() -> None:
    with pytest.raises(ValueError, match="2\\^k"):
        shapley_exact(np.zeros(6))


games = st.integers(1, 5).flatmap(lambda k: st.lists(
    st.floats(-1e3, 1e3, allow_nan=False), min_size=1 << k, max_size=1 << k))


@settings(max_examples=60, deadline=None)
@given(games)
def test_efficiency(values: list[float]) -> None:
    v = np.array(values)
    assert shapley_exact(v).sum() == pytest.approx(v[-1] - v[0], abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 5), st.lists(st.floats(-10, 10), min_size=5, max_size=5))
def test_symmetric_players_get_the_same_value(k: int, weights: list[float]) -> None:
    # v(S) = (Σ_{j∈S} w_j)^3 with w_0 = w_1: players 0 and 1 are interchangeable.
    w = np.array([weights[0], *weights[:k - 1]])
    v = np.array([sum(w[j] for j in range(k) if m >> j & 1) ** 3 for m in range(1 << k)])
    phi = shapley_exact(v)
    assert phi[0] == pytest.approx(phi[1], rel=1e-9, abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 5), st.integers(0, 4), st.randoms(use_true_random=False))
def test_null_player_gets_zero(k: int, null: int, rnd: random.Random) -> None:
    null %= k
    base = [rnd.uniform(-5, 5) for _ in range(1 << k)]
    v = np.array([base[m & ~(1 << null)] for m in range(1 << k)])  # ignores the null player
    assert shapley_exact(v)[null] == 0.0


@settings(max_examples=30, deadline=None)
@given(games, st.integers(1, 20), st.integers(0, 2**32 - 1))
def test_sampled_orders_are_efficient_for_every_order(values: list[float], r: int,
                                                      seed: int) -> None:
    v = np.array(values)
    k = v.size.bit_length() - 1
    rng = np.random.default_rng(seed)
    orders = np.stack([rng.permutation(k) for _ in range(r)])
    phi, per_order = shapley_sampled(lambda m: v[m], k, orders)
    assert per_order.sum(axis=1) == pytest.approx(np.full(r, v[-1] - v[0]), abs=1e-9)
    assert phi.sum() == pytest.approx(v[-1] - v[0], abs=1e-9)
    assert set(permutation_masks(k, orders)) >= {0, (1 << k) - 1}


def test_all_orders_give_the_exact_values() -> None:
    rng = np.random.default_rng(7)
    v = rng.normal(size=(16, 3))  # 4 players, 3 games (trajectories) at once
    orders = np.array(list(itertools.permutations(range(4))))
    phi, _ = shapley_sampled(lambda m: v[m], 4, orders)
    assert phi == pytest.approx(shapley_exact(v), abs=1e-12)


# --- switches and the dependency rule ------------------------------------------------------


def test_switches_are_the_policy_fields_declared_switches() -> None:
    assert switch_names() == ("tree", "scores", "selection", "fold", "reopen", "lifecycle",
                              "supersede")
    # A new field declared a switch is picked up; one not declared never becomes one.
    wider = make_dataclass("WiderPolicy", [
        ("echo", bool, field(default=False, metadata=SWITCH)),
        ("budget_share", float, field(default=1.0))], bases=(Policy,), frozen=True,
        kw_only=True)
    assert switch_names(wider)[-1] == "echo"
    assert "budget_share" not in switch_names(wider)
    a = wider(**{**POLICIES["wmt"].__dict__, "echo": False, "budget_share": 0.5})
    b = wider(**{**POLICIES["wmt"].__dict__, "echo": True})
    assert differing_switches(a, b) == ("echo",)


def test_policies_and_attributions_are_built_by_keyword() -> None:
    """Six unnamed booleans in a row are unreadable: both records take keywords only."""
    with pytest.raises(TypeError, match="positional"):
        Policy("x", "X", False, False, SEL_ITEMS, False, False, False)  # type: ignore[misc]
    with pytest.raises(TypeError, match="positional"):
        Attribution("s", "linear", "wmt", (), "exact", 1, 0, pl.DataFrame(),  # type: ignore[misc]
                    pl.DataFrame(), 1, 0.0, {})


def test_players_of_the_shipped_comparisons() -> None:
    lin, wmt, a2, a3 = (POLICIES[p] for p in ("linear", "wmt", "a2_no_controller",
                                              "a3_no_semantic"))
    assert differing_switches(lin, wmt) == ("tree", "scores", "selection", "fold", "reopen",
                                            "lifecycle", "supersede")
    assert differing_switches(a2, wmt) == ("fold", "reopen", "lifecycle", "supersede")
    assert differing_switches(a3, wmt) == ("selection",)


def test_every_shipped_wmt_configuration_is_meaningful() -> None:
    for p in POLICIES.values():
        if p.selection <= SEL_BRANCHES:
            assert is_meaningful(p), p.name


def test_a_dependent_switch_waits_for_its_prerequisite() -> None:
    lin, a3 = POLICIES["linear"], POLICIES["a3_no_semantic"]
    players = differing_switches(lin, a3)
    # {selection}: A3's branch selection without scores -> selection stays Linear's.
    sel = 1 << players.index("selection")
    config, moved = coalition_policy(lin, a3, players, sel)
    assert moved == ("selection",) and config.selection == SEL_EVERYTHING
    assert config == replace(lin, name=lin.name, label=lin.name)
    # {selection, scores}: the prerequisite is there, A3's selection applies.
    config, moved = coalition_policy(lin, a3, players, sel | 1 << players.index("scores"))
    assert moved == () and config.selection == SEL_BRANCHES and config.scores
    # {reopen}: nothing is folded, so reopen stays off.
    config, moved = coalition_policy(lin, a3, players, 1 << players.index("reopen"))
    assert moved == ("reopen",) and not config.reopen


def test_a_dependent_switch_follows_its_prerequisite_off() -> None:
    # From A3 to Linear: turning scores off turns A3's branch selection and suppression
    # (both read the branch priority) off with it.
    lin, a3 = POLICIES["linear"], POLICIES["a3_no_semantic"]
    players = differing_switches(a3, lin)
    config, moved = coalition_policy(a3, lin, players, 1 << players.index("scores"))
    assert moved == ("selection", "lifecycle") and config.selection == SEL_EVERYTHING
    assert not config.lifecycle
    assert not config.scores and is_meaningful(config)


def test_resolve_refuses_when_no_end_helps() -> None:
    bad = replace(POLICIES["tree"], selection=SEL_BRANCHES)
    with pytest.raises(ValueError, match="needs scores"):
        resolve(bad, bad, bad)


def test_the_rule_names_an_equivalent_configuration() -> None:
    # Reopen without fold runs exactly as no reopen: the rule loses nothing.
    sc = load_scenario("gaia_like")  # p_resume > 0: the agent does resume subtasks
    world = generate(sc.world, seed=3, n=60)
    ts = POLICIES["tree_selection"]
    with_reopen = replace(ts, reopen=True)
    a = run(world, ts.pack(), sc.params.pack(), sc.stubs.pack(), 0, 1)[0]
    b = run(world, with_reopen.pack(), sc.params.pack(), sc.stubs.pack(), 0, 1)[0]
    assert np.array_equal(a, b)
    assert [d.switch for d in DEPENDENCIES][:2] == ["reopen", "selection"]


# --- attribution on the engine -------------------------------------------------------------


@pytest.fixture(scope="module")
def poisoning() -> Scenario:
    return load_scenario("paper_poisoning")


@pytest.fixture(scope="module")
def lin_to_wmt(poisoning: Scenario) -> Attribution:
    return attribute(poisoning, "linear", "wmt",
                     metrics=("asr", "prr", "ip", "tsr", "prompt_tokens",
                              "avg_prompt_tokens"), n=120, seed=5, n_resamples=300)


def test_efficiency_against_simulate(poisoning: Scenario, lin_to_wmt: Attribution) -> None:
    sc = poisoning
    att = lin_to_wmt
    frames = {p: simulate(sc.world, p, n=120, seed=5, params=sc.params,
                          stubs=sc.stubs).trajectories
              for p in ("linear", "wmt")}
    for metric, rows in att.table.group_by("metric", maintain_order=True):
        ids = att.common[metric[0]]
        means = {}
        for p, f in frames.items():
            f = f.with_columns((pl.col("prompt_tokens") / pl.col("steps"))
                               .alias("avg_prompt_tokens"))
            means[p] = f.filter(pl.col("trajectory").is_in(ids.tolist()))[metric[0]].mean()
        total = rows["contribution"].sum()
        exact = {"rel": 1e-12, "abs": 1e-12}  # equal up to floating-point rounding
        assert total == pytest.approx(means["wmt"] - means["linear"], **exact), metric
        assert rows["from_mean"][0] == pytest.approx(means["linear"], **exact)
        assert rows["to_mean"][0] == pytest.approx(means["wmt"], **exact)
    # TSR and tokens are defined for every trajectory: the plain means of simulate.
    tsr = att.table.filter(pl.col("metric") == "tsr")
    assert tsr["n"][0] == 120
    assert tsr["contribution"].sum() == pytest.approx(
        frames["wmt"]["tsr"].mean() - frames["linear"]["tsr"].mean(), abs=1e-12)


def test_shape_intervals_and_null_player(lin_to_wmt: Attribution) -> None:
    t = lin_to_wmt.table
    assert {"metric", "mechanism", "contribution", "low", "high"} <= set(t.columns)
    assert t.height == 6 * 7  # 6 metrics × 7 switches
    fin = t.filter(pl.col("low").is_not_nan())
    assert (fin["low"] <= fin["contribution"] + 1e-12).all()
    assert (fin["contribution"] <= fin["high"] + 1e-12).all()
    # paper_poisoning never resumes a subtask: reopen is a null player, exactly.
    reopen = t.filter(pl.col("switch") == "reopen")
    # a null player: no trajectory carries a contribution, so no [0, 0] interval but
    # the rule of three (or no bound for an unbounded metric)
    assert (reopen["contribution"] == 0).all() and (reopen["n_nonzero"] == 0).all()
    assert (reopen["p"] == 1.0).all()
    # The tree switch only adds structure tokens; under paper_poisoning's binding budget
    # (no item cap since issue 19) they change what fits, so its PRR effect is small,
    # not zero.
    assert abs(t.filter((pl.col("switch") == "tree") & (pl.col("metric") == "prr"))[
        "contribution"][0]) < 0.02
    # 128 coalitions, fewer distinct configurations (the rule maps some onto others).
    assert lin_to_wmt.coalitions.height == 128
    assert lin_to_wmt.runs < 128


def test_sampled_orders_on_the_engine(poisoning: Scenario) -> None:
    att = attribute(poisoning, "linear", "wmt", metrics=("tsr",), n=60, seed=1,
                    permutations=12, n_resamples=200)
    assert att.method == "sampled"
    t = att.table
    assert t["contribution"].sum() == pytest.approx(t["to_mean"][0] - t["from_mean"][0],
                                                    abs=1e-12)
    assert t["perm_se"].is_finite().any()


def test_undefined_metric_has_an_empty_common_set() -> None:
    sc = load_scenario("gaia_like")  # no poison: IP is undefined for every trajectory
    att = attribute(sc, "a2_no_controller", "wmt", metrics=("ip", "tsr"), n=30,
                    n_resamples=100)
    ip = att.table.filter(pl.col("metric") == "ip")
    assert (ip["n"] == 0).all() and ip["contribution"].is_nan().all()
    assert (att.table.filter(pl.col("metric") == "tsr")["n"] == 30).all()


def test_bad_requests(poisoning: Scenario) -> None:
    with pytest.raises(ValueError, match="same switches"):
        attribute(poisoning, "wmt", "wmt", n=5)
    with pytest.raises(ValueError, match="unknown"):
        attribute(poisoning, "wmt", "nope", n=5)
    with pytest.raises(ValueError, match="field's policies"):
        attribute(poisoning, "memgpt", "wmt", n=5)
    with pytest.raises(ValueError, match="metric"):
        attribute(poisoning, "linear", "wmt", metrics=("nope",), n=5)
    with pytest.raises(ValueError, match="meaningful"):
        attribute(poisoning, replace(POLICIES["tree"], selection=SEL_BRANCHES), "wmt",
                  n=5)


def test_waterfall_frame_walks_from_p_to_q(lin_to_wmt: Attribution) -> None:
    wf = waterfall_frame(lin_to_wmt.table).filter(pl.col("metric") == "tsr")
    assert wf["bar"][0] == "linear" and wf["bar"][-1] == "wmt"
    steps = wf[1:-1]
    assert steps["end"][-1] == pytest.approx(wf["end"][-1], abs=1e-12)
    assert steps["start"][1:].to_list() == pytest.approx(steps["end"][:-1].to_list())


def test_write_attribution(tmp_path: Path, poisoning: Scenario) -> None:
    att = attribute(poisoning, "a2_no_controller", "wmt", metrics=("asr", "tsr"), n=40,
                    n_resamples=100)
    written = write_attribution(att, tmp_path)
    names = {p.name for p in written}
    assert {"attribution.parquet", "coalitions.parquet", "waterfall.html", "waterfall.png",
            "manifest.json"} <= names
    back = pl.read_parquet(tmp_path / "attribution.parquet")
    assert back.equals(att.table)
    assert (tmp_path / "waterfall.png").read_bytes()[:4] == b"\x89PNG"


def test_attribute_command(tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["attribute", "paper_poisoning", "--from", "a2_no_controller",
                              "--to", "wmt", "--metric", "asr", "--metric", "tsr",
                              "--n", "40", "--out", str(tmp_path), "--no-charts"])
    assert res.exit_code == 0, res.output
    assert "supersession" in res.output and "suppression" in res.output
    assert (tmp_path / "attribution.parquet").is_file()
    bad = runner.invoke(app, ["attribute", "paper_poisoning", "--from", "wmt", "--to",
                              "bogus"])
    assert bad.exit_code == 2 and "bogus" in bad.output
    same = runner.invoke(app, ["attribute", "paper_poisoning", "--from", "wmt", "--to", "wmt"])
    assert same.exit_code == 2


def test_contributions_do_not_depend_on_threads(poisoning: Scenario) -> None:
    a = attribute(poisoning, "a2_no_controller", "wmt", metrics=("asr",), n=30,
                  threads=1, n_resamples=50)
    b = attribute(poisoning, "a2_no_controller", "wmt", metrics=("asr",), n=30,
                  threads=2, n_resamples=50)
    assert a.table.equals(b.table)
    assert not math.isnan(a.table["contribution"][0])


def test_items_selection_is_a_player_between_a3_and_wmt(poisoning: Scenario) -> None:
    att = attribute(poisoning, "a3_no_semantic", "wmt", metrics=("asr",), n=40,
                    n_resamples=50)
    assert att.table["mechanism"].to_list() == ["selection branches→items"]
    assert POLICIES["wmt"].selection == SEL_ITEMS
