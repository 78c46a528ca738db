"""World generation: a `World` batch drawn from a `WorldSpec` (numba kernels).

The knobs, the op codes and the `World` container live in `wmtsim.core.world_spec`;
one trajectory's script is drawn by `wmtsim.engine.world_script`; this module holds
`generate`, the batch kernels and `WorldRows`. Trajectory ``i``
is a pure function of ``(seed, world, i)``, drawn with `wmtsim.core.rng` keyed by
``(seed, i, STEP_WORLD, counter, PURPOSE_WORLD)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import prange

from wmtsim.core.jit import jit
from wmtsim.core.node_arrays import WORLD_ARRAYS, allocate, rows_type
from wmtsim.core.packing import as_array
from wmtsim.core.rows import _copies, _row_of
from wmtsim.core.validation import check_int
from wmtsim.core.world_spec import World, WorldSpec
from wmtsim.engine.world_script import _generate_one

WorldRows = rows_type("WorldRows", WORLD_ARRAYS, __name__)
"""A `World`'s node and script arrays, as the kernels take them (`world_rows`): one field
per array of `wmtsim.core.node_arrays.WORLD_ARRAYS` (numba reads a named tuple natively,
``W.kind[w]``); each is ``(n, nodes)`` / ``(n, events)`` for a batch, or one row of those
(`wmtsim.core.rows._row_of`)."""


def world_rows(world: World) -> Any:
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
    # First pass: count each trajectory's nodes and events (into copies of one empty row
    # of nb nodes and eb events), to size W.
    _generate_batch(as_array(w), poison, cdf, seed, start, counts, _empty_arrays(1, nb, eb),
                    False)
    max_nodes = int(counts[:, 0].max())
    max_events = int(counts[:, 1].max())
    W = _empty_arrays(n, max_nodes, max_events)
    # Second pass: the same trajectories again, written into W (the same counts again).
    _generate_batch(as_array(w), poison, cdf, seed, start, np.zeros_like(counts), W, True)
    return World(seed=seed, start=start, spec=spec, **W._asdict(),
                 n_nodes=counts[:, 0].copy(), n_events=counts[:, 1].copy(),
                 n_injected=counts[:, 2].copy())


def _empty_arrays(n: int, nodes: int, events: int) -> Any:
    """A `WorldRows` of ``n`` trajectories, each array at its empty value."""
    return WorldRows(**allocate(WORLD_ARRAYS, (n, nodes), (n, events)))


@jit(parallel=True)
def _generate_batch(w1, poison, cdf, seed, start, counts, W, fill):
    """Trajectories ``start .. start+n-1`` (``n``: the rows of ``counts``): each one's
    (nodes, events, injected) into ``counts``, its world and script into row i of ``W``
    when ``fill``, else into a scratch copy of ``W``'s one empty row (the counting pass).

    One kernel for both passes of `generate`: a parallel kernel compiles the whole world
    script several times over (numba's gufunc, its wrappers, the kernel itself each
    optimise and emit the code they link), so two kernels cost a second such compile on
    a cold cache. ``w1``: the packed `WorldSpec` as a one-element
    array (`wmtsim.core.packing.as_array`); ``cdf``: `WorldSpec.n_subtasks_cdf` (empty: a
    uniform range).
    """
    for i in prange(counts.shape[0]):
        traj = np.int64(start) + np.int64(i)  # prange indices may be unsigned
        if fill:
            row = _row_of(W, np.int64(i))
        else:
            row = _copies(_row_of(W, np.int64(0)))
        counts[i, 0], counts[i, 1], counts[i, 2] = _generate_one(w1[0], poison, cdf, seed,
                                                                 traj, row)
