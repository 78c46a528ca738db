"""The world script's small kernels: its draws and how one world node is written
(`wmtsim.engine.world_script` and the attack rules of `wmtsim.engine.world_attack`).

World draws come from a counter that advances once per draw, in a fixed order
(`_draw`); a rule drawn by identity instead keys its own purpose (`wmtsim.core.draws`).
"""

from __future__ import annotations

import math

from wmtsim.core.codes import ACTION
from wmtsim.core.jit import jit
from wmtsim.core.rng import PURPOSE_WORLD, STEP_WORLD, _uniform
from wmtsim.core.world_spec import PZ


@jit
def _draw(seed, traj, counter):
    """The world's draws: a counter that advances once per draw, in a fixed order."""
    return _uniform(seed, traj, STEP_WORLD, counter, PURPOSE_WORLD)


@jit
def _randint(lo, hi, u):
    """An integer in [lo, hi] from one uniform draw."""
    return lo + min(int(u * (hi - lo + 1)), hi - lo)


@jit
def _n_subtasks(w, cdf, u):
    """The number of top-level subtasks from one uniform draw: uniform over [min, max]
    (`_randint`), or the first value whose cumulative probability exceeds ``u``."""
    if cdf.shape[0] == 0:
        return _randint(int(w.n_subtasks_min), int(w.n_subtasks_max), u)
    k = 0
    while k < cdf.shape[0] - 1 and not u < cdf[k]:
        k += 1
    return int(w.n_subtasks_min) + k


@jit
def _normal(u1, u2):
    """Box–Muller: a standard normal from two uniforms (world generation only)."""
    return math.sqrt(-2.0 * math.log(1.0 - u1)) * math.cos(2.0 * math.pi * u2)


@jit
def _clip01(x):
    return min(1.0, max(0.0, x))


@jit
def _action_tokens(w, u1, u2):
    z = _normal(u1, u2)
    return max(1, round(w.tokens_median * math.exp(w.tokens_sigma * z)))


@jit
def _set_poison(v, k, D, W, c):
    """Common properties of an injected memory (draws counters c-1 and c): ``D`` the
    `ScriptDraft`, ``W`` the world row."""
    poison, w, seed, traj = D.poison, D.w, D.seed, D.traj
    _poison_look(v, k, poison, W)
    if poison[k, PZ.tokens] > 0:
        W.tokens[v] = int(poison[k, PZ.tokens])
    else:
        W.tokens[v] = _action_tokens(w, _draw(seed, traj, c - 1), _draw(seed, traj, c))


@jit
def _poison_look(v, k, poison, W):
    """What world node ``v`` takes from injection ``k`` (row ``k`` of the injection
    matrix ``poison``), scripted or re-injected (`wmtsim.engine.world_attack._reinject`):
    it is poisoned, with the injection's persuasiveness and apparent relevance."""
    W.poisoned[v] = True
    W.persuasiveness[v] = poison[k, PZ.persuasiveness]
    W.rel[v] = poison[k, PZ.apparent_relevance]


@jit
def _new_action(v, s, parent, kind, topic, top):
    """World node ``v`` is an action of subtask ``s`` (about ``s``, under its top level)."""
    parent[v] = s
    kind[v] = ACTION
    topic[v] = s
    top[v] = top[s]


@jit
def _pend(v, D):
    """Injected poison ``v`` awaits detection (the first free slot of ``D.pend_v``)."""
    for slot in range(D.pend_v.shape[0]):
        if D.pend_v[slot] < 0:
            D.pend_v[slot] = v
            D.pend_p[slot] = D.p_detect[v]
            D.pend_tried[slot] = False
            return
