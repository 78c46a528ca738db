"""Counter-based random numbers keyed by (seed, trajectory, step, node, purpose).

No generator state is carried: a draw is a pure function of its key, so results do not
depend on thread count, chunking, worker layout or machine (SIMULATION.md,
"Reproducibility"). The hash is SplitMix64's finaliser applied along the key; the
pure-Python twin `uniform_py` gives the same bits and is what the readable simulator uses.
"""

from __future__ import annotations

from numba import njit, uint64

# Purposes: one per kind of draw, so two draws never share a key by accident.
PURPOSE_WORLD = 1
PURPOSE_SELECTOR_NOISE = 2
PURPOSE_LEAK = 3
PURPOSE_PERSUADE = 4
PURPOSE_DILUTION = 5
PURPOSE_GUESS = 6
PURPOSE_MISLED = 7
# World rules drawn by identity, outside the world's sequential counter, so switching a
# rule (or its rate) leaves every other world draw, hence the trajectories, unchanged.
PURPOSE_DETECT = 8  # node (poison << 32 | later clean action): does it detect the poison?
PURPOSE_REVISE = 9  # node = action: is its outcome revised by the next action?
PURPOSE_REVIEW = 10  # node = poison: does the opt-in review detect it?

# The step used for world-generation draws (world draws are numbered by a counter).
STEP_WORLD = 0xFFFFFFFF

_MASK = 0xFFFFFFFFFFFFFFFF
_GOLDEN = 0x9E3779B97F4A7C15
_C1 = 0xBF58476D1CE4E5B9
_C2 = 0x94D049BB133111EB
_INV_2_53 = 1.0 / 9007199254740992.0


@njit(cache=True)
def _mix(z):
    z = (z ^ (z >> uint64(30))) * uint64(_C1)
    z = (z ^ (z >> uint64(27))) * uint64(_C2)
    return z ^ (z >> uint64(31))


@njit(cache=True)
def _step_key(seed, traj, step):
    """The hash of the key's first three parts; many draws of one step share it."""
    h = _mix(uint64(seed & _MASK) + uint64(_GOLDEN))
    h = _mix(h ^ (uint64(traj & _MASK) + uint64(_GOLDEN)))
    return _mix(h ^ (uint64(step & _MASK) + uint64(_GOLDEN)))


@njit(cache=True)
def _uniform_at(key, node, purpose):
    """The draw for (node, purpose) under a `_step_key`: `_uniform` to the bit."""
    h = _mix(key ^ (uint64(node & _MASK) + uint64(_GOLDEN)))
    h = _mix(h ^ (uint64(purpose & _MASK) + uint64(_GOLDEN)))
    return float(h >> uint64(11)) * _INV_2_53


@njit(cache=True)
def _uniform(seed: int, traj: int, step: int, node: int, purpose: int) -> float:
    """A uniform draw in [0, 1) with 53 random bits."""
    return _uniform_at(_step_key(seed, traj, step), node, purpose)


def _mix_py(z: int) -> int:
    z = ((z ^ (z >> 30)) * _C1) & _MASK
    z = ((z ^ (z >> 27)) * _C2) & _MASK
    return z ^ (z >> 31)


def uniform_py(seed: int, traj: int, step: int, node: int, purpose: int) -> float:
    """Pure-Python twin of `_uniform` (same bits)."""
    h = _mix_py(((seed & _MASK) + _GOLDEN) & _MASK)
    for k in (traj, step, node, purpose):
        h = _mix_py(h ^ (((k & _MASK) + _GOLDEN) & _MASK))
    return float(h >> 11) * _INV_2_53


def uniform(seed: int, traj: int, step: int, node: int, purpose: int) -> float:
    """Public access to the engine's draw (for tests and users' own stubs)."""
    return float(_uniform(int(seed), int(traj), int(step), int(node), int(purpose)))
