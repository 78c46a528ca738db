"""MemoryBank in the readable twin: the forgetting pass at each session start and the
daily summaries written as retrievable memories — the counterpart of
`wmtsim.engine.field.forgetting._mb_forget` and `wmtsim.engine.field.memorybank`
(docs/field.md). No numba here.
"""

from __future__ import annotations

import math

from wmtsim.core.draws import PURPOSE_FORGET
from wmtsim.core.field_policies import MB_CODE, MB_PAPER
from wmtsim.twins.field_store import StoreBase


class MemoryBankStore(StoreBase):
    """MemoryBank's rules of a field policy's store (`StoreBase` holds the state)."""

    def memorybank_forget(self, path: set[str]) -> None:
        """R = exp(−t/S): forget when R < θ (t > S·scale·ln(1/θ)); stochastic: keep with
        probability R; public code: R = exp(−(t/5)·S), forget when the draw > R. The
        curve applies to the dialogue turns, not to the daily summaries."""
        k, step = self.k, self.h.step
        after = k.mb_forget_after()
        for v in self.placed("in"):
            if v in path or self.is_summary(v):
                continue
            it = self.items[v]
            dt = float(step - it.last)
            if self.pol.variant == MB_PAPER:
                if dt > it.strength * after:
                    it.place = "forgotten"
            elif self.pol.variant == MB_CODE:  # math.exp(-t / 5*S) as written
                r = math.exp(-(dt / k.mb_time_scale) / 5.0 * it.strength)
                if self.h.draw(self.h.draw_id(v), PURPOSE_FORGET) > r:
                    it.place = "forgotten"
            else:
                r = math.exp(-(dt / k.mb_time_scale) / it.strength)
                if self.h.draw(self.h.draw_id(v), PURPOSE_FORGET) >= r:
                    it.place = "forgotten"

    def date(self, v: str) -> int:
        """The day memory ``v`` was created on: floor(created / mb_time_scale)."""
        return math.floor(self.h.tree.nodes[v].created / self.k.mb_time_scale)

    def memorybank_summarize(self, session: int) -> None:
        """summarize_memory.py `summarize_memory`: at a session start, every day that ended
        since the last one gets its one summary (one summariser call each, written once)."""
        step, scale = self.h.step, self.k.mb_time_scale
        first = math.floor((step - session) / scale)
        last = math.floor(step / scale) - 1
        for d in range(first, last + 1):
            self.memorybank_day(d)

    def memorybank_day(self, d: int) -> None:
        """Day ``d``'s summary: one summariser call over the stored memories created that
        day, written as one part per subtask they are about (in the order the day first
        met them)."""
        h = self.h
        nodes = h.tree.nodes
        day = [v for v in self.placed("in") if not self.is_summary(v) and self.date(v) == d]
        read, parts, seen = 0.0, 0, set()
        for v in day:
            read += nodes[v].tokens
            t = h.facts[v].topic
            if t < 0 or h.wid_id(t) not in nodes or t in seen:
                continue
            seen.add(t)
            read += self.memorybank_part(t, [w for w in day if h.facts[w].topic == t])
            parts += 1
        if parts > 0:
            self.summariser_call(read)

    def memorybank_part(self, t: int, about: list[str]) -> float:
        """Subtask ``t``'s part: its summary node, its earlier summary merged in and the
        day's memories ``about`` it, their evidence, poison absorbed with p_leak.
        Returns the tokens of the earlier summary read."""
        h = self.h
        nodes = h.tree.nodes
        task = h.wid_id(t)
        sid = f"{task}/summary"
        merged = 0.0
        if sid in self.items and self.items[sid].place == "in":
            merged = float(nodes[sid].tokens)
        raw = merged
        has_ev = False
        for v in about:
            raw += nodes[v].tokens
            has_ev = has_ev or h.facts[v].evidence
        if sid not in nodes:
            h.add_summary(sid, task, t, h.facts[task].top)
        node, f = nodes[sid], h.facts[sid]
        node.tokens = math.ceil(float(h.st.c_sum) * raw)
        f.evidence = f.evidence or has_ev
        self.result_of(sid, task)  # a result only with the subtask's evidence
        h.absorb(sid, about, h.step)
        it = self.item(sid)
        it.place, it.last, it.freq, it.strength = "in", h.step, 0, 1.0
        return merged

    def memorybank_drop_orphans(self) -> None:
        """A summary whose subtask has no stored memory left is dropped."""
        h = self.h
        stored = [v for v in self.placed("in") if not self.is_summary(v)]
        for z in self.placed("in"):
            if self.is_summary(z) and not any(h.facts[v].topic == h.facts[z].topic
                                              for v in stored):
                self.items[z].place = "forgotten"
