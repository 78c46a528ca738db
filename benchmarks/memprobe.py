"""Peak memory of one batch, measured in a fresh process: ``python -m benchmarks.memprobe N``.

Prints one JSON object. Two views, both per batch of ``N`` trajectories of the default
world under Full WMT:

* ``tracemalloc_*``: peak of the allocations Python and numpy make (numpy reports its
  buffers to tracemalloc) — the world, the forest, the counters, and for ``simulate`` the
  polars frame. Scratch arrays allocated inside numba kernels are not traced; they are
  O(nodes) per trajectory in flight, i.e. per thread, and do not grow with ``N``.
* ``rss_delta_bytes``: the process's peak resident set during the batch (Linux ``VmHWM``,
  reset first) minus its resident set just before, after a tiny warm run: covers
  everything, numba scratch included.
"""

from __future__ import annotations

import gc
import json
import resource
import sys
import tracemalloc
from typing import Any


def _maxrss_bytes() -> int:
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(kb) * (1 if sys.platform == "darwin" else 1024)


def _status_bytes(field: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _reset_peak_rss() -> int:
    """Reset the peak RSS (Linux: VmHWM) and return the current RSS as the baseline.

    Without the reset, a transient peak while loading the kernels can hide the batch's
    growth; elsewhere fall back to ru_maxrss (a lower bound of the growth).
    """
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        current = _status_bytes("VmRSS")
        if current is not None:
            return current
    except OSError:
        pass
    return _maxrss_bytes()


def _peak_rss() -> int:
    return _status_bytes("VmHWM") or _maxrss_bytes()


def probe(n: int, policy: str = "wmt") -> dict[str, Any]:
    import numpy as np

    from wmtsim.core.params import Params
    from wmtsim.core.policies import get_policy
    from wmtsim.core.stubs import Stubs
    from wmtsim.core.world_spec import WorldSpec
    from wmtsim.engine import run
    from wmtsim.engine.simulation import simulate
    from wmtsim.engine.world import generate

    spec = WorldSpec()
    pol, p, st = get_policy(policy).pack(), Params().pack(), Stubs().pack()
    simulate(generate(spec, n=8), policy=policy)  # load kernels; not part of the peak
    gc.collect()
    rss0 = _reset_peak_rss()

    tracemalloc.start()
    world = generate(spec, seed=1, n=n)
    world_bytes = sum(v.nbytes for v in vars(world).values() if isinstance(v, np.ndarray))
    counts, forest, _ = run(world, pol, p, st)
    forest_bytes = sum(v.nbytes for v in vars(forest).values() if isinstance(v, np.ndarray))
    _, peak_engine = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del world, counts, forest
    gc.collect()

    tracemalloc.start()
    result = simulate(spec, policy=policy, n=n, seed=1)
    _, peak_sim = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del result
    rss1 = _peak_rss()
    return {
        "n": n,
        "policy": policy,
        "world_bytes": world_bytes,
        "forest_bytes": forest_bytes,
        "tracemalloc_engine_peak_bytes": peak_engine,
        "tracemalloc_simulate_peak_bytes": peak_sim,
        "rss_delta_bytes": rss1 - rss0,
    }


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    policy = sys.argv[2] if len(sys.argv) > 2 else "wmt"
    print(json.dumps(probe(n, policy)))


if __name__ == "__main__":
    main()
