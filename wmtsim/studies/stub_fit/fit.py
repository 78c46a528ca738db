"""Maximum-likelihood stubs from a stub log, with 95% profile-likelihood intervals (the
door of `wmtsim.studies.stub_fit`; docs/stub_logs.md, "Fitting").

`fit_log` fits each block of `wmtsim.studies.stub_fit.likelihoods` on its own (the
likelihood factorises: the selector's choices, the compromises without and with the
evidence, the answers' correctness, and the leaks of riders and of other poison share no
parameter), by L-BFGS-B within each knob's declared range. A parameter is *identified*
when the log holds the observations that move its likelihood (`_identified`) and its
profile interval does not span its whole range; otherwise it is reported unidentified and
left at its default (the fit of its block then holds it there).

Intervals: profile likelihood, {x : 2 (ℓ̂ − max ℓ | x_k = x) ≤ χ²₁(0.95) = 3.84}, each end
found by Brent's method with the block's other parameters re-maximised at each trial
value. Why not the parametric bootstrap: it refits the whole log hundreds of times (a
10^5-event log would take hours on one core, against a few seconds here), and a profile
interval respects the knobs' ranges and needs no symmetry of the estimate.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
from scipy.optimize import brentq, minimize, minimize_scalar

from wmtsim.core.knobs import knob_of
from wmtsim.core.stubs import Stubs
from wmtsim.studies.stub_fit import likelihoods as L
from wmtsim.studies.stub_fit.log import StubLog

CHI2_95 = 3.841458820694124
"""χ²₁'s 0.95 quantile: the profile interval's cut on 2·Δℓ."""
LOG_SCALE = {"dilution_tokens"}
"""Parameters searched on a log scale (a half-point in tokens spans decades)."""
SEARCH_FLOOR = {"selector_noise": 1e-3, "dilution_tokens": 1.0}
"""Search floors where the knob's range starts at 0: no noise makes (L2) a step, and a
half-point of 0 tokens means no answer is ever used."""
FITTED = (*L.SELECTOR, "p_persuade", "p_persuade_vs_evidence", *L.CORRECTNESS, "p_leak",
          "p_leak_rider")
"""Every Stubs field a log can identify, block by block."""
STEPS = len(FITTED) + 6
"""`fit_log`'s progress calls when every parameter is identified: one per block's maximum
(six blocks), one per interval."""
RULES = {"selector_rule": "choose", "persuade_scope": "any"}
"""The rules the likelihood assumes, written with the fitted section."""


@dataclass
class Estimate:
    """One parameter's result: its estimate and 95% interval (the default and NaN when
    not identified), the observations that inform it and why it is unidentified."""

    name: str
    block: str
    estimate: float
    low: float
    high: float
    default: float
    observations: int
    identified: bool
    reason: str = ""


@dataclass
class StubFit:
    """`fit_log`'s result: every estimate in the order of `Stubs`' fields, the maximised
    log-likelihood per block, and the data the goodness of fit reads."""

    source: str
    estimates: list[Estimate]
    loglik: dict[str, float]
    events: int
    censored: int
    data: Data
    base: Stubs

    def stubs(self) -> Stubs:
        """The fitted `Stubs`: identified estimates over ``base`` (the defaults)."""
        values = self.base.to_dict()
        values.update({e.name: e.estimate for e in self.estimates if e.identified})
        values.update(RULES)
        return Stubs.from_dict(values)

    def by_name(self) -> dict[str, Estimate]:
        return {e.name: e for e in self.estimates}


@dataclass
class Data:
    """The log's columns as float64 arrays, per block."""

    selector: tuple[np.ndarray, ...]  # relevance, poisoned, du, db, chosen
    has_u: np.ndarray
    has_b: np.ndarray
    evidence: np.ndarray
    tokens: np.ndarray
    compromised: np.ndarray
    correct: np.ndarray
    persuasiveness: np.ndarray
    event: np.ndarray  # each persuasiveness value's answer event
    rider: np.ndarray
    leaked: np.ndarray

    @classmethod
    def of(cls, log: StubLog) -> Data:
        s, a, f = log.selections, log.answers, log.folds

        def col(x: Any) -> np.ndarray:
            return np.asarray(x, dtype=np.float64)

        start = np.asarray(a.start, dtype=np.int64)
        event = np.repeat(np.arange(len(start) - 1), np.diff(start))
        return cls(selector=(col(s.relevance), col(s.poisoned), col(s.du), col(s.db),
                             col(s.chosen)),
                   has_u=col(s.has_u), has_b=col(s.has_b), evidence=col(a.evidence),
                   tokens=col(a.context_tokens), compromised=col(a.compromised),
                   correct=col(a.correct), persuasiveness=col(a.persuasiveness),
                   event=event, rider=col(f.rider), leaked=col(f.leaked))

    def answers_with(self, evidence: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(persuasiveness, event index, compromised) of the answers with poison in
        context and the clean evidence ``evidence`` (1) or not (0), re-indexed."""
        has_poison = np.zeros(self.evidence.shape[0], dtype=bool)
        has_poison[self.event[self.persuasiveness > 0]] = True
        keep = has_poison & (self.evidence == evidence)
        index = np.cumsum(keep) - 1
        rows = keep[self.event]
        return self.persuasiveness[rows], index[self.event[rows]], self.compromised[keep]


def bounds_of(name: str) -> tuple[float, float]:
    """The search range of Stubs field ``name``: its knob's range (a floor where it starts
    at 0, `SEARCH_FLOOR`), on the log scale for `LOG_SCALE`."""
    spec = knob_of(Stubs, name)
    assert spec is not None, name
    lo, hi = max(spec.lo, SEARCH_FLOOR.get(name, spec.lo)), spec.hi
    return (math.log(lo), math.log(hi)) if name in LOG_SCALE else (lo, hi)


def _inner(name: str, value: float) -> float:
    return math.log(value) if name in LOG_SCALE else value


def _outer(name: str, value: float) -> float:
    return math.exp(value) if name in LOG_SCALE else value


Objective = Callable[[np.ndarray], tuple[float, np.ndarray]]


def _varies(x: np.ndarray) -> bool:
    return x.shape[0] > 1 and bool(np.ptp(x) > 0)


def _identified(name: str, d: Data) -> tuple[int, str]:
    """How many observations inform ``name``, and why it is unidentified ("" when the log
    holds what its likelihood needs)."""
    rel, pois, _du, _db, chosen = d.selector
    n_sel = rel.shape[0]
    ev = d.evidence
    per_event = np.zeros(ev.shape[0])
    np.add.at(per_event, d.event, d.persuasiveness)
    poisoned_answers = per_event > 0
    checks: dict[str, tuple[int, str]] = {
        "select_threshold": (n_sel, "" if n_sel and 0 < chosen.sum() < n_sel
                             and _varies(rel) else
                             "needs chosen and unchosen candidates of varied relevance"),
        "poison_boost": (int(pois.sum()), "" if pois.sum() and (1 - pois).sum() else
                         "needs poisoned and clean candidates"),
        "w_u": (int(d.has_u.sum()), "" if _varies(d.selector[2][d.has_u > 0])
                else "needs candidates with varied retention scores u"),
        "w_b": (int(d.has_b.sum()), "" if _varies(d.selector[3][d.has_b > 0])
                else "needs candidates with varied branch priorities"),
        "p_persuade": (int((poisoned_answers & (ev == 0)).sum()),
                       "" if (poisoned_answers & (ev == 0)).any() else
                       "needs answers with poison in context and no clean evidence"),
        "p_persuade_vs_evidence": (int((poisoned_answers & (ev == 1)).sum()),
                                   "" if (poisoned_answers & (ev == 1)).any() else
                                   "needs answers with poison and the clean evidence"),
        "p_use_max": (int(ev.sum()), "" if ev.sum() else
                      "needs answers with the evidence in context"),
        "p_guess": (int((ev == 0).sum()), "" if ev.sum() and (ev == 0).sum() else
                    "needs answers without the evidence (and some with it)"),
        "p_misled": (int(d.compromised.sum()), "" if ev.sum() and d.compromised.sum() else
                     "needs compromised answers (and some with the evidence)"),
        "dilution_tokens": (ev.shape[0], "" if _varies(d.tokens) else
                            "needs answers with varied context tokens"),
        "p_leak": (int((d.rider == 0).sum()), "" if (d.rider == 0).any() else
                   "needs fold events with poison that is not a summary rider"),
        "p_leak_rider": (int(d.rider.sum()), "" if d.rider.any() else
                         "needs fold events with summary riders"),
    }
    checks["selector_noise"] = checks["select_threshold"]
    return checks[name]


def _blocks(d: Data) -> list[tuple[str, tuple[str, ...], Objective]]:
    """Each block of the likelihood: its name, its parameters (Stubs names) and its
    −log-likelihood with gradient on the search scale."""
    sel_rows = d.selector

    def selector(x: np.ndarray) -> tuple[float, np.ndarray]:
        return L.selector_negll(x, sel_rows)

    def persuasion(evidence: int) -> Objective:
        s, ev, y = d.answers_with(evidence)

        def f(x: np.ndarray) -> tuple[float, np.ndarray]:
            h = float(x[0])
            value = L.persuasion_negll(h, s, ev, y)
            step = 1e-6  # one parameter: a central difference is exact enough
            hi, lo = min(h + step, 1.0), max(h - step, 0.0)
            slope = (L.persuasion_negll(hi, s, ev, y) - L.persuasion_negll(lo, s, ev, y))
            return value, np.array([slope / (hi - lo)])
        return f

    def correctness(x: np.ndarray) -> tuple[float, np.ndarray]:
        theta = x.copy()
        theta[3] = math.exp(x[3])  # dilution_tokens searched on its log
        value, grad = L.correctness_negll(theta, d.evidence, d.compromised, d.tokens,
                                          d.correct)
        grad[3] *= theta[3]
        return value, grad

    def leak(rider: int) -> Objective:
        y = d.leaked[d.rider == rider]

        def f(x: np.ndarray) -> tuple[float, np.ndarray]:
            p = float(np.clip(x[0], 1e-12, 1 - 1e-12))
            value = L.leak_negll(float(x[0]), y)
            return value, np.array([-(y.sum() / p - (y.shape[0] - y.sum()) / (1 - p))])
        return f

    return [("selector", L.SELECTOR, selector),
            ("persuasion", ("p_persuade",), persuasion(0)),
            ("persuasion vs evidence", ("p_persuade_vs_evidence",), persuasion(1)),
            ("correctness", L.CORRECTNESS, correctness),
            ("leak", ("p_leak",), leak(0)), ("leak of riders", ("p_leak_rider",), leak(1))]


def _restricted(f: Objective, full: np.ndarray, free: list[int]) -> Objective:
    """``f`` as a function of the ``free`` coordinates, the others held at ``full``."""
    def g(x: np.ndarray) -> tuple[float, np.ndarray]:
        y = full.copy()
        y[free] = x
        value, grad = f(y)
        return value, grad[free]
    return g


def _maximise(f: Objective, x0: np.ndarray, bounds: list[tuple[float, float]]
              ) -> tuple[np.ndarray, float]:
    """The minimum of ``f`` (a −log-likelihood) within ``bounds`` from ``x0``."""
    if len(x0) == 1:  # one parameter: a bounded scalar search cannot stall on a flat start
        lo, hi = bounds[0]
        r = minimize_scalar(lambda v: f(np.array([v]))[0], bounds=(lo, hi),
                            method="bounded", options={"xatol": 1e-7 * (hi - lo)})
        best = (np.array([float(r.x)]), float(r.fun))
        for end in (lo, hi):  # the optimum may sit on an end (a rate of 0 or 1)
            v = f(np.array([end]))[0]
            if v < best[1]:
                best = (np.array([end]), v)
        return best
    r = minimize(f, x0, jac=True, method="L-BFGS-B", bounds=bounds,
                 options={"maxiter": 500, "ftol": 1e-11, "gtol": 1e-8})
    return np.asarray(r.x), float(r.fun)


def _curvature_se(f: Objective, x: np.ndarray, bounds: list[tuple[float, float]]
                  ) -> np.ndarray:
    """The Wald standard errors at ``x``: the inverse Hessian's diagonal, the Hessian by
    central differences of the analytic gradient. Only the first guess of each profile
    end (`_profile_end`); a flat or singular direction gets its whole range."""
    n = len(x)
    hess = np.empty((n, n))
    for j in range(n):
        step = 1e-5 * max(1.0, abs(x[j]))
        up, down = x.copy(), x.copy()
        up[j] = min(x[j] + step, bounds[j][1])
        down[j] = max(x[j] - step, bounds[j][0])
        hess[:, j] = (f(up)[1] - f(down)[1]) / (up[j] - down[j])
    hess = (hess + hess.T) / 2
    width = np.array([b[1] - b[0] for b in bounds])
    try:
        var = np.diag(np.linalg.inv(hess))
    except np.linalg.LinAlgError:
        return width
    return np.where((var > 0) & np.isfinite(var), np.sqrt(np.abs(var)), width)


def _profile_end(f: Objective, xhat: np.ndarray, fhat: float, k: int, end: float,
                 bounds: list[tuple[float, float]], se: float) -> float:
    """The end of the profile interval of coordinate ``k`` on the side of ``end``: where
    2·(profile −log-likelihood − ``fhat``) crosses `CHI2_95`, or ``end`` itself.

    The crossing is bracketed from the Wald guess x̂ ± 1.96·``se`` (doubling the step
    until the profile passes the cut), then found by Brent's method to 10^-3 ``se``."""
    others = [j for j in range(len(xhat)) if j != k]
    warm = xhat.copy()
    target = fhat + CHI2_95 / 2

    # Each value once: Brent's method re-reads its bracket's ends, and an inner maximum
    # found again from another start could differ in the last digits and lose the sign.
    known = {float(xhat[k]): fhat - target}

    def excess(v: float) -> float:
        if v in known:
            return known[v]
        if not others:
            known[v] = f(np.array([v]))[0] - target
            return known[v]
        full = warm.copy()
        full[k] = v
        x, val = _maximise(_restricted(f, full, others), full[others],
                           [bounds[j] for j in others])
        warm[others] = x  # the next trial starts from this optimum
        known[v] = val - target
        return known[v]

    if xhat[k] == end:
        return end
    sign = 1.0 if end > xhat[k] else -1.0
    inside, step = float(xhat[k]), 1.96 * se
    while True:
        trial = xhat[k] + sign * step
        if sign * (trial - end) >= 0:
            if excess(end) <= 0:
                return end
            trial = end
            break
        if excess(trial) > 0:
            break
        inside, step = float(trial), 2 * step
    return float(brentq(excess, inside, float(trial), xtol=1e-3 * se))


