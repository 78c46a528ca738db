"""The memory policies of the field (docs/field.md) as kernels of the one engine.

`wmtsim.engine` plays the same world scripts, stubs, reasoner and accounting for every
policy; a policy with selection ``baseline`` (`wmtsim.core.policies.SEL_BASELINE`) hands one
thing to this module, at one dispatch point of the prompt step: which memories are kept
(the store, the candidate pool ε) and which are put in the context (s). Its per-slot state
lives in extra arrays beside the forest:

``bs``     the slot's place: unseen, in the store (queue), dropped by the filter, evicted,
           in recall storage (MemGPT), archived into a cluster summary, forgotten;
``bimp``   importance (0–10 stub rating; GA: 1–10);
``blast``  step of creation or last retrieval (LRU, GA recency, MemoryBank's t reset);
``bfreq``  retrievals (LFU);
``bstr``   MemoryBank strength S.

Every rule is documented in docs/field.md; the readable twin is
`wmtsim.twins.field_reference`, and both agree bit for bit (tests/twins/test_baselines.py).
Floating-point conventions shared with the twin: powers are products in a loop; the
MemoryBank threshold compares ``t > S · time_scale · ln(1/θ)`` with the last factor
precomputed in Python (`Baselines.pack`); ``math.exp`` (stochastic MemoryBank only) is
the C library's on both sides.
"""

from __future__ import annotations

import numpy as np

from wmtsim.core.codes import ACTION, GLOBAL, TASK
from wmtsim.core.field_knobs import (  # noqa: F401 (re-exported for the module's old path)
    _SQRT3,
    B_ARCHIVED,
    B_BUFFERED,
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
    B_GA_FOCAL_POINTS,
    B_GA_REFLECT_THRESHOLD,
    B_GA_STEP_DECAY,
    B_GA_THOUGHTS,
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
    B_LETTA_WALK,
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
    B_SEARCH_BASE_TOKENS,
    B_TOKEN_LIMIT,
    B_TOP_K,
    B_TR_BUFFER,
    B_TR_EVAL_EVERY,
    B_UNSEEN,
    B_WINDOW_STEPS,
    B_WINDOW_TOKENS,
    B_Z_THRESHOLD,
    B_Z_WINDOW,
    M_GA_POIGNANCY,
    M_GA_SINCE,
    M_SEEN,
    M_SUMMARY,
    M_WIN_COUNT,
    M_WIN_HEAD,
    Baselines,
)
from wmtsim.core.jit import jit
from wmtsim.core.metrics import C_LLM_CALLS, C_MEMORY_TOKENS, C_PROMPT_TOKENS
from wmtsim.core.params import P_BUDGET
from wmtsim.core.policies import (
    FAM_GENERATIVE,
    FAM_MEM0,
    FAM_MEMGPT,
    FAM_MEMORYBANK,
    FAM_TOKEN_BUFFER,
    FAM_TRACERETAIN,
    FAM_WINDOW,
    MB_CODE,
)
from wmtsim.engine.field_admission import (  # noqa: F401 (the old module's names)
    _mem0_admit,
    _tr_admit,
    _tr_cluster,
    _tr_evaluate,
    _tr_victim,
)
from wmtsim.engine.field_common import (  # noqa: F401 (the old module's names)
    _absorb,
    _cap,
    _capped,
    _content_similarity,
    _fit,
    _fit_newest,
    _importance,
    _minmax,
    _power,
    _queue_cap,
    _rate,
    _score_call,
    _similarity,
    _top_by,
)
from wmtsim.engine.field_forgetting import (  # noqa: F401 (the old module's names)
    _finish_pop,
    _letta_overflow,
    _mb_forget,
    _queue_overflow,
    _window_slide,
)
from wmtsim.engine.field_generative import _ga_reflect, _ga_retrieve

# ------------------------------------------------------------------ the dispatch point


