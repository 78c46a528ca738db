"""The adaptive attack rules of the world script (`PoisonSpec.adaptive`, docs/attack.md):
an injection that reacts to the run instead of landing where the script says.

``after_evidence`` is placed by `wmtsim.engine.world_script._emit_actions` with
`_after_evidence`; ``reinject`` writes a copy after a supersession (`_reinject`), which
the step loop plays only when the supersession took effect for the policy
(`wmtsim.engine.loop`, ``OP_REINJECT``). World generation is shared by the engine and the
readable twin, so both see the same copies.
"""

from __future__ import annotations

import numpy as np

from wmtsim.core.codes import FAILURE, SUCCESS
from wmtsim.core.jit import jit
from wmtsim.core.rng import PURPOSE_REINJECT, STEP_WORLD, _uniform
from wmtsim.core.world_spec import (
    ADAPT_REINJECT,
    OP_REINJECT,
    POISON_FAILED,
    POISON_SUMMARY,
    PZ,
)
from wmtsim.engine.world_nodes import _action_tokens, _new_action, _poison_look


@jit
def _after_evidence(order, evidence):
    """Attack rule ``after_evidence``: the position right after the action of ``order``
    (this visit's actions, in play order) that carries the subtask's evidence; -1: none."""
    for i in range(order.shape[0]):
        if evidence[order[i]]:
            return i + 1
    return -1


@jit
def _had_evidence(s, first, parent, evidence):
    """Whether an earlier visit of subtask ``s`` (world ids below ``first``) found its
    evidence: a resumed visit then follows it, and the injection lands as scripted."""
    for x in range(first):
        if parent[x] == s and evidence[x]:
            return True
    return False


@jit
def _reinject(q, D, W, nn, ne, n_injected):
    """Attack rule ``reinject`` (`PoisonSpec.adaptive`, docs/attack.md): right after the
    supersession of injected poison ``q``, a fresh copy of it, ``OP_REINJECT`` (the step
    loop plays it only when the supersession took effect for the policy). The copy has
    the injection's look, a token size of its own (drawn by identity, so no other world
    draw moves), can be detected in turn, and is not re-injected again. Returns the
    updated node and event counts and injections, and the copy (-1: no rule, no copy)."""
    k = D.spec_of[q]
    if k < 0 or int(D.poison[k, PZ.adaptive]) != ADAPT_REINJECT:
        return nn, ne, n_injected, -1
    poison, w, seed, traj = D.poison, D.w, D.seed, D.traj
    v = nn
    nn += 1
    s = np.int64(W.parent[q])  # int64, as `_emit_actions`' subtask: one _new_action compile
    _new_action(v, s, W.parent, W.kind, W.topic, W.top)
    _poison_look(v, k, poison, W)
    if poison[k, PZ.tokens] > 0:
        W.tokens[v] = int(poison[k, PZ.tokens])
    else:
        W.tokens[v] = _action_tokens(
            w, _uniform(seed, traj, STEP_WORLD, 2 * q, PURPOSE_REINJECT),
            _uniform(seed, traj, STEP_WORLD, 2 * q + 1, PURPOSE_REINJECT))
    pk = int(poison[k, PZ.kind])
    W.outcome[v] = FAILURE if pk == POISON_FAILED else SUCCESS
    W.rider[v] = pk == POISON_SUMMARY
    D.p_detect[v] = poison[k, PZ.p_supersede]
    D.spec_of[v] = -2 - k
    n_injected += 1
    W.op[ne] = OP_REINJECT
    W.arg[ne] = v
    ne += 1
    return nn, ne, n_injected, v
