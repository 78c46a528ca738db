"""Shapley values of a coalition game (the mechanism attribution of
`wmtsim.studies.attribution.attribution`): exact over all 2^k coalitions, or sampled over
permutations, with their paired percentile bootstrap intervals from
`wmtsim.core.bootstrap.paired_bootstrap`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:

    pass


def shapley_exact(values: np.ndarray) -> np.ndarray:
    """Exact Shapley values of a game given on every coalition.

    ``values[mask]`` is v(S) for the coalition whose bit j says whether player j is in S
    (shape ``(2^k,)`` or ``(2^k, n)`` for n games at once, e.g. one per trajectory).
    Returns ``(k,)`` or ``(k, n)``: φ_j = Σ_S |S|!(k−|S|−1)!/k! (v(S∪{j}) − v(S)).
    """
    size = values.shape[0]
    k = size.bit_length() - 1
    if size != 1 << k:
        raise ValueError(f"values must have 2^k rows, got {size}")
    phi = np.zeros((k, *values.shape[1:]))
    weight = [math.factorial(s) * math.factorial(k - s - 1) / math.factorial(k)
              for s in range(k)]
    for j in range(k):
        bit = 1 << j
        for mask in range(size):
            if not mask & bit:
                phi[j] += weight[mask.bit_count()] * (values[mask | bit] - values[mask])
    return phi


def permutation_masks(k: int, orders: np.ndarray) -> list[int]:
    """Every coalition visited by the orders (rows of player indices), sorted."""
    seen = {0}
    for order in orders:
        mask = 0
        for j in order:
            mask |= 1 << int(j)
            seen.add(mask)
    return sorted(seen)


def shapley_sampled(value: Callable[[int], np.ndarray], k: int, orders: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Shapley values from sampled orders of the players (Castro et al. 2009).

    ``value(mask)`` gives v(S) (a scalar or an array of n games); ``orders`` is an
    ``(R, k)`` array of permutations. Returns the mean marginal contribution of each
    player over the orders, ``(k, ...)``, and each order's marginal contributions,
    ``(R, k, ...)`` (for the standard error over orders).
    """
    margins = []
    for order in orders:
        mask, prev = 0, value(0)
        row: list[np.ndarray] = [np.empty(0)] * k
        for j in order:
            mask |= 1 << int(j)
            cur = value(mask)
            row[int(j)] = np.asarray(cur - prev, dtype=np.float64)
            prev = cur
        margins.append(np.stack(row))
    per_order = np.stack(margins)
    return per_order.mean(axis=0), per_order


def _finite_mean(x: np.ndarray) -> float:
    f = x[np.isfinite(x)]
    return float(f.mean()) if f.size else math.nan
