"""What enters a field policy's store (docs/field.md): the TR family's admission filter, its
eviction victim and topic clustering, and Mem0's add / update / no-op decision.

Called from the dispatch in `wmtsim.engine.field.dispatch`; the readable twin is
`wmtsim.twins.field_reference`.
"""

from __future__ import annotations

import math

import numpy as np

from wmtsim.core.codes import ACTION, FAILURE, SUMMARY
from wmtsim.core.field_knobs import (
    B_ARCHIVED,
    B_BUFFERED,
    B_DELETED,
    B_DROPPED,
    B_EVICTED,
    B_IN,
    B_OVERWRITTEN,
    M,
)
from wmtsim.core.field_policies import (
    EVICT_IMPORTANCE,
    EVICT_IMPORTANCE_RECENCY,
    EVICT_LFU,
    EVICT_SIMILARITY,
    THRESHOLD_FIXED,
)
from wmtsim.core.jit import jit
from wmtsim.core.metrics import C
from wmtsim.core.rng import PURPOSE_MEM0, _uniform
from wmtsim.engine.field.common import (
    _content_similarity,
    _power,
    _rate,
    _result_of,
    _score_call,
    _similarity,
    _top_by,
)
from wmtsim.engine.forest import (
    _absorb,
    _add_summary,
    _draw_id,
)

_SQRT12 = 3.4641016151377544  # a uniform on [-√3, √3] has s.d. 1


@jit
def _tr_admit(T, K, X, step, v, n):
    """TraceRetain for one new trace: rule filter, then (without a short-term buffer)
    rating, threshold, eviction, clusters; with one (``tr_buffer`` > 0) the trace waits in
    the buffer for `_tr_evaluate`.

    ``T``, ``K``, ``X``: the `Trajectory`, `Knobs` and `FieldScratch`
    (`wmtsim.engine.records`)."""
    seed, traj, F, out = T.seed, T.traj, T.F, T.out
    cross, bl = K.wk.cross_relevance, X.knobs[0]
    bs, bimp = X.store.place, X.store.importance
    kind, tokens, outcome = F.kind, F.tokens, F.outcome
    evidence, topic, rel = F.evidence, F.topic, F.rel
    buffered = bl.tr_buffer > 0
    against = B_BUFFERED if buffered else B_IN
    # 1. Rule filter: near-duplicates of a buffered (no buffer: stored) trace, short
    #    traces without evidence, failed-action reports when they are low-priority.
    for w in range(v):
        if bs[w] == against and kind[w] != SUMMARY:
            if bl.dup_content != 0.0:
                sim = _content_similarity(v, w, F, cross)
            else:
                sim = _similarity(v, w, topic, rel, cross)
            if sim > bl.dup_threshold:
                bs[v] = B_DROPPED
                return n
    if tokens[v] < bl.min_tokens and not evidence[v]:
        bs[v] = B_DROPPED
        return n
    if bl.drop_failed != 0.0 and kind[v] == ACTION and outcome[v] == FAILURE:
        bs[v] = B_DROPPED
        return n
    if buffered:
        bs[v] = B_BUFFERED
        return n
    # 2. The 0–10 rating (one scorer call).
    _score_call(seed, traj, step, v, F, bimp, 0.0, bl, out)
    return _tr_retain(T, K, X, step, v, n)


@jit
def _tr_evaluate(T, K, X, step, n):
    """TraceRetain's evaluator over its short-term buffer: one batched rating call (the
    article §3.2: "batch several traces") reading every buffered trace, then each, in
    creation order, through threshold, eviction and clusters (`wmtsim.engine.records`:
    ``T``, ``K``, ``X``)."""
    seed, traj, F, out = T.seed, T.traj, T.F, T.out
    bl, bs, bimp = X.knobs[0], X.store.place, X.store.importance
    n0 = n
    raw = 0.0
    any_buffered = False
    for v in range(n0):
        if bs[v] == B_BUFFERED:
            raw += F.tokens[v]
            any_buffered = True
    if not any_buffered:
        return n
    call = bl.scorer_base_tokens + raw
    out[C.llm_calls] += 1
    out[C.prompt_tokens] += call
    out[C.memory_tokens] += call
    for v in range(n0):
        if bs[v] == B_BUFFERED:
            bimp[v] = _rate(seed, traj, step, v, F, 0.0, bl)
            n = _tr_retain(T, K, X, step, v, n)
    return n


