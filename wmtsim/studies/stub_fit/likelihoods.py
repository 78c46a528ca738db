"""The log-likelihood of a stub log under wmtsim's stub family (docs/stub_logs.md, "The
likelihood"), one independent block per role, each with its gradient.

The equations (numbered as in docs/stub_logs.md):

(L1) selector noise. ε = √3 (S − 2), S the sum of four uniforms (Irwin–Hall, n = 4): the
     exact law of `wmtsim.engine.selector._noise`; G its CDF, g its density.
(L2) selector. Candidate i with relevance r_i, poisoned π_i, retention score u_i and
     branch priority U_i (each term only when logged): a_i = r_i + poison_boost·π_i +
     w_u·(u_i − ½) + w_b·(U_i − ½); it is judged relevant, hence chosen when the budget
     and cap do not bind, with P_i = P(a_i + selector_noise·ε ≥ select_threshold) =
     G(z_i), z_i = (a_i − select_threshold) / selector_noise.
(L3) persuasion. An answer with poisoned memories of persuasiveness s_1..s_k in context is
     compromised with c = 1 − Π_j (1 − s_j·h), h = p_persuade_vs_evidence when the clean
     evidence is in context, else p_persuade.
(L4) correctness. P(correct) = q · (1 − p_misled·[compromised]) · p_use_max·T½/(T½ + T),
     q = 1 with the evidence in context, else p_guess; T½ = dilution_tokens, T the
     memory tokens in context.
(L5) leak. A poisoned memory the summariser reads leaks with p_leak_rider (a summary
     rider) or p_leak.

Each block's log-likelihood is Σ y log P + (1 − y) log(1 − P) over its observations.
`selector_loglik` is the readable reference of (L2); `_selector_kernel` is the same sum in
one numba pass (what the fit calls; a test checks the two agree).
"""

from __future__ import annotations

import numpy as np

from wmtsim.engine.stub_likelihood import LOG_FLOOR, SQRT3, _selector_kernel

SELECTOR = ("select_threshold", "selector_noise", "poison_boost", "w_u", "w_b")
CORRECTNESS = ("p_guess", "p_misled", "p_use_max", "dilution_tokens")


# --- (L1) the selector's noise -----------------------------------------------------------


def ih4_cdf(x: np.ndarray) -> np.ndarray:
    """F(x) = P(S ≤ x), S the sum of four U(0, 1): (1/4!) Σ_{k ≤ x} (−1)^k C(4, k)(x − k)^4,
    evaluated on the lower half and mirrored (F(x) = 1 − F(4 − x)) so both tails are
    accurate."""
    x = np.asarray(x, dtype=np.float64)
    low = np.minimum(x, 4.0 - x).clip(0.0, 2.0)
    f = low**4 / 24.0 - np.where(low > 1.0, 4.0 * (low - 1.0) ** 4 / 24.0, 0.0)
    return np.where(x <= 2.0, f, 1.0 - f)


def ih4_pdf(x: np.ndarray) -> np.ndarray:
    """The density of S (the derivative of `ih4_cdf`), symmetric about 2."""
    x = np.asarray(x, dtype=np.float64)
    low = np.minimum(x, 4.0 - x)
    f = low**3 / 6.0 - np.where(low > 1.0, 4.0 * (low - 1.0) ** 3 / 6.0, 0.0)
    return np.where(low > 0.0, f, 0.0)


def noise_cdf(z: np.ndarray) -> np.ndarray:
    """G(z) = P(ε ≤ z) for ε = √3 (S − 2) (L1)."""
    return ih4_cdf(2.0 + np.asarray(z, dtype=np.float64) / SQRT3)


# --- (L2) the selector -------------------------------------------------------------------


def selector_probability(theta: np.ndarray, relevance: np.ndarray, poisoned: np.ndarray,
                         du: np.ndarray, db: np.ndarray) -> np.ndarray:
    """P_i of (L2) at ``theta`` = (select_threshold, selector_noise, poison_boost, w_u,
    w_b)."""
    threshold, noise, boost, w_u, w_b = (float(v) for v in theta)
    a = relevance + boost * poisoned + w_u * du + w_b * db
    return noise_cdf((a - threshold) / noise)


