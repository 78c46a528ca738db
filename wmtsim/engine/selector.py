"""The selector stub as numba kernels: which memories go into S_t under the budget B
(docs/model.md §4 step 3) — single items by noisy utility, whole branches by priority — and a
memory's latent relevance, which the reasoner reads too.
"""

from __future__ import annotations

import numpy as np

from wmtsim.core.codes import SUMMARY, TASK
from wmtsim.core.jit import jit
from wmtsim.core.lifecycle import _branch_of
from wmtsim.core.rng import PURPOSE_SELECTOR_NOISE, _step_key, _uniform_at
from wmtsim.core.stubs import SCORE_NEUTRAL, SELECT_CHOOSE
from wmtsim.core.world_spec import NO_TOPIC
from wmtsim.engine.forest import _draw_id_of

# sqrt(3): scales an Irwin–Hall sum of four uniforms (variance 1/3) to unit variance.
_SQRT3 = 1.7320508075688772


@jit
def _relevance(v, topic_now, kind, topic, rel, cross):
    """A memory's latent relevance to the current subtask (or to the final answer)."""
    if topic_now == NO_TOPIC:
        if kind[v] == TASK or kind[v] == SUMMARY:
            return rel[v]
        return rel[v] * cross
    if topic[v] == topic_now:
        return rel[v]
    return rel[v] * cross


@jit
def _utility(key, d, x, boosted, boost, noise_sd):
    """The selector stub's unweighted utility of a memory: its latent relevance ``x``
    (`_relevance`), + ``boost`` when ``boosted`` (poison that is not a summary), +
    ``noise_sd`` · `_noise` for its draw identity ``d`` (``key``: the step's
    `_step_key`). The field's retrievers see the same (`_retrieval_similarity`), as an
    embedding search would. Plain values, no record: it runs once per candidate."""
    if boosted:
        x += boost
    return x + noise_sd * _noise(key, d)


@jit
def _noise(key, d):
    """≈ N(0, 1): an Irwin–Hall sum of four uniforms, rescaled (exact in any language).

    ``key`` is the step's `_step_key`, ``d`` the memory's `_draw_id`; the draws are those
    of ``_uniform(seed, traj, step, 4·d + k, PURPOSE_SELECTOR_NOISE)``, k = 0..3.
    """
    s = 0.0
    for k in range(4):
        s += _uniform_at(key, 4 * d + k, PURPOSE_SELECTOR_NOISE)
    return (s - 2.0) * _SQRT3


@jit(inline=True)  # one call site, per step: no call that passes the records
def _select_items(T, K, step, n, topic_now, weighted, struct):
    """The selector stub Γ_sel (paper §2.1) over the `Trajectory` ``T``'s ε into its s,
    with the `Knobs` ``K``: best first by utility, under the budget B and the top-k cap.

    utility = relevance + poison boost + noise (+ w_u·u + w_b·U_b when weighted, by the
    branch priorities ``T.priority``); ties go to the older memory. Under
    ``selector_rule = choose`` only the candidates it judges relevant are taken: utility
    − (w_u + w_b)·½ (the score terms counted from a neutral score) ≥ ``select_threshold``;
    under ``fill`` every candidate may be. An item that does not fit is skipped and the
    next one tried; each costs its tokens + ``struct``.
    """
    seed, traj, F = T.seed, T.traj, T.F
    eligible, selected, priority = T.eligible, T.selected, T.priority
    cross, p, st = K.wk.cross_relevance, K.p, K.st
    parent, kind, u, tokens = F.parent, F.kind, F.u, F.tokens
    poisoned, topic, rel, wid = F.poisoned, F.topic, F.rel, F.wid
    boost, noise, w_u, w_b = st.poison_boost, st.selector_noise, st.w_u, st.w_b
    choose = st.selector_rule == SELECT_CHOOSE
    threshold = st.select_threshold
    # Each candidate's utility, in slot order; then the greedy pick takes them best
    # first from a heap (ties to the older memory, as a stable sort would), and stops as
    # soon as no candidate left could fit: usually long before the pool is sorted.
    cands = np.empty(n, np.int64)
    neg_util = np.empty(n)
    key = _step_key(seed, traj, step)
    k = np.int64(0)  # typed: a literal start would compile _sift_down twice
    min_cost = np.inf
    for v in range(n):
        if not eligible[v]:
            continue
        x = _utility(key, _draw_id_of(wid, parent, v),
                     _relevance(v, topic_now, kind, topic, rel, cross),
                     poisoned[v] and kind[v] != SUMMARY, boost, noise)
        centre = 0.0
        if weighted:
            x += w_u * u[v]
            centre += SCORE_NEUTRAL * w_u
            b = _branch_of(parent, kind, v)
            if b >= 0 and not np.isnan(priority[b]):
                x += w_b * priority[b]
                centre += SCORE_NEUTRAL * w_b
        if choose and x - centre < threshold:
            continue  # judged not relevant to this step: a missed selection (Eq. 3)
        cands[k] = v
        neg_util[k] = -x
        min_cost = min(min_cost, tokens[v] + struct)
        k += 1
    _heapify(neg_util, cands, k)
    budget = p.budget
    top_k = int(st.top_k)
    used = 0.0
    count = 0
    while k > 0 and used + min_cost <= budget:
        v, k = _heap_pop(neg_util, cands, k)  # the best candidate left
        cost = tokens[v] + struct
        if used + cost <= budget:
            selected[v] = True
            used += cost
            count += 1
            if top_k > 0 and count >= top_k:
                break


