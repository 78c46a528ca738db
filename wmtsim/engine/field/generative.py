"""Generative Agents in the engine (Park et al. 2023; the public code,
joonspk-research/generative_agents): retrieval by recency + importance + relevance, and
reflection. Called from the dispatch in `wmtsim.engine.field.dispatch`; the readable twin is
`wmtsim.twins.field_reference`.
"""

from __future__ import annotations

import math

import numpy as np

from wmtsim.core.codes import SUMMARY
from wmtsim.core.field_knobs import B_IN
from wmtsim.core.jit import jit
from wmtsim.core.metrics import C
from wmtsim.engine.field.common import (
    _cap,
    _capped,
    _fit,
    _minmax,
    _power,
    _rate,
    _result_of,
)
from wmtsim.engine.forest import _absorb, _add_summary


@jit
def _ga_retrieve(T, K, X, step, n, util):
    """score = w_rec·recency + w_imp·importance + w_rel·relevance, each min-max scaled over
    the candidates (all equal: 0.5); the best that fit in B, at most the cap (paper: the
    shared cap; public code: ga_top_k = `new_retrieve`'s n_count = 30). Paper: recency =
    decay^(hours since last access); public code: candidates ranked by last access,
    oldest first, decay^(rank+1).

    Candidate order, as `new_retrieve` builds it: the memories newest first
    (`seq_event`), stably sorted by last access; equal scores keep that order
    (`top_highest_x_values` is a stable sort), for both variants (``K.sw.variant``).
    ``util``: every slot's similarity to the query.
    """
    eligible, selected, tokens = T.eligible, T.selected, T.F.tokens
    variant, budget, st = K.sw.variant, K.p.budget, K.st
    bimp, blast, bl = X.store.importance, X.store.last, X.knobs[0]
    cands = np.empty(n, np.int64)
    c = np.int64(0)  # typed: a literal start would compile `_fit`, `_minmax` twice
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
            rec[j] = _power(bl.ga_step_decay, step - blast[ordered[j]])
        w_rec, w_imp, w_rel = bl.ga_w_recency, bl.ga_w_importance, bl.ga_w_relevance
        cap = _cap(bl.top_k, st)
    else:
        for j in range(c):
            rec[j] = _power(bl.ga_code_decay, j + 1)
        w_rec, w_imp, w_rel = (bl.gac_w_recency, bl.gac_w_importance,
                               bl.gac_w_relevance)
        cap = _capped(bl.ga_top_k, bl, st)
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


@jit
def _ga_reflect(T, K, X, step, n, since):
    """Generative Agents' reflection (reflect.py `run_reflect`), charged call by call.

    Focal points (`generate_focal_points`, one call over the ``since`` newest memories):
    the ``ga_focal_points`` subtasks those memories are most about (ties: the newer).
    Per focal subtask t: one insight call (`generate_insights_and_evidence`) over t's
    stored memories (newest first, at most ``ga_top_k``), then two calls per thought
    (``ga_thoughts``: `generate_action_event_triple`, `generate_poig_score`); the thoughts
    become one memory, t's summary node (a later reflection on t rewrites it): ceil(c_sum ·
    tokens read) tokens, t's evidence if it read any, each poisoned memory it read absorbed
    with p_leak; rated like any memory (1–10), stored, retrievable. ``T``, ``K``, ``X``:
    the `Trajectory`, `Knobs` and `FieldScratch` (`wmtsim.engine.records`).
    """
    seed, traj, F, slot_of, out = T.seed, T.traj, T.F, T.slot_of, T.out
    p, st, bl, summary_rel = K.p, K.st, X.knobs[0], K.wk.summary_relevance
    bs, bimp, blast, bfreq = X.store.place, X.store.importance, X.store.last, X.store.freq
    kind, tokens, topic, evidence = F.kind, F.tokens, F.topic, F.evidence
    top, summary = F.top, F.summary
    base = bl.scorer_base_tokens
    recent = np.empty(n, np.int64)
    m = 0
    read = 0.0
    for j in range(n):
        v = n - 1 - j
        if m >= since:
            break
        if bs[v] == B_IN and kind[v] != SUMMARY:
            recent[m] = v
            m += 1
            read += tokens[v]
    out[C.llm_calls] += 1  # the focal points
    out[C.prompt_tokens] += base + read
    out[C.memory_tokens] += base + read
    k = int(bl.ga_focal_points)
    chosen = np.full(k, -1, np.int64)
    for f in range(k):
        best_t = -1
        best_c = 0
        for a in range(m):
            t = topic[recent[a]]
            if t < 0 or slot_of[t] < 0:
                continue
            taken = False
            for g in range(f):
                taken = taken or chosen[g] == t
            if taken:
                continue
            c = 0
            for b in range(m):
                if topic[recent[b]] == t:
                    c += 1
            if c > best_c:
                best_c = c
                best_t = t
        if best_t < 0:
            break
        chosen[f] = best_t
    for f in range(k):
        t = chosen[f]
        if t < 0:
            break
        ts = np.int64(slot_of[t])  # int64, as every slot argument: one compile each
        raw = 0.0
        has_ev = False
        about = np.empty(n, np.int64)  # the memories about t it reads
        n_read = np.int64(0)  # typed: a literal start would compile `_absorb` twice
        for j in range(n):
            w = n - 1 - j
            if n_read >= int(bl.ga_top_k):
                break
            if bs[w] != B_IN or kind[w] == SUMMARY or topic[w] != t:
                continue
            about[n_read] = w
            n_read += 1
            raw += tokens[w]
            if evidence[w]:
                has_ev = True
        z = summary[ts]
        if z < 0:
            z = n
            n += 1
            _add_summary(F, z, ts, t, np.int64(top[ts]), summary_rel, p.u_init_summary, step)
            summary[ts] = z
        tokens[z] = math.ceil(st.c_sum * raw)
        evidence[z] = evidence[z] or has_ev
        _result_of(F, z, top[ts], bl)  # a result only with the subtask's evidence
        _absorb(seed, traj, step, F, st, about, n_read, ts, z)
        out[C.llm_calls] += 1  # the insights and their evidence
        out[C.prompt_tokens] += base + raw
        out[C.memory_tokens] += base + raw
        thoughts = bl.ga_thoughts
        out[C.llm_calls] += 2 * thoughts  # a triple and a poignancy per thought
        out[C.prompt_tokens] += 2.0 * thoughts * (base + tokens[z])
        out[C.memory_tokens] += 2.0 * thoughts * (base + tokens[z])
        bimp[z] = _rate(seed, traj, step, z, F, 1.0, bl)
        bs[z] = B_IN
        blast[z] = step
        bfreq[z] = 0
    return n
