"""Calibration as inference: replicate corpora at the paper's corpus size,
common random numbers, the paper value's place in its predictive distribution, a
likelihood objective, held-out rows and the robustness of claims. Small sizes only."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import polars as pl
import pytest

from wmtsim.core.policies import POLICIES
from wmtsim.studies.calibration.calibrate import Knob
from wmtsim.studies.calibration.inference import (
    claim_holds,
    corpus_values,
    fit,
    held_out,
    inside_share,
    near_optimal,
    objective,
    predictive_cell,
    predictive_cells,
    replicate,
    robustness,
)
from wmtsim.studies.compare.claims import Claim
from wmtsim.studies.scenarios.scenario import load_scenario

T4 = ("linear", "a1_unweighted", "a2_no_controller", "a3_no_semantic", "wmt")


@pytest.fixture(scope="module")
def scenario():  # type: ignore[no-untyped-def]
    return load_scenario("paper_poisoning")


def test_corpus_values_pool_within_blocks() -> None:
    frame = pl.DataFrame({"n_compromised_steps": [1, 0, 2, 2], "n_critical_steps": [2, 2, 2, 2],
                          "n_success": [1, 0, 0, 0], "n_tasks": [1, 1, 1, 1]})
    assert corpus_values(frame, "asr", 2).tolist() == [0.25, 1.0]
    assert corpus_values(frame, "tsr", 2).tolist() == [0.5, 0.0]
    assert corpus_values(frame, "asr", 4).tolist() == [5 / 8]
    with pytest.raises(ValueError, match="cannot make one corpus"):
        corpus_values(frame, "asr", 5)


def test_replicates_split_one_run_on_common_random_numbers(scenario) -> None:  # type: ignore[no-untyped-def]
    from wmtsim.engine.simulation import simulate
    from wmtsim.engine.world import generate

    rep = replicate(scenario, ("wmt", "linear"), replicates=3, corpus=20)
    assert rep.replicates == 3
    # Corpus 2 is trajectories 40..59 of the same seed, pooled by hand.
    t = simulate(generate(scenario.world, seed=scenario.seed, n=60), "wmt",
                 params=scenario.params, stubs=scenario.stubs).trajectories[40:60]
    by_hand = t["n_compromised_steps"].sum() / t["n_critical_steps"].sum()
    assert rep.values["wmt"]["asr"][2] == pytest.approx(by_hand)
    assert rep.values["wmt"]["tsr"][2] == pytest.approx(t["n_success"].mean())
    # The same world for every configuration: the injected poison is a world property.
    ip_den = {p: simulate(generate(scenario.world, seed=scenario.seed, n=60), p,
                          params=scenario.params, stubs=scenario.stubs
                          ).trajectories["n_p_i"].sum() for p in ("wmt", "linear")}
    assert ip_den["wmt"] == ip_den["linear"]


def test_predictive_cell_places_the_paper_value() -> None:
    v = np.arange(1, 101) / 100.0
    mid = predictive_cell(v, float(v.mean()), "asr")
    assert mid["z"] == pytest.approx(0.0) and mid["quantile"] == pytest.approx(0.5)
    assert mid["inside"]
    far = predictive_cell(v, 2.0, "asr")
    assert not far["inside"] and far["quantile"] == 1.0 and far["z"] > 3
    # A deterministic cell gets the floor SD, so its z is finite.
    flat = predictive_cell(np.ones(10), 0.99, "ip")
    assert flat["sd"] == pytest.approx(0.005) and flat["z"] == pytest.approx(-2.0)


def test_objective_is_a_gaussian_likelihood() -> None:
    cells = [{"policy": "wmt", "metric": "asr", "z": 2.0, "sd": 0.1},
             {"policy": "wmt", "metric": "tsr", "z": -1.0, "sd": 0.2},
             {"policy": "linear", "metric": "asr", "z": 9.0, "sd": 0.1}]
    assert objective(cells, ("wmt",), ("asr", "tsr"), "z2") == pytest.approx(5.0)
    nll = 5.0 + 2 * math.log(0.1) + 2 * math.log(0.2)
    assert objective(cells, ("wmt",), ("asr", "tsr"), "nll") == pytest.approx(nll)
    with pytest.raises(ValueError, match="allowed: nll, z2"):
        objective(cells, ("wmt",), ("asr",), "l1")


def _target(scenario, value: float) -> dict[str, dict[str, float]]:  # type: ignore[no-untyped-def]
    rep = replicate(scenario.with_overrides({"stubs.p_persuade": value}), T4, 2, 100)
    return {p: {m: rep.pooled[p][m] for m in ("asr", "prr", "br", "af", "tsr")} for p in T4}


def test_fit_recovers_a_known_knob(scenario) -> None:  # type: ignore[no-untyped-def]
    table = _target(scenario, 0.5)
    r = fit(scenario, table, [Knob("stubs.p_persuade", 0.0, 1.0)], metrics=("asr",),
            replicates=4, corpus=50, maxiter=3, popsize=4, kind="z2")
    assert abs(float(r.fitted["stubs.p_persuade"]) - 0.5) < 0.1
    assert r.objective == min(e.objective for e in r.evaluations)
    assert len(r.evaluations) >= 4
    assert 0.0 <= inside_share(r.cells) <= 1.0
    assert {c["policy"] for c in r.cells} == set(T4)


def test_held_out_row_is_not_fitted(scenario) -> None:  # type: ignore[no-untyped-def]
    table = _target(scenario, 0.5)
    out = held_out(scenario, table, [Knob("stubs.p_persuade", 0.0, 1.0)], rows=("wmt",),
                   metrics=("asr",), replicates=3, corpus=30, maxiter=1, popsize=3)
    (row,) = out
    assert row["held_out"] == "wmt"
    assert {c["policy"] for c in row["cells"]} == {"wmt"}
    assert row["of"] == 1 and row["inside"] in (0, 1)


def test_claims_over_plausible_worlds(scenario) -> None:  # type: ignore[no-untyped-def]
    others = tuple(p for p in T4 if p != "wmt")
    c = Claim("Full WMT lowest ASR", "asr", "wmt", others)
    pooled = {p: {"asr": 0.5} for p in T4}
    assert not claim_holds(c, pooled)  # a tie is not "lowest"
    pooled["wmt"]["asr"] = 0.4
    assert claim_holds(c, pooled)
    table = _target(scenario, 0.5)
    r = fit(scenario, table, [Knob("stubs.p_persuade", 0.0, 1.0)], metrics=("asr",),
            replicates=2, corpus=30, maxiter=1, popsize=3)
    flip = ("all supersede", {}, {p: replace(POLICIES[p], supersede=True) for p in T4})
    rows = robustness(r, flips=[flip], claims=[c])
    (row,) = rows
    assert row["n_near_optimal"] == len(near_optimal(r)) >= 1
    assert row["n_flips"] == 1
    assert 0.0 <= row["share"] <= 1.0
    assert predictive_cells(replicate(scenario, ("wmt",), 2, 10), {"wmt": {"asr": 0.3}})


KNOBS = [Knob("stubs.p_persuade", 0.0, 1.0), Knob("params.budget", 20, 200, integer=True)]


def _small_fit(scenario, table, journal, workers=1):  # type: ignore[no-untyped-def]
    return fit(scenario, table, KNOBS, metrics=("asr",), replicates=2, corpus=20,
               maxiter=2, popsize=2, polish=4, kind="z2", journal=journal, workers=workers)


@pytest.mark.slow  # two fits and a resumed one, 13 s: make test-all
def test_a_fit_resumes_from_its_journal_as_if_uninterrupted(scenario, tmp_path) -> None:  # type: ignore[no-untyped-def]
    table = _target(scenario, 0.5)
    whole = _small_fit(scenario, table, tmp_path / "whole.journal")
    lines = (tmp_path / "whole.journal").read_text().splitlines(keepends=True)
    assert len(lines) == 1 + len(whole.evaluations)  # the fingerprint, then one per point
    # Interrupted after five evaluations, the sixth half-written: the rerun replays the
    # five, drops the cut line, and goes on to the same end.
    cut = tmp_path / "cut.journal"
    cut.write_text("".join(lines[:6]) + lines[6][: len(lines[6]) // 2])
    resumed = _small_fit(scenario, table, cut)
    assert resumed.fitted == whole.fitted and resumed.objective == whole.objective
    assert [e.knobs for e in resumed.evaluations] == [e.knobs for e in whole.evaluations]
    assert cut.read_text() == (tmp_path / "whole.journal").read_text()
    # Two worker processes search the same way (the population is one batch either way).
    two = _small_fit(scenario, table, None, workers=2)
    assert [e.knobs for e in two.evaluations] == [e.knobs for e in whole.evaluations]
    assert two.objective == whole.objective


def test_a_journal_of_another_fit_or_a_bad_line_is_refused(scenario, tmp_path) -> None:  # type: ignore[no-untyped-def]
    table = _target(scenario, 0.5)
    path = tmp_path / "f.journal"
    _small_fit(scenario, table, path)
    with pytest.raises(ValueError, match=r"f\.journal: line 1: the journal of another fit"):
        fit(scenario, table, KNOBS[:1], metrics=("asr",), replicates=2, corpus=20,
            maxiter=2, popsize=2, polish=4, kind="z2", journal=path)
    lines = path.read_text().splitlines(keepends=True)
    path.write_text(lines[0] + lines[1] + "{not json}\n" + "".join(lines[2:]))
    with pytest.raises(ValueError, match=r"f\.journal: line 3: not an evaluation"):
        _small_fit(scenario, table, path)


def test_reevaluation_never_uses_the_fit_seed(scenario) -> None:  # type: ignore[no-untyped-def]
    from wmtsim.studies.calibration.fresh_seeds import reevaluate

    table = _target(scenario, 0.5)
    r = fit(scenario, table, KNOBS[:1], metrics=("asr",), replicates=2, corpus=20,
            maxiter=1, popsize=2, kind="z2")
    with pytest.raises(ValueError, match="selected on"):
        reevaluate(r, [scenario.seed, 5], replicates=2, table=table)
    out = reevaluate(r, [5, 6], replicates=3, table=table)
    assert [row["seed"] for row in out["rows"]] == [5, 6]
    assert math.isfinite(out["objective_mean"]) and math.isfinite(out["objective_at_own_seed"])
    assert {c["policy"] for c in out["cells"]} == set(T4)