@jit
def _heapify(keys, ids, k):
    """Order ``(keys, ids)[:k]`` as a heap (`_sift_down`'s order)."""
    for j in range(k // 2 - 1, -1, -1):
        _sift_down(keys, ids, j, k)


@jit
def _heap_pop(keys, ids, k):
    """Take the first entry of the heap ``(keys, ids)[:k]``: returns its id and the heap's
    new size."""
    first = ids[0]
    k -= 1
    ids[0], keys[0] = ids[k], keys[k]
    _sift_down(keys, ids, np.int64(0), k)
    return first, k


@jit
def _sift_down(neg_util, cands, i, k):
    """Restore the heap order of ``(neg_util, cands)[:k]`` below entry ``i``: an entry
    comes before its children by the lower key (-utility; A3: -priority), then by the
    older slot. (Keys are finite: relevance, scores and priorities are.)"""
    while True:
        c = 2 * i + 1
        if c >= k:
            return
        if c + 1 < k and (neg_util[c + 1] < neg_util[c] or (
                neg_util[c + 1] == neg_util[c] and cands[c + 1] < cands[c])):
            c += 1
        if neg_util[c] < neg_util[i] or (neg_util[c] == neg_util[i] and cands[c] < cands[i]):
            neg_util[i], neg_util[c] = neg_util[c], neg_util[i]
            cands[i], cands[c] = cands[c], cands[i]
            i = c
        else:
            return


@jit
def _select_branches(n, F, is_global, eligible, selected, priority, struct, p, whole):
    """A3's selector: whole branches B(v) ranked by priority U_b ("whole-branch retrieval",
    paper §4), every one (``whole``, `Stubs.branch_retrieval`) or greedy under
    the budget B.

    A unit is a task branch B(v), the subtree rooted at task v (docs/model.md §1), or a single
    global memory. Units are ranked by U_b (a global by its u; ties to the older unit);
    taking a unit takes every candidate of its subtree not taken yet, at the tokens of
    those, if they fit (``whole``: always). So a nested branch taken first leaves its
    enclosing branch the rest. No semantic relevance is used.
    """
    parent, kind, u, tokens = F.parent, F.kind, F.u, F.tokens
    unit_score = np.full(n, np.inf)
    for v in range(n):
        if not eligible[v]:
            continue
        if is_global[v]:
            unit_score[v] = -u[v]
            continue
        # Every task on the way up is a branch that holds v (the root is not a branch).
        b = v if kind[v] == TASK else parent[v]
        while b > 0:
            if kind[b] == TASK and unit_score[b] == np.inf:
                unit_score[b] = -priority[b] if not np.isnan(priority[b]) else 0.0
            b = parent[b]
    # The units best first (lowest score, ties to the older slot, as a stable sort would
    # order them), popped from a heap.
    units = np.empty(n, np.int64)
    keys = np.empty(n)
    k = np.int64(0)  # typed: a literal start would compile _sift_down twice
    for b in range(n):
        if unit_score[b] != np.inf:
            units[k] = b
            keys[k] = unit_score[b]
            k += 1
    _heapify(keys, units, k)
    budget = p.budget
    used = 0.0
    while k > 0:
        b, k = _heap_pop(keys, units, k)
        cost = 0.0
        rest = 0  # candidates of the unit not taken yet
        for v in range(n):
            if eligible[v] and not selected[v] and _in_unit(parent, is_global, v, b):
                cost += tokens[v] + struct
                rest += 1
        if rest > 0 and (whole or used + cost <= budget):
            used += cost
            for v in range(n):
                if eligible[v] and not selected[v] and _in_unit(parent, is_global, v, b):
                    selected[v] = True


@jit
def _in_unit(parent, is_global, v, b):
    """Is slot ``v`` in A3's unit ``b`` (v itself, or a descendant of task ``b``)?"""
    if is_global[b] or is_global[v]:
        return v == b
    x = v
    while x >= 0:
        if x == b:
            return True
        x = parent[x]
    return False
