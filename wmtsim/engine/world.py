"""World generation: a `World` batch drawn from a `WorldSpec` (numba kernels).

The knobs, the op codes and the `World` container live in `wmtsim.core.world_spec`;
one trajectory's script is drawn by `wmtsim.engine.world_script`; this module holds
`generate`, the batch kernels and `WorldRows`. Trajectory ``i``
is a pure function of ``(seed, world, i)``, drawn with `wmtsim.core.rng` keyed by
``(seed, i, STEP_WORLD, counter, PURPOSE_WORLD)``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import prange

from wmtsim.core.codes import NO_PARENT
from wmtsim.core.jit import jit
from wmtsim.core.packing import as_array
from wmtsim.core.validation import check_int
from wmtsim.core.world_spec import NO_TOPIC, World, WorldSpec
from wmtsim.engine.world_script import _generate_one


class WorldRows(NamedTuple):
    """A `World`'s node and script arrays, as the kernels take them (`world_rows`).

    A named tuple of arrays (numba reads it natively), so the order is written once, here,
    and kernels read ``W.kind[w]``. The fields carry `World`'s field names (a test checks
    it); each is ``(n, nodes)`` / ``(n, events)`` for a batch, or one row of those.
    """

    parent: np.ndarray
    kind: np.ndarray
    tokens: np.ndarray
    topic: np.ndarray
    rel: np.ndarray
    evidence: np.ndarray
    poisoned: np.ndarray
    persuasiveness: np.ndarray
    outcome: np.ndarray
    rider: np.ndarray
    top: np.ndarray
    op: np.ndarray
    arg: np.ndarray


def world_rows(world: World) -> WorldRows:
    """``world``'s node and script arrays as the engine kernel takes them."""
    return WorldRows(**{name: getattr(world, name) for name in WorldRows._fields})


def generate(spec: WorldSpec, seed: int = 0, n: int = 1000, start: int = 0) -> World:
    """Generate trajectories ``start .. start+n-1`` of ``(seed, spec)``.

    Any split into chunks gives the same trajectories as one call.
    """
    check_int("generate", "n", n, 1)
    check_int("generate", "start", start, 0)
    check_int("generate", "seed", seed, 0, 2**63 - 1)
    w, poison = spec.pack()
    cdf = spec.n_subtasks_cdf()
    nb, eb = spec.node_bound(), spec.event_bound()
    counts = np.zeros((n, 3), dtype=np.int64)
    # First pass: count each trajectory's nodes and events (into scratch rows), to size W.
    _generate_batch(as_array(w), poison, cdf, seed, start, nb, eb, counts,
                    _empty_arrays(0, 0, 0), False)
    max_nodes = int(counts[:, 0].max())
    max_events = int(counts[:, 1].max())
    W = _empty_arrays(n, max_nodes, max_events)
    # Second pass: the same trajectories again, written into W (the same counts again).
    _generate_batch(as_array(w), poison, cdf, seed, start, nb, eb, np.zeros_like(counts), W,
                    True)
    return World(seed=seed, start=start, spec=spec, **W._asdict(),
                 n_nodes=counts[:, 0].copy(), n_events=counts[:, 1].copy(),
                 n_injected=counts[:, 2].copy())


def _empty_arrays(n: int, nodes: int, events: int) -> WorldRows:
    return WorldRows(
        parent=np.full((n, nodes), NO_PARENT, dtype=np.int32),
        kind=np.zeros((n, nodes), dtype=np.int8),
        tokens=np.zeros((n, nodes), dtype=np.int32),
        topic=np.full((n, nodes), NO_TOPIC, dtype=np.int32),
        rel=np.zeros((n, nodes), dtype=np.float64),
        evidence=np.zeros((n, nodes), dtype=np.bool_),
        poisoned=np.zeros((n, nodes), dtype=np.bool_),
        persuasiveness=np.zeros((n, nodes), dtype=np.float64),
        outcome=np.zeros((n, nodes), dtype=np.int8),
        rider=np.zeros((n, nodes), dtype=np.bool_),
        top=np.full((n, nodes), NO_TOPIC, dtype=np.int32),
        op=np.full((n, events), -1, dtype=np.int8),
        arg=np.full((n, events), -1, dtype=np.int32),
    )


@jit(parallel=True)
def _generate_batch(w1, poison, cdf, seed, start, nb, eb, counts, W, fill):
    """Trajectories ``start .. start+n-1`` (``n``: the rows of ``counts``): each one's
    (nodes, events, injected) into ``counts``, its world and script into row i of ``W``
    when ``fill``, else into scratch rows of ``nb`` nodes and ``eb`` events (the counting
    pass; ``W`` unused).

    One kernel for both passes of `generate`: a parallel kernel compiles the whole world
    script several times over (numba's gufunc, its wrappers, the kernel itself each
    optimise and emit the code they link), so two kernels cost a second such compile on
    a cold cache (issue 26, item 4). ``w1``: the packed `WorldSpec` as a one-element
    array (`wmtsim.core.packing.as_array`); ``cdf``: `WorldSpec.n_subtasks_cdf` (empty: a
    uniform range).
    """
    for i in prange(counts.shape[0]):
        traj = np.int64(start) + np.int64(i)  # prange indices may be unsigned
        if fill:
            row = _world_row(W, np.int64(i))
        else:
            row = _empty_row_arrays(nb, eb)
        counts[i, 0], counts[i, 1], counts[i, 2] = _generate_one(w1[0], poison, cdf, seed,
                                                                 traj, row)


@jit
def _world_row(W, i):
    """Row ``i`` of the batch's `WorldRows` (one trajectory's world and script)."""
    return WorldRows(
        parent=W.parent[i], kind=W.kind[i], tokens=W.tokens[i], topic=W.topic[i],
        rel=W.rel[i], evidence=W.evidence[i], poisoned=W.poisoned[i],
        persuasiveness=W.persuasiveness[i], outcome=W.outcome[i], rider=W.rider[i],
        top=W.top[i], op=W.op[i], arg=W.arg[i])


@jit
def _empty_row_arrays(nb, eb):
    """One trajectory's scratch `WorldRows` for counting (``nb`` nodes, ``eb`` events)."""
    return WorldRows(
        parent=np.full(nb, NO_PARENT, np.int32), kind=np.zeros(nb, np.int8),
        tokens=np.zeros(nb, np.int32), topic=np.full(nb, NO_TOPIC, np.int32),
        rel=np.zeros(nb, np.float64), evidence=np.zeros(nb, np.bool_),
        poisoned=np.zeros(nb, np.bool_), persuasiveness=np.zeros(nb, np.float64),
        outcome=np.zeros(nb, np.int8), rider=np.zeros(nb, np.bool_),
        top=np.full(nb, NO_TOPIC, np.int32), op=np.full(eb, -1, np.int8),
        arg=np.full(eb, -1, np.int32))
