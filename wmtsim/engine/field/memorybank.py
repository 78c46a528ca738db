"""MemoryBank's daily summaries in the engine (docs/field.md): one summary per day (a
day is ``mb_time_scale`` prompt steps, the forgetting curve's unit), written once, at the
first session start after the day ends, as retrievable memories. The forgetting pass itself is
`wmtsim.engine.field.forgetting._mb_forget`; the readable twin is
`wmtsim.twins.field_memorybank`.

Read from zhongwanjun/MemoryBank-SiliconFriend (commit cf61c41):
memory_bank/summarize_memory.py `summarize_memory` (one LLM call per day without a
summary, `summarize_content_prompt`, run between sessions) and
memory_bank/memory_retrieval/forget_memory.py `MemoryForgetterLoader.initial_load_forget_and_save`
(each day's summary is loaded as a document of its own, beside the dialogue turns; the
forgetting curve is applied to the turns only; a day whose turns are all forgotten loses
its summary).
"""

from __future__ import annotations

import math

import numpy as np

from wmtsim.core.codes import SUMMARY
from wmtsim.core.field_knobs import B_FORGOTTEN, B_IN
from wmtsim.core.jit import jit
from wmtsim.core.metrics import C
from wmtsim.engine.field.common import _result_of
from wmtsim.engine.forest import _absorb, _add_summary


@jit
def _date(created, scale):
    """The day a memory was created on: t is counted in days of ``mb_time_scale`` prompt
    steps (forget_memory.py: days since the last recall), so day d is the steps s with
    floor(s / scale) = d."""
    return math.floor(created / scale)


@jit
def _of_day(v, bs, kind, created, d, scale):
    """A stored dialogue turn (not a summary) created on day ``d``."""
    return bs[v] == B_IN and kind[v] != SUMMARY and _date(np.int64(created[v]), scale) == d


@jit
def _mb_summarize(T, K, X, step, n, session):
    """The session start at ``step`` (summarize_memory.py `summarize_memory`: one LLM call
    per day without a summary): every day that ended since the last session start
    (``session`` steps ago) and has stored memories gets its one summary, one summariser
    call each, written once; a day still under way waits for the first session start
    after it ends. Returns the slot count."""
    scale = X.knobs[0].mb_time_scale
    first = _date(step - session, scale)
    last = _date(step, scale) - 1  # the days that ended by this step
    for d in range(first, last + 1):
        n = _mb_day(T, K, X, step, n, d)
    return n


@jit
def _mb_day(T, K, X, step, n, d):
    """The summary of day ``d``: one summariser call over the stored memories created
    that day.

    `summarize_content_prompt` asks for the day's main themes and key information, "if
    there are multiple key events, summarize them separately": the one call writes one
    part per subtask the day's memories are about (in the order the day first met them),
    each a memory of its own (`_mb_part`). The call reads the day's memories and every
    earlier summary it merges into (charged: summariser_base_tokens + those tokens).
    Returns the slot count.
    """
    F, slot_of, out, st = T.F, T.slot_of, T.out, K.st
    bs, kind, topic, created, tokens = X.store.place, F.kind, F.topic, F.created, F.tokens
    scale = X.knobs[0].mb_time_scale
    n0 = n
    read = 0.0
    parts = 0
    for v in range(n0):
        if not _of_day(v, bs, kind, created, d, scale):
            continue
        read += tokens[v]
        t = topic[v]
        if t < 0 or slot_of[t] < 0:
            continue  # about no subtask: read, but part of no summary
        first = True
        for w in range(v):
            if _of_day(w, bs, kind, created, d, scale) and topic[w] == t:
                first = False
                break
        if first:
            n, merged = _mb_part(T, K, X, step, n, n0, d, t)
            read += merged
            parts += 1
    if parts > 0:
        out[C.summariser_calls] += 1
        out[C.llm_calls] += 1
        out[C.prompt_tokens] += st.summariser_base_tokens + read
        out[C.memory_tokens] += st.summariser_base_tokens + read
    return n


@jit
def _mb_part(T, K, X, step, n, n0, d, t):
    """The part of the day's summary about subtask ``t``: that subtask's summary node,
    ceil(c_sum · tokens) of its earlier summary (merged in; MemoryBank keeps one document
    per day, here a subtask keeps one) and day ``d``'s memories about it, their evidence,
    each poisoned one absorbed with p_leak; strength 1, retrievable like any memory.
    Returns (slot count, tokens of the earlier summary read)."""
    seed, traj, F, slot_of = T.seed, T.traj, T.F, T.slot_of
    p, st = K.p, K.st
    bs, blast, bfreq, bstr = X.store.place, X.store.last, X.store.freq, X.store.strength
    kind, tokens, topic, evidence, created = F.kind, F.tokens, F.topic, F.evidence, F.created
    top, summary = F.top, F.summary
    ts = np.int64(slot_of[t])  # int64, as every slot argument: one compile each
    z = summary[ts]
    merged = 0.0
    if z >= 0 and bs[z] == B_IN:
        merged = float(tokens[z])
    raw = merged
    has_ev = False
    read = np.empty(n0, np.int64)
    k = np.int64(0)  # typed: a literal start would compile `_absorb` twice
    scale = X.knobs[0].mb_time_scale
    for v in range(n0):
        if not _of_day(v, bs, kind, created, d, scale) or topic[v] != t:
            continue
        raw += tokens[v]
        if evidence[v]:
            has_ev = True
        read[k] = v
        k += 1
    if z < 0:
        z = n
        n += 1
        _add_summary(F, z, ts, np.int64(t), np.int64(top[ts]), K.wk.summary_relevance,
                     p.u_init_summary, step)
        summary[ts] = z
    tokens[z] = math.ceil(st.c_sum * raw)
    evidence[z] = evidence[z] or has_ev
    _result_of(F, z, top[ts], X.knobs[0])  # a result only with the subtask's evidence
    _absorb(seed, traj, step, F, st, read, k, ts, z)
    bs[z] = B_IN
    blast[z] = step
    bfreq[z] = 0
    bstr[z] = 1.0
    return n, merged


@jit
def _mb_drop_orphans(n, F, bs):
    """After a forgetting pass: a summary whose subtask has no stored memory left is
    dropped (forget_memory.py pops a day's summary when all its turns are forgotten)."""
    kind, topic = F.kind, F.topic
    for z in range(n):
        if bs[z] != B_IN or kind[z] != SUMMARY:
            continue
        alive = False
        for v in range(n):
            if bs[v] == B_IN and kind[v] != SUMMARY and topic[v] == topic[z]:
                alive = True
                break
        if not alive:
            bs[z] = B_FORGOTTEN
