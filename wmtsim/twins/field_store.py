"""A field policy's store in the readable twin (`wmtsim.twins.field_reference`): one
`Item` per memory and its place, the knobs, and the small helpers the policies share
(ratings, similarities, greedy fitting, powers as products, min–max scaling) — the
counterpart of `wmtsim.engine.field.common`. No numba here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from wmtsim.core.draws import PURPOSE_IMPORTANCE
from wmtsim.core.field_knobs import Baselines
from wmtsim.core.metrics import C
from wmtsim.core.policies import Policy

_SQRT3 = 1.7320508075688772
PLACES = ("unseen", "in", "dropped", "evicted", "recall", "archived", "forgotten",
          "deleted", "overwritten", "buffered", "core")
STORED = ("in", "recall", "core")  # places the policy still holds (ε)


@dataclass
class Item:
    """A memory as a field policy sees it: where it is, its rating, access and strength."""

    id: str
    place: str = "unseen"
    importance: float = 0.0
    last: int = 0  # step of creation or of the last retrieval
    freq: int = 0  # retrievals
    strength: float = 0.0  # MemoryBank S
    archival: bool = False  # MemGPT: the agent saved a passage of it in archival memory


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


def fit(scored: list[tuple[float, str]], cap: int, tokens: dict[str, float], budget: float,
        used: float) -> tuple[list[str], float]:
    """Greedy retrieval under the budget: by descending score (ties keep the given order),
    each taken if it fits in what is left, at most ``cap`` (0 = no cap)."""
    out: list[str] = []
    for _, v in sorted(scored, key=lambda item: -item[0]):
        if cap > 0 and len(out) >= cap:
            break
        if used + tokens[v] <= budget:
            out.append(v)
            used += tokens[v]
    return out, used


def minmax(xs: list[float]) -> list[float]:
    """Min-max scaling to [0, 1]; a constant list becomes 0.5 (Generative Agents' code)."""
    lo, hi = min(xs), max(xs)
    span = hi - lo
    return [0.5 if span == 0.0 else (x - lo) / span for x in xs]


class StoreBase:
    """One trajectory's store under a field policy, driven by the simulator (``host``).

    ``host`` is the simulator's trajectory: it owns the memory tree (``tree``), the
    world facts (``facts``), slots (``slot``), the draw (``draw``), the selector stub's
    relevance and noise, the counters (``out``), ``add_summary`` and ``absorb`` (the
    summarise-and-absorb rule).
    """

    def __init__(self, host: Any, pol: Policy, knobs: Baselines) -> None:
        self.h = host
        self.pol = pol
        self.k = knobs
        self.items: dict[str, Item] = {}
        self.window: list[float] = []  # TraceRetain: previous ratings, oldest first
        self.summary: str | None = None  # the running summary (MemGPT, windows)
        self.poignancy = 0  # GA: importance summed since the last reflection
        self.since = 0  # GA: memories since the last reflection
        self.alerted = False  # MemGPT: warned about memory pressure since the last summary

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
        stub's unweighted utility), the noise scaled by ``retrieval_noise``."""
        node = self.h.tree.nodes[v]
        x = float(self.h.relevance(v, topic_now))
        if node.poisoned and node.kind != "summary":
            x += float(self.h.st.poison_boost)
        noise = float(self.k.retrieval_noise) * float(self.h.st.selector_noise)
        return x + noise * float(self.h.noise(self.h.draw_id(v)))

    def content_similarity(self, a: str, b: str) -> float:
        """TraceRetain's near-duplicate stub: 0 unless same kind, outcome and evidence."""
        na, nb = self.h.tree.nodes[a], self.h.tree.nodes[b]
        if (na.kind != nb.kind or na.outcome != nb.outcome
                or self.h.facts[a].evidence != self.h.facts[b].evidence):
            return 0.0
        return self.similarity(a, b)

    def cap(self, own: int) -> int:
        """A retrieval's item cap: the policy's own knob, or 0 → the shared Stubs.top_k."""
        return int(own) if own > 0 else int(self.h.st.top_k)

    def capped(self, size: int) -> int:
        """A design's own retrieval size beneath the shared cap (unless own_caps)."""
        shared = int(self.h.st.top_k)
        if self.k.own_caps or shared <= 0:
            return int(size)
        return min(int(size), shared)

    def similarity(self, a: str, b: str) -> float:
        """Item–item similarity: (1 on the same topic, else cross) · (1 − |Δ relevance|)."""
        fa, fb = self.h.facts[a], self.h.facts[b]
        t = 1.0 if fa.topic == fb.topic else float(self.h.cross)
        return t * (1.0 - abs(fa.rel - fb.rel))

    def rate(self, v: str, lo: float) -> float:
        """`rating` as one LLM call of its own (scorer_base_tokens + the item)."""
        node = self.h.tree.nodes[v]
        out = self.h.out
        out[C.prompt_tokens] += float(self.k.scorer_base_tokens) + node.tokens
        out[C.memory_tokens] += float(self.k.scorer_base_tokens) + node.tokens
        out[C.llm_calls] += 1
        return self.rating(v, lo)

    def rating(self, v: str, lo: float) -> float:
        """The importance scorer stub (the caller charges the call), an integer in
        [lo, 10]: 10·(0.75·rel + 0.25·[not a failure]) + noise, half up; with
        ``importance_reads_evidence``, 10·(0.6·rel + 0.2·[not a failure] + 0.2·[evidence])."""
        node, f, st = self.h.tree.nodes[v], self.h.facts[v], self.h.st
        d = self.h.draw_id(v)
        s = 0.0
        for j in range(4):
            s += self.h.draw(4 * d + j, PURPOSE_IMPORTANCE)
        ok = 0.0 if (node.kind == "action" and node.outcome == "failure") else 1.0
        ev = 1.0 if f.evidence else 0.0
        if self.k.importance_reads_evidence:
            signal = 0.6 * f.rel + 0.2 * ok + 0.2 * ev
        else:
            signal = 0.75 * f.rel + 0.25 * ok
        x = 10.0 * signal + float(self.k.importance_noise) * ((s - 2.0) * _SQRT3)
        _ = st
        return min(10.0, max(lo, float(math.floor(x + 0.5))))

    def summariser_call(self, raw: float) -> None:
        out = self.h.out
        out[C.summariser_calls] += 1
        out[C.llm_calls] += 1
        out[C.prompt_tokens] += float(self.h.st.summariser_base_tokens) + raw
        out[C.memory_tokens] += float(self.h.st.summariser_base_tokens) + raw

    def result_of(self, sid: str, task: str) -> None:
        """The one rule of a field policy's own summary ``sid`` of subtask ``task`` (a GA
        thought, a MemoryBank daily summary, a TraceRetain cluster summary): it stands for
        the subtask's result in the final answer only when it carries the subtask's
        evidence (``summary_is_result``: always, like a fold)."""
        f = self.h.facts[sid]
        f.top = self.h.facts[task].top if (f.evidence or self.k.summary_is_result) else -1
