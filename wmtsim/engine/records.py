"""The records the step loop's kernels pass, as named tuples (numba reads them natively).

A kernel takes a few records instead of a list of arrays, and reads fields by name
(``T.eligible``, ``K.sw.scores``, ``X.store.place``), so the order of what travels
together is written once, here:

``Knobs``       what every trajectory reads: the policy's switches, `Params`, `Stubs` and
                the world's knobs, each packed by name (`wmtsim.core.packing`);
``Trajectory``  one trajectory's identity, forest row, per-slot flags and scratch,
                counters;
``FieldState``  the per-slot state of a field policy (`wmtsim.engine.field.dispatch`);
``FieldScratch`` a field policy's state, its rating window, its scratch and its knobs
                (None for WMT's configurations: numba compiles the field out);
``StepRecords`` the per-step arrays kept for the first trajectories of a batch;
``Batch``       what `_run_batch` reads and writes per trajectory beyond the world's and the
                forest's rows.

A trajectory's lifecycle scratch ``T.S`` is `wmtsim.core.lifecycle.LifecycleScratch` (the
kernels it serves live there).

numba's parallel loop (`wmtsim.engine.loop._run_batch`) takes only flat records of arrays
and scalars, so the batch kernel takes `Batch`, `Knobs` (of one-element arrays), the
world's and the forest's rows, `StepRecords` and the field's `FieldState`, and builds the
nested per-trajectory records inside the loop.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from wmtsim.core.lifecycle import LifecycleScratch


class StepRecords(NamedTuple):
    """Per-step records ``(recorded trajectories, steps[, slots])`` (`wmtsim.engine.loop`)."""

    u: np.ndarray
    m: np.ndarray
    state: np.ndarray
    eligible: np.ndarray
    selected: np.ndarray
    poisoned: np.ndarray
    n_slots: np.ndarray
    event: np.ndarray
    tokens: np.ndarray
    node_tokens: np.ndarray


class FieldState(NamedTuple):
    """A field policy's per-slot state, ``(n, capacity)`` or one trajectory's row:
    place (``B_*``), importance (0-10 rating), last (step of creation or last retrieval),
    freq (retrievals), strength (MemoryBank's S), archival (MemGPT: the agent saved a
    passage of it in archival memory)."""

    place: np.ndarray
    importance: np.ndarray
    last: np.ndarray
    freq: np.ndarray
    strength: np.ndarray
    archival: np.ndarray


class FieldScratch(NamedTuple):
    """One trajectory's field policy: its ``store`` (`FieldState` row), TraceRetain's
    ``window`` of ratings, ``misc`` (slots named by `wmtsim.core.field_knobs.M`: slots
    seen, window count and head, running summary, GA's reflection counters) and the
    packed `Baselines` ``knobs`` as a one-element array (``X.knobs[0]``: a kernel may not
    return a record, and this tuple is returned by `_field_scratch`)."""

    store: FieldState
    window: np.ndarray
    misc: np.ndarray
    knobs: Any


class Batch(NamedTuple):
    """A batch as `_run_batch` takes it, beside the world's and the forest's rows: the
    draw identity (the world's ``seed``, the first trajectory ``start``), each
    trajectory's script length ``n_events``, and what it writes per trajectory: the
    forest's ``slot_of`` map, ``n_slots`` and ``active`` task, and the ``counts``
    (``(n, N_COUNTERS)``, `wmtsim.core.metrics.C`)."""

    seed: Any
    start: Any
    n_events: np.ndarray
    slot_of: np.ndarray
    n_slots: np.ndarray
    active: np.ndarray
    counts: np.ndarray


class Knobs(NamedTuple):
    """What every trajectory of a run reads: ``sw`` (`Policy.pack`), ``p``
    (`Params.pack`), ``st`` (`Stubs.pack`), ``wk`` (`WorldSpec.pack`'s scalars). The
    kernels read the packed records (``K.p.rho``); `_run_batch` takes them as
    one-element arrays (`wmtsim.core.packing.as_array`) and reads row 0."""

    sw: Any
    p: Any
    st: Any
    wk: Any


class Trajectory(NamedTuple):
    """One trajectory in the step loop: its draw identity (``seed``, ``traj``), its forest
    row ``F`` and ``slot_of`` map, per-slot flags (global, ε, s, on the active path),
    branch priorities, answered subtasks (by world id), its counters ``out`` and the
    lifecycle scratch ``S``."""

    seed: Any
    traj: Any
    F: Any
    slot_of: np.ndarray
    is_global: np.ndarray
    eligible: np.ndarray
    selected: np.ndarray
    on_path: np.ndarray
    priority: np.ndarray
    answered: np.ndarray
    out: np.ndarray
    S: LifecycleScratch
