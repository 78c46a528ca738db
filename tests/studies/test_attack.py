"""The attack space and the worst-case search (issue 24; docs/attack.md)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from wmtsim.engine.simulation import run_engine
from wmtsim.engine.world import generate
from wmtsim.interfaces.cli.main import app
from wmtsim.studies.attack.search import SearchSettings, attack_scenario, evaluate, search
from wmtsim.studies.attack.space import (
    Anchor,
    Attack,
    AttackSpace,
    Injection,
    attack_world,
    expanded_poison,
    outside,
    p_supersede,
    scripted_attack,
    slot_probabilities,
    to_poison,
    truncate,
)
from wmtsim.studies.scenarios.scenario import load_scenario, shipped_scenarios

# Every shipped scenario with poison, late_poison's "the subtask's last position"
# (position 1000, clipped to the end: the space's `LAST`) included.
POISONED = [name for name in shipped_scenarios() if load_scenario(name).world.poison]
SMALL = SearchSettings(trials=4, n_search=40, n_holdout=40, startup=2)


@pytest.mark.parametrize("name", POISONED)
def test_the_scripted_attacks_are_points_of_the_space(name: str) -> None:
    """Every shipped scenario's injections are a point of the default space at their own
    budget, map back to the same injections, and draw the same trajectories."""
    s = load_scenario(name)
    space = AttackSpace()
    attack = scripted_attack(s.world)
    assert outside(attack, space, s.world, attack.budget) == []
    assert to_poison(attack, space, s.world) == expanded_poison(s.world)
    a, _, _ = run_engine(generate(s.world, seed=3, n=30), "wmt", s.params, s.stubs,
                         s.baselines)
    b, _, _ = run_engine(generate(attack_world(s.world, attack, space), seed=3, n=30), "wmt",
                         s.params, s.stubs, s.baselines)
    assert np.array_equal(a, b)


def test_the_stealth_trade_off() -> None:
    space = AttackSpace(stealth_relevance=4.0, stealth_persuasiveness=2.0)
    anchor = Anchor(r0=0.5, pi0=0.8, p0=0.3)
    assert p_supersede(space, anchor, 0.5, 0.8) == 0.3
    grid = np.linspace(0, 1, 11)
    by_r = [p_supersede(space, anchor, r, 0.8) for r in grid]
    by_pi = [p_supersede(space, anchor, 0.5, pi) for pi in grid]
    assert all(0 < p < 1 for p in by_r + by_pi)
    assert np.all(np.diff(by_r) > 0) and np.all(np.diff(by_pi) > 0)
    # one more unit of relevance multiplies the odds of detection by e^β_r
    odds = [p / (1 - p) for p in (p_supersede(space, anchor, 0.6, 0.8),
                                  p_supersede(space, anchor, 0.7, 0.8))]
    assert odds[1] / odds[0] == pytest.approx(np.exp(0.4))
    off = AttackSpace(stealth_relevance=0.0, stealth_persuasiveness=0.0)
    assert {p_supersede(off, anchor, r, 1.0 - r) for r in grid} == {0.3}
    assert p_supersede(space, Anchor(0.5, 0.8, 0.0), 1.0, 1.0) == 0.0


def test_budgets_and_truncation() -> None:
    assert slot_probabilities(4) == (1.0, 1.0, 1.0, 1.0)
    assert slot_probabilities(4.09) == (1.0, 1.0, 1.0, 1.0, 0.09)
    assert slot_probabilities(0.5) == (0.5,)
    s = load_scenario("paper_poisoning")
    full = scripted_attack(s.world)
    assert full.budget == pytest.approx(4.09)
    assert truncate(full, 4.09) == full
    head = truncate(full, 2)
    assert head is not None and [i.kind for i in head.injections] == ["plausible"] * 2
    assert truncate(full, 5) is None  # the script has fewer injections
    assert truncate(full, 3.5) is None  # its fourth injection is a sure one
    with pytest.raises(ValueError, match="--budget"):
        slot_probabilities(0)


def test_a_point_outside_the_bounds_is_named() -> None:
    s = load_scenario("paper_poisoning")
    space = AttackSpace.from_kinds(("failed",), relevance_max=0.5)
    attack = Attack((Injection(kind="plausible", apparent_relevance=0.9),))
    reasons = outside(attack, space, s.world, 1)
    assert any("s0.kind='plausible'" in r for r in reasons)
    assert any("s0.apparent_relevance=0.9" in r for r in reasons)
    with pytest.raises(ValueError, match="--kinds 'bogus' is unknown"):
        AttackSpace.from_kinds(("bogus",))


def test_the_worst_case_is_chosen_on_the_search_trajectories() -> None:
    """Trial 0 is the scripted attack at the budget, on the search trajectories; the
    reported worst case is the most harmful trial there (the scripted attack when none
    beats it), whatever the held-out trajectories say (for every policy and both a whole
    and a fractional budget). Its held-out harm: tests/studies/test_coverage_studies.py."""
    s = load_scenario("paper_poisoning")
    space = AttackSpace()
    for policy, budget in (("wmt", 2.0), ("linear", 4.09), ("a3_no_semantic", 1.0)):
        r = search(s, policy, budget, space, SMALL)
        scripted = truncate(scripted_attack(s.world), budget)
        assert r.scripted == scripted and r.trials[0]["scripted"]
        on_search = evaluate(s, policy, scripted, space, SMALL.search_seed, SMALL.n_search)
        assert r.trials[0]["harm"] == on_search.value("asr")
        held = evaluate(s, policy, scripted, space, SMALL.holdout_seed, SMALL.n_holdout)
        assert np.array_equal(r.scripted_eval.counts, held.counts)
        top = max(t["harm"] for t in r.trials)
        assert top >= r.trials[0]["harm"]
        assert r.chosen == r.best and r.chosen_eval is r.found
        assert r.chosen_is_scripted == (r.trials[0]["harm"] == top)
    only = search(s, "wmt", 2.0, space, replace(SMALL, trials=1))
    assert only.chosen == only.scripted


def test_a_found_attack_replays_bit_identically_from_its_toml(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    s = load_scenario("paper_poisoning")
    space = AttackSpace(stealth_relevance=2.0)
    r = search(s, "wmt", 3.0, space, replace(SMALL, trials=6, harm="1-tsr"))
    path = tmp_path / "attack.toml"
    path.write_text(attack_scenario(s, r, space).to_toml())
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(app, ["run", str(path), "--out", "replay"])
    assert res.exit_code == 0, res.output
    t = pl.read_parquet(tmp_path / "replay" / "trajectories.parquet")
    from wmtsim.core.metrics import COUNTERS

    replayed = t.select([f"n_{c}" for c in COUNTERS]).to_numpy()
    assert np.array_equal(replayed, r.chosen_eval.counts)


def test_a_search_resumes_from_its_log(tmp_path: Path) -> None:
    s = load_scenario("paper_poisoning")
    space = AttackSpace()
    log = tmp_path / "trials.jsonl"
    first = search(s, "wmt", 2.0, space, replace(SMALL, trials=3), log=log)
    assert first.new_trials == 3
    again = search(s, "wmt", 2.0, space, replace(SMALL, trials=5), log=log)
    assert again.new_trials == 2
    assert again.trials[:3] == first.trials[:3]
    with open(log, "a") as f:  # a line cut short by a kill is ignored
        f.write('{"study": "' + again.study_name + '", "number": 5, "par')
    third = search(s, "wmt", 2.0, space, replace(SMALL, trials=5), log=log)
    assert third.new_trials == 0 and third.best == again.best
    other = search(s, "linear", 2.0, space, replace(SMALL, trials=2), log=log)
    assert other.new_trials == 2  # another study in the same log


@pytest.mark.parametrize(("argv", "text"), [
    (["--harm", "fun"], "--harm 'fun' is unknown"),
    (["--budget", "0"], "--budget '0' is invalid"),
    (["--budget", "x"], "--budget 'x' is invalid"),
    (["--space", "nope=1"], "--space 'nope=1'"),
    (["--space", "stealth_relevance=-1"], "--space stealth_relevance=-1 is invalid"),
    (["--kinds", "bogus"], "--kinds 'bogus' is unknown"),
    (["--holdout-seed", "0"], "--holdout-seed 0"),
    (["-p", "nope"], "--policy 'nope' is unknown"),
])
def test_bad_options_exit_2_and_write_nothing(argv: list[str], text: str, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(app, ["attack", "paper_poisoning", "--trials", "1", "--n", "5",
                                   "--n-holdout", "5", *argv])
    assert res.exit_code == 2, res.output
    assert text in " ".join(res.stderr.split())
    assert list(tmp_path.iterdir()) == []


def test_the_command_writes_the_study(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    argv = ["attack", "paper_poisoning", "-p", "wmt", "-p", "linear", "-p", "a1_unweighted",
            "--budget", "1,2", "--trials", "3", "--n", "30", "--n-holdout", "30",
            "--no-charts", "--out", "atk"]
    res = CliRunner().invoke(app, argv)
    assert res.exit_code == 0, res.output
    out = tmp_path / "atk"
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["budgets"] == [1.0, 2.0] and manifest["settings"]["trials"] == 3
    trials = pl.read_parquet(out / "search.parquet")
    assert trials.height == 3 * 2 * 3
    assert trials.filter(pl.col("number") == 0)["scripted"].all()
    results = pl.read_parquet(out / "results.parquet")
    assert (results["worst_harm"] >= results["scripted_harm"]).all()
    transfer = pl.read_parquet(out / "transfer.parquet")
    assert transfer.height == 9 and set(transfer["budget"]) == {2.0}
    assert sorted(p.name for p in (out / "attacks").iterdir()) == sorted(
        f"{p}-k{k}.toml" for p in ("wmt", "linear", "a1_unweighted") for k in (1, 2))
    claims = json.loads((out / "claims.json").read_text())
    assert {c["attack"] for c in claims} == {"scripted", "worst"}
    # Run again: every trial comes from the log, the result is the same.
    res = CliRunner().invoke(app, argv)
    assert res.exit_code == 0 and "(0 run now)" in res.output
    assert pl.read_parquet(out / "results.parquet").equals(results)


def test_no_differing_trajectory_prints_an_upper_bound_not_an_interval() -> None:
    """A row whose worst case is the scripted attack differs on no held-out trajectory:
    worst − scripted is 0 with the weighted rule of three's upper bound (for a pooled rate
    the share of the denominator the three largest trajectories hold: 0.0949 here, 3/n =
    0.075 if every trajectory's denominator were the same), printed
    as an upper bound (CLI report, docs table, dashboard), never ``0 [-b, +b]``."""
    from types import SimpleNamespace

    from wmtsim.studies.attack.study import effect, effect_column, robust_markdown, robust_table

    s = load_scenario("paper_poisoning")
    only = search(s, "wmt", 2.0, AttackSpace(), replace(SMALL, trials=1))
    assert only.chosen == only.scripted
    table = robust_table({("wmt", 2.0): only})
    row = table.row(0, named=True)
    assert row["gain_n_nonzero"] == 0 and row["gain"] == 0.0 and row["gain_n"] == 40
    text = effect(row, "gain")
    assert text == ("0 (none of 40 differ; 95% upper bound on the size of the difference: "
                    "0.0949, rule of three)")
    study = SimpleNamespace(robust=table, settings=SimpleNamespace(harm="asr"))
    line = robust_markdown(study).splitlines()[-1]  # type: ignore[arg-type]
    assert line.endswith(f"| {text} |") and "[" not in line
    shown = effect_column(table, "gain", "worst − scripted")
    assert shown["worst − scripted"].to_list() == [text]
    assert not [c for c in shown.columns if c.startswith("gain")]


def test_the_adaptive_rules_are_coordinates_of_the_space() -> None:
    """Issue 24: the adaptive rules are named options of each injection; off with
    ``adaptive = false`` (or without ``choose_place``), never for a global injection."""
    from wmtsim.core.world_spec import ADAPTIVE_RULES
    from wmtsim.studies.attack.space import dimensions, from_params, to_params

    world = load_scenario("paper_poisoning").world
    dims = {d.name: d for d in dimensions(AttackSpace(), world, 2.0)}
    assert dims["s0.adaptive"].choices == ADAPTIVE_RULES
    assert dims["s1.adaptive"].choices == ADAPTIVE_RULES
    off = {d.name: d for d in dimensions(AttackSpace(adaptive=False), world, 2.0)}
    assert off["s0.adaptive"].choices == ("none",)
    random_place = {d.name: d for d in dimensions(AttackSpace(choose_place=False), world, 1.0)}
    assert random_place["s0.adaptive"].choices == ("none",)
    point = Attack((Injection("plausible", adaptive="reinject"),
                    Injection("global", adaptive="none")))
    params = to_params(point)
    assert params["s0.adaptive"] == "reinject"
    assert from_params(params, 2.0) == point
    assert [p.adaptive for p in to_poison(point, AttackSpace(), world)] == ["reinject", "none"]
    # A global injection's rule is dropped whatever the sampler proposed.
    assert from_params({**params, "s1.adaptive": "after_evidence"}, 2.0) == point
