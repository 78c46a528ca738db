"""Counter-based random numbers keyed by (seed, trajectory, step, node, purpose).

No generator state is carried: a draw is a pure function of its key, so results do not
depend on thread count, chunking, worker layout or machine (docs/world.md,
"Reproducibility"). The hash is SplitMix64's finaliser applied along the key; the
pure-Python twin `wmtsim.core.draws.uniform_py` gives the same bits and is what the
readable simulator uses.
"""

from __future__ import annotations

import numpy as np
from numba import uint64

from wmtsim.core import draws
from wmtsim.core.draws import _C1, _C2, _GOLDEN, _INV_2_53, _MASK
from wmtsim.core.jit import jit

# The purposes and the world's step as typed values, for the kernels to import from here
# (the registry, with plain ints, is `wmtsim.core.draws`). numba types a Python int global
# as a literal, and a kernel called with a literal argument compiles once per value: each
# purpose cost `_uniform` and `_uniform_at` a compile of their own. A
# numpy scalar global is typed int64, so every draw shares one specialisation; the bits
# are the same (a literal is an int64 too). The pure-Python twins keep the plain ints:
# numpy 2 raises OverflowError when an np.int64 meets the hash's 64-bit constants.
PURPOSE_WORLD = np.int64(draws.PURPOSE_WORLD)
PURPOSE_SELECTOR_NOISE = np.int64(draws.PURPOSE_SELECTOR_NOISE)
PURPOSE_LEAK = np.int64(draws.PURPOSE_LEAK)
PURPOSE_PERSUADE = np.int64(draws.PURPOSE_PERSUADE)
PURPOSE_DILUTION = np.int64(draws.PURPOSE_DILUTION)
PURPOSE_GUESS = np.int64(draws.PURPOSE_GUESS)
PURPOSE_MISLED = np.int64(draws.PURPOSE_MISLED)
PURPOSE_DETECT = np.int64(draws.PURPOSE_DETECT)
PURPOSE_REVISE = np.int64(draws.PURPOSE_REVISE)
PURPOSE_REVIEW = np.int64(draws.PURPOSE_REVIEW)
PURPOSE_STALE = np.int64(draws.PURPOSE_STALE)
PURPOSE_REINJECT = np.int64(draws.PURPOSE_REINJECT)
PURPOSE_IMPORTANCE = np.int64(draws.PURPOSE_IMPORTANCE)
PURPOSE_FORGET = np.int64(draws.PURPOSE_FORGET)
PURPOSE_MEM0 = np.int64(draws.PURPOSE_MEM0)
STEP_WORLD = np.int64(draws.STEP_WORLD)


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
