"""The agent stubs as numba kernels: one prompt-construction cycle, the reasoner and the
summariser (docs/model.md §4, §6).

`_prompt_step` builds the candidate pool, lets the selector (`wmtsim.engine.selector`)
pick S_t under the budget, applies selection feedback, branch priorities and suppression;
`_reason` answers at critical steps and `_fold` folds a completed subtask. The step loop
that calls them is `wmtsim.engine.loop`.
"""

from __future__ import annotations

import math

import numpy as np

from wmtsim.core.codes import ACTION, FAILURE, FOLDED, NO_PARENT, OBSOLETE, SUMMARY, TASK
from wmtsim.core.jit import jit
from wmtsim.core.lifecycle import (
    _branch_priorities_into,
    _branch_priorities_update,
    _candidate_pool_into,
    _mark_active_path,
    _replay_folded,
    _reveal_resumed,
    _suppress,
)
from wmtsim.core.metrics import C
from wmtsim.core.policies import (
    SEL_BASELINE,
    SEL_BRANCHES,
    SEL_EVERYTHING,
    SEL_ITEMS,
    SEL_NONE,
)
from wmtsim.core.rng import (
    PURPOSE_DILUTION,
    PURPOSE_GUESS,
    PURPOSE_MISLED,
    PURPOSE_PERSUADE,
    _step_key,
    _uniform,
)
from wmtsim.core.scoring import _selection_feedback
from wmtsim.core.stubs import BRANCH_WHOLE, FOLDED_BOTH, FOLDED_SUMMARY, PERSUADE_ANY
from wmtsim.core.world_spec import NO_TOPIC, RESUME_NEW
from wmtsim.engine.dynamics import _dyn_persuaded
from wmtsim.engine.field.common import _retrieval_similarity
from wmtsim.engine.field.dispatch import _baseline_retrieve, _baseline_step
from wmtsim.engine.forest import (
    _absorb,
    _add_summary,
    _add_world_node,
    _draw_id,
)
from wmtsim.engine.selector import _select_branches, _select_items


@jit
def _context_pool(T, K, n):
    """ε_t: what this configuration's context construction can reach (docs/model.md §4
    step 2), into ``T.eligible``; the active path must be marked. The one pool of both the
    selector and IP (Eq. 10: poison "eligible for ordinary context construction"), so the
    two cannot drift. WMT's candidate pool (`_candidate_pool_into`); a fold without a
    reopen covers only what it folded (`WorldSpec.resume_folded`); A3's whole-branch
    retrieval reaches inside folded branches (`Stubs.branch_folded`).
    """
    F, S, sw, st = T.F, T.S, K.sw, K.st
    eligible = T.eligible
    if sw.selection == SEL_NONE:
        for v in range(n):
            eligible[v] = False
        return
    _candidate_pool_into(F.parent, F.kind, F.state, T.on_path, n, eligible, S)
    if sw.selection == SEL_BRANCHES and st.branch_folded != FOLDED_SUMMARY:
        # Every node a fold hides is reached, so nothing is left for `_reveal_resumed`.
        _replay_folded(F.parent, F.kind, F.state, T.on_path, n, eligible, S,
                       st.branch_folded == FOLDED_BOTH)
    elif K.wk.resume_folded == RESUME_NEW:
        _reveal_resumed(F.parent, F.kind, F.state, T.on_path, F.created, F.folded_at, n,
                        eligible, S)


