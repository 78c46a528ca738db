"""The WMT scoring equations (Eqs. 2–6, 15) as numba kernels behind numpy functions.

Each private ``_kernel`` is what the batched engine calls inside its loops; each public
function validates and coerces its inputs and calls the kernel, so the engine and the
user-facing API run one source of the math. Kernels read constants from the packed
parameter vector (`Params.pack`).

Floating-point conventions, shared with `wmtsim.twins.reference` so both agree to the bit:

* ρ^k is computed as a product of ``k`` factors ρ (never ``pow``), see `_rho_power`;
* branch sums Σ u_i run over V_b in creation order, root first (Eq. 6).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from wmtsim.core.jit import jit
from wmtsim.core.params import (
    Params,
)


@jit
def _clip01(x: float) -> float:
    """clip_[0,1] of Eq. 5."""
    if x < 0.0:
        return 0.0
    if x > 1.0:
        return 1.0
    return x


@jit
def _rho_power(rho: float, k: int) -> float:
    """ρ^k as a product of k factors, so Python and numba give the same bits."""
    g = 1.0
    for _ in range(k):
        g *= rho
    return g


@jit
def _event_score(success: bool, p: Any) -> float:
    """Eq. 2: ũ = u_success on success, u_failure on failure (it replaces, not blends)."""
    return p.u_success if success else p.u_failure


@jit
def _event_resets_m(p: Any) -> bool:
    """Whether an outcome event also resets m (toolkit decision, see `Params`)."""
    return p.event_resets_m != 0.0


@jit
def _decay_multiplier(m: int, is_global: bool, p: Any) -> float:
    """Eq. 4: g(m) = ρ_G for global memories, ρ^min(m, M) otherwise."""
    if is_global:
        return p.rho_g
    return _rho_power(p.rho, min(m, int(p.M)))


@jit
def _feedback_one(u: float, m: int, eligible: bool, selected: bool, is_global: bool,
                  p: Any) -> tuple[float, int]:
    """Eqs. 3–5 for one node: returns the new (u, m).

    Eq. 3: selected → m = 0; eligible and not selected (a missed selection) → m + 1;
    not eligible → unchanged. Global memories have their count reset before each decay,
    so after a miss they hold ``global_miss_count`` (1 by default).
    Eq. 5: only a missed selection changes u, to clip(u · g(m_new)).
    """
    if selected:
        return u, 0
    if not eligible:
        return u, m
    if is_global:
        m_new = int(p.global_miss_count)
    else:
        m_new = m + 1
    return _clip01(u * _decay_multiplier(m_new, is_global, p)), m_new


@jit
def _first_selected_not_eligible(eligible: np.ndarray, selected: np.ndarray, n: int) -> int:
    """Index of the first node with s = 1 and ε = 0 (forbidden by Eq. 3), or -1."""
    for i in range(n):
        if selected[i] and not eligible[i]:
            return i
    return -1


@jit
def _selection_feedback(u: np.ndarray, m: np.ndarray, eligible: np.ndarray,
                        selected: np.ndarray, is_global: np.ndarray, p: Any,
                        n: int) -> None:
    """Eqs. 3–5 in place over the first ``n`` nodes (caller checks s ≤ ε)."""
    for i in range(n):
        u[i], m[i] = _feedback_one(u[i], m[i], eligible[i], selected[i], is_global[i], p)


@jit
def _cumulative_exponent(r: int, M: int) -> int:
    """h_M(r) of Eq. 15: r(r+1)/2 if r ≤ M, else M·r − M(M−1)/2."""
    if r <= M:
        return r * (r + 1) // 2
    return M * r - M * (M - 1) // 2


@jit
def _branch_priority_core(u_max: float, u_sum: float, size: int, n_failed: int,
                          n_obsolete: int, p: Any) -> float:
    """Eq. 6 from a branch's statistics.

    U_b = α·max u + (β/|V_b|)·Σ u − γ·F_b − δ·O_b, with F_b = n_failed/|V_b| and
    O_b = n_obsolete/|V_b| (toolkit decision: both fractions over |V_b|). The expression
    is evaluated in exactly this order by the reference too.
    """
    inv = float(size)
    return (p.alpha * u_max + (p.beta / inv) * u_sum
            - p.gamma * (n_failed / inv) - p.delta * (n_obsolete / inv))


@jit
def _branch_priority(u: np.ndarray, failed_action: np.ndarray, obsolete: np.ndarray,
                     p: Any) -> float:
    """Eq. 6 over one branch's node arrays (summed in array order)."""
    u_max = u[0]
    u_sum = 0.0
    n_failed = 0
    n_obsolete = 0
    for i in range(u.shape[0]):
        u_max = max(u_max, u[i])
        u_sum += u[i]
        n_failed += 1 if failed_action[i] else 0
        n_obsolete += 1 if obsolete[i] else 0
    return _branch_priority_core(u_max, u_sum, u.shape[0], n_failed, n_obsolete, p)