@jit
def _tr_retain(T, K, X, step, v, n):
    """A rated trace (``X.store.importance[v]``): threshold, eviction, clusters."""
    F, slot_of = T.F, T.slot_of
    cross, bl = K.wk.cross_relevance, X.knobs[0]
    eviction, threshold, cluster = K.sw.eviction, K.sw.threshold, K.sw.cluster
    bs, bimp, blast, bfreq = X.store.place, X.store.importance, X.store.last, X.store.freq
    bwin, bmisc = X.window, X.misc
    kind, topic, rel = F.kind, F.topic, F.rel
    x = bimp[v]
    # 3. Threshold: z-score against the window of previous ratings, or raw >= 7.
    cnt = bmisc[M.win_count]
    size = bwin.shape[0]
    retain = x >= bl.raw_threshold
    if threshold != THRESHOLD_FIXED and cnt >= 2:
        mean = 0.0
        for j in range(cnt):
            mean += bwin[(bmisc[M.win_head] - cnt + j + size) % size]
        mean = mean / cnt
        var = 0.0
        for j in range(cnt):
            d = bwin[(bmisc[M.win_head] - cnt + j + size) % size] - mean
            var += d * d
        sd = math.sqrt(var / cnt)
        if sd > 0.0:
            retain = (x - mean) / sd > bl.z_threshold
    bwin[bmisc[M.win_head]] = x
    bmisc[M.win_head] = (bmisc[M.win_head] + 1) % size
    bmisc[M.win_count] = min(cnt + 1, size)
    if not retain:
        bs[v] = B_DROPPED
        return n
    # 5. Eviction (similarity: replace the most similar stored item when close enough).
    victim = -1
    if eviction == EVICT_SIMILARITY:
        best = -1.0
        for w in range(n):
            if bs[w] == B_IN:
                s = _similarity(v, w, topic, rel, cross)
                if s > best:
                    best = s
                    victim = w
        if best < bl.replace_threshold:
            victim = -1
    stored = 0
    for w in range(n):
        if bs[w] == B_IN:
            stored += 1
    if victim < 0 and stored >= bl.capacity:
        victim = _tr_victim(step, n, bs, bimp, blast, bfreq, F.created, eviction, bl)
    if victim >= 0:
        bs[victim] = B_EVICTED
    bs[v] = B_IN
    blast[v] = step
    bfreq[v] = 0
    # 4. Cluster summaries: a topic with cluster_size stored traces becomes one summary.
    if cluster != 0 and topic[v] >= 0 and slot_of[topic[v]] >= 0:
        members = 0
        for w in range(n):
            if bs[w] == B_IN and kind[w] != SUMMARY and topic[w] == topic[v]:
                members += 1
        if members >= bl.cluster_size:
            n = _tr_cluster(T, K, X, step, topic[v], n)
    return n


@jit
def _tr_victim(step, n, bs, bimp, blast, bfreq, created, eviction, bl):
    """The stored item to evict: LRU (oldest access), LFU (fewest retrievals, then LRU),
    importance + frequency (lowest w_imp·imp/10 + w_freq·retrievals/(steps since created
    + 1), the article's §3.4 rule), importance + recency (lowest w_imp·imp/10 +
    w_rec·decay^idle); ties to the lower slot."""
    best = -1
    best_key = 0.0
    best_key2 = 0.0
    for w in range(n):
        if bs[w] != B_IN:
            continue
        if eviction == EVICT_LFU:
            key = float(bfreq[w])
            key2 = float(blast[w])
        elif eviction == EVICT_IMPORTANCE:
            key = (bl.importance_weight * (bimp[w] / 10.0)
                   + bl.frequency_weight * (bfreq[w] / float(step - created[w] + 1)))
            key2 = 0.0
        elif eviction == EVICT_IMPORTANCE_RECENCY:
            key = (bl.importance_weight * (bimp[w] / 10.0)
                   + bl.recency_weight * _power(bl.recency_decay, step - blast[w]))
            key2 = 0.0
        else:  # LRU (also the similarity rule's fallback)
            key = float(blast[w])
            key2 = 0.0
        if best < 0 or key < best_key or (key == best_key and key2 < best_key2):
            best = w
            best_key = key
            best_key2 = key2
    return best


@jit
def _tr_cluster(T, K, X, step, t, n):
    """Summarise topic ``t``'s stored traces into its cluster summary; archive them."""
    seed, traj, F, slot_of, out = T.seed, T.traj, T.F, T.slot_of, T.out
    p, st, summary_rel = K.p, K.st, K.wk.summary_relevance
    bs, bimp, blast, bfreq = X.store.place, X.store.importance, X.store.last, X.store.freq
    kind, tokens, evidence = F.kind, F.tokens, F.evidence
    topic, top, summary = F.topic, F.top, F.summary
    ts = np.int64(slot_of[t])  # int64, as every slot argument: one compile each
    z = summary[ts]
    raw = 0.0
    imp = 0.0
    if z >= 0 and bs[z] == B_IN:
        raw += tokens[z]
        imp = bimp[z]
    has_ev = False
    read = np.empty(n, np.int64)
    k = np.int64(0)  # typed: a literal start would compile `_absorb` twice
    for w in range(n):
        if bs[w] != B_IN or kind[w] == SUMMARY or topic[w] != t:
            continue
        raw += tokens[w]
        imp = max(imp, bimp[w])
        if evidence[w]:
            has_ev = True
        read[k] = w
        k += 1
        bs[w] = B_ARCHIVED
    if z < 0:
        z = n
        n += 1
        _add_summary(F, z, ts, np.int64(t), np.int64(top[ts]), summary_rel, p.u_init_summary,
                     step)
        summary[ts] = z
    tokens[z] = math.ceil(st.c_sum * raw)
    evidence[z] = evidence[z] or has_ev
    _result_of(F, z, top[ts], X.knobs[0])  # a result only with the subtask's evidence
    _absorb(seed, traj, step, F, st, read, k, ts, z)
    bs[z] = B_IN
    bimp[z] = imp
    blast[z] = step
    bfreq[z] = 0
    out[C.summariser_calls] += 1
    out[C.llm_calls] += 1
    out[C.prompt_tokens] += st.summariser_base_tokens + raw
    out[C.memory_tokens] += st.summariser_base_tokens + raw
    return n


