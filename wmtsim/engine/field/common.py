"""Small kernels shared by the field's policies (docs/field.md): the importance rating, the
similarity of two memories, greedy fitting under the token budget, powers as products,
top-k and min–max scaling (the summariser's absorb step is `wmtsim.engine.forest._absorb`,
one rule for every summary).

The policies' dispatch is `wmtsim.engine.field.dispatch`; the store rules are
`wmtsim.engine.field.admission` and `wmtsim.engine.field.forgetting`.
"""

from __future__ import annotations

import math

import numpy as np

from wmtsim.core.codes import ACTION, FAILURE, SUMMARY
from wmtsim.core.field_knobs import _SQRT3, B_IN
from wmtsim.core.jit import jit
from wmtsim.core.metrics import C
from wmtsim.core.rng import PURPOSE_IMPORTANCE, _uniform
from wmtsim.engine.forest import _draw_id
from wmtsim.engine.selector import _relevance, _utility


@jit
def _importance(seed, traj, step, d, rel, ok, ev, reads_evidence, noise_sd, lo):
    """The importance scorer stub: an integer rating in [lo, 10].

    It reads what WMT's selector reads (`Baselines.importance_reads_evidence` false):
    10 · (0.75·relevance + 0.25·[not a failure]) + noise, rounded half up; with the knob
    on, the ground-truth evidence flag too: 10 · (0.6·relevance + 0.2·[not a failure] +
    0.2·[carries evidence]) + noise. Relevance is what the item looks like (poison: its
    apparent relevance), so crafted poison is rated high. ``d`` is the item's `_draw_id`
    (memory identity).
    """
    s = 0.0
    for k in range(4):
        s += _uniform(seed, traj, step, 4 * d + k, PURPOSE_IMPORTANCE)
    if reads_evidence:
        signal = 0.6 * rel + 0.2 * ok + 0.2 * ev
    else:
        signal = 0.75 * rel + 0.25 * ok
    x = 10.0 * signal + noise_sd * ((s - 2.0) * _SQRT3)
    r = math.floor(x + 0.5)
    return min(10.0, max(lo, r))


@jit
def _retrieval_similarity(key, v, topic_now, cross, F, st, bl):
    """A field retriever's similarity of memory ``v`` to the current query (an embedding
    search): the selector stub's unweighted utility, relevance + poison boost + noise,
    with the very draws WMT's selector sees (``key``: the step's `_step_key`), the noise
    scaled by `Baselines.retrieval_noise` (1 = the same as WMT's selector)."""
    kind = F.kind
    return _utility(key, _draw_id(F, v), _relevance(v, topic_now, kind, F.topic, F.rel, cross),
                    F.poisoned[v] and kind[v] != SUMMARY, st.poison_boost,
                    bl.retrieval_noise * st.selector_noise)


@jit
def _similarity(a, b, topic, rel, cross):
    """Item–item similarity stub: (1 on the same topic, else cross) · (1 − |Δ relevance|)."""
    t = 1.0 if topic[a] == topic[b] else cross
    return t * (1.0 - abs(rel[a] - rel[b]))


@jit
def _content_similarity(a, b, F, cross):
    """TraceRetain's near-duplicate stub (the article's cosine > 0.95 on near-identical
    text): 0 unless both traces are of the same kind, outcome and evidence (the key
    fact), else the item–item similarity."""
    kind, outcome, evidence = F.kind, F.outcome, F.evidence
    if kind[a] != kind[b] or outcome[a] != outcome[b] or evidence[a] != evidence[b]:
        return 0.0
    return _similarity(a, b, F.topic, F.rel, cross)


@jit
def _fit(score, cands, c, cap, tokens, budget, used, selected):
    """Greedy retrieval under the budget: ``cands[:c]`` by descending score (ties keep
    their order), each taken when it fits in what is left of ``budget`` (one that does
    not fit is skipped), at most ``cap`` (0 = no cap). Returns the tokens used."""
    neg = np.empty(c)
    for j in range(c):
        neg[j] = -score[j]
    order = np.argsort(neg, kind="mergesort")
    count = 0
    for j in range(c):
        if cap > 0 and count >= cap:
            break
        v = cands[order[j]]
        if used + tokens[v] <= budget:
            selected[v] = True
            used += tokens[v]
            count += 1
    return used


