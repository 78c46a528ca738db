"""The readable twin's LLM stubs (docs/world.md): the selector, the reasoner and the
summariser of one trajectory, in plain Python, as a mixin of `wmtsim.twins.simulator`'s
`_Trajectory`; the numba counterparts are `wmtsim.engine.selector` and
`wmtsim.engine.agent`.

The mixin reads the trajectory's state (declared below; set by `_Trajectory.__init__`)
and its bookkeeping methods. Every random draw is the trajectory's `draw`, keyed like
the engine's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from wmtsim.core.draws import (
    PURPOSE_DILUTION,
    PURPOSE_GUESS,
    PURPOSE_LEAK,
    PURPOSE_MISLED,
    PURPOSE_PERSUADE,
    PURPOSE_SELECTOR_NOISE,
    uniform_py,
)
from wmtsim.core.metrics import C
from wmtsim.core.policies import Policy
from wmtsim.core.stubs import SCORE_NEUTRAL, Stubs
from wmtsim.core.world_spec import NO_TOPIC, World
from wmtsim.twins.reference import MemoryTree

# Scales an Irwin–Hall sum of four uniforms (variance 1/3) to unit variance.
_SQRT3 = math.sqrt(3.0)


@dataclass(kw_only=True)
class Facts:
    """What the world knows about a memory beyond docs/model.md's node fields, built by
    name; a field left out keeps what a new summary starts with (no evidence, no poison).

    wid: its world node (-1: a summary); topic: the world subtask it is about (NO_TOPIC:
    none); rel: its relevance to that topic; evidence: it carries its topic's evidence;
    persuasiveness; rider: poison made to ride into a fold summary; top: the top-level
    subtask it belongs to.
    """

    wid: int
    topic: int
    rel: float
    evidence: bool = False
    persuasiveness: float = 0.0
    rider: bool = False
    top: int
    warnings: int = 0  # a summary: the failure warnings it keeps
    absorbed: set[str] | None = None  # a summary: the memories that leaked into it


# The `Facts` fields a world memory copies from the `World` node array of the same name
# (`wmtsim.twins.simulator`): a new per-node world array the stubs read is one field here.
WORLD_FACTS: tuple[str, ...] = tuple(
    f.name for f in fields(Facts) if f.name in {w.name for w in fields(World)})


class AgentStubs:
    """The selector, reasoner and summariser stubs of one trajectory (a mixin)."""

    pol: Policy
    st: Stubs
    seed: int
    traj: int
    tree: MemoryTree
    facts: dict[str, Facts]
    slot: dict[str, int]
    out: list[float]
    answered: dict[int, bool]
    persuaded: dict[str, int]  # memory -> the last prompt step it persuaded the reasoner
    step: int
    cross: float
    summary_rel: float
    final_share: float
    p_recover: float
    struct: float
    budget: float
    root: str  # the current task's root

    def draw(self, node: int, purpose: int) -> float:
        raise NotImplementedError

    def draw_id(self, id: str) -> int:
        raise NotImplementedError

    def branch_of(self, id: str) -> str | None:
        raise NotImplementedError

    def _created(self, id: str, facts: Facts) -> None:
        raise NotImplementedError

    # ---------------------------------------------------------------- the selector

    def relevance(self, v: str, topic_now: int) -> float:
        """A memory's latent relevance to the current subtask (or to the final answer)."""
        f = self.facts[v]
        if topic_now == NO_TOPIC:
            if self.tree.nodes[v].kind in ("task", "summary"):
                return f.rel  # subtask nodes and summaries carry results
            return f.rel * self.cross
        return f.rel if f.topic == topic_now else f.rel * self.cross

    def noise(self, d: int) -> float:
        """≈ N(0, 1): an Irwin–Hall sum of four uniforms, rescaled (``d``: `draw_id`)."""
        s = 0.0
        for k in range(4):
            s += self.draw(4 * d + k, PURPOSE_SELECTOR_NOISE)
        return (s - 2.0) * _SQRT3

    def select_items(self, pool: list[str], topic_now: int, priority: dict[str, float]
                     ) -> set[str]:
        """Γ_sel (paper §2.1): best first by utility, under the budget B and the top-k cap.

        utility = relevance + poison boost + noise (+ w_u·u + w_b·U_b with scores); ties
        go to the older memory; an item that does not fit is skipped. Under
        ``selector_rule = "choose"`` a candidate is taken only when judged relevant:
        utility − (w_u + w_b)·½ ≥ ``select_threshold`` (the score terms counted from a
        neutral score); under ``"fill"`` any may be.
        """
        st, nodes = self.st, self.tree.nodes
        ranked = []
        for v in pool:
            node = nodes[v]
            x = self.relevance(v, topic_now)
            if node.poisoned and node.kind != "summary":
                x += float(st.poison_boost)
            x += float(st.selector_noise) * self.noise(self.draw_id(v))
            centre = 0.0
            if self.pol.scores:
                x += float(st.w_u) * node.u
                centre += SCORE_NEUTRAL * float(st.w_u)
                b = self.branch_of(v)
                if b is not None:
                    x += float(st.w_b) * priority[b]
                    centre += SCORE_NEUTRAL * float(st.w_b)
            if st.selector_rule == "choose" and x - centre < float(st.select_threshold):
                continue  # judged not relevant: a missed selection (Eq. 3)
            ranked.append((-x, v))
        ranked.sort(key=lambda item: item[0])  # stable: ties keep creation order
        chosen: set[str] = set()
        used = 0.0
        for _, v in ranked:
            cost = nodes[v].tokens + self.struct
            if used + cost <= self.budget:
                chosen.add(v)
                used += cost
                if st.top_k > 0 and len(chosen) >= st.top_k:
                    break
        return chosen

    def select_branches(self, pool: list[str], priority: dict[str, float]) -> set[str]:
        """A3: whole branches B(v) (subtrees rooted at a task) or single global memories,
        ranked by priority: every one (``branch_retrieval = "whole"``, the paper's
        "whole-branch retrieval") or greedy under B (``"fit"``).

        A branch is ranked by its U_b, a global memory by its u; ties go to the older
        unit. Taking a unit takes every candidate of its subtree not taken yet, if those
        fit (``whole``: always). No semantic relevance is used.
        """
        nodes = self.tree.nodes
        members: dict[str, list[str]] = {}
        for v in pool:
            if nodes[v].kind == "global":
                members.setdefault(v, []).append(v)
                continue
            b: str | None = v if nodes[v].kind == "task" else nodes[v].parent
            while b is not None and nodes[b].kind == "task":
                members.setdefault(b, []).append(v)
                b = nodes[b].parent
        roots = sorted(members, key=lambda b: self.slot[b])
        score = {b: -(priority[b] if nodes[b].kind == "task" else nodes[b].u) for b in roots}
        taken: set[str] = set()
        used = 0.0
        for b in sorted(roots, key=lambda b: score[b]):  # stable: ties to the older unit
            rest = [v for v in sorted(members[b], key=lambda v: self.slot[v])
                    if v not in taken]
            cost = 0.0
            for v in rest:
                cost += nodes[v].tokens + self.struct
            if rest and (self.st.branch_retrieval == "whole" or used + cost <= self.budget):
                taken.update(rest)
                used += cost
        return taken

    # ---------------------------------------------------------------- the reasoner

    def reason(self, topic_now: int, last_obs: str | None, ctx_tokens: float,
               chosen: set[str]) -> None:
        """The reasoner at a critical step: a subtask's answer, or the final answer."""
        st, out, nodes, facts = self.st, self.out, self.tree.nodes, self.facts
        # The context the reasoner reads: the selected memories and the observation.
        seen = set(chosen)
        if last_obs is not None and st.obs_in_context:
            seen.add(last_obs)
        in_context = [v for v in nodes if v in seen]
        # What the answer needs: the subtask's evidence, or (final) every top-level result.
        if topic_now != NO_TOPIC:
            evidence = (last_obs is not None and facts[last_obs].evidence
                        and facts[last_obs].topic == topic_now)
            for v in in_context:
                if facts[v].evidence and facts[v].topic == topic_now:
                    evidence = True
            needs_met = evidence or self.draw(topic_now, PURPOSE_GUESS) < st.p_guess
        else:
            # The final answer's rule (WorldSpec.final_share, p_recover): a subtask's result
            # is usable when it was answered correctly and its evidence-carrying memory or
            # its summary is in context, or, missing, is recovered with p_recover.
            evidence = True
            k_top = k_usable = 0
            for v, node in nodes.items():
                if node.kind != "task" or node.parent != self.root:
                    continue
                s_w = facts[v].wid
                k_top += 1
                ok = self.answered.get(s_w, False)
                present = any(
                    facts[x].top == s_w and (nodes[x].kind == "summary" or facts[x].evidence)
                    for x in in_context if x in chosen)
                if not (ok and present):
                    evidence = False
                if ok and (present or self.draw(s_w, PURPOSE_GUESS) < self.p_recover):
                    k_usable += 1
            needs_met = k_usable >= math.ceil(self.final_share * k_top - 1e-9)
        # Persuasion by poisoned memory in context.
        p_hit = st.p_persuade_vs_evidence if evidence else st.p_persuade
        compromised = False
        for v in in_context:
            # `Stubs.persuade_scope`: any poison in context, or only the step's own.
            if nodes[v].poisoned and (st.persuade_scope == "any" or topic_now == NO_TOPIC
                                      or facts[v].topic == topic_now):
                if self.draw(self.draw_id(v), PURPOSE_PERSUADE) < (
                        facts[v].persuasiveness * p_hit):
                    compromised = True
                    self.persuaded[v] = self.step  # this memory compromised the step
        # Context dilution: longer contexts lower the chance of using what is there.
        half = float(st.dilution_tokens)
        p_use = float(st.p_use_max) * half / (half + ctx_tokens)
        used = self.draw(0, PURPOSE_DILUTION) < p_use
        # A compromised step gives a wrong answer with probability p_misled.
        misled = compromised and self.draw(0, PURPOSE_MISLED) < st.p_misled
        correct = needs_met and not misled and used
        out[C.critical_steps] += 1
        if compromised:
            out[C.compromised_steps] += 1
        if correct:
            out[C.correct_steps] += 1
        if topic_now != NO_TOPIC:
            self.answered[topic_now] = correct
        else:
            # TSR (Eq. 14): the task succeeds when its final answer is correct; a
            # compromised step is wrong only when misled (docs/model.md §5).
            out[C.final_correct] += 1.0 if correct else 0.0
            out[C.success] += 1.0 if correct else 0.0
            out[C.tasks] += 1.0
            self.answered[facts[self.root].wid] = correct  # the task's result

    # ---------------------------------------------------------------- the summariser

    def fold(self, task: str, eligible: set[str]) -> None:
        """Fold ``task`` on completion (docs/model.md §3) with the summariser.

        The summary gets ceil(c_sum · branch tokens) tokens, the branch's own evidence,
        its failure warnings (one per failed action, ``warning_tokens`` each), and the
        poison of the branch's memories eligible at this step (`absorb`).
        """
        tree, st, out, facts = self.tree, self.st, self.out, self.facts
        nodes = tree.nodes
        w = facts[task].wid
        raw = 0.0
        has_evidence = False
        read: list[str] = []
        warnings = 0
        for v in tree.branch_nodes(task):  # slot order, root first
            node = nodes[v]
            if node.kind != "summary":
                raw += node.tokens
            if node.kind == "action" and node.outcome == "failure":
                warnings += 1
            if facts[v].evidence and facts[v].topic == w:
                has_evidence = True
            if v in eligible:
                read.append(v)
        new = nodes[task].summary is None
        tokens = math.ceil(float(st.c_sum) * raw) + warnings * int(st.warning_tokens)
        sid = tree.complete(task, fold=True, summary_tokens=tokens, strict=False)
        assert sid is not None
        if new:
            self._created(sid, Facts(wid=-1, topic=w, rel=self.summary_rel,
                                     top=facts[task].top))
        f = facts[sid]
        f.evidence = f.evidence or has_evidence
        f.warnings = warnings
        self.absorb(sid, read, self.step)
        out[C.folds] += 1
        out[C.summariser_calls] += 1
        out[C.llm_calls] += 1
        out[C.prompt_tokens] += float(st.summariser_base_tokens) + raw
        out[C.memory_tokens] += float(st.summariser_base_tokens) + raw

    def absorb(self, sid: str, read: list[str], step: int) -> None:
        """The summarise-and-absorb rule, the one rule of every summary (the engine's
        `wmtsim.engine.forest._absorb`): of the memories the summariser reads at ``step``,
        ``read``, each poisoned one leaks into summary ``sid`` with p_leak (p_leak_rider for
        a summary rider), one draw keyed by its identity; ``sid`` then carries it
        (`absorbed_closure`, for IP) and takes on its properties: the poison, at the
        highest persuasiveness of what leaked. Every draw is made before ``sid`` changes.
        """
        st, nodes, facts = self.st, self.tree.nodes, self.facts
        leaked = []
        for v in read:
            p_leak = st.p_leak_rider if facts[v].rider else st.p_leak
            if nodes[v].poisoned and uniform_py(self.seed, self.traj, step, self.draw_id(v),
                                                PURPOSE_LEAK) < p_leak:
                leaked.append(v)
        f = facts[sid]
        f.absorbed = (f.absorbed or set()) | set(leaked)
        for v in leaked:
            nodes[sid].poisoned = True
            f.persuasiveness = max(f.persuasiveness, facts[v].persuasiveness)