@jit
def _baseline_step(seed, traj, step, n, F, slot_of, on_path, cross, summary_rel, bs, bimp,
                   blast, bfreq, bstr, bwin, bmisc, sw_family, sw_variant, sw_eviction,
                   sw_threshold, sw_cluster, p, st, bl, out, critical):
    """Steps 1–2 of a field policy's prompt step: admit new items, forget/evict.

    Adds the scorer's and summariser's LLM calls to ``out`` and returns the slot count
    (a summary may have been created); `_baseline_retrieve` then fills ε and s.
    """
    kind = F.kind
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
            _mem0_admit(seed, traj, step, v, F, cross, bs, blast, bfreq, bl, st, out)
        else:
            bs[v] = B_IN
            blast[v] = step
            bfreq[v] = 0
            bstr[v] = 1.0
            if sw_family == FAM_GENERATIVE:
                _score_call(seed, traj, step, v, F, bimp, 1.0, bl, out)
                bmisc[M_GA_POIGNANCY] += int(bimp[v])
                bmisc[M_GA_SINCE] += 1
    bmisc[M_SEEN] = n
    # Generative Agents reflects when the poignancy since the last reflection reaches
    # the threshold (reflect.py `reflection_trigger`, `reset_reflection_counter`).
    if (sw_family == FAM_GENERATIVE and bl[B_GA_REFLECT_THRESHOLD] > 0
            and bmisc[M_GA_POIGNANCY] >= bl[B_GA_REFLECT_THRESHOLD]):
        n = _ga_reflect(seed, traj, step, n, F, slot_of, summary_rel, bs, bimp, blast,
                        bfreq, int(bmisc[M_GA_SINCE]), p, st, bl, out)
        bmisc[M_GA_POIGNANCY] = 0
        bmisc[M_GA_SINCE] = 0
        bmisc[M_SEEN] = n
    # TraceRetain's short-term buffer is evaluated when full, periodically and at the key
    # moments (a subtask's answer, the final answer).
    if sw_family == FAM_TRACERETAIN and bl[B_TR_BUFFER] > 0:
        held = 0
        for v in range(n):
            if bs[v] == B_BUFFERED:
                held += 1
        if (held >= bl[B_TR_BUFFER] or (step + 1) % int(bl[B_TR_EVAL_EVERY]) == 0
                or critical):
            n = _tr_evaluate(seed, traj, step, n, F, slot_of, cross, summary_rel, bs, bimp,
                             blast, bfreq, bwin, bmisc, sw_eviction, sw_threshold,
                             sw_cluster, p, st, bl, out)
        bmisc[M_SEEN] = n

    # 2. Forgetting (MemoryBank: once per session) and overflow.
    session = int(bl[B_MB_SESSION_STEPS])
    if sw_family == FAM_MEMORYBANK:
        if session > 0 and step > 0 and step % session == 0:
            _mb_forget(seed, traj, step, n, F, on_path, bs, blast, bstr, sw_variant, bl)
    elif sw_family == FAM_MEMGPT:
        limit = bl[B_WINDOW_TOKENS] if bl[B_WINDOW_TOKENS] > 0 else p[P_BUDGET]
        if bl[B_LETTA_WALK] != 0.0:
            n = _letta_overflow(seed, traj, step, n, F, bs, bmisc, float(limit),
                                bl[B_EVICT_FRACTION], int(bl[B_KEEP_LAST]), summary_rel, p,
                                st, out)
        else:
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


