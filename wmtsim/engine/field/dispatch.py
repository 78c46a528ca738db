"""The memory policies of the field (docs/field.md) as kernels of the one engine.

`wmtsim.engine` plays the same world scripts, stubs, reasoner and accounting for every
policy; a policy with selection ``baseline`` (`wmtsim.core.policies.SEL_BASELINE`) hands one
thing to this module, at one dispatch point of the prompt step: which memories are kept
(the store, the candidate pool ε) and which are put in the context (s). Its per-slot state
lives in extra arrays beside the forest:

``bs``     the slot's place: unseen, in the store (queue), dropped by the filter, evicted,
           in recall storage or in core memory (MemGPT), archived into a cluster summary,
           forgotten;
``bimp``   importance (0–10 stub rating; GA: 1–10);
``blast``  step of creation or last retrieval (LRU, GA recency, MemoryBank's t reset);
``bfreq``  retrievals (LFU);
``bstr``   MemoryBank strength S;
``archival`` MemGPT: the agent saved a passage of the slot in archival memory.

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
from wmtsim.core.field_knobs import B_BUFFERED, B_CORE, B_DELETED, B_EVICTED, B_IN, B_RECALL, M
from wmtsim.core.field_policies import (
    FAM_GENERATIVE,
    FAM_MEM0,
    FAM_MEMGPT,
    FAM_MEMORYBANK,
    FAM_TOKEN_BUFFER,
    FAM_TRACERETAIN,
    FAM_WINDOW,
    MB_CODE,
)
from wmtsim.core.jit import jit
from wmtsim.core.metrics import C
from wmtsim.engine.field.admission import _mem0_admit, _tr_admit, _tr_evaluate
from wmtsim.engine.field.common import _cap, _capped, _fit, _fit_newest, _queue_cap, _score_call
from wmtsim.engine.field.forgetting import (
    _letta_overflow,
    _mb_forget,
    _queue_overflow,
    _window_slide,
)
from wmtsim.engine.field.generative import _ga_reflect, _ga_retrieve
from wmtsim.engine.field.letta import (
    _archival_search,
    _core_context,
    _core_tokens,
    _letta_needs_search,
    _letta_pressure,
)
from wmtsim.engine.field.memorybank import _mb_drop_orphans, _mb_summarize

# ------------------------------------------------------------------ the dispatch point


@jit
def _baseline_step(T, K, X, step, n, critical):
    """Steps 1–2 of a field policy's prompt step: admit new items, forget/evict.

    ``T``, ``K``, ``X``: the `Trajectory`, `Knobs` and `FieldScratch`
    (`wmtsim.engine.records`). Adds the scorer's and summariser's LLM calls to ``T.out``
    and returns the slot count (a summary may have been created); `_baseline_retrieve`
    then fills ε and s. ``critical``: the step answers (TraceRetain evaluates its buffer).
    """
    seed, traj, F, out = T.seed, T.traj, T.F, T.out
    p, bl = K.p, X.knobs[0]
    bs, blast, bfreq, bstr = X.store.place, X.store.last, X.store.freq, X.store.strength
    bimp, bmisc = X.store.importance, X.misc
    sw_family, sw_variant = K.sw.family, K.sw.variant
    kind = F.kind
    n0 = n
    # 1. Admission of the items created since the last step, in creation order.
    for v in range(bmisc[M.seen], n0):
        k = kind[v]
        if k != TASK and k != ACTION and k != GLOBAL:
            continue
        if sw_family == FAM_TRACERETAIN:
            n = _tr_admit(T, K, X, step, v, n)
        elif sw_family == FAM_MEM0:
            _mem0_admit(T, K, X, step, v)
        else:
            bs[v] = B_IN
            blast[v] = step
            bfreq[v] = 0
            bstr[v] = 1.0
            if sw_family == FAM_GENERATIVE:
                _score_call(seed, traj, step, v, F, bimp, 1.0, bl, out)
                bmisc[M.ga_poignancy] += int(bimp[v])
                bmisc[M.ga_since] += 1
    bmisc[M.seen] = n
    # Generative Agents reflects when the poignancy since the last reflection reaches
    # the threshold (reflect.py `reflection_trigger`, `reset_reflection_counter`).
    if (sw_family == FAM_GENERATIVE and bl.ga_reflect_threshold > 0
            and bmisc[M.ga_poignancy] >= bl.ga_reflect_threshold):
        n = _ga_reflect(T, K, X, step, n, int(bmisc[M.ga_since]))
        bmisc[M.ga_poignancy] = 0
        bmisc[M.ga_since] = 0
        bmisc[M.seen] = n
    # TraceRetain's short-term buffer is evaluated when full, periodically and at the key
    # moments (a subtask's answer, the final answer).
    if sw_family == FAM_TRACERETAIN and bl.tr_buffer > 0:
        held = 0
        for v in range(n):
            if bs[v] == B_BUFFERED:
                held += 1
        if (held >= bl.tr_buffer or (step + 1) % int(bl.tr_eval_every) == 0
                or critical):
            n = _tr_evaluate(T, K, X, step, n)
        bmisc[M.seen] = n

    # 2. Forgetting (MemoryBank: once per session) and overflow.
    session = int(bl.mb_session_steps)
    if sw_family == FAM_MEMORYBANK:
        if session > 0 and step > 0 and step % session == 0:
            if bl.mb_summaries != 0.0:
                n = _mb_summarize(T, K, X, step, n, session)
            _mb_forget(T, K, X, step, n)
            if bl.mb_summaries != 0.0:
                _mb_drop_orphans(n, F, bs)
    elif sw_family == FAM_MEMGPT:
        limit = bl.window_tokens if bl.window_tokens > 0 else p.budget
        # Core memory is in the system prompt: it takes its share of the window W.
        room = float(limit) - _core_tokens(n, bs, F.tokens)
        summaries = out[C.summariser_calls]
        if bl.letta_walk != 0.0:
            n = _letta_overflow(T, K, X, step, n, room, bl.evict_fraction,
                                int(bl.keep_last))
        else:
            n = _queue_overflow(T, K, X, step, n, room, bl.evict_fraction,
                                int(bl.keep_last), np.bool_(True), np.int64(B_RECALL))
        if bl.letta_memory != 0.0:
            if out[C.summariser_calls] > summaries:
                bmisc[M.letta_alerted] = 0  # summarize_messages_inplace clears the alert
            _letta_pressure(T, X, step, n, float(limit))
    elif sw_family == FAM_TOKEN_BUFFER:
        limit = bl.token_limit if bl.token_limit > 0 else p.budget
        n = _queue_overflow(T, K, X, step, n, float(limit), 0.0, np.int64(0),
                            sw_variant == 1, np.int64(B_EVICTED))
    elif sw_family == FAM_WINDOW:
        n = _window_slide(T, K, X, step, n, int(bl.window_steps), sw_variant == 1)

    return n


@jit
def _baseline_retrieve(T, K, X, step, n, critical, util, topic_now):
    """Steps 3–4 of a field policy's prompt step: the pool ε, the retrieval s (by the
    query similarity ``util`` of every slot) within the budget B and the shared item cap,
    and the access statistics. A retrieval that stands for an LLM call (MemGPT's tool
    call) is charged to ``T.out``."""
    F, on_path, eligible, selected = T.F, T.on_path, T.eligible, T.selected
    p, st, bl = K.p, K.st, X.knobs[0]
    bs, blast, bfreq, bstr = X.store.place, X.store.last, X.store.freq, X.store.strength
    bmisc = X.misc
    sw_family, sw_variant = K.sw.family, K.sw.variant
    tokens = F.tokens
    budget = p.budget
    # 3. The pool ε and the retrieval s, never more than B tokens.
    recent = np.zeros(n, np.bool_)  # MemoryBank code: history turns, not recalls
    for v in range(n):
        eligible[v] = _stored(bs[v]) and not on_path[v]
        selected[v] = False
    if sw_family == FAM_MEMGPT or sw_family == FAM_WINDOW or sw_family == FAM_TOKEN_BUFFER:
        # The queue (and its running summary) is the context, newest first within B, at
        # most the shared cap; MemGPT's core memory comes first.
        limit = _queue_cap(bl, st)
        used, count = _core_context(n, bs, F, eligible, selected, budget, limit)
        if limit <= 0 or count < limit:
            used = _fit_newest(n, bs, F, eligible, selected, bmisc[M.summary], budget, used,
                               limit - count if limit > 0 else 0)
        # Letta's searches are tool calls the agent decides to make (`search_on_need`:
        # when its context holds no successful tool result about the subtask).
        need = sw_family == FAM_MEMGPT and critical and (
            bl.search_on_need == 0.0 or _letta_needs_search(n, F, selected, topic_now))
        if need and bl.recall_k > 0:
            _conversation_search(T, K, X, n, topic_now, limit, used)
        if need and topic_now >= 0 and bl.letta_memory != 0.0 and bl.archival_k > 0:
            _archival_search(T, K, X, n, util, limit)
    elif sw_family == FAM_GENERATIVE:
        _ga_retrieve(T, K, X, step, n, util)
    else:  # TraceRetain, MemoryBank, mem0: top-k by similarity to the query, within B
        used = 0.0
        cap = _cap(bl.top_k, st)
        if sw_family == FAM_MEMORYBANK and sw_variant == MB_CODE:
            # The last mb_code_recent turns (0 = none, never "all"), then the
            # mb_code_top_k most similar; together at most the shared cap.
            n_recent = 0
            if bl.mb_code_recent > 0:
                used = _fit_newest(n, bs, F, eligible, selected, np.int64(-1), budget, 0.0,
                                   _capped(bl.mb_code_recent, bl, st))
                for v in range(n):
                    recent[v] = selected[v]
                    if selected[v]:
                        n_recent += 1
            cap = _capped(bl.mb_code_top_k, bl, st)
            left = _capped(float(n_recent + cap), bl, st) - n_recent  # a float, as the knobs
            cap = left if left > 0 else -1  # -1: nothing more (0 would mean no cap)
        cands = np.empty(n, np.int64)
        score = np.empty(n)
        c = np.int64(0)  # typed: a literal start would compile `_fit` twice
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
                if sw_variant == 1 and bl.mb_s_cap > 0 and s > bl.mb_s_cap:
                    s = bl.mb_s_cap
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
def _conversation_search(T, K, X, n, topic_now, limit, used):
    """Letta's `conversation_search` at a critical step, as the agent's tool call
    (letta/functions/function_sets/base.py, Dec 2024): case-insensitive string matching
    over the agent's *user* messages only (`list_user_messages_for_agent`: role "user",
    ascending, ``limit = RETRIEVAL_QUERY_DEFAULT_PAGE_SIZE``), whether still in context
    or evicted to recall storage; tool output (observations) is never returned. The
    query names the current subtask, so a user message matches when it is about that
    subtask (same topic). One LLM call is charged: the agent step that makes it
    (``search_base_tokens``) and every returned message's tokens; returned messages not
    yet in context join it while B and the item cap (``limit``, 0 = none) allow;
    ``used``: the context's tokens so far.
    """
    if topic_now < 0:
        return  # the final answer has no single subtask to search for
    F, eligible, selected, out = T.F, T.eligible, T.selected, T.out
    bs, bl, budget = X.store.place, X.knobs[0], K.p.budget
    kind, topic, tokens = F.kind, F.topic, F.tokens
    count = 0
    for v in range(n):
        if selected[v]:
            count += 1
    found = 0
    read = 0.0
    for v in range(n):
        if found >= int(bl.recall_k):
            break
        if kind[v] != TASK or topic[v] != topic_now or not _stored(bs[v]):
            continue
        found += 1
        read += tokens[v]
        if (eligible[v] and not selected[v] and used + tokens[v] <= budget
                and (limit <= 0 or count < limit)):
            selected[v] = True
            used += tokens[v]
            count += 1
    call = bl.search_base_tokens + read
    out[C.llm_calls] += 1
    out[C.prompt_tokens] += call
    out[C.memory_tokens] += call


@jit
def _baseline_eligible(n, on_path, bs, eligible):
    """ε of a field policy: the store (and MemGPT's recall storage and core memory)."""
    for v in range(n):
        eligible[v] = _stored(bs[v]) and not on_path[v]


@jit
def _stored(place):
    """A slot the policy still holds: in the store or queue, in MemGPT's searchable
    recall storage, or in its core memory."""
    return place == B_IN or place == B_RECALL or place == B_CORE
