"""The readable twin of `wmtsim.engine.field.dispatch`: the field's memory policies in plain Python.

`wmtsim.twins.simulator` plays a world script; for a policy with selection ``baseline`` it asks
a `BaselineMemory` at every prompt step which memories are kept (the pool ε) and which go
into the context (s). One `Item` per memory, in creation order; the rules below restate
docs/field.md and must agree with the numba kernels bit for bit. No numba here; the
only shared pieces are the draw (`wmtsim.core.rng.uniform_py`), the knobs and the constants.
"""

from __future__ import annotations

import math
from typing import Any

from wmtsim.core.draws import PURPOSE_MEM0, uniform_py
from wmtsim.core.field_knobs import Baselines
from wmtsim.core.field_policies import (
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
from wmtsim.core.metrics import C
from wmtsim.core.policies import SEL_BASELINE, Policy
from wmtsim.twins.field_memorybank import MemoryBankStore
from wmtsim.twins.field_queues import QueueStore
from wmtsim.twins.field_store import STORED, fit, minmax, power, top_by

_SQRT12 = 3.4641016151377544  # a uniform on [-√3, √3] has s.d. 1


class BaselineMemory(QueueStore, MemoryBankStore):
    """One trajectory's store under a field policy, driven by the simulator (``host``);
    its state and helpers are `StoreBase`'s, its queues and windows `QueueStore`'s,
    MemoryBank's forgetting and daily summaries `MemoryBankStore`'s."""

    # ---------------------------------------------------------------- one prompt step

    def step(self, topic_now: int, critical: bool, path: set[str]
             ) -> tuple[list[str], set[str]]:
        """Admit, forget/evict, retrieve within B; returns (pool ε in creation order, s)."""
        h, fam, step, k = self.h, self.pol.family, self.h.step, self.k
        # 1. Admission of new items, in creation order.
        for v in list(h.tree.nodes):
            node = h.tree.nodes[v]
            if v in self.items or node.kind not in ("task", "action", "global"):
                continue
            it = self.item(v)
            if fam == FAM_TRACERETAIN:
                self.traceretain_admit(v)
            elif fam == FAM_MEM0:
                self.mem0_admit(v)
            else:
                it.place, it.last, it.freq, it.strength = "in", step, 0, 1.0
                if fam == FAM_GENERATIVE:
                    it.importance = self.rate(v, 1.0)
                    self.poignancy += int(it.importance)
                    self.since += 1
        # Generative Agents reflects when the poignancy since the last reflection is high.
        if (fam == FAM_GENERATIVE and k.ga_reflect_threshold > 0
                and self.poignancy >= k.ga_reflect_threshold):
            self.generative_reflect()
            self.poignancy, self.since = 0, 0
        # TraceRetain's short-term buffer: evaluated when full, periodically, at key moments.
        if fam == FAM_TRACERETAIN and k.tr_buffer > 0:
            held = self.placed("buffered")
            if (len(held) >= k.tr_buffer or (step + 1) % k.tr_eval_every == 0
                    or critical) and held:
                self.traceretain_evaluate(held)
        # 2. Forgetting (MemoryBank: once per session) and overflow.
        budget = float(h.budget)
        if fam == FAM_MEMORYBANK:
            session = k.mb_session_steps
            if session > 0 and step > 0 and step % session == 0:
                if k.mb_summaries:
                    self.memorybank_summarize(session)
                self.memorybank_forget(path)
                if k.mb_summaries:
                    self.memorybank_drop_orphans()
        elif fam == FAM_MEMGPT:
            limit = float(k.window_tokens) if k.window_tokens > 0 else budget
            room = limit - self.core_tokens()  # core memory takes its share of W
            summaries = h.out[C.summariser_calls]
            if k.letta_walk:
                self.letta_overflow(room)
            else:
                self.queue_overflow(room, float(k.evict_fraction), k.keep_last, True,
                                    "recall")
            if k.letta_memory:
                if h.out[C.summariser_calls] > summaries:
                    self.alerted = False  # a summary clears the alert
                self.letta_pressure(limit)
        elif fam == FAM_TOKEN_BUFFER:
            limit = float(k.token_limit) if k.token_limit > 0 else budget
            self.queue_overflow(limit, 0.0, 0, self.pol.variant == 1, "evicted")
        elif fam == FAM_WINDOW:
            self.window_slide()
        # 3. The pool and the retrieval, never more than B tokens.
        pool = [v for v in h.tree.nodes if v in self.items
                and self.items[v].place in STORED and v not in path]
        tokens = {v: float(h.tree.nodes[v].tokens) for v in pool}
        recent: set[str] = set()  # MemoryBank code: history turns, not recalls
        if fam in (FAM_MEMGPT, FAM_WINDOW, FAM_TOKEN_BUFFER):
            limit = 0 if k.own_caps else int(h.st.top_k)  # the shared cap
            chosen, used = self.core_context(pool, budget, limit)  # MemGPT's core memory
            if limit <= 0 or len(chosen) < limit:
                queue, used = self.newest_fit(pool, tokens, budget, used,
                                              limit - len(chosen) if limit > 0 else 0)
                chosen |= queue
            # Letta's searches are tool calls the agent decides to make.
            need = fam == FAM_MEMGPT and critical and (
                not k.search_on_need or self.needs_search(topic_now, chosen))
            if need and k.recall_k > 0:
                self.conversation_search(topic_now, pool, chosen, tokens, budget, used, limit)
            if need and topic_now >= 0 and k.letta_memory and k.archival_k > 0:
                self.archival_search(topic_now, pool, chosen, tokens, budget, limit)
        elif fam == FAM_GENERATIVE:
            chosen = self.generative_retrieve(pool, topic_now, tokens, budget)
        else:
            used, cap = 0.0, self.cap(k.top_k)
            if fam == FAM_MEMORYBANK and self.pol.variant == MB_CODE:
                # The last mb_code_recent turns (0 = none), then the mb_code_top_k most
                # similar; together at most the shared cap.
                if k.mb_code_recent > 0:
                    recent, used = self.newest_fit(pool, tokens, budget, 0.0,
                                                   self.capped(k.mb_code_recent),
                                                   summary=False)
                top = self.capped(k.mb_code_top_k)
                cap = self.capped(len(recent) + top) - len(recent)
            if cap < 0 or (fam == FAM_MEMORYBANK and self.pol.variant == MB_CODE
                           and cap == 0):
                got: list[str] = []
            else:
                scored = [(self.query_utility(v, topic_now), v) for v in pool
                          if v not in recent]
                got, _ = fit(scored, cap, tokens, budget, used)
            chosen = recent | set(got)
        # 4. Access statistics of what was retrieved.
        for v in chosen - recent:
            it = self.items[v]
            it.freq += 1
            if fam == FAM_MEMORYBANK:  # a recall strengthens the memory and resets t
                s = it.strength + 1.0
                if self.pol.variant == 1 and k.mb_s_cap > 0 and s > k.mb_s_cap:
                    s = float(k.mb_s_cap)
                it.strength = s
            it.last = step
        return pool, chosen

    def supersede(self, v: str) -> bool:
        """A supersede/invalidate event (policies with a contradiction rule): a stored
        memory is deleted; returns whether it was in the store."""
        if v in self.items and self.items[v].place == "in":
            self.items[v].place = "deleted"
            return True
        return False

    def eligible(self, path: set[str]) -> set[str]:
        """ε at the end of a trajectory (the store and MemGPT's recall storage)."""
        return {v for v, it in self.items.items() if it.place in STORED
                and v not in path}

    # ---------------------------------------------------------------- TraceRetain

    def traceretain_admit(self, v: str) -> None:
        """Rule filter → (no buffer: 0–10 rating → z-score (or raw ≥ 7) → eviction →
        clusters; with one: into the short-term buffer)."""
        h, k, it = self.h, self.k, self.items[v]
        node, f = h.tree.nodes[v], h.facts[v]
        against = "buffered" if k.tr_buffer > 0 else "in"
        earlier = [w for w in self.placed(against) if w != v]
        dup = self.content_similarity if k.dup_content else self.similarity
        if any(dup(v, w) > k.dup_threshold for w in earlier if not self.is_summary(w)):
            it.place = "dropped"  # a near-duplicate: the earliest is kept
            return
        if node.tokens < k.min_tokens and not f.evidence:
            it.place = "dropped"  # short, no key entity
            return
        if k.drop_failed and node.kind == "action" and node.outcome == "failure":
            it.place = "dropped"  # low-priority kind
            return
        if k.tr_buffer > 0:
            it.place = "buffered"
            return
        it.importance = self.rate(v, 0.0)
        self.traceretain_retain(v)

    def traceretain_evaluate(self, held: list[str]) -> None:
        """One batched rating call over the buffer, then each trace (creation order)
        through threshold, eviction and clusters."""
        h = self.h
        raw = 0.0
        for v in held:
            raw += h.tree.nodes[v].tokens
        call = float(self.k.scorer_base_tokens) + raw
        h.out[C.llm_calls] += 1
        h.out[C.prompt_tokens] += call
        h.out[C.memory_tokens] += call
        for v in held:
            self.items[v].importance = self.rating(v, 0.0)
            self.traceretain_retain(v)

    def traceretain_retain(self, v: str) -> None:
        """A rated trace: z-score (or raw ≥ 7) → eviction → clusters."""
        h, k, it = self.h, self.k, self.items[v]
        f = h.facts[v]
        stored = [w for w in self.placed("in") if w != v]
        x = it.importance
        retain = x >= k.raw_threshold
        if self.pol.threshold != THRESHOLD_FIXED and len(self.window) >= 2:
            mean = 0.0
            for y in self.window:
                mean += y
            mean = mean / len(self.window)
            var = 0.0
            for y in self.window:
                var += (y - mean) * (y - mean)
            sd = math.sqrt(var / len(self.window))
            if sd > 0.0:
                retain = (x - mean) / sd > k.z_threshold
        self.window = [*self.window, x][-k.z_window:]
        if not retain:
            it.place = "dropped"
            return
        victim = None
        if self.pol.eviction == EVICT_SIMILARITY and stored:
            best = max(stored, key=lambda w: self.similarity(v, w))  # first of the best
            if self.similarity(v, best) >= k.replace_threshold:
                victim = best
        if victim is None and len(stored) >= k.capacity:
            victim = self.traceretain_victim(stored)
        if victim is not None:
            self.items[victim].place = "evicted"
        it.place, it.last, it.freq = "in", h.step, 0
        if self.pol.cluster and f.topic >= 0 and h.wid_id(f.topic) in h.tree.nodes:
            members = [w for w in self.placed("in") if not self.is_summary(w)
                       and h.facts[w].topic == f.topic]
            if len(members) >= k.cluster_size:
                self.traceretain_cluster(f.topic, members)

    def traceretain_victim(self, stored: list[str]) -> str:
        """LRU: oldest access; LFU: fewest retrievals, then oldest access; importance +
        frequency: lowest w_imp·importance/10 + w_freq·retrievals/(steps since created +
        1); importance + recency: lowest w_imp·importance/10 + w_rec·decay^(steps idle).
        Ties: the older item."""
        k, step, nodes = self.k, self.h.step, self.h.tree.nodes

        def key(w: str) -> tuple[float, float]:
            it = self.items[w]
            if self.pol.eviction == EVICT_LFU:
                return (float(it.freq), float(it.last))
            if self.pol.eviction == EVICT_IMPORTANCE:
                return (k.importance_weight * (it.importance / 10.0)
                        + k.frequency_weight * (it.freq / float(step - nodes[w].created + 1)),
                        0.0)
            if self.pol.eviction == EVICT_IMPORTANCE_RECENCY:
                return (k.importance_weight * (it.importance / 10.0)
                        + k.recency_weight * power(k.recency_decay, step - it.last), 0.0)
            return (float(it.last), 0.0)

        return min(stored, key=key)  # min keeps the first of equal keys

    def traceretain_cluster(self, topic: int, members: list[str]) -> None:
        """Summarise a topic's stored traces into its cluster summary; archive them."""
        h = self.h
        task = h.wid_id(topic)
        sid = f"{task}/summary"
        raw, imp = 0.0, 0.0
        if sid in self.items and self.items[sid].place == "in":
            raw += h.tree.nodes[sid].tokens
            imp = self.items[sid].importance
        has_ev = False
        for w in members:
            raw += h.tree.nodes[w].tokens
            imp = max(imp, self.items[w].importance)
            has_ev = has_ev or h.facts[w].evidence
            self.items[w].place = "archived"
        if sid not in h.tree.nodes:
            h.add_summary(sid, task, topic, h.facts[task].top)
        node, f = h.tree.nodes[sid], h.facts[sid]
        node.tokens = math.ceil(float(h.st.c_sum) * raw)
        f.evidence = f.evidence or has_ev
        self.result_of(sid, task)  # a result only with the subtask's evidence
        h.absorb(sid, members, h.step)
        it = self.item(sid)
        it.place, it.importance, it.last, it.freq = "in", imp, h.step, 0
        self.summariser_call(raw)

    # ---------------------------------------------------------------- Generative Agents

    def generative_retrieve(self, pool: list[str], topic_now: int,
                            tokens: dict[str, float], budget: float) -> set[str]:
        """recency + importance + relevance, each min-max scaled; the best that fit in B,
        at most the cap (paper: shared; code: ga_top_k). Candidates in `new_retrieve`'s
        order: newest first, stably sorted by last access (equal scores keep it)."""
        if not pool:
            return set()
        k, step = self.k, self.h.step
        ordered = sorted(reversed(pool), key=lambda v: self.items[v].last)
        if self.pol.variant == 0:  # paper: decay^(hours since last access)
            d = k.ga_step_decay()
            rec = [power(d, step - self.items[v].last) for v in ordered]
            w = (k.ga_w_recency, k.ga_w_importance, k.ga_w_relevance)
            cap = self.cap(k.top_k)
        else:  # public code: rank by last access, oldest first, decay^(rank + 1)
            rec = [power(k.ga_code_decay, r + 1) for r in range(len(ordered))]
            w = (k.gac_w_recency, k.gac_w_importance, k.gac_w_relevance)
            cap = self.capped(k.ga_top_k)
        imp = [self.items[v].importance for v in ordered]
        rel = [self.query_utility(v, topic_now) for v in ordered]
        rec, imp, rel = minmax(rec), minmax(imp), minmax(rel)
        scored = [(w[0] * rec[j] + w[1] * imp[j] + w[2] * rel[j], v)
                  for j, v in enumerate(ordered)]
        got, _ = fit(scored, cap, tokens, budget, 0.0)
        return set(got)

    def generative_reflect(self) -> None:
        """reflect.py `run_reflect`: focal points (one call over the ``since`` newest
        memories: the subtasks they are most about, ties to the newer), per focal subtask
        one insight call over its stored memories (newest first, at most ga_top_k) and
        two calls per thought; the thoughts are the subtask's summary memory."""
        h, k = self.h, self.k
        nodes = h.tree.nodes
        base = float(k.scorer_base_tokens)
        stored = [v for v in self.placed("in") if not self.is_summary(v)]
        recent = list(reversed(stored))[:self.since]
        read = 0.0
        for v in recent:
            read += nodes[v].tokens
        self.charge(base + read, 1)  # the focal points
        chosen: list[int] = []
        for _ in range(k.ga_focal_points):
            best_t, best_c = -1, 0
            for v in recent:
                t = h.facts[v].topic
                if t < 0 or h.wid_id(t) not in nodes or t in chosen:
                    continue
                c = sum(1 for w in recent if h.facts[w].topic == t)
                if c > best_c:
                    best_t, best_c = t, c
            if best_t < 0:
                break
            chosen.append(best_t)
        for t in chosen:
            task = h.wid_id(t)
            sid = f"{task}/summary"
            about = [w for w in reversed(stored) if h.facts[w].topic == t][:k.ga_top_k]
            raw, has_ev = 0.0, False
            for w in about:
                raw += nodes[w].tokens
                has_ev = has_ev or h.facts[w].evidence
            if sid not in nodes:
                h.add_summary(sid, task, t, h.facts[task].top)
            node, f = nodes[sid], h.facts[sid]
            node.tokens = math.ceil(float(h.st.c_sum) * raw)
            f.evidence = f.evidence or has_ev
            self.result_of(sid, task)  # a result only with the subtask's evidence
            h.absorb(sid, about, h.step)
            self.charge(base + raw, 1)  # the insights and their evidence
            thoughts = k.ga_thoughts
            self.charge(2.0 * thoughts * (base + node.tokens), 2 * thoughts)
            it = self.item(sid)
            it.importance = self.rating(sid, 1.0)
            it.place, it.last, it.freq = "in", h.step, 0

    def charge(self, tokens: float, calls: int) -> None:
        """LLM calls of memory's own, with their prompt tokens."""
        out = self.h.out
        out[C.llm_calls] += calls
        out[C.prompt_tokens] += tokens
        out[C.memory_tokens] += tokens

    # ---------------------------------------------------------------- mem0

    def mem0_information(self, x: str) -> float:
        """How informative a memory looks to mem0's decision: 0.75·relevance +
        0.25·[not a failure] + selector noise (one draw per memory, step 0)."""
        h = self.h
        node = h.tree.nodes[x]
        ok = 0.0 if (node.kind == "action" and node.outcome == "failure") else 1.0
        u = uniform_py(h.seed, h.traj, 0, h.draw_id(x), PURPOSE_MEM0)
        return (0.75 * h.facts[x].rel + 0.25 * ok
                + float(h.st.selector_noise) * ((u - 0.5) * _SQRT12))

    def mem0_admit(self, v: str) -> None:
        """Extraction + search of the mem0_search_k most similar stored memories + one
        decision call: on a match (similarity >= mem0_match) UPDATE when the new fact
        looks more informative, else NONE (with mem0_random_decision: the knobs' draws),
        else ADD (see `wmtsim.engine.field.admission._mem0_admit`)."""
        h, k, it = self.h, self.k, self.items[v]
        stored = [w for w in self.placed("in") if w != v and not self.is_summary(w)]
        found = top_by([(self.similarity(v, w), w) for w in stored], k.mem0_search_k)
        read = 0.0
        for w in found:
            read += h.tree.nodes[w].tokens
        tok = float(h.tree.nodes[v].tokens)
        h.out[C.prompt_tokens] += 2.0 * float(k.scorer_base_tokens) + 2.0 * tok + read
        h.out[C.memory_tokens] += 2.0 * float(k.scorer_base_tokens) + 2.0 * tok + read
        h.out[C.llm_calls] += 2  # extraction + decision
        it.place, it.last, it.freq = "in", h.step, 0
        if not found or self.similarity(v, found[0]) < k.mem0_match:
            return  # ADD
        if not k.mem0_random_decision:  # keep the fact with the most information
            if self.mem0_information(v) > self.mem0_information(found[0]):
                self.items[found[0]].place = "overwritten"  # UPDATE
            else:
                it.place = "dropped"  # NONE
            return
        x = h.draw(h.draw_id(v), PURPOSE_MEM0)
        p_up = float(k.mem0_p_update)
        p_del = p_up + float(k.mem0_p_delete)
        p_none = p_del + float(k.mem0_p_none)
        if x < p_up:  # UPDATE: the new fact overwrites the old memory
            self.items[found[0]].place = "overwritten"
        elif x < p_del:  # DELETE: the old memory is contradicted; nothing added
            self.items[found[0]].place = "deleted"
            it.place = "dropped"
        elif x < p_none:  # NONE: already known
            it.place = "dropped"


def reference_model(host: object, policy: Policy, knobs: object = None) -> Any:
    """The readable twin's store for a field policy (`BaselineMemory` on the simulator's
    trajectory ``host``), or None for WMT's own configurations."""
    if policy.selection != SEL_BASELINE:
        return None
    return BaselineMemory(host, policy, knobs if isinstance(knobs, Baselines) else Baselines())
