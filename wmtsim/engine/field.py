"""The memory policies of the field (POLICIES.md) as kernels of the one engine.

`wmtsim.engine` plays the same world scripts, stubs, reasoner and accounting for every
policy; a policy with selection ``baseline`` (`wmtsim.policies.SEL_BASELINE`) hands one
thing to this module, at one dispatch point of the prompt step: which memories are kept
(the store, the candidate pool ε) and which are put in the context (s). Its per-slot state
lives in extra arrays beside the forest:

``bs``     the slot's place: unseen, in the store (queue), dropped by the filter, evicted,
           in recall storage (MemGPT), archived into a cluster summary, forgotten;
``bimp``   importance (0–10 stub rating; GA: 1–10);
``blast``  step of creation or last retrieval (LRU, GA recency, MemoryBank's t reset);
``bfreq``  retrievals (LFU);
``bstr``   MemoryBank strength S.

Every rule is documented in docs/policies.md; the readable twin is
`wmtsim.baselines_reference`, and both agree bit for bit (tests/test_baselines.py).
Floating-point conventions shared with the twin: powers are products in a loop; the
MemoryBank threshold compares ``t > S · time_scale · ln(1/θ)`` with the last factor
precomputed in Python (`Baselines.pack`); ``math.exp`` (stochastic MemoryBank only) is
the C library's on both sides.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from wmtsim.core.codes import ACTION, FAILURE, GLOBAL, SUMMARY, TASK
from wmtsim.core.draws import PURPOSE_FORGET, PURPOSE_IMPORTANCE, PURPOSE_LEAK, PURPOSE_MEM0
from wmtsim.core.field_knobs import (  # noqa: F401 (re-exported for the module's old path)
    _SQRT3,
    B_ARCHIVED,
    B_CAPACITY,
    B_CLUSTER_SIZE,
    B_DELETED,
    B_DROP_FAILED,
    B_DROPPED,
    B_DUP_CONTENT,
    B_DUP_THRESHOLD,
    B_EVICT_FRACTION,
    B_EVICTED,
    B_FORGOTTEN,
    B_FREQUENCY_WEIGHT,
    B_GA_CODE_DECAY,
    B_GA_DECAY,
    B_GA_STEP_DECAY,
    B_GA_TOP_K,
    B_GA_W_IMPORTANCE,
    B_GA_W_RECENCY,
    B_GA_W_RELEVANCE,
    B_GAC_W_IMPORTANCE,
    B_GAC_W_RECENCY,
    B_GAC_W_RELEVANCE,
    B_HOURS_PER_STEP,
    B_IMPORTANCE_NOISE,
    B_IMPORTANCE_WEIGHT,
    B_IN,
    B_KEEP_LAST,
    B_MB_CODE_RECENT,
    B_MB_CODE_TOP_K,
    B_MB_FORGET_AFTER,
    B_MB_S_CAP,
    B_MB_SESSION_STEPS,
    B_MB_THRESHOLD,
    B_MB_TIME_SCALE,
    B_MEM0_MATCH,
    B_MEM0_P_DELETE,
    B_MEM0_P_NONE,
    B_MEM0_P_UPDATE,
    B_MEM0_SEARCH_K,
    B_MIN_TOKENS,
    B_NAMES,
    B_OVERWRITTEN,
    B_POPPING,
    B_RAW_THRESHOLD,
    B_RECALL,
    B_RECALL_K,
    B_RECENCY_DECAY,
    B_RECENCY_WEIGHT,
    B_REPLACE_THRESHOLD,
    B_SCORER_BASE_TOKENS,
    B_TOKEN_LIMIT,
    B_TOP_K,
    B_UNSEEN,
    B_WINDOW_STEPS,
    B_WINDOW_TOKENS,
    B_Z_THRESHOLD,
    B_Z_WINDOW,
    M_SEEN,
    M_SUMMARY,
    M_WIN_COUNT,
    M_WIN_HEAD,
    Baselines,
)
from wmtsim.core.params import P_BUDGET, P_U_INIT_SUMMARY
from wmtsim.core.policies import (
    EVICT_IMPORTANCE,
    EVICT_IMPORTANCE_RECENCY,
    EVICT_LFU,
    EVICT_SIMILARITY,
    FAM_GENERATIVE,
    FAM_MEM0,
    FAM_MEMGPT,
    FAM_MEMORYBANK,
    FAM_TOKEN_BUFFER,
    FAM_TRACERETAIN,
    FAM_WINDOW,
    MB_CODE,
    THRESHOLD_FIXED,
)
from wmtsim.core.rng import _uniform
from wmtsim.core.stubs import (
    ST_C_SUM,
    ST_P_LEAK,
    ST_P_LEAK_RIDER,
    ST_SUMMARISER_BASE_TOKENS,
    ST_TOP_K,
)
from wmtsim.engine.forest import (
    F_CREATED,
    F_EVIDENCE,
    F_KIND,
    F_LEAK,
    F_OUTCOME,
    F_PARENT,
    F_PERS,
    F_POISONED,
    F_REL,
    F_RIDER,
    F_SUMMARY,
    F_TOKENS,
    F_TOP,
    F_TOPIC,
    _add_summary,
    _draw_id,
    _task_depth,
)

# ------------------------------------------------------------------ shared small rules


@njit(cache=True)
def _importance(seed, traj, step, d, rel, ok, ev, noise_sd, lo):
    """The importance scorer stub: an integer rating in [lo, 10].

    10 · (0.6·relevance + 0.2·[not a failure] + 0.2·[carries evidence]) + noise, rounded
    half up. Relevance is what the item looks like (poison: its apparent relevance), so
    crafted poison is rated high. ``d`` is the item's `_draw_id` (memory identity).
    """
    s = 0.0
    for k in range(4):
        s += _uniform(seed, traj, step, 4 * d + k, PURPOSE_IMPORTANCE)
    x = 10.0 * (0.6 * rel + 0.2 * ok + 0.2 * ev) + noise_sd * ((s - 2.0) * _SQRT3)
    r = math.floor(x + 0.5)
    return min(10.0, max(lo, r))


@njit(cache=True)
def _similarity(a, b, topic, rel, cross):
    """Item–item similarity stub: (1 on the same topic, else cross) · (1 − |Δ relevance|)."""
    t = 1.0 if topic[a] == topic[b] else cross
    return t * (1.0 - abs(rel[a] - rel[b]))


@njit(cache=True)
def _content_similarity(a, b, F, cross):
    """TraceRetain's near-duplicate stub (the article's cosine > 0.95 on near-identical
    text): 0 unless both traces are of the same kind, outcome and evidence (the key
    fact), else the item–item similarity."""
    kind, outcome, evidence = F[F_KIND], F[F_OUTCOME], F[F_EVIDENCE]
    if kind[a] != kind[b] or outcome[a] != outcome[b] or evidence[a] != evidence[b]:
        return 0.0
    return _similarity(a, b, F[F_TOPIC], F[F_REL], cross)


@njit(cache=True)
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


@njit(cache=True)
def _fit_newest(n, bs, F, eligible, selected, z, budget, used, limit):
    """A queue's context under the budget: its running summary ``z`` first (if any and
    it fits), then the queued items newest first until one does not fit, at most
    ``limit`` of them (0 = all). Returns the tokens used."""
    kind, tokens = F[F_KIND], F[F_TOKENS]
    if z >= 0 and eligible[z] and bs[z] == B_IN and used + tokens[z] <= budget:
        selected[z] = True
        used += tokens[z]
    count = 0
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


@njit(cache=True)
def _cap(own, st):
    """A retrieval's item cap: the policy's own knob, or 0 → the shared `Stubs.top_k`."""
    return int(own) if own > 0 else int(st[ST_TOP_K])


@njit(cache=True)
def _power(x, k):
    """x^k as k factors (the project's convention; no pow)."""
    g = 1.0
    for _ in range(k):
        g *= x
    return g


@njit(cache=True)
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


@njit(cache=True)
def _absorb(seed, traj, step, v, F, st, host):
    """Does the summariser carry poisoned item ``v`` into the summary of task slot
    ``host``? (p_leak draw; on a leak, ``v``'s `F_LEAK` provenance records it for IP.)"""
    poisoned, rider = F[F_POISONED], F[F_RIDER]
    if not poisoned[v]:
        return False
    p_leak = st[ST_P_LEAK_RIDER] if rider[v] else st[ST_P_LEAK]
    if _uniform(seed, traj, step, _draw_id(F, v), PURPOSE_LEAK) < p_leak:
        F[F_LEAK][v] |= np.int64(1) << np.int64(_task_depth(F[F_PARENT], host))
        return True
    return False


# ------------------------------------------------------------------ the dispatch point


@njit(cache=True)
def _baseline_step(seed, traj, step, n, F, slot_of, on_path, cross, summary_rel, bs, bimp,
                   blast, bfreq, bstr, bwin, bmisc, sw_family, sw_variant, sw_eviction,
                   sw_threshold, sw_cluster, p, st, bl, out):
    """Steps 1–2 of a field policy's prompt step: admit new items, forget/evict.

    Adds the scorer's and summariser's LLM calls to ``out`` and returns the slot count
    (a summary may have been created); `_baseline_retrieve` then fills ε and s.
    """
    kind = F[F_KIND]
    n0 = n
    # 1. Admission of the items created since the last step, in creation order.
    for v in range(bmisc[M_SEEN], n0):
        k = kind[v]
        if k != TASK and k != ACTION and k != GLOBAL:
            continue
        if sw_family == FAM_TRACERETAIN:
            n = _tr_admit(seed, traj, step, v, n, F, slot_of, cross, summary_rel, bs, bimp,
                          blast, bfreq, bwin, bmisc, sw_eviction, sw_threshold, sw_cluster,
                          p, st, bl, out)
        elif sw_family == FAM_MEM0:
            _mem0_admit(seed, traj, step, v, F, cross, bs, blast, bfreq, bl, out)
        else:
            bs[v] = B_IN
            blast[v] = step
            bfreq[v] = 0
            bstr[v] = 1.0
            if sw_family == FAM_GENERATIVE:
                _score_call(seed, traj, step, v, F, bimp, 1.0, bl, out)
    bmisc[M_SEEN] = n

    # 2. Forgetting (MemoryBank: once per session) and overflow.
    session = int(bl[B_MB_SESSION_STEPS])
    if sw_family == FAM_MEMORYBANK:
        if session > 0 and step > 0 and step % session == 0:
            _mb_forget(seed, traj, step, n, F, on_path, bs, blast, bstr, sw_variant, bl)
    elif sw_family == FAM_MEMGPT:
        limit = bl[B_WINDOW_TOKENS] if bl[B_WINDOW_TOKENS] > 0 else p[P_BUDGET]
        n = _queue_overflow(seed, traj, step, n, F, bs, bmisc, float(limit),
                            bl[B_EVICT_FRACTION], int(bl[B_KEEP_LAST]), True, B_RECALL,
                            summary_rel, p, st, out)
    elif sw_family == FAM_TOKEN_BUFFER:
        limit = bl[B_TOKEN_LIMIT] if bl[B_TOKEN_LIMIT] > 0 else p[P_BUDGET]
        n = _queue_overflow(seed, traj, step, n, F, bs, bmisc, float(limit),
                            0.0, 0, sw_variant == 1, B_EVICTED, summary_rel, p, st, out)
    elif sw_family == FAM_WINDOW:
        n = _window_slide(seed, traj, step, n, F, bs, bmisc, int(bl[B_WINDOW_STEPS]),
                          sw_variant == 1, summary_rel, p, st, out)

    return n


@njit(cache=True)
def _baseline_retrieve(step, n, critical, on_path, util, bs, bimp, blast, bfreq, bstr,
                       bmisc, eligible, selected, sw_family, sw_variant, F, p, st, bl):
    """Steps 3–4 of a field policy's prompt step: the pool ε, the retrieval s (by the
    query similarity ``util`` of every slot) within the budget B, and the access
    statistics."""
    tokens = F[F_TOKENS]
    budget = p[P_BUDGET]
    # 3. The pool ε and the retrieval s, never more than B tokens.
    recent = np.zeros(n, np.bool_)  # MemoryBank code: history turns, not recalls
    for v in range(n):
        eligible[v] = (bs[v] == B_IN or bs[v] == B_RECALL) and not on_path[v]
        selected[v] = False
    if sw_family == FAM_MEMGPT or sw_family == FAM_WINDOW or sw_family == FAM_TOKEN_BUFFER:
        # The queue (and its running summary) is the context, newest first within B.
        used = _fit_newest(n, bs, F, eligible, selected, bmisc[M_SUMMARY], budget, 0.0, 0)
        if sw_family == FAM_MEMGPT and critical and bl[B_RECALL_K] > 0:
            _recall_search(n, bs, eligible, selected, util, int(bl[B_RECALL_K]), tokens,
                           budget, used)
    elif sw_family == FAM_GENERATIVE:
        _ga_retrieve(step, n, bs, bimp, blast, eligible, selected, util, sw_variant, tokens,
                     budget, st, bl)
    else:  # TraceRetain, MemoryBank, mem0: top-k by similarity to the query, within B
        used = 0.0
        cap = _cap(bl[B_TOP_K], st)
        if sw_family == FAM_MEMORYBANK and sw_variant == MB_CODE:
            used = _fit_newest(n, bs, F, eligible, selected, -1, budget, 0.0,
                               int(bl[B_MB_CODE_RECENT]))
            for v in range(n):
                recent[v] = selected[v]
            cap = int(bl[B_MB_CODE_TOP_K])
        cands = np.empty(n, np.int64)
        score = np.empty(n)
        c = 0
        for v in range(n):
            if eligible[v] and not recent[v]:
                cands[c] = v
                score[c] = util[v]
                c += 1
        _fit(score, cands, c, cap, tokens, budget, used, selected)

    # 4. Access statistics of what was retrieved (LRU, LFU, recall strengthening).
    for v in range(n):
        if selected[v] and not recent[v]:
            bfreq[v] += 1
            if sw_family == FAM_MEMORYBANK:
                s = bstr[v] + 1.0
                if sw_variant == 1 and bl[B_MB_S_CAP] > 0 and s > bl[B_MB_S_CAP]:
                    s = bl[B_MB_S_CAP]
                bstr[v] = s
            blast[v] = step
    return n


@njit(cache=True)
def _baseline_supersede(bs, v):
    """A supersede/invalidate event for a field policy that acts on it (mem0's DELETE,
    TraceRetain's conflict resolution): a stored memory is deleted. Returns whether it
    was in the store."""
    if v >= 0 and bs[v] == B_IN:
        bs[v] = B_DELETED
        return True
    return False


@njit(cache=True)
def _score_call(seed, traj, step, v, F, bimp, lo, bl, out):
    """Rate item ``v`` with the importance stub (one LLM call reading the item)."""
    kind, tokens, outcome = F[F_KIND], F[F_TOKENS], F[F_OUTCOME]
    evidence, rel = F[F_EVIDENCE], F[F_REL]
    ok = 0.0 if (kind[v] == ACTION and outcome[v] == FAILURE) else 1.0
    ev = 1.0 if evidence[v] else 0.0
    bimp[v] = _importance(seed, traj, step, _draw_id(F, v), rel[v], ok, ev,
                          bl[B_IMPORTANCE_NOISE], lo)
    out[12] += bl[B_SCORER_BASE_TOKENS] + tokens[v]  # C_PROMPT_TOKENS
    out[13] += 1  # C_LLM_CALLS


# ------------------------------------------------------------------ TraceRetain


@njit(cache=True)
def _tr_admit(seed, traj, step, v, n, F, slot_of, cross, summary_rel, bs, bimp, blast,
              bfreq, bwin, bmisc, eviction, threshold, cluster, p, st, bl, out):
    """TraceRetain for one new trace: rule filter, rating, threshold, eviction, clusters."""
    kind, tokens, outcome = F[F_KIND], F[F_TOKENS], F[F_OUTCOME]
    evidence, topic, rel = F[F_EVIDENCE], F[F_TOPIC], F[F_REL]
    # 1. Rule filter: near-duplicates of a stored trace, short traces without evidence,
    #    failed-action reports when they are low-priority.
    for w in range(v):
        if bs[w] == B_IN and kind[w] != SUMMARY:
            if bl[B_DUP_CONTENT] != 0.0:
                sim = _content_similarity(v, w, F, cross)
            else:
                sim = _similarity(v, w, topic, rel, cross)
            if sim > bl[B_DUP_THRESHOLD]:
                bs[v] = B_DROPPED
                return n
    if tokens[v] < bl[B_MIN_TOKENS] and not evidence[v]:
        bs[v] = B_DROPPED
        return n
    if bl[B_DROP_FAILED] != 0.0 and kind[v] == ACTION and outcome[v] == FAILURE:
        bs[v] = B_DROPPED
        return n
    # 2. The 0–10 rating (one scorer call).
    _score_call(seed, traj, step, v, F, bimp, 0.0, bl, out)
    x = bimp[v]
    # 3. Threshold: z-score against the window of previous ratings, or raw >= 7.
    cnt = bmisc[M_WIN_COUNT]
    size = bwin.shape[0]
    retain = x >= bl[B_RAW_THRESHOLD]
    if threshold != THRESHOLD_FIXED and cnt >= 2:
        mean = 0.0
        for j in range(cnt):
            mean += bwin[(bmisc[M_WIN_HEAD] - cnt + j + size) % size]
        mean = mean / cnt
        var = 0.0
        for j in range(cnt):
            d = bwin[(bmisc[M_WIN_HEAD] - cnt + j + size) % size] - mean
            var += d * d
        sd = math.sqrt(var / cnt)
        if sd > 0.0:
            retain = (x - mean) / sd > bl[B_Z_THRESHOLD]
    bwin[bmisc[M_WIN_HEAD]] = x
    bmisc[M_WIN_HEAD] = (bmisc[M_WIN_HEAD] + 1) % size
    bmisc[M_WIN_COUNT] = min(cnt + 1, size)
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
        if best < bl[B_REPLACE_THRESHOLD]:
            victim = -1
    stored = 0
    for w in range(n):
        if bs[w] == B_IN:
            stored += 1
    if victim < 0 and stored >= bl[B_CAPACITY]:
        victim = _tr_victim(step, n, bs, bimp, blast, bfreq, F[F_CREATED], eviction, bl)
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
        if members >= bl[B_CLUSTER_SIZE]:
            n = _tr_cluster(seed, traj, step, topic[v], n, F, slot_of, summary_rel, bs,
                            bimp, blast, bfreq, p, st, out)
    return n


@njit(cache=True)
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
            key = (bl[B_IMPORTANCE_WEIGHT] * (bimp[w] / 10.0)
                   + bl[B_FREQUENCY_WEIGHT] * (bfreq[w] / float(step - created[w] + 1)))
            key2 = 0.0
        elif eviction == EVICT_IMPORTANCE_RECENCY:
            key = (bl[B_IMPORTANCE_WEIGHT] * (bimp[w] / 10.0)
                   + bl[B_RECENCY_WEIGHT] * _power(bl[B_RECENCY_DECAY], step - blast[w]))
            key2 = 0.0
        else:  # LRU (also the similarity rule's fallback)
            key = float(blast[w])
            key2 = 0.0
        if best < 0 or key < best_key or (key == best_key and key2 < best_key2):
            best = w
            best_key = key
            best_key2 = key2
    return best


@njit(cache=True)
def _tr_cluster(seed, traj, step, t, n, F, slot_of, summary_rel, bs, bimp, blast, bfreq,
                p, st, out):
    """Summarise topic ``t``'s stored traces into its cluster summary; archive them."""
    kind, tokens, poisoned, evidence = F[F_KIND], F[F_TOKENS], F[F_POISONED], F[F_EVIDENCE]
    topic, pers, top, summary = F[F_TOPIC], F[F_PERS], F[F_TOP], F[F_SUMMARY]
    ts = slot_of[t]
    z = summary[ts]
    raw = 0.0
    imp = 0.0
    if z >= 0 and bs[z] == B_IN:
        raw += tokens[z]
        imp = bimp[z]
    has_ev = False
    leaked = False
    leak_pers = 0.0
    for w in range(n):
        if bs[w] != B_IN or kind[w] == SUMMARY or topic[w] != t:
            continue
        raw += tokens[w]
        imp = max(imp, bimp[w])
        if evidence[w]:
            has_ev = True
        if _absorb(seed, traj, step, w, F, st, ts):
            leaked = True
            leak_pers = max(leak_pers, pers[w])
        bs[w] = B_ARCHIVED
    if z < 0:
        z = n
        n += 1
        _add_summary(F, z, ts, t, top[ts], summary_rel, p[P_U_INIT_SUMMARY], step)
        summary[ts] = z
    tokens[z] = math.ceil(st[ST_C_SUM] * raw)
    evidence[z] = evidence[z] or has_ev
    if leaked:
        poisoned[z] = True
        pers[z] = max(pers[z], leak_pers)
    bs[z] = B_IN
    bimp[z] = imp
    blast[z] = step
    bfreq[z] = 0
    out[15] += 1  # C_SUMMARISER_CALLS
    out[13] += 1  # C_LLM_CALLS
    out[12] += st[ST_SUMMARISER_BASE_TOKENS] + raw
    return n


# ------------------------------------------------------------------ Generative Agents


@njit(cache=True)
def _ga_retrieve(step, n, bs, bimp, blast, eligible, selected, util, variant, tokens,
                 budget, st, bl):
    """score = w_rec·recency + w_imp·importance + w_rel·relevance, each min-max scaled over
    the candidates (all equal: 0.5); the best that fit in B, at most the cap (paper: the
    shared cap; public code: ga_top_k = `new_retrieve`'s n_count = 30). Paper: recency =
    decay^(hours since last access); public code: candidates ranked by last access,
    oldest first, decay^(rank+1).

    Candidate order, as `new_retrieve` builds it: the memories newest first
    (`seq_event`), stably sorted by last access; equal scores keep that order
    (`top_highest_x_values` is a stable sort), for both variants.
    """
    cands = np.empty(n, np.int64)
    c = 0
    for j in range(n):
        v = n - 1 - j
        if eligible[v]:
            cands[c] = v
            c += 1
    if c == 0:
        return
    last = np.empty(c)
    for j in range(c):
        last[j] = blast[cands[j]]
    order = np.argsort(last, kind="mergesort")
    ordered = np.empty(c, np.int64)
    for j in range(c):
        ordered[j] = cands[order[j]]
    rec = np.empty(c)
    imp = np.empty(c)
    rel = np.empty(c)
    if variant == 0:
        for j in range(c):
            rec[j] = _power(bl[B_GA_STEP_DECAY], step - blast[ordered[j]])
        w_rec, w_imp, w_rel = bl[B_GA_W_RECENCY], bl[B_GA_W_IMPORTANCE], bl[B_GA_W_RELEVANCE]
        cap = _cap(bl[B_TOP_K], st)
    else:
        for j in range(c):
            rec[j] = _power(bl[B_GA_CODE_DECAY], j + 1)
        w_rec, w_imp, w_rel = (bl[B_GAC_W_RECENCY], bl[B_GAC_W_IMPORTANCE],
                               bl[B_GAC_W_RELEVANCE])
        cap = int(bl[B_GA_TOP_K])
    for j in range(c):
        imp[j] = bimp[ordered[j]]
        rel[j] = util[ordered[j]]
    _minmax(rec, c)
    _minmax(imp, c)
    _minmax(rel, c)
    score = np.empty(c)
    for j in range(c):
        score[j] = w_rec * rec[j] + w_imp * imp[j] + w_rel * rel[j]
    _fit(score, ordered, c, cap, tokens, budget, 0.0, selected)


@njit(cache=True)
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


# ------------------------------------------------------------------ MemoryBank


@njit(cache=True)
def _mb_forget(seed, traj, step, n, F, on_path, bs, blast, bstr, variant, bl):
    """Forgetting pass (at a session start): t = steps since creation or last recall /
    mb_time_scale (the source's days).

    Paper: R = exp(−t/S), forget when R < θ, i.e. steps > S · scale · ln(1/θ) (exact
    comparison). Stochastic: keep with probability R. Public code (forget_memory.py
    `forgetting_curve`): R = exp(−t / 5*S), which Python reads as exp(−(t/5)·S), a
    stronger memory forgetting faster; forgotten when random() > R.
    """
    for v in range(n):
        if bs[v] != B_IN or on_path[v]:
            continue
        dt = float(step - blast[v])
        if variant == 0:
            if dt > bstr[v] * bl[B_MB_FORGET_AFTER]:
                bs[v] = B_FORGOTTEN
        elif variant == 1:
            r = math.exp(-(dt / bl[B_MB_TIME_SCALE]) / bstr[v])
            if _uniform(seed, traj, step, _draw_id(F, v), PURPOSE_FORGET) >= r:
                bs[v] = B_FORGOTTEN
        else:  # the code as written: math.exp(-t / 5*S), forget when random() > R
            r = math.exp(-(dt / bl[B_MB_TIME_SCALE]) / 5.0 * bstr[v])
            if _uniform(seed, traj, step, _draw_id(F, v), PURPOSE_FORGET) > r:
                bs[v] = B_FORGOTTEN


# ------------------------------------------------------------------ mem0


@njit(cache=True)
def _mem0_admit(seed, traj, step, v, F, cross, bs, blast, bfreq, bl, out):
    """mem0 (main.py `Memory._add_to_vector_store`, before v3) for one new fact.

    The fact is extracted (one LLM call reading it), the ``mem0_search_k`` stored
    memories most similar to it are retrieved (vector_store.search(top_k=5)), and one
    LLM call (DEFAULT_UPDATE_MEMORY_PROMPT) decides. The stub: when the most similar
    retrieved memory w has similarity >= mem0_match, one draw decides UPDATE (the new
    fact overwrites w: w leaves, v is stored; a poisoned fact can overwrite a true one),
    DELETE (w deleted as contradicted, v not stored), NONE (v already known: not stored)
    or ADD, with probabilities mem0_p_update, mem0_p_delete, mem0_p_none and the rest;
    without a match, ADD.
    """
    kind, tokens, topic, rel = F[F_KIND], F[F_TOKENS], F[F_TOPIC], F[F_REL]
    n = v
    cands = np.empty(n, np.int64)
    score = np.empty(n)
    c = 0
    for w in range(n):
        if bs[w] == B_IN and kind[w] != SUMMARY:
            cands[c] = w
            score[c] = _similarity(v, w, topic, rel, cross)
            c += 1
    found = _top_by(score, cands, c, int(bl[B_MEM0_SEARCH_K]))
    read = 0.0
    for w in found:
        read += tokens[w]
    out[12] += 2.0 * bl[B_SCORER_BASE_TOKENS] + 2.0 * tokens[v] + read  # C_PROMPT_TOKENS
    out[13] += 2  # C_LLM_CALLS: extraction + decision
    bs[v] = B_IN
    blast[v] = step
    bfreq[v] = 0
    if found.shape[0] == 0:
        return
    best = found[0]
    if _similarity(v, best, topic, rel, cross) < bl[B_MEM0_MATCH]:
        return
    x = _uniform(seed, traj, step, _draw_id(F, v), PURPOSE_MEM0)
    p_up = bl[B_MEM0_P_UPDATE]
    p_del = p_up + bl[B_MEM0_P_DELETE]
    p_none = p_del + bl[B_MEM0_P_NONE]
    if x < p_up:
        bs[best] = B_OVERWRITTEN
    elif x < p_del:
        bs[best] = B_DELETED
        bs[v] = B_DROPPED
    elif x < p_none:
        bs[v] = B_DROPPED


# ------------------------------------------------------------------ queues and windows


@njit(cache=True)
def _queue_overflow(seed, traj, step, n, F, bs, bmisc, limit, frac, keep_last,
                    summarize, to_state, summary_rel, p, st, out):
    """Pop the oldest queued items while the queue (+ summary) is over ``limit``.

    Triggered when queue + summary > limit. Items go (oldest first, never the newest
    ``keep_last``) while fewer than ``frac`` of the queue's tokens are out or the queue +
    the summary they would make is still over the limit. With ``summarize`` they are
    merged with the old summary into one (ceil(c_sum · (old + popped tokens)) tokens).
    """
    kind, tokens = F[F_KIND], F[F_TOKENS]
    q = 0.0
    n_q = 0
    for v in range(n):
        if bs[v] == B_IN and kind[v] != SUMMARY:
            q += tokens[v]
            n_q += 1
    z = bmisc[M_SUMMARY]
    s_old = float(tokens[z]) if z >= 0 else 0.0
    if q + s_old <= limit:
        return n
    popped = 0.0
    n_pop = 0
    for v in range(n):
        if bs[v] != B_IN or kind[v] == SUMMARY:
            continue
        if n_q - n_pop <= keep_last:
            break
        s_new = s_old
        if summarize and n_pop > 0:
            s_new = float(math.ceil(st[ST_C_SUM] * (s_old + popped)))
        elif not summarize:
            s_new = 0.0
        if not (popped < frac * q or q - popped + s_new > limit):
            break
        bs[v] = B_POPPING
        popped += tokens[v]
        n_pop += 1
    return _finish_pop(seed, traj, step, n, F, bs, bmisc, to_state, summarize, s_old, popped,
                       summary_rel, p, st, out)


@njit(cache=True)
def _window_slide(seed, traj, step, n, F, bs, bmisc, k, summarize, summary_rel, p, st,
                  out):
    """Sliding window: items created more than ``k`` steps ago leave the context."""
    kind, tokens, created = F[F_KIND], F[F_TOKENS], F[F_CREATED]
    popped = 0.0
    for v in range(n):
        if bs[v] == B_IN and kind[v] != SUMMARY and created[v] <= step - k:
            bs[v] = B_POPPING
            popped += tokens[v]
    z = bmisc[M_SUMMARY]
    s_old = float(tokens[z]) if z >= 0 else 0.0
    return _finish_pop(seed, traj, step, n, F, bs, bmisc, B_EVICTED, summarize, s_old, popped,
                       summary_rel, p, st, out)


@njit(cache=True)
def _finish_pop(seed, traj, step, n, F, bs, bmisc, final_state, summarize, s_old, popped,
                summary_rel, p, st, out):
    """Items marked popping at this step go to ``final_state``; with ``summarize`` they
    and the old summary are merged into one recursive summary node.

    The summary has ceil(c_sum · (old summary + popped tokens)) tokens, keeps no task
    evidence (a running summary is lossy) and absorbs each popped poisoned item with
    p_leak (p_leak_rider for summary riders): it is then contaminated.
    """
    tokens, poisoned, pers = F[F_TOKENS], F[F_POISONED], F[F_PERS]
    leaked = False
    leak_pers = 0.0
    any_popped = False
    for v in range(n):
        if bs[v] != B_POPPING:
            continue
        any_popped = True
        bs[v] = final_state
        if summarize and _absorb(seed, traj, step, v, F, st, 0):
            leaked = True
            leak_pers = max(leak_pers, pers[v])
    if not (summarize and any_popped):
        return n
    z = bmisc[M_SUMMARY]
    if z < 0:
        z = n
        n += 1
        _add_summary(F, z, 0, -1, -1, summary_rel, p[P_U_INIT_SUMMARY], step)
        bmisc[M_SUMMARY] = z
        F[F_SUMMARY][0] = z  # the root's summary: IP follows what it absorbed
    raw = s_old + popped
    tokens[z] = math.ceil(st[ST_C_SUM] * raw)
    if leaked:
        poisoned[z] = True
        pers[z] = max(pers[z], leak_pers)
    bs[z] = B_IN
    out[15] += 1  # C_SUMMARISER_CALLS
    out[13] += 1  # C_LLM_CALLS
    out[12] += st[ST_SUMMARISER_BASE_TOKENS] + raw
    return n


@njit(cache=True)
def _recall_search(n, bs, eligible, selected, util, k, tokens, budget, used):
    """MemGPT recall search at a critical step: up to ``k`` evicted messages most similar
    to the query come back into the context, within what the budget leaves."""
    cands = np.empty(n, np.int64)
    score = np.empty(n)
    c = 0
    for v in range(n):
        if eligible[v] and bs[v] == B_RECALL:
            cands[c] = v
            score[c] = util[v]
            c += 1
    _fit(score, cands, c, k, tokens, budget, used, selected)


@njit(cache=True)
def _baseline_eligible(n, on_path, bs, eligible):
    """ε of a field policy: the store (and MemGPT's searchable recall storage)."""
    for v in range(n):
        eligible[v] = (bs[v] == B_IN or bs[v] == B_RECALL) and not on_path[v]