@jit
def _baseline_retrieve(step, n, critical, on_path, util, bs, bimp, blast, bfreq, bstr,
                       bmisc, eligible, selected, sw_family, sw_variant, F, p, st, bl,
                       topic_now, out):
    """Steps 3–4 of a field policy's prompt step: the pool ε, the retrieval s (by the
    query similarity ``util`` of every slot) within the budget B and the shared item cap,
    and the access statistics. A retrieval that stands for an LLM call (MemGPT's tool
    call) is charged to ``out``."""
    tokens = F.tokens
    budget = p[P_BUDGET]
    # 3. The pool ε and the retrieval s, never more than B tokens.
    recent = np.zeros(n, np.bool_)  # MemoryBank code: history turns, not recalls
    for v in range(n):
        eligible[v] = (bs[v] == B_IN or bs[v] == B_RECALL) and not on_path[v]
        selected[v] = False
    if sw_family == FAM_MEMGPT or sw_family == FAM_WINDOW or sw_family == FAM_TOKEN_BUFFER:
        # The queue (and its running summary) is the context, newest first within B, at
        # most the shared cap.
        limit = _queue_cap(bl, st)
        used = _fit_newest(n, bs, F, eligible, selected, bmisc[M_SUMMARY], budget, 0.0,
                           limit)
        if sw_family == FAM_MEMGPT and critical and bl[B_RECALL_K] > 0:
            _conversation_search(n, topic_now, bs, F, eligible, selected, limit, budget,
                                 used, bl, out)
    elif sw_family == FAM_GENERATIVE:
        _ga_retrieve(step, n, bs, bimp, blast, eligible, selected, util, sw_variant, tokens,
                     budget, st, bl)
    else:  # TraceRetain, MemoryBank, mem0: top-k by similarity to the query, within B
        used = 0.0
        cap = _cap(bl[B_TOP_K], st)
        if sw_family == FAM_MEMORYBANK and sw_variant == MB_CODE:
            # The last mb_code_recent turns (0 = none, never "all"), then the
            # mb_code_top_k most similar; together at most the shared cap.
            n_recent = 0
            if bl[B_MB_CODE_RECENT] > 0:
                used = _fit_newest(n, bs, F, eligible, selected, -1, budget, 0.0,
                                   _capped(bl[B_MB_CODE_RECENT], bl, st))
                for v in range(n):
                    recent[v] = selected[v]
                    if selected[v]:
                        n_recent += 1
            cap = _capped(bl[B_MB_CODE_TOP_K], bl, st)
            left = _capped(n_recent + cap, bl, st) - n_recent
            cap = left if left > 0 else -1  # -1: nothing more (0 would mean no cap)
        cands = np.empty(n, np.int64)
        score = np.empty(n)
        c = 0
        for v in range(n):
            if eligible[v] and not recent[v] and cap >= 0:
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


@jit
def _baseline_supersede(bs, v):
    """A supersede/invalidate event for a field policy that acts on it (mem0's DELETE,
    TraceRetain's conflict resolution): a stored memory is deleted. Returns whether it
    was in the store."""
    if v >= 0 and bs[v] == B_IN:
        bs[v] = B_DELETED
        return True
    return False


# ------------------------------------------------------- MemGPT's recall storage; eligibility


@jit
def _conversation_search(n, topic_now, bs, F, eligible, selected, limit, budget, used, bl,
                         out):
    """Letta's `conversation_search` at a critical step, as the agent's tool call
    (letta/functions/function_sets/base.py, Dec 2024): case-insensitive string matching
    over the agent's *user* messages only (`list_user_messages_for_agent`: role "user",
    ascending, ``limit = RETRIEVAL_QUERY_DEFAULT_PAGE_SIZE``), whether still in context
    or evicted to recall storage; tool output (observations) is never returned. The
    query names the current subtask, so a user message matches when it is about that
    subtask (same topic). One LLM call is charged: the agent step that makes it
    (``search_base_tokens``) and every returned message's tokens; returned messages not
    yet in context join it while B and the item cap (``limit``, 0 = none) allow.
    """
    if topic_now < 0:
        return  # the final answer has no single subtask to search for
    kind, topic, tokens = F.kind, F.topic, F.tokens
    count = 0
    for v in range(n):
        if selected[v]:
            count += 1
    found = 0
    read = 0.0
    for v in range(n):
        if found >= int(bl[B_RECALL_K]):
            break
        if kind[v] != TASK or topic[v] != topic_now or (bs[v] != B_IN and bs[v] != B_RECALL):
            continue
        found += 1
        read += tokens[v]
        if (eligible[v] and not selected[v] and used + tokens[v] <= budget
                and (limit <= 0 or count < limit)):
            selected[v] = True
            used += tokens[v]
            count += 1
    call = bl[B_SEARCH_BASE_TOKENS] + read
    out[C_LLM_CALLS] += 1
    out[C_PROMPT_TOKENS] += call
    out[C_MEMORY_TOKENS] += call


@jit
def _baseline_eligible(n, on_path, bs, eligible):
    """ε of a field policy: the store (and MemGPT's searchable recall storage)."""
    for v in range(n):
        eligible[v] = (bs[v] == B_IN or bs[v] == B_RECALL) and not on_path[v]