@jit
def _mem0_information(seed, traj, x, F, st):
    """How informative memory ``x`` looks to mem0's decision call: the signal WMT's
    selector reads too (apparent relevance, the outcome; no evidence flag) plus the
    selector's noise, drawn once per memory (step 0, PURPOSE_MEM0)."""
    ok = 0.0 if (F.kind[x] == ACTION and F.outcome[x] == FAILURE) else 1.0
    u = _uniform(seed, traj, np.int64(0), _draw_id(F, x), PURPOSE_MEM0)
    return 0.75 * F.rel[x] + 0.25 * ok + st.selector_noise * ((u - 0.5) * _SQRT12)


@jit
def _mem0_admit(T, K, X, step, v):
    """mem0 (mem0/memory/main.py `Memory._add_to_vector_store`, commit 9d6b79a, the last
    before the v3 additive pipeline) for one new fact.

    The fact is extracted (one LLM call reading it), the ``mem0_search_k`` stored
    memories most similar to it are retrieved (``vector_store.search(top_k=5)``), and one
    LLM call (mem0/configs/prompts.py DEFAULT_UPDATE_MEMORY_PROMPT) decides. Without a
    retrieved memory w of similarity >= mem0_match the fact is new: ADD. On a match the
    decision reads content (the default), as the prompt asks: "keep the fact which has
    the most information": UPDATE (v replaces w; a poisoned fact that looks more
    informative can overwrite a true one) when v looks more informative than w
    (`_mem0_information`), else NONE (v conveys nothing more: not stored). A
    contradiction is DELETE: the world's supersede event (`_baseline_supersede`). With
    ``mem0_random_decision`` one draw decides UPDATE, DELETE (w deleted, v not stored),
    NONE or ADD with probabilities mem0_p_update, mem0_p_delete, mem0_p_none and the rest.
    ``T``, ``K``, ``X``: the `Trajectory`, `Knobs` and `FieldScratch`.
    """
    seed, traj, F, out = T.seed, T.traj, T.F, T.out
    cross, st, bl = K.wk.cross_relevance, K.st, X.knobs[0]
    bs, blast, bfreq = X.store.place, X.store.last, X.store.freq
    kind, tokens, topic, rel = F.kind, F.tokens, F.topic, F.rel
    n = v
    cands = np.empty(n, np.int64)
    score = np.empty(n)
    c = np.int64(0)  # typed: a literal start would compile `_top_by` twice
    for w in range(n):
        if bs[w] == B_IN and kind[w] != SUMMARY:
            cands[c] = w
            score[c] = _similarity(v, w, topic, rel, cross)
            c += 1
    found = _top_by(score, cands, c, int(bl.mem0_search_k))
    read = 0.0
    for w in found:
        read += tokens[w]
    out[C.prompt_tokens] += 2.0 * bl.scorer_base_tokens + 2.0 * tokens[v] + read
    out[C.memory_tokens] += 2.0 * bl.scorer_base_tokens + 2.0 * tokens[v] + read
    out[C.llm_calls] += 2  # extraction + decision
    bs[v] = B_IN
    blast[v] = step
    bfreq[v] = 0
    if found.shape[0] == 0:
        return
    best = found[0]
    if _similarity(v, best, topic, rel, cross) < bl.mem0_match:
        return
    if bl.mem0_random_decision == 0.0:
        if _mem0_information(seed, traj, v, F, st) > _mem0_information(seed, traj, best, F, st):
            bs[best] = B_OVERWRITTEN  # UPDATE
        else:
            bs[v] = B_DROPPED  # NONE
        return
    x = _uniform(seed, traj, step, _draw_id(F, v), PURPOSE_MEM0)
    p_up = bl.mem0_p_update
    p_del = p_up + bl.mem0_p_delete
    p_none = p_del + bl.mem0_p_none
    if x < p_up:
        bs[best] = B_OVERWRITTEN
    elif x < p_del:
        bs[best] = B_DELETED
        bs[v] = B_DROPPED
    elif x < p_none:
        bs[v] = B_DROPPED
