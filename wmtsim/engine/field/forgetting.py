"""What leaves a field policy's store (docs/field.md): MemoryBank's forgetting curve, a
bounded queue's overflow, a sliding window, and the shared pop step that may fold popped
memories into a running summary.

Called from the dispatch in `wmtsim.engine.field.dispatch`; the readable twin is
`wmtsim.twins.field_reference`. Every kernel takes the `Trajectory` ``T``, the `Knobs`
``K`` and the `FieldScratch` ``X`` (`wmtsim.engine.records`), then the step, the slot
count and the rule's own arguments.
"""

from __future__ import annotations

import math

import numpy as np

from wmtsim.core.codes import SUMMARY, TASK
from wmtsim.core.field_knobs import (
    B_EVICTED,
    B_FORGOTTEN,
    B_IN,
    B_POPPING,
    B_RECALL,
    M,
)
from wmtsim.core.jit import jit
from wmtsim.core.metrics import C
from wmtsim.core.rng import PURPOSE_FORGET, _uniform
from wmtsim.engine.forest import (
    _absorb,
    _add_summary,
    _draw_id,
)


@jit
def _mb_forget(T, K, X, step, n):
    """Forgetting pass (at a session start): t = steps since creation or last recall /
    mb_time_scale (the source's days); the rule is the policy's variant (``K.sw.variant``).

    Paper: R = exp(−t/S), forget when R < θ, i.e. steps > S · scale · ln(1/θ) (exact
    comparison). Stochastic: keep with probability R. Public code (forget_memory.py
    `forgetting_curve`): R = exp(−t / 5*S), which Python reads as exp(−(t/5)·S), a
    stronger memory forgetting faster; forgotten when random() > R.
    """
    seed, traj, F, on_path = T.seed, T.traj, T.F, T.on_path
    bs, blast, bstr = X.store.place, X.store.last, X.store.strength
    variant, bl = K.sw.variant, X.knobs[0]
    for v in range(n):
        # The curve applies to the dialogue turns, not to the daily summaries.
        if bs[v] != B_IN or on_path[v] or F.kind[v] == SUMMARY:
            continue
        dt = float(step - blast[v])
        if variant == 0:
            if dt > bstr[v] * bl.mb_forget_after:
                bs[v] = B_FORGOTTEN
        elif variant == 1:
            r = math.exp(-(dt / bl.mb_time_scale) / bstr[v])
            if _uniform(seed, traj, step, _draw_id(F, v), PURPOSE_FORGET) >= r:
                bs[v] = B_FORGOTTEN
        else:  # the code as written: math.exp(-t / 5*S), forget when random() > R
            r = math.exp(-(dt / bl.mb_time_scale) / 5.0 * bstr[v])
            if _uniform(seed, traj, step, _draw_id(F, v), PURPOSE_FORGET) > r:
                bs[v] = B_FORGOTTEN


@jit
def _queue_overflow(T, K, X, step, n, limit, frac, keep_last, summarize, to_state):
    """Pop the oldest queued items while the queue (+ summary) is over ``limit``; they
    go to ``to_state``.

    Triggered when queue + summary > limit. Items go (oldest first, never the newest
    ``keep_last``) while fewer than ``frac`` of the queue's tokens are out or the queue +
    the summary they would make is still over the limit. With ``summarize`` they are
    merged with the old summary into one (ceil(c_sum · (old + popped tokens)) tokens).
    """
    F, bs, bmisc, st = T.F, X.store.place, X.misc, K.st
    kind, tokens = F.kind, F.tokens
    q = 0.0
    n_q = 0
    for v in range(n):
        if bs[v] == B_IN and kind[v] != SUMMARY:
            q += tokens[v]
            n_q += 1
    z = bmisc[M.summary]
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
            s_new = float(math.ceil(st.c_sum * (s_old + popped)))
        elif not summarize:
            s_new = 0.0
        if not (popped < frac * q or q - popped + s_new > limit):
            break
        bs[v] = B_POPPING
        popped += tokens[v]
        n_pop += 1
    return _finish_pop(T, K, X, step, n, to_state, summarize, s_old, popped)


