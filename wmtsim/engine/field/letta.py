"""MemGPT/Letta's own memory tools in the engine (docs/field.md): the memory-pressure
warning and what the agent saves on it, core memory (always in context), and
`archival_memory_search`. The queue's eviction walk is `wmtsim.engine.field.forgetting`;
`conversation_search` is in `wmtsim.engine.field.dispatch`; the readable twin is
`wmtsim.twins.field_queues`.

Read from letta-ai/letta at commit 5a743d1 (Dec 2024): letta/agent.py `Agent.inner_step`
(the warning), `Agent.step` (the warning chains one more agent step),
`Agent.summarize_messages_inplace` (a summary clears the alert), letta/constants.py
(`MESSAGE_SUMMARY_WARNING_FRAC`, `MESSAGE_SUMMARY_WARNING_STR`, the core block limits,
`RETRIEVAL_QUERY_DEFAULT_PAGE_SIZE`), letta/functions/function_sets/base.py
(`core_memory_append`, `core_memory_replace`, `archival_memory_insert`,
`archival_memory_search`, `conversation_search`: tools the agent calls when it decides to).
"""

from __future__ import annotations

import numpy as np

from wmtsim.core.codes import ACTION, SUCCESS, SUMMARY
from wmtsim.core.field_knobs import B_CORE, B_IN, B_RECALL, M
from wmtsim.core.jit import jit
from wmtsim.core.metrics import C
from wmtsim.engine.field.common import _fit, _rate


@jit
def _core_tokens(n, bs, tokens):
    """Tokens of core memory (the messages the agent appended to it)."""
    core = 0.0
    for v in range(n):
        if bs[v] == B_CORE:
            core += tokens[v]
    return core


@jit
def _tool_call(bl, tokens, out):
    """One agent step that makes a tool call: ``search_base_tokens`` + what it writes or
    reads back (``tokens``), one LLM call of memory's own."""
    call = bl.search_base_tokens + tokens
    out[C.llm_calls] += 1
    out[C.prompt_tokens] += call
    out[C.memory_tokens] += call


@jit
def _letta_pressure(T, X, step, n, limit):
    """Letta's memory-pressure warning and the saves the agent makes on it.

    `Agent.inner_step`: when the call's tokens pass ``warning_fraction`` · W (here: core
    memory + summary + queue, the memory context), and the agent has not been alerted
    since the last summary, `Agent.step` chains one more agent step with the system
    alert (`MESSAGE_SUMMARY_WARNING_STR`: save what matters with `core_memory_append`,
    `core_memory_replace` or `archival_memory_insert`). That step reads the queue: one
    charged call (``search_base_tokens`` + the queue's tokens). The agent rates each
    queued message not yet saved (the shared importance stub, oldest first) and saves
    those rated at least ``save_threshold``: into core memory while it has room
    (``core_fraction`` · W; the message then lives in the always-in-context block, not
    in the queue), else, with ``core_replace``, in place of the lowest-rated core entry
    rated below it when that makes room (`core_memory_replace`; the old entry goes to
    recall storage), else as an archival passage; each save is one more charged tool call
    (``search_base_tokens`` + the saved tokens, and the replaced ones). ``limit``: W.
    """
    seed, traj, F, out = T.seed, T.traj, T.F, T.out
    bs, arch, bimp, bmisc, bl = X.store.place, X.store.archival, X.store.importance, X.misc, \
        X.knobs[0]
    kind, tokens = F.kind, F.tokens
    if bmisc[M.letta_alerted] != 0:
        return
    core = _core_tokens(n, bs, tokens)
    queue = 0.0
    for v in range(n):
        if bs[v] == B_IN:  # the summary message and the queue
            queue += tokens[v]
    if core + queue <= bl.warning_fraction * limit:
        return
    bmisc[M.letta_alerted] = 1
    _tool_call(bl, queue, out)  # the chained step that reads the alert and the queue
    room = bl.core_fraction * limit
    for v in range(n):
        if bs[v] != B_IN or kind[v] == SUMMARY or arch[v]:
            continue
        bimp[v] = _rate(seed, traj, step, v, F, 0.0, bl)
        if bimp[v] < bl.save_threshold:
            continue
        if core + tokens[v] <= room:
            bs[v] = B_CORE  # core_memory_append
            core += tokens[v]
            _tool_call(bl, float(tokens[v]), out)
            continue
        old = -1
        if bl.core_replace != 0.0:
            old = _core_to_replace(n, bs, bimp, tokens, bimp[v], core + tokens[v], room)
        if old >= 0:  # core_memory_replace: the old entry's text for the new one
            bs[old] = B_RECALL
            bs[v] = B_CORE
            core += tokens[v] - tokens[old]
            _tool_call(bl, float(tokens[v] + tokens[old]), out)
        else:
            arch[v] = True  # archival_memory_insert
            _tool_call(bl, float(tokens[v]), out)


