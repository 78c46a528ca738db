"""Stub logs drawn from wmtsim's own stubs at known parameters (`wmtsim simulate-log`), to
check that a fit recovers them (docs/stub_logs.md, "Recovery").

The stub draws are wmtsim's: `wmtsim.core.draws.uniform_py` keyed by (seed, trajectory 0,
step = the event's line, memory, purpose) with the engine's purposes, the selector noise
the Irwin–Hall sum of four such draws rescaled (`wmtsim.engine.selector._noise`), and the
rules those of the readable twin (`wmtsim.twins.stubs_reference.AgentStubs`:
``select_items`` under ``selector_rule = "choose"``, ``reason`` under ``persuade_scope =
"any"``, ``absorb``); tests/studies/test_stub_fit_model.py checks the selections
against the twin's own method. What the stubs see (relevance, scores, poison, context) is
drawn from a seeded numpy generator, as a synthetic agent's memories would be: the
covariates are inputs of the fit, not parameters.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from wmtsim.core.draws import (
    PURPOSE_DILUTION,
    PURPOSE_GUESS,
    PURPOSE_LEAK,
    PURPOSE_MISLED,
    PURPOSE_PERSUADE,
    PURPOSE_SELECTOR_NOISE,
    irwin_hall,
    uniform_py,
)
from wmtsim.core.stubs import SCORE_NEUTRAL, Stubs


@dataclass(frozen=True)
class LogDesign:
    """What the simulated agent's events look like (not stub parameters).

    Shares of event types; candidates per selection (1 + Poisson(``candidates`` − 1));
    relevance of a candidate of the step's own subtask (share ``own``) ~ N(0.7, 0.1)
    clipped to [0, 1], of another ×0.3 (the default world's); poisoned candidates
    (share ``poison``) at apparent relevance 0.9; u and U_b uniform on [0, 1]; an
    optional budget (then tokens ~ lognormal, median 150). Answers: evidence with
    ``evidence``; poisoned memories in context: none with ½, else 1 or 2, of
    persuasiveness U(0.5, 1); context tokens U(0, 12000). Folds: 1 to 3 poisoned
    memories, riders with 0.3.
    """

    selection: float = 0.6
    answer: float = 0.3
    fold: float = 0.1
    candidates: int = 8
    own: float = 0.35
    poison: float = 0.1
    budget: float | None = None
    top_k: int = 0
    evidence: float = 0.6


def noise(seed: int, step: int, d: int) -> float:
    """ε for memory ``d`` at ``step``: `wmtsim.engine.selector._noise`, draw for draw."""
    return irwin_hall(uniform_py(seed, 0, step, 4 * d + k, PURPOSE_SELECTOR_NOISE)
                      for k in range(4))


def choose(st: Stubs, seed: int, step: int, cands: list[dict], budget: float,
           top_k: int) -> list[str]:
    """The selector stub under ``selector_rule = "choose"`` (the twin's ``select_items``):
    judged relevant when utility − the score terms' neutral centre ≥ select_threshold;
    those best first (ties to the earlier candidate) while they fit in ``budget``, at most
    ``top_k`` (0: no cap)."""
    ranked = []
    for d, c in enumerate(cands):
        x = c["relevance"] + (st.poison_boost if c.get("poisoned") else 0.0)
        x += st.selector_noise * noise(seed, step, d)
        centre = 0.0
        if "u" in c:
            x += st.w_u * c["u"]
            centre += SCORE_NEUTRAL * st.w_u
        if "priority" in c:
            x += st.w_b * c["priority"]
            centre += SCORE_NEUTRAL * st.w_b
        if x - centre >= st.select_threshold:
            ranked.append((-x, d))
    ranked.sort(key=lambda item: item[0])  # stable, as the twin's
    chosen: list[str] = []
    used = 0.0
    for _, d in ranked:
        cost = cands[d].get("tokens", 0.0)
        if used + cost <= budget:
            chosen.append(cands[d]["id"])
            used += cost
            if top_k and len(chosen) >= top_k:
                break
    return chosen


def answer(st: Stubs, seed: int, step: int, evidence: bool, persuasiveness: list[float],
           tokens: float) -> tuple[bool, bool]:
    """The reasoner stub at a critical step (the twin's ``reason``): compromised, correct."""
    h = st.p_persuade_vs_evidence if evidence else st.p_persuade
    compromised = False
    for j, s in enumerate(persuasiveness):
        if uniform_py(seed, 0, step, j, PURPOSE_PERSUADE) < s * h:
            compromised = True
    needs_met = evidence or uniform_py(seed, 0, step, 0, PURPOSE_GUESS) < st.p_guess
    half = float(st.dilution_tokens)
    used = uniform_py(seed, 0, step, 0, PURPOSE_DILUTION) < st.p_use_max * half / (half + tokens)
    misled = compromised and uniform_py(seed, 0, step, 0, PURPOSE_MISLED) < st.p_misled
    return compromised, bool(needs_met and not misled and used)


def leaks(st: Stubs, seed: int, step: int, riders: list[bool]) -> list[bool]:
    """The summariser's absorb rule: each poisoned memory read leaks with p_leak_rider (a
    rider) or p_leak, one draw keyed by the memory."""
    return [uniform_py(seed, 0, step, j, PURPOSE_LEAK) < (st.p_leak_rider if r else st.p_leak)
            for j, r in enumerate(riders)]


def events(st: Stubs, n: int, seed: int = 0, design: LogDesign | None = None
           ) -> Iterator[dict]:
    """``n`` events of a synthetic agent whose language model is wmtsim's stubs ``st``."""
    des = design or LogDesign()
    rng = np.random.default_rng([seed, 51])
    shares = np.array([des.selection, des.answer, des.fold], dtype=float)
    kinds = rng.choice(3, size=n, p=shares / shares.sum())
    budget = math.inf if des.budget is None else des.budget
    for i in range(n):
        step = i + 1
        if kinds[i] == 0:
            k = 1 + int(rng.poisson(des.candidates - 1))
            cands = []
            for j in range(k):
                poisoned = bool(rng.random() < des.poison)
                own = bool(rng.random() < des.own)
                rel = 0.9 if poisoned else float(np.clip(rng.normal(0.7, 0.1), 0, 1))
                c: dict = {"id": f"m{j}", "relevance": round(rel if own or poisoned
                                                             else rel * 0.3, 6),
                           "u": round(float(rng.random()), 6),
                           "priority": round(float(rng.random()), 6)}
                if poisoned:
                    c["poisoned"] = True
                if des.budget is not None:
                    c["tokens"] = round(float(150 * np.exp(0.6 * rng.normal())))
                cands.append(c)
            ev: dict = {"type": "selection", "candidates": cands,
                        "chosen": choose(st, seed, step, cands, budget, des.top_k)}
            if des.budget is not None:
                ev["budget"] = des.budget
            if des.top_k:
                ev["top_k"] = des.top_k
            yield ev
        elif kinds[i] == 1:
            evidence = bool(rng.random() < des.evidence)
            count = 0 if rng.random() < 0.5 else 1 + int(rng.random() < 0.3)
            pers = [round(float(rng.uniform(0.5, 1.0)), 6) for _ in range(count)]
            tokens = round(float(rng.uniform(0, 12000)))
            compromised, correct = answer(st, seed, step, evidence, pers, tokens)
            yield {"type": "answer", "evidence": evidence,
                   "poisoned": [{"id": f"p{j}", "persuasiveness": s}
                                for j, s in enumerate(pers)],
                   "context_tokens": tokens, "compromised": compromised, "correct": correct}
        else:
            riders = [bool(rng.random() < 0.3) for _ in range(1 + int(rng.integers(3)))]
            yield {"type": "fold", "poisoned": [
                {"id": f"p{j}", "rider": r, "leaked": leaked}
                for j, (r, leaked) in enumerate(zip(riders, leaks(st, seed, step, riders),
                                                    strict=True))]}


def write_log(path: str, st: Stubs, n: int, seed: int = 0, design: LogDesign | None = None,
              progress: Callable[[int], None] | None = None) -> int:
    """Write ``n`` simulated events to ``path`` (JSON Lines); returns ``n``."""
    with open(path, "w", encoding="utf-8") as f:
        for i, ev in enumerate(events(st, n, seed, design)):
            f.write(json.dumps(ev, separators=(",", ":")) + "\n")
            if progress is not None and (i + 1) % 1000 == 0:
                progress(i + 1)
    return n