@jit
def _letta_overflow(T, K, X, step, n, limit, frac, keep_last):
    """MemGPT's eviction as Letta walks it (letta/agent.py
    `Agent.summarize_messages_inplace`, commit 5a743d1, Dec 2024), run while the message
    buffer (the summary message, then the queue oldest first) is over ``limit``
    (`Agent.inner_step` summarises on a context overflow and retries).

    ``desired = int(frac · buffer tokens)``; the candidates are the buffer without its
    last ``keep_last`` messages; walking them front to back, the cutoff is the first
    message where the running sum exceeds ``desired`` (or the last candidate), and the
    messages *before* it are summarised; a user message at the cutoff (a task node; the
    summary) moves it one on. An action is the agent's call with its tool result, so
    the walk never stops on a tool message. With no candidate, or fewer than two
    messages to summarise, Letta raises ContextWindowExceededError: counted in
    ``context_overflows`` and nothing is evicted (the flagged run goes on within B).
    Summarised messages go to recall storage; old summary + them → one summary.
    """
    F, bs, bmisc, out = T.F, X.store.place, X.misc, T.out
    kind, tokens = F.kind, F.tokens
    buf = np.empty(n + 1, np.int64)
    while True:
        z = bmisc[M.summary]
        m = 0
        total = 0.0
        if z >= 0 and bs[z] == B_IN:
            buf[m] = z
            m += 1
            total += tokens[z]
        for v in range(n):
            if bs[v] == B_IN and kind[v] != SUMMARY:
                buf[m] = v
                m += 1
                total += tokens[v]
        if total <= limit:
            return n
        desired = math.floor(frac * total)
        n_cand = m - keep_last
        if n_cand <= 0:
            out[C.context_overflows] += 1
            return n
        cutoff = 0
        running = 0.0
        for i in range(n_cand):
            cutoff = i
            running += tokens[buf[i]]
            if running > desired:
                break
        if cutoff < m and (kind[buf[cutoff]] == TASK or kind[buf[cutoff]] == SUMMARY):
            cutoff += 1
        if cutoff <= 1:
            out[C.context_overflows] += 1
            return n
        s_old = 0.0
        popped = 0.0
        for i in range(cutoff):
            w = buf[i]
            if kind[w] == SUMMARY:
                s_old = float(tokens[w])
            else:
                bs[w] = B_POPPING
                popped += tokens[w]
        n = _finish_pop(T, K, X, step, n, np.int64(B_RECALL), np.bool_(True), s_old, popped)
        if n + 1 > buf.shape[0]:
            buf = np.empty(n + 1, np.int64)


@jit
def _window_slide(T, K, X, step, n, k, summarize):
    """Sliding window: items created more than ``k`` steps ago leave the context."""
    F, bs, bmisc = T.F, X.store.place, X.misc
    kind, tokens, created = F.kind, F.tokens, F.created
    popped = 0.0
    for v in range(n):
        if bs[v] == B_IN and kind[v] != SUMMARY and created[v] <= step - k:
            bs[v] = B_POPPING
            popped += tokens[v]
    z = bmisc[M.summary]
    s_old = float(tokens[z]) if z >= 0 else 0.0
    return _finish_pop(T, K, X, step, n, np.int64(B_EVICTED), summarize, s_old, popped)


@jit
def _finish_pop(T, K, X, step, n, final_state, summarize, s_old, popped):
    """Items marked popping at this step go to ``final_state``; with ``summarize`` they
    and the old summary are merged into one recursive summary node.

    The summary has ceil(c_sum · (old summary + popped tokens)) tokens, keeps no task
    evidence (a running summary is lossy) and absorbs each popped poisoned item with
    p_leak (p_leak_rider for summary riders): it is then contaminated. Its relevance is
    the world's ``summary_relevance``.
    """
    seed, traj, F, out = T.seed, T.traj, T.F, T.out
    p, st, bs, bmisc = K.p, K.st, X.store.place, X.misc
    summary_rel = K.wk.summary_relevance
    tokens = F.tokens
    read = np.empty(n, np.int64)
    k = np.int64(0)  # typed: a literal start would compile `_absorb` twice
    for v in range(n):
        if bs[v] != B_POPPING:
            continue
        bs[v] = final_state
        read[k] = v
        k += 1
    if not (summarize and k > 0):
        return n
    z = bmisc[M.summary]
    if z < 0:
        z = n
        n += 1
        _add_summary(F, z, np.int64(0), np.int64(-1), np.int64(-1), summary_rel,
                     p.u_init_summary, step)
        bmisc[M.summary] = z
        F.summary[0] = z  # the root's summary: IP follows what it absorbed
    raw = s_old + popped
    tokens[z] = math.ceil(st.c_sum * raw)
    _absorb(seed, traj, step, F, st, read, k, np.int64(0), z)
    bs[z] = B_IN
    out[C.summariser_calls] += 1
    out[C.llm_calls] += 1
    out[C.prompt_tokens] += st.summariser_base_tokens + raw
    out[C.memory_tokens] += st.summariser_base_tokens + raw
    return n
