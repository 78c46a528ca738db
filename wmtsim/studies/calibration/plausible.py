"""The calibration's plausible set as a confidence set at the replicate count R used
(docs/statistics.md, "The calibration's plausible set").

The fit (`wmtsim.studies.calibration.inference.fit`) scores a knob setting θ by Σ_c z_c² (+ log
SD²), z_c = (paper_c − m_c(θ)) / s_c(θ), with m_c and s_c the mean and SD of R replicate corpora.
The plausible set is {θ : objective(θ) ≤ best + threshold}. Two things make the textbook threshold
χ²(level, k) too small:

* **misfit**: Σ z² per degree of freedom, φ = Σ z² / (C − k) over the C fitted cells, is
  far above 1 (the world is misspecified); the threshold is scaled by φ, as a
  quasi-likelihood profile is (McCullagh & Nelder 1989, §9.2);
* **R**: each cell's variance is *estimated* from R replicates, not known, so each z_c is
  a Student-type ratio with heavy tails (its paper value also differs from a new corpus
  by the replicates' mean error, a factor 1 + 1/R). With the variances treated as known,
  χ² · φ covered the truth 0.71 (R = 8) and 0.89 (R = 20) on toy worlds.

`lr_quantile` calibrates the statistic LR / φ = (objective(θ₀) − best) / φ by a
parametric bootstrap in the local linear model of the fit (Efron & Tibshirani 1993,
ch. 6; the F-type region of nonlinear regression, Seber & Wild 1989, §5.2, with each
cell's own estimated variance): near the best fit m_c(θ) ≈ m_c(θ₀) + J_c (θ − θ₀), so
z = W^½ (r − J δ) with r_c = paper_c − m_c(θ₀) ~ N(0, σ_c² (1 + 1/R) κ) (κ ≥ 1 the
misfit's inflation), s_c² ~ σ_c² χ²_{R−1} / (R − 1) independent of r (normal samples),
and W = diag(1 / s_c²). LR = r' W J (J' W J)⁻¹ J' W r and φ = (r' W r − LR) / (C − k).
σ_c and κ cancel in LR / φ (it is scale-free cell by cell and overall), so its
distribution depends only on (C, k, R) and the Jacobian J, drawn here with independent
normal entries (the design is averaged over). The threshold is its ``level`` quantile
times the fit's own φ: ``threshold = q(level; C, k, R) · φ``. As R → ∞ it tends to
k · F(k, C − k) · φ, the quasi-likelihood F region.

Coverage on toy worlds (correctly specified and misspecified at φ ≈ 140, R = 8 and 20)
is measured by `toy_coverage` (tests/studies/test_coverage_teeth.py,
benchmarks/stats_round_four.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

DRAWS = 20_000
"""Parametric bootstrap draws of LR / φ (Monte Carlo error of the 95% quantile ≈ 1%)."""


def lr_quantile(cells: int, knobs: int, replicates: int, level: float = 0.95,
                draws: int = DRAWS, seed: int = 0) -> float:
    """The ``level`` quantile of LR / φ (module docstring) for ``cells`` fitted cells,
    ``knobs`` fitted knobs and cell variances estimated from ``replicates`` corpora."""
    c, k, r = int(cells), int(knobs), int(replicates)
    if c <= k or k < 1 or r < 2:
        raise ValueError(f"{c} cells, {k} knobs, {r} replicates: need cells > knobs ≥ 1 "
                         "and replicates ≥ 2")
    rng = np.random.default_rng([seed, c, k, r, 49])
    out = np.empty(draws)
    step = 2000
    for start in range(0, draws, step):
        m = min(step, draws - start)
        jac = rng.normal(size=(m, c, k))
        res = rng.normal(size=(m, c)) * math.sqrt(1.0 + 1.0 / r)
        w = rng.chisquare(r - 1, size=(m, c)) / (r - 1)  # s² / σ²
        wj = jac / w[:, :, None]  # W J
        info = np.einsum("mck,mcl->mkl", jac, wj)  # J' W J
        score = np.einsum("mck,mc->mk", wj, res)  # J' W r
        lr = np.einsum("mk,mk->m", score, np.linalg.solve(info, score[:, :, None])[..., 0])
        total = np.sum(res * res / w, axis=1)  # r' W r
        out[start:start + m] = lr / ((total - lr) / (c - k))
    return float(np.quantile(out, level))


def dispersion(cells: Sequence[Mapping[str, Any]], knobs: int) -> tuple[float, int]:
    """(φ, C): Σ z² / (C − k) over the fitted cells with a finite z (``fitted`` True or
    absent), and C. Not floored at 1: the threshold's quantile accounts for φ's own
    randomness."""
    z = [float(c["z"]) for c in cells if c.get("fitted", True) and math.isfinite(c["z"])]
    dof = max(len(z) - knobs, 1)
    return sum(v * v for v in z) / dof, len(z)


def plausible_threshold(cells: Sequence[Mapping[str, Any]], knobs: int, replicates: int,
                        level: float = 0.95) -> tuple[float, float]:
    """(threshold, φ) of the plausible set {objective ≤ best + threshold} at the
    replicate count used: `lr_quantile` (C, k, R) · φ (module docstring)."""
    phi, c = dispersion(cells, knobs)
    if c <= knobs:
        return math.inf, phi
    return lr_quantile(c, knobs, replicates, level) * phi, phi


# --- toy worlds with a known truth (the coverage of the set) -------------------------------


def toy_coverage(runs: int, replicates: int, misfit: float = 0.0, seed: int = 0,
                 cells: int = 20, knobs: int = 2, kind: str = "nll"
                 ) -> dict[str, list[bool]]:
    """Whether the truth θ₀ is inside each plausible set, per run, on a toy world with a
    known truth: ``cells`` cells whose mean is smooth and non-linear in ``knobs`` knobs
    (μ_c(θ) = b_c + A_c θ + 0.3 |A_c| θ²) and whose SD varies with θ; the fit evaluates
    the objective (``kind``, as `wmtsim.studies.calibration.inference.objective`) on a grid of θ
    that holds θ₀ = 0, each setting's ``replicates`` corpora drawn on common random numbers
    (one seed for every setting, as the fit). The "paper" value is one corpus at θ₀ plus,
    when ``misfit`` > 0, a discrepancy N(0, misfit · σ_c²) per cell (φ ≈ 1 + misfit: the
    world misspecified). Keys: ``chi2`` (χ²(k) alone), ``chi2_phi`` (the χ² · max(1, φ)
    rule this module replaces) and ``r_aware`` (`plausible_threshold`)."""
    from scipy import stats

    rng = np.random.default_rng([seed, replicates, int(misfit), 49])
    grid = np.linspace(-1.0, 1.0, 21)
    theta = np.stack(np.meshgrid(*([grid] * knobs), indexing="ij"), -1).reshape(-1, knobs)
    truth = int(np.argmin(np.abs(theta).sum(axis=1)))
    a = rng.normal(0.0, 1.0, (cells, knobs))
    mu = rng.normal(0.0, 1.0, cells) + theta @ a.T + 0.3 * (theta**2) @ np.abs(a).T
    sd = np.exp(rng.normal(-1.0, 0.3, cells)) * np.exp(0.2 * theta @ a.T
                                                       / np.abs(a).sum(axis=1))
    chi2 = float(stats.chi2.ppf(0.95, knobs))
    q = lr_quantile(cells, knobs, replicates)
    out: dict[str, list[bool]] = {"chi2": [], "chi2_phi": [], "r_aware": []}
    for _ in range(runs):
        x = mu[:, :, None] + sd[:, :, None] * rng.normal(size=(cells, replicates))
        m, s = x.mean(axis=2), x.std(axis=2, ddof=1)
        paper = mu[truth] + sd[truth] * rng.normal(size=cells) * math.sqrt(1.0 + misfit)
        z = (paper - m) / s
        obj = np.sum(z * z, axis=1) + (2.0 * np.sum(np.log(s), axis=1) if kind == "nll"
                                       else 0.0)
        best = int(np.argmin(obj))
        lr = float(obj[truth] - obj[best])
        phi = float(np.sum(z[best] ** 2)) / (cells - knobs)
        out["chi2"].append(lr <= chi2)
        out["chi2_phi"].append(lr <= chi2 * max(1.0, phi))
        out["r_aware"].append(lr <= q * phi)
    return out