def selector_loglik(theta: np.ndarray, relevance: np.ndarray, poisoned: np.ndarray,
                    du: np.ndarray, db: np.ndarray, chosen: np.ndarray) -> float:
    """Σ_i y_i log P_i + (1 − y_i) log(1 − P_i) of (L2), plainly (no floor: −inf when the
    family makes an observation impossible). The readable reference of `_selector_kernel`."""
    p = selector_probability(theta, relevance, poisoned, du, db)
    with np.errstate(divide="ignore"):
        return float(np.sum(np.where(chosen > 0, np.log(p), np.log1p(-p))))


def selector_negll(theta: np.ndarray, rows: tuple[np.ndarray, ...]) -> tuple[float, np.ndarray]:
    """−log-likelihood of (L2) and its gradient (the fit's objective; ``rows``: relevance,
    poisoned, du, db, chosen as float64 arrays)."""
    value, grad = _selector_kernel(np.asarray(theta, dtype=np.float64), *rows)
    return float(value), np.asarray(grad)


# --- (L3) persuasion ---------------------------------------------------------------------


def compromise_probability(h: float, persuasiveness: np.ndarray, event: np.ndarray,
                           events: int) -> np.ndarray:
    """c of (L3) per answer event: ``persuasiveness`` flat, ``event`` its event index."""
    log_safe = np.zeros(events)
    with np.errstate(divide="ignore"):  # s·h = 1: log 0 = −inf, then c = 1 exactly
        np.add.at(log_safe, event, np.log1p(-np.minimum(persuasiveness * h, 1.0)))
    return -np.expm1(log_safe)


def bernoulli_loglik(p: np.ndarray, y: np.ndarray) -> float:
    """Σ y log p + (1 − y) log(1 − p), each term floored at `LOG_FLOOR`."""
    with np.errstate(divide="ignore"):
        terms = np.where(y > 0, np.log(p), np.log1p(-p))
    return float(np.sum(np.maximum(terms, LOG_FLOOR)))


def persuasion_negll(h: float, persuasiveness: np.ndarray, event: np.ndarray,
                     compromised: np.ndarray) -> float:
    """−log-likelihood of (L3) at the persuasion probability ``h``."""
    c = compromise_probability(h, persuasiveness, event, compromised.shape[0])
    return -bernoulli_loglik(c, compromised)


# --- (L4) correctness --------------------------------------------------------------------


def correct_probability(theta: np.ndarray, evidence: np.ndarray, compromised: np.ndarray,
                        tokens: np.ndarray) -> np.ndarray:
    """P(correct) of (L4) at ``theta`` = (p_guess, p_misled, p_use_max, dilution_tokens)."""
    guess, misled, use_max, half = (float(v) for v in theta)
    q = np.where(evidence > 0, 1.0, guess)
    return q * (1.0 - misled * compromised) * use_max * half / (half + tokens)


def correctness_negll(theta: np.ndarray, evidence: np.ndarray, compromised: np.ndarray,
                      tokens: np.ndarray, correct: np.ndarray) -> tuple[float, np.ndarray]:
    """−log-likelihood of (L4) and its gradient in ``theta``."""
    guess, misled, use_max, half = (float(v) for v in theta)
    q = np.where(evidence > 0, 1.0, guess)
    m = 1.0 - misled * compromised
    dil = half / (half + tokens)
    p = np.clip(q * m * use_max * dil, 1e-300, 1.0 - 1e-15)
    # dℓ/dp per observation, then the chain rule through each factor of (L4); an
    # observation (near) impossible here pulls with the weight of p = 10^-12, not 10^300,
    # so one such observation cannot swamp the step.
    w = np.where(correct > 0, 1.0 / np.maximum(p, 1e-12), -1.0 / np.maximum(1.0 - p, 1e-12))
    grad = np.array([
        np.sum(w * (evidence == 0) * m * use_max * dil),
        np.sum(w * -q * compromised * use_max * dil),
        np.sum(w * q * m * dil),
        np.sum(w * q * m * use_max * tokens / (half + tokens) ** 2),
    ])
    return -bernoulli_loglik(p, correct), -grad


# --- (L5) leak ---------------------------------------------------------------------------


def leak_negll(p: float, leaked: np.ndarray) -> float:
    """−log-likelihood of (L5) for one class of memories (riders, or the others)."""
    return -bernoulli_loglik(np.full(leaked.shape[0], p), leaked)