@jit(inline=True)  # one call site, per step: no call that passes the records
def _prompt_step(T, K, X, step, n, active, topic_now, critical, last_obs, D):
    """One prompt-construction cycle (docs/model.md §4) and, at critical steps, the reasoner.

    ``T``: the `Trajectory`; ``K``: the `Knobs`; ``X``: a field policy's `FieldScratch`
    (None for WMT's configurations). Returns the slot count (a field policy may create a
    summary).
    """
    seed, traj, F, out, S = T.seed, T.traj, T.F, T.out, T.S
    is_global, eligible, selected = T.is_global, T.eligible, T.selected
    on_path, priority = T.on_path, T.priority
    sw, p, st, wk = K.sw, K.p, K.st, K.wk
    parent, kind, state, u = F.parent, F.kind, F.state, F.u
    m, tokens, outcome, poisoned = F.m, F.tokens, F.outcome, F.poisoned
    mode = sw.selection
    struct = st.struct_tokens if sw.tree != 0 else 0.0

    # 2. Candidate pool.
    _mark_active_path(parent, active, n, on_path)
    field = False
    if X is not None:  # compiled out for WMT's configurations (X is None)
        if mode == SEL_BASELINE:
            # The one dispatch point of the field's policies: they set ε and s.
            field = True
            n = _baseline_step(T, K, X, step, n, critical)
            util = np.empty(n)
            key = _step_key(seed, traj, step)
            for v in range(n):
                util[v] = _retrieval_similarity(key, v, topic_now, wk.cross_relevance, F,
                                                st, X.knobs[0])
            _baseline_retrieve(T, K, X, step, n, critical, util, topic_now)
    if not field:
        _context_pool(T, K, n)
    pool_tokens = 0.0
    n_pool = 0
    for v in range(n):
        if not field:
            selected[v] = False
        if eligible[v]:
            pool_tokens += tokens[v]
            n_pool += 1

    # Fresh branch priorities for the selector (Eq. 6 on the current tree): the last
    # step's, extended by the nodes appended since when nothing else changed.
    if sw.scores != 0:
        _branch_priorities_update(parent, kind, state, u, outcome, n, p, priority, S)

    # 3. Selection.
    prompt = st.base_tokens
    if mode == SEL_EVERYTHING:
        for v in range(n):
            selected[v] = eligible[v]
    elif mode == SEL_ITEMS and n_pool > 0:
        _select_items(T, K, step, n, topic_now, sw.scores != 0, struct)
        sel_tokens = (st.selector_base_tokens + st.selector_read_fraction * pool_tokens
                      + struct * n_pool)
        prompt += sel_tokens
        out[C.memory_tokens] += sel_tokens
        out[C.selector_calls] += 1
        out[C.llm_calls] += 1
    elif mode == SEL_BRANCHES and n_pool > 0:
        _select_branches(n, F, is_global, eligible, selected, priority, struct, p,
                         st.branch_retrieval == BRANCH_WHOLE)

    # Context accounting (Eqs. 9, 11, 13).
    ctx_tokens = 0.0
    sel_raw = 0.0
    n_ctx = 0
    contaminated = False
    for v in range(n):
        if selected[v]:
            ctx_tokens += tokens[v] + struct
            sel_raw += tokens[v]
            n_ctx += 1
            if poisoned[v]:
                out[C.h_p] += 1
                contaminated = True
            else:
                out[C.h_c] += 1
        if on_path[v]:
            prompt += tokens[v]
    # BR counts whatever can persuade the reasoner (docs/model.md §5): a poisoned observation
    # just made is in the prompt whether or not the selector picked it.
    if (last_obs >= 0 and poisoned[last_obs] and st.obs_in_context != 0.0
            and not selected[last_obs]):
        contaminated = True
    if contaminated:
        out[C.contaminated_steps] += 1
    # The parity table's budget use (docs/field.md): memory context against B.
    out[C.context_tokens] += ctx_tokens
    out[C.context_max] = max(out[C.context_max], ctx_tokens)
    out[C.context_items_max] = max(out[C.context_items_max], float(n_ctx))
    if pool_tokens > 0:
        out[C.ccr_sum] += sel_raw / pool_tokens
        out[C.ccr_steps] += 1
    # The observation just made is fed to the agent with the prompt (docs/world.md,
    # "or was just observed"): charged its tokens unless the selector already put it in.
    obs_tokens = 0.0
    if last_obs >= 0 and not selected[last_obs]:
        obs_tokens = tokens[last_obs]
    prompt += ctx_tokens + obs_tokens
    out[C.prompt_tokens] += prompt
    out[C.prompt_steps] += 1
    out[C.llm_calls] += 1

    # 4.–6. Selection feedback (Eqs. 3–5), priorities (Eq. 6), suppression (Eq. 7).
    if sw.scores != 0:
        _selection_feedback(u, m, eligible, selected, is_global, p, n)
        _branch_priorities_into(parent, kind, state, u, outcome, n, p, priority, S)
        if sw.lifecycle != 0:
            suppressed = _suppress(kind, state, on_path, priority, n, p)
            out[C.suppressed] += suppressed
            if suppressed > 0:
                S.fresh[0] = -1  # O_b changed in the suppressed branches and ancestors

    if critical:
        _reason(T, K, step, n, topic_now, last_obs, ctx_tokens + obs_tokens, active, D)
    return n


