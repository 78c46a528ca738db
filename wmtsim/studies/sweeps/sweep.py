"""Sweeps: a scenario, the policies, the parameters to vary and a design (docs/sweeps.md).

This module is the one public import path of the sweep machinery (docs/architecture.md):
it defines nothing and gathers the public names of `spec` (the validated `Sweep`),
`file` (reading a sweep file), `design` (design rows, points, the plan) and
`run` (running the points).

A sweep file (TOML) names a base scenario, the policies, the parameters to vary and a
design. `load_sweep` validates it as strictly as a scenario (unknown keys are errors, the
message names the file, the key path and what is allowed), `plan` expands it into
*points* — one (design row, scenario, replicate, policy) each — and `run_sweep` runs the
points that are missing from an output folder (`wmtsim.studies.sweeps.store`), in-process, on a
local process pool or on a ``dask.distributed`` cluster.

Reproducibility: a point's result is a pure function of its *key*, the hash of what the
engine sees (the resolved world, parameters and stubs), the policy, the trajectory seed,
the number of trajectories and the wmtsim version. Every point of a replicate uses the
same seed, hence the same trajectories (common random numbers), and the counter-based
generator makes results independent of chunking, worker layout and thread count.

Designs (``[design] kind``):

* ``grid``: the Cartesian product of each parameter's ``values`` (or ``levels`` values
  spread over ``low``..``high``), in row-major order (the first parameter varies slowest).
* ``lhs``: ``points`` rows of a Latin hypercube (`scipy.stats.qmc.LatinHypercube`).
* ``random``: ``points`` independent uniform rows.
* ``sobol``: a Saltelli design for Sobol indices: a scrambled Sobol sequence
  (`scipy.stats.qmc.Sobol`) of ``points`` = N rows in 2d dimensions gives the matrices A
  and B; the sweep runs A, B and the d matrices AB_i (A with column i from B), N·(d + 2)
  rows in all (columns ``block`` = A | B | AB and ``block_param``).

A unit-interval coordinate u becomes a value by the parameter's rule: ``values`` are
picked uniformly (u · len), ``low``/``high`` map linearly (log-uniformly with
``log = true``); ``integer = true`` draws integers in ``[low, high]`` with equal
probability.
"""

from wmtsim.studies.sweeps.design import (  # noqa: F401 (the one public import path)
    ChunkResult,
    DesignRow,
    Plan,
    Point,
    Task,
    content_hash,
    design_rows,
    plan,
    point_key,
    unit_matrix,
)
from wmtsim.studies.sweeps.file import load_sweep, sweep_from_dict  # noqa: F401
from wmtsim.studies.sweeps.run import (  # noqa: F401
    CHUNK_TRAJECTORIES,
    SweepReport,
    chunk_size,
    make_tasks,
    run_sweep,
    run_task,
)
from wmtsim.studies.sweeps.spec import (  # noqa: F401
    DESIGN_KINDS,
    MAX_POINTS,
    MAX_TRAJECTORIES,
    METRIC_NAMES,
    ParameterSpec,
    Sweep,
    SweepError,
)
