"""``WorldSpec.n_subtasks`` as written: a fixed count, a range or a distribution
(docs/world.md, "Trajectory generation"), parsed into its support and probabilities."""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any

from wmtsim.core.validation import as_int, as_real, check_int_range, fail

N_SUBTASKS_ALLOWED = ('an integer in [1, 100,000], a pair [min, max], {values = [...], p = '
                      '[...]} or {dist = "poisson", mean = m, min = a, max = b}')
MAX_SUBTASK_SPAN = 1000  # a distribution of n_subtasks spans at most this many values
N_SUBTASK_DISTS = ("poisson",)


def subtask_distribution(value: Any, max_nodes: int
                         ) -> tuple[tuple[int, int], tuple[float, ...]]:
    """``n_subtasks`` as written (fixed, range or distribution) as (support, probabilities);
    a `KnobError` naming ``n_subtasks`` or its sub-key, the value and what is allowed.
    Counts lie in [1, ``max_nodes``] (`wmtsim.core.world_spec.MAX_NODES`)."""
    owner, name = "WorldSpec", "n_subtasks"
    if isinstance(value, bool):
        fail(owner, name, value, N_SUBTASKS_ALLOWED)
    if isinstance(value, numbers.Integral):
        k = int(value)
        if not 1 <= k <= max_nodes:
            fail(owner, name, value, N_SUBTASKS_ALLOWED)
        return (k, k), ()
    if isinstance(value, list | tuple):
        check_int_range(owner, name, value, 1, max_nodes)
        return (int(value[0]), int(value[1])), ()
    if not isinstance(value, Mapping):
        fail(owner, name, value, N_SUBTASKS_ALLOWED)
    table = dict(value)
    if "dist" in table:
        keys = {"dist", "mean", "min", "max"}
        unknown = sorted(set(table) - keys) or sorted(keys - set(table))
        if unknown:
            fail(owner, f"{name}.{unknown[0]}", table.get(unknown[0]),
                 'the keys dist, mean, min and max of a named distribution')
        if table["dist"] not in N_SUBTASK_DISTS:
            fail(owner, f"{name}.dist", table["dist"], " | ".join(N_SUBTASK_DISTS))
        mean = as_real(owner, f"{name}.mean", table["mean"], 0.0, 1e6, lo_open=True)
        lo = as_int(owner, f"{name}.min", table["min"], 1, max_nodes)
        hi = as_int(owner, f"{name}.max", table["max"], lo, min(max_nodes,
                                                                 lo + MAX_SUBTASK_SPAN - 1))
        # Poisson weights e^-λ λ^k / k!, computed in logs (no overflow), then renormalised.
        logs = [k * math.log(mean) - mean - math.lgamma(k + 1) for k in range(lo, hi + 1)]
        top = max(logs)
        weights = [math.exp(x - top) for x in logs]
        total = math.fsum(weights)
        return _trimmed(lo, [x / total for x in weights])
    keys = {"values", "p"}
    unknown = sorted(set(table) - keys) or sorted(keys - set(table))
    if unknown:
        fail(owner, f"{name}.{unknown[0]}", table.get(unknown[0]),
             'the keys values and p (or dist, mean, min and max)')
    values, p = table["values"], table["p"]
    text = f"a non-empty array of distinct integers in [1, {max_nodes:,}]"
    if not isinstance(values, list | tuple) or not values:
        fail(owner, f"{name}.values", values, text)
    ints = [as_int(owner, f"{name}.values", x, 1, max_nodes) for x in values]
    if len(set(ints)) != len(ints):
        fail(owner, f"{name}.values", values, text)
    if max(ints) - min(ints) >= MAX_SUBTASK_SPAN:
        fail(owner, f"{name}.values", values,
             f"values spanning at most {MAX_SUBTASK_SPAN:,} integers (max - min < "
             f"{MAX_SUBTASK_SPAN:,})")
    if not isinstance(p, list | tuple) or len(p) != len(ints):
        fail(owner, f"{name}.p", p, f"an array of {len(ints)} probabilities, one per value")
    probs = [as_real(owner, f"{name}.p", x, 0.0, 1.0) for x in p]
    if abs(math.fsum(probs) - 1.0) > 1e-9:
        fail(owner, f"{name}.p", p, f"probabilities that sum to 1 (these sum to "
                                    f"{math.fsum(probs):.12g})")
    lo = min(ints)
    dense = [0.0] * (max(ints) - lo + 1)
    for k, x in zip(ints, probs, strict=True):
        dense[k - lo] = x
    return _trimmed(lo, dense)


def _trimmed(lo: int, p: list[float]) -> tuple[tuple[int, int], tuple[float, ...]]:
    """Support and probabilities without zero-probability ends."""
    first = next(k for k, x in enumerate(p) if x > 0)
    last = max(k for k, x in enumerate(p) if x > 0)
    return (lo + first, lo + last), tuple(p[first:last + 1])