@jit(inline=True)  # one call site, per critical step: no call that passes the records
def _reason(T, K, step, n, topic_now, last_obs, ctx_tokens, active, D):
    """The reasoner stub at a critical step (a subtask's answer, or the final answer).

    The final answer's rule (docs/world.md, reasoner; `WorldSpec.final_share`,
    `WorldSpec.p_recover`, the same for every policy): a top-level subtask's result is
    usable when the subtask was answered correctly and its result (a memory of its branch
    that carries evidence, or its summary) is in the context, or, missing, is recovered
    with probability p_recover; the answer needs ceil(final_share · K) usable results of
    K. The task succeeds when the final answer is correct (TSR, Eq. 14): a compromised
    step is wrong only when it is misled (``p_misled``). At the final answer ``active``
    is the task's root (conversation mode: each task has its own).
    """
    seed, traj, F, out = T.seed, T.traj, T.F, T.out
    selected, answered, st = T.selected, T.answered, K.st
    f_wid, parent, kind, poisoned = F.wid, F.parent, F.kind, F.poisoned
    evidence, topic, pers, top = F.evidence, F.topic, F.persuasiveness, F.top
    # The context the reasoner reads: the selected memories and the observation just made.
    seen_obs = last_obs >= 0 and st.obs_in_context != 0.0 and not selected[last_obs]
    # What the answer needs: the subtask's evidence, or (final) every top-level result.
    # ``has_evidence``: the clean evidence is in context (or just observed), not guessed.
    needs_met = True
    has_evidence = True
    if topic_now != NO_TOPIC:
        has_evidence = last_obs >= 0 and evidence[last_obs] and topic[last_obs] == topic_now
        for v in range(n):
            if selected[v] and evidence[v] and topic[v] == topic_now:
                has_evidence = True
        needs_met = has_evidence
        if not has_evidence:
            needs_met = _uniform(seed, traj, step, topic_now, PURPOSE_GUESS) < st.p_guess
    else:
        k_top = 0
        k_usable = 0
        for v in range(n):
            if kind[v] != TASK or parent[v] != active:
                continue
            s_w = np.int64(f_wid[v])
            k_top += 1
            present = False
            for x in range(n):
                if selected[x] and top[x] == s_w and (kind[x] == SUMMARY or evidence[x]):
                    present = True
            if not (answered[s_w] and present):
                has_evidence = False
            if answered[s_w] and (present or _uniform(seed, traj, step, s_w, PURPOSE_GUESS)
                                  < K.wk.p_recover):
                k_usable += 1
        needs_met = k_usable >= math.ceil(K.wk.final_share * k_top - 1e-9)
    # Persuasion by poisoned memory in context (`Stubs.persuade_scope`: any, or only
    # poison that concerns this answer); the clean evidence in context resists it (a
    # lucky guess does not).
    p_hit = st.p_persuade_vs_evidence if has_evidence else st.p_persuade
    any_scope = st.persuade_scope == PERSUADE_ANY
    compromised = False
    for v in range(n):
        if not (selected[v] or (seen_obs and v == last_obs)):
            continue
        if poisoned[v] and (any_scope or topic_now == NO_TOPIC or topic[v] == topic_now):
            if _uniform(seed, traj, step, _draw_id(F, v), PURPOSE_PERSUADE) < pers[v] * p_hit:
                compromised = True
                _dyn_persuaded(D, v, step)  # the aggregates count it (None: compiled out)
    # Context dilution: longer contexts lower the chance of using what is there.
    half = st.dilution_tokens
    p_use = st.p_use_max * half / (half + ctx_tokens)
    used = _uniform(seed, traj, step, np.int64(0), PURPOSE_DILUTION) < p_use
    # A compromised step gives a wrong answer with probability p_misled.
    misled = compromised and _uniform(seed, traj, step, np.int64(0), PURPOSE_MISLED) < st.p_misled
    correct = needs_met and not misled and used
    out[C.critical_steps] += 1
    if compromised:
        out[C.compromised_steps] += 1
    if correct:
        out[C.correct_steps] += 1
    if topic_now != NO_TOPIC:
        answered[topic_now] = correct
    else:
        # TSR (Eq. 14): the task succeeds when its final answer is correct (docs/model.md §5),
        # counted per task (conversation mode: several per trajectory).
        out[C.final_correct] += 1.0 if correct else 0.0
        out[C.success] += 1.0 if correct else 0.0
        out[C.tasks] += 1.0
        answered[f_wid[active]] = correct  # the task's result (a promoted summary reads it)


