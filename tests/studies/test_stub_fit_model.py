"""The stub family as fitted (docs/stub_logs.md, "The likelihood"): the noise law is the
selector stub's own, the numba kernel is its readable reference, the simulated logs are
the twin's stubs draw for draw, and goodness of fit tells a log the family describes
from one it cannot."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from wmtsim.core.draws import uniform_py
from wmtsim.core.stubs import Stubs
from wmtsim.studies.stub_fit import goodness
from wmtsim.studies.stub_fit import likelihoods as L
from wmtsim.studies.stub_fit.fit import Data, fit_log
from wmtsim.studies.stub_fit.log import read_log
from wmtsim.studies.stub_fit.simulate import LogDesign, choose, events, leaks, noise, write_log
from wmtsim.twins.stubs_reference import AgentStubs, Facts


def test_the_noise_law_is_the_selector_stubs() -> None:
    # 20,000 draws of the selector's noise (the engine's keying) against G of (L1):
    # Kolmogorov–Smirnov distance well under its 1% critical value 1.63/√n = 0.0115.
    z = np.sort([noise(7, step, d) for step in range(1, 2001) for d in range(10)])
    ks = np.max(np.abs(L.noise_cdf(z) - (np.arange(1, z.size + 1) - 0.5) / z.size))
    assert ks < 0.0115
    assert abs(z).max() <= 2 * math.sqrt(3)
    # G is a CDF with density g: its difference quotient, symmetric about 0.
    x = np.linspace(-0.5, 4.5, 101)
    fd = (L.ih4_cdf(x + 1e-6) - L.ih4_cdf(x - 1e-6)) / 2e-6
    assert np.allclose(fd, L.ih4_pdf(x), atol=1e-6)
    assert np.allclose(L.noise_cdf(-x) + L.noise_cdf(x), 1.0)


def _rows(n: int, seed: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    r, p = rng.random(n), (rng.random(n) < 0.2).astype(float)
    du, db = rng.random(n) - 0.5, rng.random(n) - 0.5
    theta = np.array([0.45, 0.15, 0.1, 0.5, 0.3])
    y = (rng.random(n) < L.selector_probability(theta, r, p, du, db)).astype(float)
    return r, p, du, db, y


def test_the_kernel_is_the_readable_selector_likelihood_and_its_gradient() -> None:
    rows = _rows(500, 1)
    for theta in ([0.45, 0.15, 0.1, 0.5, 0.3], [0.3, 0.4, -0.2, 1.0, 0.0]):
        t = np.array(theta)
        value, grad = L.selector_negll(t, rows)
        assert value == pytest.approx(-L.selector_loglik(t, *rows), rel=1e-12)
        for k in range(5):
            e = np.zeros(5)
            e[k] = 1e-6
            fd = (L.selector_negll(t + e, rows)[0] - L.selector_negll(t - e, rows)[0]) / 2e-6
            assert grad[k] == pytest.approx(fd, rel=1e-5, abs=1e-5)


def test_the_correctness_gradient_is_the_likelihoods() -> None:
    rng = np.random.default_rng(2)
    ev, comp = (rng.random(300) < 0.6) * 1.0, (rng.random(300) < 0.3) * 1.0
    tok, y = rng.uniform(0, 9000, 300), (rng.random(300) < 0.4) * 1.0
    t = np.array([0.1, 0.6, 0.9, 3000.0])
    _, grad = L.correctness_negll(t, ev, comp, tok, y)
    for k, h in enumerate((1e-7, 1e-7, 1e-7, 1e-3)):
        e = np.zeros(4)
        e[k] = h
        fd = (L.correctness_negll(t + e, ev, comp, tok, y)[0]
              - L.correctness_negll(t - e, ev, comp, tok, y)[0]) / (2 * h)
        assert grad[k] == pytest.approx(fd, rel=1e-4)


class _Twin(AgentStubs):
    """The readable twin's stubs around one simulated event (tests only: studies may not
    import the twins)."""

    def __init__(self, st: Stubs, seed: int, step: int, cands: list[dict]):
        self.st, self.seed, self.traj, self.step = st, seed, 0, step
        self.pol = SimpleNamespace(scores=True)
        self.tree = SimpleNamespace(nodes={c["id"]: SimpleNamespace(
            kind="action", poisoned=c.get("poisoned", False), tokens=c.get("tokens", 0.0),
            u=c["u"]) for c in cands})
        self.facts = {c["id"]: Facts(wid=j, topic=0, rel=c["relevance"], top=0,
                                     rider=c.get("rider", False))
                      for j, c in enumerate(cands)}
        self.cross, self.struct, self.budget = 1.0, 0.0, math.inf

    def draw(self, node: int, purpose: int) -> float:
        return uniform_py(self.seed, self.traj, self.step, node, purpose)

    def draw_id(self, id: str) -> int:
        return self.facts[id].wid

    def branch_of(self, id: str) -> str | None:
        return "branch of " + id


def test_simulated_choices_and_leaks_are_the_twins() -> None:
    st = Stubs(selector_noise=0.3, p_leak=0.4)
    checked = 0
    for step, ev in enumerate(events(st, 300, seed=5), start=1):
        if ev["type"] != "selection":
            continue
        cands = ev["candidates"]
        twin = _Twin(st, 5, step, cands)
        prio = {"branch of " + c["id"]: c["priority"] for c in cands}
        assert twin.select_items([c["id"] for c in cands], 0, prio) == set(ev["chosen"])
        assert set(choose(st, 5, step, cands, math.inf, 0)) == set(ev["chosen"])
        riders = [j % 2 == 0 for j in range(len(cands))]
        for c, r in zip(cands, riders, strict=True):
            c["poisoned"], c["rider"] = True, r
        twin = _Twin(st, 5, step, [*cands, {"id": "summary", "relevance": 0, "u": 0}])
        twin.absorb("summary", [c["id"] for c in cands], step)
        absorbed = twin.facts["summary"].absorbed or set()
        assert {c["id"] for c, x in zip(cands, leaks(st, 5, step, riders), strict=True)
                if x} == absorbed
        checked += 1
    assert checked > 100


def _misfit_log(path: Path, n: int) -> None:
    """Selections no stub can make: the agent takes middling candidates and leaves the most
    and least relevant ones (the family's choice is increasing in relevance)."""
    rng = np.random.default_rng(3)
    with path.open("w") as f:
        for _ in range(n):
            rel = rng.random(8)
            take = rng.random(8) < np.where(np.abs(rel - 0.5) < 0.2, 0.9, 0.1)
            f.write(json.dumps({"type": "selection", "candidates": [
                {"id": f"m{j}", "relevance": round(float(r), 4)} for j, r in enumerate(rel)],
                "chosen": [f"m{j}" for j in range(8) if take[j]]}) + "\n")


def test_goodness_of_fit_tells_a_log_the_family_cannot_describe(tmp_path: Path) -> None:
    ours, theirs = tmp_path / "ours.jsonl", tmp_path / "theirs.jsonl"
    write_log(str(ours), Stubs(p_leak=0.3, p_misled=0.7), 3000, seed=11)
    _misfit_log(theirs, 1500)
    fit_ours, fit_theirs = fit_log(read_log(ours)), fit_log(read_log(theirs))
    verdict = {r["kind"]: r for r in goodness.misfit(goodness.calibration(fit_ours)).to_dicts()}
    assert set(verdict) == {"selection", "compromise", "correct"}
    assert all(r["described"] for r in verdict.values()), verdict
    bad = goodness.misfit(goodness.calibration(fit_theirs)).to_dicts()
    assert [r["kind"] for r in bad] == ["selection"]
    assert bad[0]["p"] < 1e-6 and not bad[0]["described"]
    table = goodness.calibration(fit_ours)
    assert table.filter(table["kind"] == "selection").height == 10
    chart = goodness.write_chart(table, tmp_path / "c.png")
    assert chart.stat().st_size > 1000


def test_a_budget_censors_and_the_fit_still_recovers_the_selector(tmp_path: Path) -> None:
    # B = 1200 could bind in many events (8 candidates of median 150 tokens): the fit
    # reads the others only, and recovers what drew them (the per-candidate rule it
    # replaced put select_threshold at 0.426 [0.421, 0.430] at B = 400).
    path = tmp_path / "b.jsonl"
    truth = Stubs()
    write_log(str(path), truth, 6000, seed=9, design=LogDesign(budget=1200.0, selection=1,
                                                                 answer=0, fold=0))
    log = read_log(path)
    assert log.selections.censored_events > 1000 and log.selections.events > 1000
    est = fit_log(log).by_name()
    for name in ("select_threshold", "selector_noise", "poison_boost", "w_u", "w_b"):
        e = est[name]
        assert e.identified and abs(e.estimate - getattr(truth, name)) < (e.high - e.low), e
    assert Data.of(log).selector[0].shape[0] == len(log.selections.relevance)
