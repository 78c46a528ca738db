"""Counter-based random numbers keyed by (seed, trajectory, step, node, purpose).

No generator state is carried: a draw is a pure function of its key, so results do not
depend on thread count, chunking, worker layout or machine (docs/world.md,
"Reproducibility"). The hash is SplitMix64's finaliser applied along the key; the
pure-Python twin `wmtsim.core.draws.uniform_py` gives the same bits and is what the
readable simulator uses.
"""

from __future__ import annotations

from numba import uint64

from wmtsim.core.draws import (  # noqa: F401 (re-exported: the registry lives there)
    _C1,
    _C2,
    _GOLDEN,
    _INV_2_53,
    _MASK,
    PURPOSE_DETECT,
    PURPOSE_DILUTION,
    PURPOSE_FORGET,
    PURPOSE_GUESS,
    PURPOSE_IMPORTANCE,
    PURPOSE_LEAK,
    PURPOSE_MEM0,
    PURPOSE_MISLED,
    PURPOSE_PERSUADE,
    PURPOSE_REVIEW,
    PURPOSE_REVISE,
    PURPOSE_SELECTOR_NOISE,
    PURPOSE_WORLD,
    STEP_WORLD,
    uniform_py,
)
from wmtsim.core.jit import jit


@jit
def _mix(z):
    z = (z ^ (z >> uint64(30))) * uint64(_C1)
    z = (z ^ (z >> uint64(27))) * uint64(_C2)
    return z ^ (z >> uint64(31))


@jit
def _step_key(seed, traj, step):
    """The hash of the key's first three parts; many draws of one step share it."""
    h = _mix(uint64(seed & _MASK) + uint64(_GOLDEN))
    h = _mix(h ^ (uint64(traj & _MASK) + uint64(_GOLDEN)))
    return _mix(h ^ (uint64(step & _MASK) + uint64(_GOLDEN)))


@jit
def _uniform_at(key, node, purpose):
    """The draw for (node, purpose) under a `_step_key`: `_uniform` to the bit."""
    h = _mix(key ^ (uint64(node & _MASK) + uint64(_GOLDEN)))
    h = _mix(h ^ (uint64(purpose & _MASK) + uint64(_GOLDEN)))
    return float(h >> uint64(11)) * _INV_2_53


@jit
def _uniform(seed: int, traj: int, step: int, node: int, purpose: int) -> float:
    """A uniform draw in [0, 1) with 53 random bits."""
    return _uniform_at(_step_key(seed, traj, step), node, purpose)


def uniform(seed: int, traj: int, step: int, node: int, purpose: int) -> float:
    """Public access to the engine's draw (for tests and users' own stubs)."""
    return float(_uniform(int(seed), int(traj), int(step), int(node), int(purpose)))
