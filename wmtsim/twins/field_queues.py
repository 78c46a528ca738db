"""Queues and windows of the field's policies in the readable twin: MemGPT's message
queue (Letta's eviction walk, the older pop-through rule, `conversation_search`, the
memory-pressure warning, core and archival memory), the
sliding window and the token buffer, and the pop step that folds what leaves into a
running summary — the counterpart of `wmtsim.engine.field.forgetting`,
`wmtsim.engine.field.letta` and of the queue parts of `wmtsim.engine.field.dispatch`. No numba here.
"""

from __future__ import annotations

import math

from wmtsim.core.metrics import C
from wmtsim.twins.field_store import STORED, StoreBase, fit


class QueueStore(StoreBase):
    """The queue rules of a field policy's store (`StoreBase` holds the state)."""

    def newest_fit(self, pool: list[str], tokens: dict[str, float], budget: float,
                   used: float, limit: int, summary: bool = True) -> tuple[set[str], float]:
        """A queue's context within B: the running summary first (if it fits), then the
        stored items newest first until one does not fit, at most ``limit`` memories in
        all, the summary included (0 = all)."""
        chosen: set[str] = set()
        z = self.summary
        if (summary and z is not None and z in tokens and self.items[z].place == "in"
                and used + tokens[z] <= budget):
            chosen.add(z)
            used += tokens[z]
        queued = [v for v in pool if self.items[v].place == "in" and not self.is_summary(v)]
        for v in reversed(queued):  # at most ``limit`` memories, the summary included
            if (limit > 0 and len(chosen) >= limit) or used + tokens[v] > budget:
                break
            chosen.add(v)
            used += tokens[v]
        return chosen, used

    def conversation_search(self, topic_now: int, pool: list[str], chosen: set[str],
                            tokens: dict[str, float], budget: float, used: float,
                            limit: int) -> None:
        """Letta's `conversation_search` tool call: the first recall_k user messages
        (task nodes) about the current subtask, oldest first, in context or in recall
        storage; one charged call (search_base_tokens + what it returns); returned
        messages not in context join it within B and the cap."""
        if topic_now < 0:
            return
        h, k = self.h, self.k
        found: list[str] = []
        for v in h.tree.nodes:
            if len(found) >= k.recall_k:
                break
            it = self.items.get(v)
            if (it is None or h.tree.nodes[v].kind != "task" or h.facts[v].topic != topic_now
                    or it.place not in STORED):
                continue
            found.append(v)
        read = 0.0
        for v in found:
            read += float(h.tree.nodes[v].tokens)
            if (v in pool and v not in chosen and used + tokens[v] <= budget
                    and (limit <= 0 or len(chosen) < limit)):
                chosen.add(v)
                used += tokens[v]
        call = float(k.search_base_tokens) + read
        h.out[C.llm_calls] += 1
        h.out[C.prompt_tokens] += call
        h.out[C.memory_tokens] += call

    def core_tokens(self) -> float:
        """Tokens of MemGPT's core memory."""
        core = 0.0
        for v in self.placed("core"):
            core += self.h.tree.nodes[v].tokens
        return core

    def letta_pressure(self, limit: float) -> None:
        """Letta's memory-pressure warning (core + summary + queue over warning_fraction ·
        W, once until the next summary): one charged step reading the queue; each queued
        message not yet saved, oldest first, rated at least save_threshold is saved, into
        core memory while it has room (core_fraction · W), else as an archival passage,
        one charged tool call each (see `wmtsim.engine.field.letta._letta_pressure`)."""
        k, nodes = self.k, self.h.tree.nodes
        if self.alerted:
            return
        core = self.core_tokens()
        queue = 0.0
        for v in self.placed("in"):
            queue += nodes[v].tokens
        if core + queue <= float(k.warning_fraction) * limit:
            return
        self.alerted = True
        self.tool_call(queue)
        room = float(k.core_fraction) * limit
        for v in self.placed("in"):
            it = self.items[v]
            if self.is_summary(v) or it.archival:
                continue
            it.importance = self.rating(v, 0.0)
            if it.importance < k.save_threshold:
                continue
            if core + nodes[v].tokens <= room:
                it.place = "core"  # core_memory_append
                core += nodes[v].tokens
                self.tool_call(float(nodes[v].tokens))
                continue
            old = self.core_to_replace(it.importance, core + nodes[v].tokens, room) \
                if k.core_replace else None
            if old is not None:  # core_memory_replace: the old entry's text for the new one
                self.items[old].place = "recall"
                it.place = "core"
                core += nodes[v].tokens - nodes[old].tokens
                self.tool_call(float(nodes[v].tokens + nodes[old].tokens))
            else:
                it.archival = True  # archival_memory_insert
                self.tool_call(float(nodes[v].tokens))

    def core_to_replace(self, rating: float, wanted: float, room: float) -> str | None:
        """`core_memory_replace`'s target: the lowest-rated core entry rated below
        ``rating`` (ties: the older) whose removal brings core memory (``wanted`` tokens
        with the new entry) within ``room``."""
        nodes = self.h.tree.nodes
        best: str | None = None
        for w in self.placed("core"):
            imp = self.items[w].importance
            if imp >= rating or wanted - nodes[w].tokens > room:
                continue
            if best is None or imp < self.items[best].importance:
                best = w
        return best

    def needs_search(self, topic_now: int, chosen: set[str]) -> bool:
        """The agent searches at a subtask's answer only when its context holds no
        successful tool result (an action) about the subtask."""
        nodes, facts = self.h.tree.nodes, self.h.facts
        return not any(nodes[v].kind == "action" and facts[v].topic == topic_now
                       and nodes[v].outcome == "success" for v in chosen)

    def tool_call(self, tokens: float) -> None:
        """One agent step with a tool call: search_base_tokens + what it writes or reads."""
        out = self.h.out
        call = float(self.k.search_base_tokens) + tokens
        out[C.llm_calls] += 1
        out[C.prompt_tokens] += call
        out[C.memory_tokens] += call

    def core_context(self, pool: list[str], budget: float, limit: int
                     ) -> tuple[set[str], float]:
        """Core memory first in the context (always there), within B and the cap."""
        chosen: set[str] = set()
        used = 0.0
        for v in pool:
            if self.items[v].place != "core":
                continue
            t = float(self.h.tree.nodes[v].tokens)
            if (limit > 0 and len(chosen) >= limit) or used + t > budget:
                continue
            chosen.add(v)
            used += t
        return chosen, used

    def archival_search(self, topic_now: int, pool: list[str], chosen: set[str],
                        tokens: dict[str, float], budget: float, limit: int) -> None:
        """`archival_memory_search`: the archival_k archived passages most similar to the
        subtask (ties: the older); one charged call (search_base_tokens + their tokens);
        those not in context join it best first within B and the cap."""
        nodes = self.h.tree.nodes
        cands = [v for v in nodes if v in self.items and self.items[v].archival
                 and self.items[v].place in ("in", "recall")]
        scored = [(self.query_utility(v, topic_now), v) for v in cands]
        inf = {v: float(nodes[v].tokens) for v in cands}
        found, _ = fit(scored, int(self.k.archival_k), inf, math.inf, 0.0)
        read = 0.0
        for v in cands:
            if v in found:
                read += inf[v]
        used = 0.0
        for v in chosen:
            used += float(nodes[v].tokens)
        picked = [(s, v) for s, v in scored if v in found and v in pool and v not in chosen]
        left = 0 if limit <= 0 else limit - len(chosen)
        if limit <= 0 or left > 0:
            got, _ = fit(picked, left, tokens, budget, used)
            chosen.update(got)
        self.tool_call(read)

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

    def letta_overflow(self, limit: float) -> None:
        """Letta's `Agent.summarize_messages_inplace` walk while the buffer (summary
        message, then the queue oldest first) is over the window: summarise the
        messages before the one that crosses int(evict_fraction · buffer tokens), never
        the last keep_last, the cutoff moved one on past a user message (task, summary);
        fewer than two to summarise → Letta raises (counted, nothing evicted)."""
        nodes, k = self.h.tree.nodes, self.k
        while True:
            buf = [] if self.summary is None or self.items[self.summary].place != "in" \
                else [self.summary]
            buf += [v for v in self.placed("in") if not self.is_summary(v)]
            total = 0.0
            for v in buf:
                total += nodes[v].tokens
            if total <= limit:
                return
            desired = math.floor(float(k.evict_fraction) * total)
            n_cand = len(buf) - k.keep_last
            if n_cand <= 0:
                self.h.out[C.context_overflows] += 1
                return
            cutoff, running = 0, 0.0
            for i in range(n_cand):
                cutoff = i
                running += nodes[buf[i]].tokens
                if running > desired:
                    break
            if cutoff < len(buf) and nodes[buf[cutoff]].kind in ("task", "summary"):
                cutoff += 1
            if cutoff <= 1:
                self.h.out[C.context_overflows] += 1
                return
            s_old = 0.0
            out: list[str] = []
            popped = 0.0
            for v in buf[:cutoff]:
                if self.is_summary(v):
                    s_old = float(nodes[v].tokens)
                else:
                    out.append(v)
                    popped += nodes[v].tokens
            self.pop(out, "recall", True, s_old, popped)

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
        for v in out:
            self.items[v].place = to
        if not (summarize and out):
            return
        if self.summary is None:
            self.summary = f"{h.tree.root_id}/summary"
            h.add_summary(self.summary, h.tree.root_id, -1, -1)
        raw = s_old + popped
        h.tree.nodes[self.summary].tokens = math.ceil(float(h.st.c_sum) * raw)
        h.absorb(self.summary, out, h.step)
        self.item(self.summary).place = "in"
        self.summariser_call(raw)