@jit
def _read_branch(T, step, s, n):
    """The summariser stub reads branch ``s`` (``s`` and its descendants) at ``step``, as a
    fold (docs/model.md §3) and a promotion do: its raw tokens (summaries excluded), its
    failure warnings (one per failed action), whether it holds subtask ``s``'s evidence,
    and the memories eligible at this step, whose poison may leak into the summary
    (`_absorb`). Returns ``(raw, n_warnings, has_evidence, read, k)``: the eligible
    memories are ``read[:k]``."""
    F, eligible = T.F, T.eligible
    f_wid, parent, kind, tokens = F.wid, F.parent, F.kind, F.tokens
    evidence, topic, outcome = F.evidence, F.topic, F.outcome
    raw = 0.0
    has_evidence = False
    n_warnings = 0
    in_branch = np.zeros(n, np.bool_)
    read = np.empty(n, np.int64)
    k = np.int64(0)  # typed: a literal start would compile `_absorb` twice
    for v in range(n):
        in_branch[v] = v == s or (parent[v] >= 0 and in_branch[parent[v]])
        if not in_branch[v]:
            continue
        if kind[v] != SUMMARY:
            raw += tokens[v]
        if kind[v] == ACTION and outcome[v] == FAILURE:
            n_warnings += 1
        if evidence[v] and topic[v] == f_wid[s]:
            has_evidence = True
        if eligible[v]:
            read[k] = v
            k += 1
    return raw, n_warnings, has_evidence, read, k


@jit
def _charge_summariser(out, st, raw):
    """One summariser call: an LLM call whose prompt is its base tokens plus the branch."""
    out[C.summariser_calls] += 1
    out[C.llm_calls] += 1
    out[C.prompt_tokens] += st.summariser_base_tokens + raw
    out[C.memory_tokens] += st.summariser_base_tokens + raw


@jit
def _fold(T, K, step, s, n):
    """Fold branch ``s`` on completion (docs/model.md §3) with the summariser stub.

    The root becomes folded and its summary node (created on the first fold, refreshed on
    a re-fold) gets ceil(c_sum · branch tokens) tokens, the branch's evidence, its failure
    warnings (``warning_tokens`` each) and the poison that leaks into it from the
    branch's eligible memories (`_read_branch`, `_absorb`). Returns the new slot count.
    """
    F, out = T.F, T.out
    p, st, wk = K.p, K.st, K.wk
    u, m, tokens = F.u, F.m, F.tokens
    evidence, state, summary = F.evidence, F.state, F.summary
    raw, n_warnings, has_evidence, read, k = _read_branch(T, step, s, n)
    z = summary[s]
    if z < 0:
        z = n
        n += 1
        _add_summary(F, z, s, np.int64(F.wid[s]), np.int64(F.top[s]), wk.summary_relevance,
                     p.u_init_summary, step)
        summary[s] = z
    else:
        u[z] = p.u_init_summary
        m[z] = 0
    F.warnings[z] = n_warnings
    tokens[z] = math.ceil(st.c_sum * raw) + n_warnings * int(st.warning_tokens)
    evidence[z] = evidence[z] or has_evidence
    _absorb(T.seed, T.traj, step, F, st, read, k, s, z)
    if state[s] != OBSOLETE:
        state[s] = FOLDED
    F.folded_at[s] = step  # what this fold covers (`WorldSpec.resume_folded`)
    out[C.folds] += 1
    _charge_summariser(out, st, raw)
    return n


@jit
def _promote(T, K, step, r, n, W, g):
    """Conversation mode (docs/model.md §3): the finished task's summary becomes global
    memory ``g`` (a world node of ``W``), for configurations that fold when
    ``Params.promote_summaries`` is on. The summariser reads the task's tree (root slot
    ``r``) as a fold does (`_read_branch`; `_absorb`: the eligible poison leaks at the final
    answer, ``step``, recorded in leak bit 0; the root's ``summary`` names the global). It carries
    the task's result when the final answer was correct, starts at u_init_global and
    decays with ρ_G (Eq. 4). Returns the new slot count."""
    F = T.F
    p, st = K.p, K.st
    # A root holds no subtask evidence of its own: the result is the final answer's.
    raw, n_warnings, _, read, k = _read_branch(T, step, r, n)
    z = n
    _add_world_node(F, T.slot_of, W, z, g, np.int64(NO_PARENT), p.u_init_global, step + 1)
    T.is_global[z] = True
    F.tokens[z] = math.ceil(st.c_sum * raw) + n_warnings * int(st.warning_tokens)
    F.warnings[z] = n_warnings
    F.evidence[z] = T.answered[F.wid[r]]
    _absorb(T.seed, T.traj, step, F, st, read, k, r, z)
    F.summary[r] = z
    _charge_summariser(T.out, st, raw)
    return n + 1