@jit
def _fit_newest(n, bs, F, eligible, selected, z, budget, used, limit):
    """A queue's context under the budget: its running summary ``z`` first (if any and
    it fits), then the queued items newest first until one does not fit, at most
    ``limit`` memories in all, the summary included (0 = all). Returns the tokens used."""
    kind, tokens = F.kind, F.tokens
    count = 0
    if z >= 0 and eligible[z] and bs[z] == B_IN and used + tokens[z] <= budget:
        selected[z] = True
        used += tokens[z]
        count = 1
    for j in range(n):
        v = n - 1 - j
        if bs[v] != B_IN or kind[v] == SUMMARY or not eligible[v]:
            continue
        if (limit > 0 and count >= limit) or used + tokens[v] > budget:
            break
        selected[v] = True
        used += tokens[v]
        count += 1
    return used


@jit
def _cap(own, st):
    """A retrieval's item cap: the policy's own knob, or 0 → the shared `Stubs.top_k`."""
    return int(own) if own > 0 else int(st.top_k)


@jit
def _capped(size, bl, st):
    """A design's own retrieval size (> 0) beneath the shared cap `Stubs.top_k` (one cap
    for everyone, `Baselines.own_caps` false; 0 = no shared cap)."""
    shared = int(st.top_k)
    if bl.own_caps != 0.0 or shared <= 0:
        return int(size)
    return min(int(size), shared)


@jit
def _queue_cap(bl, st):
    """How many memories a queue or window may show (0 = all): the shared cap, unless
    `Baselines.own_caps` (a queue's content is then its design)."""
    return 0 if bl.own_caps != 0.0 else int(st.top_k)


@jit
def _power(x, k):
    """x^k as k factors (the project's convention; no pow)."""
    g = 1.0
    for _ in range(k):
        g *= x
    return g


@jit
def _top_by(score, cands, k_cands, k):
    """The first ``k`` of ``cands[:k_cands]`` by descending score (ties: slot order)."""
    neg = np.empty(k_cands)
    for j in range(k_cands):
        neg[j] = -score[j]
    order = np.argsort(neg, kind="mergesort")
    out = np.empty(min(k, k_cands), np.int64)
    for j in range(out.shape[0]):
        out[j] = cands[order[j]]
    return out


@jit
def _rate(seed, traj, step, v, F, lo, bl):
    """Item ``v``'s importance rating (the stub; the caller charges the call)."""
    ok = 0.0 if (F.kind[v] == ACTION and F.outcome[v] == FAILURE) else 1.0
    ev = 1.0 if F.evidence[v] else 0.0
    return _importance(seed, traj, step, _draw_id(F, v), F.rel[v], ok, ev,
                       bl.importance_reads_evidence != 0.0, bl.importance_noise, lo)


@jit
def _score_call(seed, traj, step, v, F, bimp, lo, bl, out):
    """Rate item ``v`` with the importance stub (one LLM call reading the item)."""
    tokens = F.tokens
    bimp[v] = _rate(seed, traj, step, v, F, lo, bl)
    out[C.prompt_tokens] += bl.scorer_base_tokens + tokens[v]
    out[C.memory_tokens] += bl.scorer_base_tokens + tokens[v]
    out[C.llm_calls] += 1


@jit
def _minmax(x, c):
    """Min-max scale to [0, 1] in place; a constant vector becomes 0.5 (as GA's code)."""
    lo = x[0]
    hi = x[0]
    for j in range(c):
        lo = min(lo, x[j])
        hi = max(hi, x[j])
    span = hi - lo
    for j in range(c):
        x[j] = 0.5 if span == 0.0 else (x[j] - lo) / span


@jit
def _result_of(F, z, top, bl):
    """The one rule of a field policy's own summary ``z`` of a subtask whose top-level
    subtask is ``top`` (a Generative Agents thought, a MemoryBank daily summary, a
    TraceRetain cluster summary): it stands for that subtask's result in the final answer
    (`wmtsim.engine.agent._reason` counts a summary of the subtask's branch) only when it
    carries the subtask's evidence; WMT's fold is written when the subtask completes, a
    derived summary may be written before its result was seen
    (`Baselines.summary_is_result`: always, like a fold)."""
    F.top[z] = top if (F.evidence[z] or bl.summary_is_result != 0.0) else -1