@jit
def _core_to_replace(n, bs, bimp, tokens, rating, wanted, room):
    """`core_memory_replace`'s target: the lowest-rated core entry rated below ``rating``
    (ties: the older) whose removal brings core memory (``wanted`` tokens with the new
    entry) within ``room``; -1 when there is none."""
    best = -1
    for w in range(n):
        if bs[w] != B_CORE or bimp[w] >= rating or wanted - tokens[w] > room:
            continue
        if best < 0 or bimp[w] < bimp[best]:
            best = w
    return best


@jit
def _letta_needs_search(n, F, selected, topic_now):
    """Whether the agent calls its search tools at the answer of subtask ``topic_now``:
    its context holds no successful tool result (an action) about the subtask, which it
    can read (the outcome, as WMT's selector reads it; not the evidence flag)."""
    kind, topic, outcome = F.kind, F.topic, F.outcome
    for v in range(n):
        if selected[v] and kind[v] == ACTION and topic[v] == topic_now and outcome[v] == SUCCESS:
            return False
    return True


@jit
def _core_context(n, bs, F, eligible, selected, budget, limit):
    """Core memory first in the context (it is in the system prompt, always there), within
    B and at most ``limit`` memories (0 = no cap). Returns (tokens used, memories)."""
    tokens = F.tokens
    used = 0.0
    count = 0
    for v in range(n):
        if bs[v] != B_CORE or not eligible[v]:
            continue
        if (limit > 0 and count >= limit) or used + tokens[v] > budget:
            continue
        selected[v] = True
        used += tokens[v]
        count += 1
    return used, count


@jit
def _archival_search(T, K, X, n, util, limit):
    """`archival_memory_search` at a subtask's answer, as the agent's tool call: the
    ``archival_k`` archived passages most similar to the subtask (embedding search,
    `agent_manager.list_passages` ordered by cosine distance: the query similarity
    ``util`` every field retriever reads; ties: the older). One charged call
    (``search_base_tokens`` + the passages' tokens); those not yet in context join it
    while B and the item cap ``limit`` (0 = none) allow, best first."""
    F, eligible, selected, out = T.F, T.eligible, T.selected, T.out
    bs, arch, bl, budget = X.store.place, X.store.archival, X.knobs[0], K.p.budget
    tokens = F.tokens
    cands = np.empty(n, np.int64)
    score = np.empty(n)
    c = np.int64(0)  # typed: a literal start would compile `_fit` twice
    for v in range(n):
        if arch[v] and (bs[v] == B_IN or bs[v] == B_RECALL):
            cands[c] = v
            score[c] = util[v]
            c += 1
    found = np.zeros(n, np.bool_)
    _fit(score, cands, c, int(bl.archival_k), tokens, np.inf, 0.0, found)
    read = 0.0
    count = 0
    used = 0.0
    for v in range(n):
        if selected[v]:
            count += 1
            used += tokens[v]
    picked = np.empty(c, np.int64)
    scores = np.empty(c)
    k = np.int64(0)
    for j in range(c):
        v = cands[j]
        if found[v]:
            read += tokens[v]
            if eligible[v] and not selected[v]:
                picked[k] = v
                scores[k] = score[j]
                k += 1
    left = 0
    if limit > 0:
        left = limit - count
        if left <= 0:
            k = np.int64(0)
    _fit(scores, picked, k, left, tokens, budget, used, selected)
    _tool_call(bl, read, out)
