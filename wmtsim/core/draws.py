"""The random draws' keys and their pure-Python form (no numba here).

Every draw of the engine and of the readable twins is keyed by
``(seed, trajectory, step, node, purpose)``; this module is the one registry of the
purposes (the world's, the stubs' and the field policies'), so two kinds of draw never
share a key by accident. `uniform_py` is the bit-exact twin of `wmtsim.core.rng._uniform`.
The kernels import the purposes from `wmtsim.core.rng`, as ``np.int64`` copies of these
plain ints (a new purpose goes in both): numba compiles a callee once per literal int.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

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
PURPOSE_STALE = 11  # node = action: is its content outdated by the next such action?
# node = 2 · superseded poison (+1): the token size of its re-injected copy (attack rule
# ``reinject``, docs/attack.md), so a re-injection shifts no other world draw.
PURPOSE_REINJECT = 15

# Draw purposes of the field's policies (wmtsim.engine.field.dispatch).
PURPOSE_IMPORTANCE = 21
PURPOSE_FORGET = 22
PURPOSE_MEM0 = 23  # mem0's ADD / UPDATE / DELETE / NONE decision, keyed by the new fact

# The step used for world-generation draws (world draws are numbered by a counter).
STEP_WORLD = 0xFFFFFFFF

_MASK = 0xFFFFFFFFFFFFFFFF
_GOLDEN = 0x9E3779B97F4A7C15
_C1 = 0xBF58476D1CE4E5B9
_C2 = 0x94D049BB133111EB
_INV_2_53 = 1.0 / 9007199254740992.0


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


def irwin_hall(uniforms: Iterable[float]) -> float:
    """≈ N(0, 1): the sum of four uniforms, centred and rescaled to unit variance (the
    selector's noise, `wmtsim.engine.selector._noise`, in readable form)."""
    return (sum(uniforms) - 2.0) * math.sqrt(3.0)
