"""The readable twin of `wmtsim.baselines`: the field's memory policies in plain Python.

`wmtsim.simulator` plays a world script; for a policy with selection ``baseline`` it asks
a `BaselineMemory` at every prompt step which memories are kept (the pool ε) and which go
into the context (s). One `Item` per memory, in creation order; the rules below restate
docs/policies.md and must agree with the numba kernels bit for bit. No numba here; the
only shared pieces are the draw (`wmtsim.rng.uniform_py`), the knobs and the constants.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .baselines import PURPOSE_FORGET, PURPOSE_IMPORTANCE, Baselines
from .policies import (
    EVICT_IMPORTANCE,
    EVICT_LFU,
    EVICT_SIMILARITY,
    FAM_GENERATIVE,
    FAM_MEMGPT,
    FAM_MEMORYBANK,
    FAM_TOKEN_BUFFER,
    FAM_TRACERETAIN,
    FAM_WINDOW,
    THRESHOLD_FIXED,
    Policy,
)
from .rng import PURPOSE_LEAK

_SQRT3 = 1.7320508075688772
PLACES = ("unseen", "in", "dropped", "evicted", "recall", "archived", "forgotten")


@dataclass
class Item:
    """A memory as a field policy sees it: where it is, its rating, access and strength."""

    id: str
    place: str = "unseen"
    importance: float = 0.0
    last: int = 0  # step of creation or of the last retrieval
    freq: int = 0  # retrievals
    strength: float = 0.0  # MemoryBank S


def power(x: float, k: int) -> float:
    """x^k as k factors (the project's rounding convention)."""
    g = 1.0
    for _ in range(k):
        g *= x
    return g


def top_by(scored: list[tuple[float, str]], k: int) -> list[str]:
    """The first k by descending score; ties keep creation order (a stable sort)."""
    ranked = sorted(scored, key=lambda item: -item[0])
    return [v for _, v in ranked[:k]]


def minmax(xs: list[float]) -> list[float]:
    """Min-max scaling to [0, 1]; a constant list becomes 0.5 (Generative Agents' code)."""
    lo, hi = min(xs), max(xs)
    span = hi - lo
    return [0.5 if span == 0.0 else (x - lo) / span for x in xs]


class BaselineMemory:
    """One trajectory's store under a field policy, driven by the simulator (``host``).

    ``host`` is the simulator's trajectory: it owns the memory tree (``tree``), the
    world facts (``facts``), slots (``slot``), the draw (``draw``), the selector stub's
    relevance and noise, the counters (``out``) and ``add_summary``.
    """

    def __init__(self, host: Any, pol: Policy, knobs: Baselines) -> None:
        self.h = host
        self.pol = pol
        self.k = knobs
        self.items: dict[str, Item] = {}
        self.window: list[float] = []  # TraceRetain: previous ratings, oldest first
        self.summary: str | None = None  # the running summary (MemGPT, windows)

    # ---------------------------------------------------------------- helpers

    def item(self, v: str) -> Item:
        if v not in self.items:
            self.items[v] = Item(v)
        return self.items[v]

    def placed(self, place: str) -> list[str]:
        """Items at ``place``, in creation order."""
        return [v for v in self.h.tree.nodes if v in self.items and self.items[v].place == place]

    def is_summary(self, v: str) -> bool:
        return bool(self.h.tree.nodes[v].kind == "summary")

    def query_utility(self, v: str, topic_now: int) -> float:
        """Similarity to the current query: relevance + poison boost + noise (the selector
        stub's unweighted utility)."""
        node = self.h.tree.nodes[v]
        x = float(self.h.relevance(v, topic_now))
        if node.poisoned and node.kind != "summary":
            x += float(self.h.st.poison_boost)
        return x + float(self.h.st.selector_noise) * float(self.h.noise(self.h.draw_id(v)))

    def similarity(self, a: str, b: str) -> float:
        """Item–item similarity: (1 on the same topic, else cross) · (1 − |Δ relevance|)."""
        fa, fb = self.h.facts[a], self.h.facts[b]
        t = 1.0 if fa.topic == fb.topic else float(self.h.cross)
        return t * (1.0 - abs(fa.rel - fb.rel))

    def rate(self, v: str, lo: float) -> float:
        """The importance scorer stub (one LLM call reading the item), an integer in
        [lo, 10]: 10·(0.6·rel + 0.2·[not a failure] + 0.2·[evidence]) + noise, half up."""
        node, f, st = self.h.tree.nodes[v], self.h.facts[v], self.h.st
        d = self.h.draw_id(v)
        s = 0.0
        for j in range(4):
            s += self.h.draw(4 * d + j, PURPOSE_IMPORTANCE)
        ok = 0.0 if (node.kind == "action" and node.outcome == "failure") else 1.0
        ev = 1.0 if f.evidence else 0.0
        x = (10.0 * (0.6 * f.rel + 0.2 * ok + 0.2 * ev)
             + float(self.k.importance_noise) * ((s - 2.0) * _SQRT3))
        out = self.h.out
        out[12] += float(self.k.scorer_base_tokens) + node.tokens  # prompt tokens
        out[13] += 1  # LLM calls
        _ = st
        return min(10.0, max(lo, float(math.floor(x + 0.5))))

    def absorbs(self, v: str) -> bool:
        """Does the summariser carry poisoned item ``v`` into its summary (p_leak)?"""
        if not self.h.tree.nodes[v].poisoned:
            return False
        st = self.h.st
        p_leak = st.p_leak_rider if self.h.facts[v].rider else st.p_leak
        return bool(self.h.draw(self.h.draw_id(v), PURPOSE_LEAK) < p_leak)

    def summariser_call(self, raw: float) -> None:
        out = self.h.out
        out[15] += 1  # summariser calls
        out[13] += 1  # LLM calls
        out[12] += float(self.h.st.summariser_base_tokens) + raw

    # ---------------------------------------------------------------- one prompt step

    def step(self, topic_now: int, critical: bool, path: set[str]
             ) -> tuple[list[str], set[str]]:
        """Admit, forget/evict, retrieve; returns (pool ε in creation order, s)."""
        h, fam, step = self.h, self.pol.family, self.h.step
        # 1. Admission of new items, in creation order.
        for v in list(h.tree.nodes):
            node = h.tree.nodes[v]
            if v in self.items or node.kind not in ("task", "action", "global"):
                continue
            it = self.item(v)
            if fam == FAM_TRACERETAIN:
                self.traceretain_admit(v)
            else:
                it.place, it.last, it.freq, it.strength = "in", step, 0, 1.0
                if fam == FAM_GENERATIVE:
                    it.importance = self.rate(v, 1.0)
        # 2. Forgetting and overflow.
        if fam == FAM_MEMORYBANK:
            self.memorybank_forget(path)
        elif fam == FAM_MEMGPT:
            self.queue_overflow(float(self.k.window_tokens), float(self.k.evict_fraction),
                                self.k.keep_last, True, "recall")
        elif fam == FAM_TOKEN_BUFFER:
            self.queue_overflow(float(self.k.token_limit), 0.0, 0, self.pol.variant == 1,
                                "evicted")
        elif fam == FAM_WINDOW:
            self.window_slide()
        # 3. The pool and the retrieval.
        pool = [v for v in h.tree.nodes if v in self.items
                and self.items[v].place in ("in", "recall") and v not in path]
        if fam in (FAM_MEMGPT, FAM_WINDOW, FAM_TOKEN_BUFFER):
            chosen = {v for v in pool if self.items[v].place == "in"}
            if fam == FAM_MEMGPT and critical and self.k.recall_k > 0:
                found = [(self.query_utility(v, topic_now), v) for v in pool
                         if self.items[v].place == "recall"]
                chosen |= set(top_by(found, self.k.recall_k))
        elif fam == FAM_GENERATIVE:
            chosen = self.generative_retrieve(pool, topic_now)
        else:
            scored = [(self.query_utility(v, topic_now), v) for v in pool]
            chosen = set(top_by(scored, self.k.top_k))
        # 4. Access statistics of what was retrieved.
        for v in chosen:
            it = self.items[v]
            it.freq += 1
            if fam == FAM_MEMORYBANK:  # a recall strengthens the memory and resets t
                s = it.strength + 1.0
                if self.pol.variant == 1 and self.k.mb_s_cap > 0 and s > self.k.mb_s_cap:
                    s = float(self.k.mb_s_cap)
                it.strength = s
            it.last = step
        return pool, chosen

    def eligible(self, path: set[str]) -> set[str]:
        """ε at the end of a trajectory (the store and MemGPT's recall storage)."""
        return {v for v, it in self.items.items() if it.place in ("in", "recall")
                and v not in path}

    # ---------------------------------------------------------------- TraceRetain

    def traceretain_admit(self, v: str) -> None:
        """Rule filter → 0–10 rating → z-score (or raw ≥ 7) → eviction → clusters."""
        h, k, it = self.h, self.k, self.items[v]
        node, f = h.tree.nodes[v], h.facts[v]
        stored = [w for w in self.placed("in") if w != v]
        if any(self.similarity(v, w) > k.dup_threshold for w in stored
               if not self.is_summary(w)):
            it.place = "dropped"  # a near-duplicate: the earliest is kept
            return
        if node.tokens < k.min_tokens and not f.evidence:
            it.place = "dropped"  # short, no key entity
            return
        if k.drop_failed and node.kind == "action" and node.outcome == "failure":
            it.place = "dropped"  # low-priority kind
            return
        x = self.rate(v, 0.0)
        it.importance = x
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
        """LRU: oldest access; LFU: fewest retrievals, then oldest access; importance:
        lowest w_imp·importance/10 + w_rec·decay^(steps idle). Ties: the older item."""
        k, step = self.k, self.h.step

        def key(w: str) -> tuple[float, float]:
            it = self.items[w]
            if self.pol.eviction == EVICT_LFU:
                return (float(it.freq), float(it.last))
            if self.pol.eviction == EVICT_IMPORTANCE:
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
        has_ev, leaked, leak_pers = False, False, 0.0
        absorbed: set[str] = set()
        for w in members:
            raw += h.tree.nodes[w].tokens
            imp = max(imp, self.items[w].importance)
            has_ev = has_ev or h.facts[w].evidence
            if self.absorbs(w):
                leaked = True
                absorbed.add(w)
                leak_pers = max(leak_pers, h.facts[w].persuasiveness)
            self.items[w].place = "archived"
        if sid not in h.tree.nodes:
            h.add_summary(sid, task, topic, h.facts[task].top)
        node, f = h.tree.nodes[sid], h.facts[sid]
        node.tokens = math.ceil(float(h.st.c_sum) * raw)
        f.evidence = f.evidence or has_ev
        f.absorbed = (f.absorbed or set()) | absorbed
        if leaked:
            node.poisoned = True
            f.persuasiveness = max(f.persuasiveness, leak_pers)
        it = self.item(sid)
        it.place, it.importance, it.last, it.freq = "in", imp, h.step, 0
        self.summariser_call(raw)

    # ---------------------------------------------------------------- Generative Agents

    def generative_retrieve(self, pool: list[str], topic_now: int) -> set[str]:
        """recency + importance + relevance, each min-max scaled; top ga_top_k."""
        if not pool:
            return set()
        k, step = self.k, self.h.step
        if self.pol.variant == 0:  # paper: decay^(hours since last access)
            d = k.ga_step_decay()
            rec = [power(d, step - self.items[v].last) for v in pool]
            w = (k.ga_w_recency, k.ga_w_importance, k.ga_w_relevance)
        else:  # public code: rank by last access, oldest first, decay^(rank + 1)
            by_access = sorted(pool, key=lambda v: self.items[v].last)
            rank = {v: r for r, v in enumerate(by_access)}
            rec = [power(k.ga_code_decay, rank[v] + 1) for v in pool]
            w = (k.gac_w_recency, k.gac_w_importance, k.gac_w_relevance)
        imp = [self.items[v].importance for v in pool]
        rel = [self.query_utility(v, topic_now) for v in pool]
        rec, imp, rel = minmax(rec), minmax(imp), minmax(rel)
        scored = [(w[0] * rec[j] + w[1] * imp[j] + w[2] * rel[j], v)
                  for j, v in enumerate(pool)]
        return set(top_by(scored, k.ga_top_k))

    # ---------------------------------------------------------------- MemoryBank

    def memorybank_forget(self, path: set[str]) -> None:
        """R = exp(−t/S): forget when R < θ (t > S·scale·ln(1/θ)); stochastic: keep with
        probability R."""
        k, step = self.k, self.h.step
        after = k.mb_forget_after()
        for v in self.placed("in"):
            if v in path:
                continue
            it = self.items[v]
            dt = float(step - it.last)
            if self.pol.variant == 0:
                if dt > it.strength * after:
                    it.place = "forgotten"
            else:
                r = math.exp(-(dt / k.mb_time_scale) / it.strength)
                if self.h.draw(self.h.draw_id(v), PURPOSE_FORGET) >= r:
                    it.place = "forgotten"

    # ---------------------------------------------------------------- queues and windows

    def queue_overflow(self, limit: float, frac: float, keep_last: int, summarize: bool,
                       to: str) -> None:
        """When queue + summary > limit, pop the oldest (never the newest keep_last) while
        less than frac of the queue's tokens is out or the queue + the summary they would
        make is over the limit; merge them into the running summary if summarising."""
        nodes = self.h.tree.nodes
        queue = [v for v in self.placed("in") if not self.is_summary(v)]
        q = 0.0
        for v in queue:
            q += nodes[v].tokens
        s_old = float(nodes[self.summary].tokens) if self.summary is not None else 0.0
        if q + s_old <= limit:
            return
        popped = 0.0
        out: list[str] = []
        for v in queue:
            if len(queue) - len(out) <= keep_last:
                break
            if not summarize:
                s_new = 0.0
            elif out:
                s_new = float(math.ceil(float(self.h.st.c_sum) * (s_old + popped)))
            else:
                s_new = s_old
            if not (popped < frac * q or q - popped + s_new > limit):
                break
            out.append(v)
            popped += nodes[v].tokens
        self.pop(out, to, summarize, s_old, popped)

    def window_slide(self) -> None:
        """Items created more than window_steps steps ago leave the context."""
        nodes, step = self.h.tree.nodes, self.h.step
        out = [v for v in self.placed("in") if not self.is_summary(v)
               and nodes[v].created <= step - self.k.window_steps]
        popped = 0.0
        for v in out:
            popped += nodes[v].tokens
        s_old = float(nodes[self.summary].tokens) if self.summary is not None else 0.0
        self.pop(out, "evicted", self.pol.variant == 1, s_old, popped)

    def pop(self, out: list[str], to: str, summarize: bool, s_old: float,
            popped: float) -> None:
        """Popped items go to ``to``; with ``summarize`` one recursive summary absorbs
        them (ceil(c_sum·(old + popped tokens)) tokens, no evidence, poison w.p. p_leak)."""
        h = self.h
        leaked, leak_pers = False, 0.0
        absorbed: set[str] = set()
        for v in out:
            self.items[v].place = to
            if summarize and self.absorbs(v):
                leaked = True
                absorbed.add(v)
                leak_pers = max(leak_pers, h.facts[v].persuasiveness)
        if not (summarize and out):
            return
        if self.summary is None:
            self.summary = f"{h.tree.root_id}/summary"
            h.add_summary(self.summary, h.tree.root_id, -1, -1)
        node, f = h.tree.nodes[self.summary], h.facts[self.summary]
        raw = s_old + popped
        node.tokens = math.ceil(float(h.st.c_sum) * raw)
        f.absorbed = (f.absorbed or set()) | absorbed
        if leaked:
            node.poisoned = True
            f.persuasiveness = max(f.persuasiveness, leak_pers)
        self.item(self.summary).place = "in"
        self.summariser_call(raw)