def fit_log(log: StubLog, base: Stubs | None = None,
            progress: Callable[[str], None] | None = None) -> StubFit:
    """The maximum-likelihood stubs of ``log`` with their 95% profile intervals.

    ``base``: the defaults an unidentified parameter keeps (`Stubs()`); ``progress(what)``
    is called after each step (one per block fit and one per interval).
    """
    base = base or Stubs()
    d = Data.of(log)
    defaults = base.to_dict()
    say = progress or (lambda what: None)
    out: dict[str, Estimate] = {}
    loglik: dict[str, float] = {}
    for block, names, f in _blocks(d):
        bounds = [bounds_of(n) for n in names]
        lo_b, hi_b = np.array(bounds).T
        # A parameter held fixed stays at its default (within the search range); one
        # fitted starts inside its range: a default on an end (p_misled = 1, p_leak = 0)
        # can make the log impossible there, where the likelihood is flat at its floor.
        full = np.clip([_inner(n, max(float(defaults[n]), SEARCH_FLOOR.get(n, -math.inf)))
                        for n in names], lo_b, hi_b)
        reasons = {n: _identified(n, d) for n in names}
        free = [j for j, n in enumerate(names) if not reasons[n][1]]
        full[free] = np.clip(full[free], (lo_b + 0.02 * (hi_b - lo_b))[free],
                             (hi_b - 0.02 * (hi_b - lo_b))[free])
        for _ in range(len(names) + 1):  # refit when a profile finds a parameter flat
            if not free:
                break
            g = _restricted(f, full, free)
            fb = [bounds[j] for j in free]
            starts = [full[free]]
            if block == "selector":  # a wide-noise start: every observation possible
                wide = full.copy()
                wide[1] = min(1.0, bounds[1][1])
                starts.append(wide[free])
            fits = [_maximise(g, s, fb) for s in starts]
            x, val = min(fits, key=lambda t: t[1])
            say(f"{block}: maximum found")
            flat = []
            se = _curvature_se(g, x, fb)
            for i, j in enumerate(free):
                lo = _profile_end(g, x, val, i, fb[i][0], fb, se[i])
                hi = _profile_end(g, x, val, i, fb[i][1], fb, se[i])
                say(f"{block}: interval of {names[j]}")
                if lo == fb[i][0] and hi == fb[i][1]:
                    flat.append(j)
                n = names[j]
                out[n] = Estimate(n, block, _outer(n, x[i]), _outer(n, lo), _outer(n, hi),
                                  float(defaults[n]), reasons[n][0], True)
            if not flat:
                full[free] = x
                loglik[block] = -val
                break
            for j in flat:
                reasons[names[j]] = (reasons[names[j]][0],
                                     "its 95% interval spans its whole range")
            free = [j for j in free if j not in flat]
        for n in names:
            if reasons[n][1]:
                out[n] = Estimate(n, block, float(defaults[n]), math.nan, math.nan,
                                  float(defaults[n]), reasons[n][0], False, reasons[n][1])
    order = [f.name for f in fields(Stubs) if f.name in out]
    return StubFit(log.source, [out[n] for n in order], loglik, log.events,
                   log.selections.censored, d, base)


def stubs_toml(fit: StubFit, header: str = "") -> str:
    """The ``[stubs]`` section of ``fit``: each identified estimate (with its interval in a
    comment), the rules the likelihood assumes, and the unidentified parameters named in
    comments (they keep their defaults). A scenario file by itself (`load_scenario` reads
    it); paste the section into any scenario."""
    lines = [f"# {line}" if line else "#" for line in header.splitlines()]
    lines += ["[stubs]"]
    for e in fit.estimates:
        if e.identified:
            lines.append(f"{e.name} = {_toml_float(e.estimate)}  "
                         f"# 95% CI [{e.low:.6g}, {e.high:.6g}], {e.observations} obs.")
    for name, value in RULES.items():
        lines.append(f'{name} = "{value}"  # the rule the likelihood assumes')
    missing = [e for e in fit.estimates if not e.identified]
    if missing:
        lines.append("# not identified by the log (left at their defaults):")
        lines += [f"#   {e.name} = {e.default:g}: {e.reason}" for e in missing]
    return "\n".join(lines) + "\n"


def _toml_float(x: float) -> str:
    text = repr(float(x))
    return text if ("." in text or "e" in text or "inf" in text) else text + ".0"