# ---------------------------------------------------------------------------------------
# Public numpy functions


def _bool_array(name: str, x: object, shape: tuple[int, ...] | None = None) -> np.ndarray:
    a = np.ascontiguousarray(x, dtype=np.bool_)
    if shape is not None and a.shape != shape:
        raise ValueError(f"{name} has shape {a.shape}; expected {shape}")
    return a


def event_score(success: object, params: Params | None = None) -> np.ndarray:
    """Eq. 2: the event score ũ of each recorded outcome (``success``: bool array)."""
    p = (params or Params()).pack()
    s = _bool_array("success", success)
    out = np.where(s, p.u_success, p.u_failure)
    # Same values the kernel returns; a vectorised where avoids a per-element call.
    return np.asarray(out, dtype=np.float64)


def decay_multiplier(m: object, is_global: object, params: Params | None = None) -> np.ndarray:
    """Eq. 4: g(m) = ρ_G for global memories, ρ^min(m, M) otherwise."""
    p = (params or Params()).pack()
    m_arr = np.ascontiguousarray(m, dtype=np.int64)
    if np.any(m_arr < 0):
        raise ValueError("m must be >= 0 (a miss count)")
    g_arr = _bool_array("is_global", is_global)
    m_b, g_b = np.broadcast_arrays(m_arr, g_arr)
    out = np.empty(m_b.shape, dtype=np.float64)
    flat_m, flat_g, flat_out = m_b.ravel(), g_b.ravel(), out.reshape(-1)
    for i in range(flat_out.shape[0]):
        flat_out[i] = _decay_multiplier(int(flat_m[i]), bool(flat_g[i]), p)
    return out


def selection_feedback(u: object, m: object, eligible: object, selected: object,
                       is_global: object, params: Params | None = None
                       ) -> tuple[np.ndarray, np.ndarray]:
    """Eqs. 3–5 over arrays of nodes; returns new ``(u, m)`` (inputs are not modified).

    Raises ValueError if any node is selected but not eligible (Eq. 3 requires s ≤ ε).
    """
    p = (params or Params()).pack()
    u_new = np.array(u, dtype=np.float64, copy=True).ravel()
    m_new = np.array(m, dtype=np.int64, copy=True).ravel()
    n = u_new.shape[0]
    shape = (n,)
    if m_new.shape != shape:
        raise ValueError(f"m has shape {m_new.shape}; expected {shape} like u")
    if np.any(np.isnan(u_new)) or np.any((u_new < 0) | (u_new > 1)):
        raise ValueError("u must lie in [0, 1]")
    if np.any(m_new < 0):
        raise ValueError("m must be >= 0")
    e = _bool_array("eligible", eligible, shape)
    s = _bool_array("selected", selected, shape)
    g = _bool_array("is_global", is_global, shape)
    bad = _first_selected_not_eligible(e, s, n)
    if bad >= 0:
        raise ValueError(f"node {bad} is selected but not eligible (Eq. 3 requires s <= eps)")
    _selection_feedback(u_new, m_new, e, s, g, p, n)
    return u_new, m_new


def cumulative_exponent(r: object, M: int) -> np.ndarray | int:
    """h_M(r) of Eq. 15, the exponent of ρ after r consecutive missed selections."""
    if isinstance(M, bool) or not isinstance(M, int | np.integer) or M < 1:
        raise ValueError(f"M={M!r} is invalid; allowed: an integer >= 1")
    r_arr = np.asarray(r)
    if not np.issubdtype(r_arr.dtype, np.integer) or np.any(r_arr < 0):
        raise ValueError(f"r={r!r} is invalid; allowed: integers >= 0")
    if r_arr.ndim == 0:
        return int(_cumulative_exponent(int(r_arr), int(M)))
    flat = r_arr.astype(np.int64).ravel()
    out = np.array([_cumulative_exponent(int(x), int(M)) for x in flat], dtype=np.int64)
    return out.reshape(r_arr.shape)


def branch_priority(u: object, failed_action: object, obsolete: object,
                    params: Params | None = None) -> float:
    """Eq. 6 over one branch's node arrays (V_b: the branch root and its descendants).

    ``failed_action[i]`` marks action nodes whose recorded outcome is failure;
    ``obsolete[i]`` marks nodes that are obsolete or have an obsolete ancestor inside the
    branch. Σ u is taken in array order (pass creation order, root first, to match the
    engine to the bit).
    """
    p = (params or Params()).pack()
    u_arr = np.ascontiguousarray(u, dtype=np.float64).ravel()
    n = u_arr.shape[0]
    if n == 0:
        raise ValueError("a branch has at least one node (its root)")
    f = _bool_array("failed_action", failed_action, (n,))
    o = _bool_array("obsolete", obsolete, (n,))
    return float(_branch_priority(u_arr, f, o, p))
