"""One trajectory's world script as numba kernels: `_generate_one` draws the task tree,
the subtasks' actions, reviews and outcomes, and the injected poison, from counter-based
draws keyed by `(seed, i, STEP_WORLD, counter, PURPOSE_WORLD)` (`wmtsim.core.rng`).

The batch driver `generate` is `wmtsim.engine.world`; the `World` container is
`wmtsim.core.world_spec`.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from wmtsim.core.codes import FAILURE, GLOBAL, ROOT, SUCCESS, TASK
from wmtsim.core.jit import jit
from wmtsim.core.rng import (
    PURPOSE_DETECT,
    PURPOSE_REVIEW,
    PURPOSE_REVISE,
    PURPOSE_STALE,
    STEP_WORLD,
    _uniform,
)
from wmtsim.core.world_spec import (
    ADAPT_AFTER_EVIDENCE,
    IJ,
    OP_ACTION,
    OP_COMPLETE,
    OP_FINAL,
    OP_GLOBAL,
    OP_PROMOTE,
    OP_REOPEN,
    OP_REVISE,
    OP_ROOT,
    OP_SUPERSEDE,
    OP_TASK,
    POISON_FAILED,
    POISON_GLOBAL,
    POISON_SUMMARY,
    PZ,
    SUPERSEDE_FIRST,
)
from wmtsim.engine.world_attack import _after_evidence, _had_evidence, _reinject
from wmtsim.engine.world_nodes import (
    _action_tokens,
    _clip01,
    _draw,
    _n_subtasks,
    _new_action,
    _normal,
    _pend,
    _randint,
    _set_poison,
)


class ScriptDraft(NamedTuple):
    """What `_generate_one` hands `_emit_actions` besides the world row: the packed
    `WorldSpec` ``w``, the injection matrix ``poison``, the draw identity, the injection
    plan ``inj`` (`IJ` columns, ``n_inj`` rows used), the injected poison not yet
    detected (``pend_v`` world ids, -1 free; ``pend_p`` their detection probability;
    ``pend_tried``: the first later clean action has come), each injected action's
    detection probability ``p_detect`` and its `PoisonSpec` row ``spec_of`` (-1: not an
    injection; ``-2 - k``: a re-injected copy of row k, which is not re-injected again).
    Conversation mode: ``no_evidence`` (a subtask that needs an earlier task's result
    finds no evidence of its own), ``need_task`` / ``need_u`` (the later task needing
    task t's result, -1 none; the draw of its subtask), ``promoted`` (task t's promoted
    memory, a world id)."""

    w: Any
    poison: np.ndarray
    seed: Any
    traj: Any
    inj: np.ndarray
    n_inj: Any
    pend_v: np.ndarray
    pend_p: np.ndarray
    pend_tried: np.ndarray
    p_detect: np.ndarray
    spec_of: np.ndarray
    no_evidence: np.ndarray
    need_task: np.ndarray
    need_u: np.ndarray
    promoted: np.ndarray


@jit
def _generate_one(w, poison, cdf, seed, traj, W):
    """Write trajectory ``traj``'s world nodes and script into ``W`` (one row of
    `wmtsim.engine.world.WorldRows`); return (nodes, events, injected). ``cdf``: the
    distribution of n_subtasks (`WorldSpec.n_subtasks_cdf`; empty: uniform)."""
    parent, kind, tokens, topic, rel = W.parent, W.kind, W.tokens, W.topic, W.rel
    op, arg = W.op, W.arg
    c = 0  # draw counter
    # Typed (not literal) zeros, as the arguments below: numba compiles a callee once per
    # literal argument, and once more for a loop variable typed from its literal start
    # before its type settles.
    zero = np.int64(0)

    # Root (world id 0) and the top-level subtasks (ids 1..n_top, reserved up front so
    # injections and globals can name their target before it starts).
    c += 1
    n_top = _n_subtasks(w, cdf, _draw(seed, traj, c))
    nn = _reserve_task(zero, n_top, w, W)
    ne = zero
    n_injected = zero

    # Injection plan, one row per copy (`IJ` columns): spec row, target subtask (a world
    # id; -(2 + top-level index) while a nested target is not drawn yet; -1 once placed),
    # position, depth, resumed visit. Four world draws per copy (the fourth, once the
    # detection draw, is kept unused so the numbering of later draws stays put).
    n_inj_max = 0
    for k in range(poison.shape[0]):
        n_inj_max += int(poison[k, PZ.count])
    inj = np.full((n_inj_max + 1, len(IJ)), -1, np.int64)
    n_inj = 0
    for k in range(poison.shape[0]):
        for _ in range(int(poison[k, PZ.count])):
            c += 4
            if _draw(seed, traj, c - 3) >= poison[k, PZ.p_inject]:
                continue
            target = int(poison[k, PZ.subtask])
            if target < 0:
                target = _randint(zero, n_top - 1, _draw(seed, traj, c - 2))
            else:
                target = target % n_top
            inj[n_inj, IJ.spec] = k
            depth = int(poison[k, PZ.depth])
            inj[n_inj, IJ.target] = 1 + target if depth <= 1 else -(2 + target)
            inj[n_inj, IJ.pos] = int(poison[k, PZ.position])  # -1: drawn when placed
            inj[n_inj, IJ.depth] = depth
            inj[n_inj, IJ.resume] = 1 if poison[k, PZ.on_resume] != 0 else 0
            n_inj += 1

    # Injected poison not yet detected, with its detection probability (world id, -1 free;
    # `_emit_actions` fills and resolves it).
    # (twice the injections: each may be re-injected once, attack rule ``reinject``)
    pend_v = np.full(2 * n_inj_max + 1, -1, np.int64)
    pend_p = np.zeros(2 * n_inj_max + 1)
    pend_tried = np.zeros(2 * n_inj_max + 1, np.bool_)  # the first later clean action has come
    p_detect = np.zeros(parent.shape[0])  # an injected action's detection probability
    spec_of = np.full(parent.shape[0], -1, np.int64)  # an injected action's PoisonSpec row
    D = ScriptDraft(w=w, poison=poison, seed=seed, traj=traj, inj=inj, n_inj=n_inj,
                    pend_v=pend_v, pend_p=pend_p, pend_tried=pend_tried, p_detect=p_detect,
                    spec_of=spec_of,
                    no_evidence=np.zeros(parent.shape[0], np.bool_),
                    need_task=np.full(int(w.tasks), -1, np.int64),
                    need_u=np.zeros(int(w.tasks)), promoted=np.full(int(w.tasks), -1, np.int64))

    # Global memories (conversation mode): benign ones, then poisoned ones.
    for _ in range(int(w.n_globals)):
        c += 3
        g = nn
        nn += 1
        kind[g] = GLOBAL
        tokens[g] = _action_tokens(w, _draw(seed, traj, c - 2), _draw(seed, traj, c - 1))
        if _draw(seed, traj, c) < 0.5:
            c += 1
            topic[g] = 1 + _randint(zero, n_top - 1, _draw(seed, traj, c))
        rel[g] = w.global_relevance
        op[ne] = OP_GLOBAL
        arg[ne] = g
        ne += 1
    for q in range(n_inj):
        k = inj[q, IJ.spec]
        if int(poison[k, PZ.kind]) != POISON_GLOBAL:
            continue
        c += 2
        g = nn
        nn += 1
        kind[g] = GLOBAL
        _set_poison(g, k, D, W, c)
        topic[g] = inj[q, IJ.target]
        n_injected += 1
        op[ne] = OP_GLOBAL
        arg[ne] = g
        ne += 1

    # Conversation mode (`WorldSpec.tasks`): task t's result is needed by a later task
    # (``D.need_task[t]``, -1: none) at the top-level subtask drawn by ``D.need_u[t]``.
    n_tasks = int(w.tasks)
    base = 0  # the current task's root (world id)
    for t in range(n_tasks):
        if t > 0:
            nn, ne, c, base, n_top = _next_task(t, D, W, c, nn, ne, cdf)
        nn, ne, c, n_injected = _play_task(base, n_top, D, W, c, nn, ne, n_injected)
        if t + 1 < n_tasks:
            c += 3
            if _draw(seed, traj, c - 2) < w.p_related:
                D.need_task[t] = t + 1 + _randint(zero, n_tasks - 2 - t,
                                                   _draw(seed, traj, c - 1))
                D.need_u[t] = _draw(seed, traj, c)
    return nn, ne, n_injected


@jit
def _reserve_task(r, n_top, w, W):
    """Task root ``r`` and its top-level subtasks ``r + 1 .. r + n_top``; returns the next
    free world id."""
    parent, kind, tokens, topic, rel, top = W.parent, W.kind, W.tokens, W.topic, W.rel, W.top
    kind[r] = ROOT
    tokens[r] = int(w.query_tokens)
    for j in range(n_top):
        s = r + 1 + j
        parent[s] = r
        kind[s] = TASK
        tokens[s] = int(w.task_tokens)
        topic[s] = s
        top[s] = s
        rel[s] = w.task_relevance
    return r + 1 + n_top


@jit
def _next_task(t, D, W, c, nn, ne, cdf):
    """Conversation mode, task ``t`` > 0: the previous task ends (OP_PROMOTE, with the
    world id its summary takes as a global memory), the next root starts (OP_ROOT) with
    its top-level subtasks; an earlier task's result needed in this task becomes the topic
    of its promoted memory, and that subtask finds no evidence of its own. Returns
    (nn, ne, c, root, n_top)."""
    w, seed, traj = D.w, D.seed, D.traj
    kind, topic, rel, op, arg = W.kind, W.topic, W.rel, W.op, W.arg
    g = nn
    kind[g] = GLOBAL
    rel[g] = w.summary_relevance
    op[ne] = OP_PROMOTE
    arg[ne] = g
    r = g + 1
    c += 1
    n_top = _n_subtasks(w, cdf, _draw(seed, traj, c))
    nn = _reserve_task(r, n_top, w, W)
    op[ne + 1] = OP_ROOT
    arg[ne + 1] = r
    D.promoted[t - 1] = g
    for q in range(t):
        if D.need_task[q] == t:
            s = r + 1 + _randint(np.int64(0), n_top - 1, D.need_u[q])
            topic[D.promoted[q]] = s
            D.no_evidence[s] = True
    return nn, ne + 2, c, r, n_top


@jit
def _play_task(base, n_top, D, W, c, nn, ne, n_injected):
    """One task's script: its subtasks depth-first (root ``base``, top-level subtasks
    ``base + 1 ..``), resumed subtasks and the final answer. Returns (nn, ne, c,
    n_injected)."""
    w, seed, traj = D.w, D.seed, D.traj
    inj, n_inj = D.inj, D.n_inj
    parent, kind, tokens, topic, rel = W.parent, W.kind, W.tokens, W.topic, W.rel
    top, op, arg = W.top, W.op, W.arg
    # Subtasks depth-first. Stack entries: (world id, depth, phase 0 = start, 1 = finish).
    stack_id = np.zeros(int(w.max_depth) * (int(w.nested_subtasks_max) + 1) + 2, np.int64)
    stack_depth = np.zeros_like(stack_id)
    stack_phase = np.zeros_like(stack_id)
    for j in range(n_top):
        sp = 0
        stack_id[0] = base + 1 + j
        stack_depth[0] = 1
        stack_phase[0] = 0
        sp = 1
        while sp > 0:
            sp -= 1
            s = stack_id[sp]
            d = stack_depth[sp]
            if stack_phase[sp] == 1:
                if w.supersede_review != 0:
                    nn, ne, n_injected = _review(s, D, W, nn, ne, n_injected)
                op[ne] = OP_COMPLETE
                arg[ne] = s
                ne += 1
                continue
            op[ne] = OP_TASK
            arg[ne] = s
            ne += 1
            nn, ne, c, n_injected = _emit_actions(s, np.bool_(False), D, W, c, nn, ne,
                                                  n_injected)
            # Finish marker first, then children (pushed in reverse so the first runs first).
            stack_id[sp] = s
            stack_depth[sp] = d
            stack_phase[sp] = 1
            sp += 1
            n_children = 0
            c += 2
            if d < int(w.max_depth) and _draw(seed, traj, c - 1) < w.p_nested:
                n_children = _randint(int(w.nested_subtasks_min), int(w.nested_subtasks_max),
                                      _draw(seed, traj, c))
            first = nn
            for _ in range(n_children):
                ch = nn
                nn += 1
                parent[ch] = s
                kind[ch] = TASK
                tokens[ch] = int(w.task_tokens)
                topic[ch] = ch
                top[ch] = top[s]
                rel[ch] = w.task_relevance
            # Nested injections waiting for a subtask at depth d + 1 under this top level.
            for q in range(n_inj):
                if (n_children > 0 and base == 0 and inj[q, IJ.target] == -(1 + top[s])
                        and inj[q, IJ.depth] == d + 1):  # injections: the first task
                    c += 1
                    inj[q, IJ.target] = first + _randint(np.int64(0), n_children - 1,
                                                         _draw(seed, traj, c))
            for ch in range(first + n_children - 1, first - 1, -1):
                stack_id[sp] = ch
                stack_depth[sp] = d + 1
                stack_phase[sp] = 0
                sp += 1
        # Resume: return to an earlier top-level subtask (reopen), act, complete again.
        c += 2
        if j >= 1 and _draw(seed, traj, c - 1) < w.p_resume:
            back = base + 1 + _randint(np.int64(0), j - 1, _draw(seed, traj, c))
            op[ne] = OP_REOPEN
            arg[ne] = back
            ne += 1
            nn, ne, c, n_injected = _emit_actions(back, np.bool_(True), D, W, c, nn, ne,
                                                  n_injected)
            if w.supersede_review != 0:
                nn, ne, n_injected = _review(back, D, W, nn, ne, n_injected)
            op[ne] = OP_COMPLETE
            arg[ne] = back
            ne += 1
    op[ne] = OP_FINAL
    arg[ne] = base
    ne += 1
    return nn, ne, c, n_injected


@jit
def _review(s, D, W, nn, ne, n_injected):
    """Opt-in review before subtask ``s``'s answer (`WorldSpec.supersede_review`): each of
    its poisons not yet detected is detected with its probability (a draw keyed by the
    poison, outside the world's counter). ``D``: the `ScriptDraft`; ``W``: the world row;
    node and event counts and injections so far (returned, updated)."""
    pend_v, pend_p, seed, traj = D.pend_v, D.pend_p, D.seed, D.traj
    parent, op, arg = W.parent, W.op, W.arg
    found = np.empty(pend_v.shape[0], np.int64)  # copies re-injected (rule reinject)
    n_found = 0
    for slot in range(pend_v.shape[0]):
        q = pend_v[slot]
        if q >= 0 and parent[q] == s:
            if _uniform(seed, traj, STEP_WORLD, q, PURPOSE_REVIEW) < pend_p[slot]:
                op[ne] = OP_SUPERSEDE
                arg[ne] = q
                ne += 1
                pend_v[slot] = -1
                nn, ne, n_injected, copy = _reinject(q, D, W, nn, ne, n_injected)
                if copy >= 0:
                    found[n_found] = copy
                    n_found += 1
    for f in range(n_found):  # a copy is not reviewed by the review it follows
        _pend(found[f], D)
    return nn, ne, n_injected


@jit
def _emit_actions(s, resumed, D, W, c, nn, ne, n_injected):
    """Create subtask ``s``'s actions (clean ones, evidence, injected poison) and their
    ACTION / REVISE / SUPERSEDE events, for its first visit or a resumed one (fresh clean
    actions, no new evidence, the injections made for the resumed visit). ``D``: the
    `ScriptDraft`; ``W``: the world row; ``c``, ``nn``, ``ne``, ``n_injected``: the draw
    counter, node and event counts and injections so far (returned, updated)."""
    w, poison, seed, traj = D.w, D.poison, D.seed, D.traj
    inj, n_inj, p_detect = D.inj, D.n_inj, D.p_detect
    pend_v, pend_p, pend_tried = D.pend_v, D.pend_p, D.pend_tried
    parent, kind, tokens, topic, rel = W.parent, W.kind, W.tokens, W.topic, W.rel
    evidence, poisoned, outcome, rider = W.evidence, W.poisoned, W.outcome, W.rider
    top, op, arg = W.top, W.op, W.arg
    c += 1
    if resumed:
        n_clean = _randint(int(w.resume_actions_min), int(w.resume_actions_max),
                           _draw(seed, traj, c))
    else:
        n_clean = _randint(int(w.n_actions_min), int(w.n_actions_max), _draw(seed, traj, c))
    first = nn
    distractor = np.zeros(n_clean, np.bool_)
    n_evidence_candidates = 0
    for a in range(n_clean):
        v = nn
        nn += 1
        c += 6
        _new_action(v, s, parent, kind, topic, top)
        tokens[v] = _action_tokens(w, _draw(seed, traj, c - 5), _draw(seed, traj, c - 4))
        success = _draw(seed, traj, c - 3) < w.p_success
        outcome[v] = SUCCESS if success else FAILURE
        z = _normal(_draw(seed, traj, c - 2), _draw(seed, traj, c - 1))
        distractor[a] = _draw(seed, traj, c) < w.p_distractor
        if distractor[a]:
            rel[v] = _clip01(w.distractor_relevance + w.relevance_sd * z)
        else:
            rel[v] = _clip01(w.relevance + w.relevance_sd * z)
            if success:
                n_evidence_candidates += 1
    # Evidence: one successful non-distractor action of a fresh subtask carries it.
    c += 2
    if (not resumed and n_evidence_candidates > 0 and _draw(seed, traj, c - 1) < w.p_evidence
            and not D.no_evidence[s]):
        pick = _randint(np.int64(0), n_evidence_candidates - 1, _draw(seed, traj, c))
        seen = 0
        for a in range(n_clean):
            if outcome[first + a] == SUCCESS and not distractor[a]:
                if seen == pick:
                    evidence[first + a] = True
                    break
                seen += 1
    # Injected actions targeting this visit of this subtask, spliced in at their positions.
    order = np.arange(first, nn)
    for q in range(n_inj):
        k = inj[q, IJ.spec]
        pk = int(poison[k, PZ.kind])
        if inj[q, IJ.target] != s or pk == POISON_GLOBAL or (inj[q, IJ.resume] == 1) != resumed:
            continue
        after = -1  # attack rule after_evidence: the place right after the evidence
        if int(poison[k, PZ.adaptive]) == ADAPT_AFTER_EVIDENCE:
            after = _after_evidence(order, evidence)
            if after < 0 and not (resumed and _had_evidence(s, first, parent, evidence)):
                c += 3  # the draws an injection takes, so later draws stay put
                inj[q, IJ.target] = -1  # the evidence it waits for never comes
                continue
        v = nn
        nn += 1
        c += 3
        _new_action(v, s, parent, kind, topic, top)
        _set_poison(v, k, D, W, c - 1)
        outcome[v] = FAILURE if pk == POISON_FAILED else SUCCESS
        rider[v] = pk == POISON_SUMMARY
        p_detect[v] = poison[k, PZ.p_supersede]
        D.spec_of[v] = k
        n_injected += 1
        inj[q, IJ.target] = -1  # placed: a later resumed visit does not inject it again
        pos = inj[q, IJ.pos] if after < 0 else after
        if pos < 0:
            pos = _randint(np.int64(0), order.shape[0], _draw(seed, traj, c))
        pos = min(pos, order.shape[0])
        # Element by element, not by slices: a slice assignment compiles numba's
        # shape-mismatch error path (string formatting, ~1.5 s on a cold cache), and every
        # kernel that calls this one compiles that code again.
        new_order = np.empty(order.shape[0] + 1, np.int64)
        for j in range(pos):
            new_order[j] = order[j]
        new_order[pos] = v
        for j in range(pos, order.shape[0]):
            new_order[j + 1] = order[j]
        order = new_order
    first_rule = w.supersede_rule == SUPERSEDE_FIRST
    revise = -1  # the previous action of this visit, when its outcome gets revised
    stale = -1  # the last clean success of this visit, when the next one outdates it
    for v in order:
        # A later observation revises the previous action's outcome, recorded with it.
        if revise >= 0:
            op[ne] = OP_REVISE
            arg[ne] = revise
            ne += 1
        revise = v if _uniform(seed, traj, STEP_WORLD, v, PURPOSE_REVISE) < w.p_revise else -1
        op[ne] = OP_ACTION
        arg[ne] = v
        ne += 1
        # Staleness (`WorldSpec.p_stale`): the next clean, successful, non-distractor
        # action of this visit outdates the previous one drawn stale; it takes over what
        # that one knew (its evidence) and a supersede event marks that one wrong.
        if (w.p_stale > 0.0 and v < first + n_clean and outcome[v] == SUCCESS
                and not distractor[v - first]):
            if stale >= 0:
                if evidence[stale]:
                    evidence[stale] = False
                    evidence[v] = True
                op[ne] = OP_SUPERSEDE
                arg[ne] = stale
                ne += 1
            stale = v if _uniform(seed, traj, STEP_WORLD, v, PURPOSE_STALE) < w.p_stale else -1
        if poisoned[v]:
            _pend(v, D)
        else:
            # A later clean observation of this subtask may detect the poison before it.
            n_found = 0
            found = np.empty(pend_v.shape[0], np.int64)  # copies re-injected (rule reinject)
            for slot in range(pend_v.shape[0]):
                q = pend_v[slot]
                if q < 0 or parent[q] != s or (first_rule and pend_tried[slot]):
                    continue
                pend_tried[slot] = True
                key = q * 4294967296 + v  # (poison << 32) | clean action; ids < 2^31
                if _uniform(seed, traj, STEP_WORLD, key, PURPOSE_DETECT) < pend_p[slot]:
                    op[ne] = OP_SUPERSEDE
                    arg[ne] = q
                    ne += 1
                    pend_v[slot] = -1
                    nn, ne, n_injected, copy = _reinject(q, D, W, nn, ne, n_injected)
                    if copy >= 0:
                        found[n_found] = copy
                        n_found += 1
            # A copy awaits detection from the next clean action on, not this one.
            for f in range(n_found):
                _pend(found[f], D)
    return nn, ne, c, n_injected
