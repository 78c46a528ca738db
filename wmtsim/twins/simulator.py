"""The readable simulator: the batched engine's twin in plain Python, one trajectory at a time.

`simulate_reference` plays the same generated `World` (world generation is shared,
`wmtsim.engine.world.generate`) under one policy of docs/model.md §7, with the memory held in a
`wmtsim.twins.reference.MemoryTree` (one Python object per node) and the three LLM stubs of
docs/world.md written out as plain functions. It is slow on purpose: it exists to be read
beside the spec and to prove the numba engine (`wmtsim.engine`) right, counter for
counter and node for node. It imports neither numba nor the engine's kernels; every
random draw is `wmtsim.core.rng.uniform_py` with the engine's key
``(seed, trajectory, step, memory identity, purpose)``: a world memory's identity is its
world id, a summary's is ``DRAW_SUMMARY`` + its task's world id (never a slot, so every
policy gives a memory the same draws).

Slots. The engine numbers nodes in creation order; here a node's slot is its position in
``MemoryTree.nodes`` (insertion order is creation order). World nodes have the id
``"w<world id>"``; a fold summary is ``"w<task>/summary"``. Sums of tokens and utilities
run over nodes in slot order, like the engine's, so both give the same bits.
"""

from __future__ import annotations

import math

import numpy as np

from wmtsim.core.codes import DRAW_SUMMARY, SUCCESS
from wmtsim.core.draws import uniform_py
from wmtsim.core.metrics import N_COUNTERS, C
from wmtsim.core.params import Params
from wmtsim.core.policies import (
    SEL_BASELINE,
    SEL_BRANCHES,
    SEL_EVERYTHING,
    SEL_ITEMS,
    SEL_NONE,
    Policy,
    get_policy,
)
from wmtsim.core.stubs import Stubs
from wmtsim.core.world_spec import (
    NO_TOPIC,
    OP_ACTION,
    OP_COMPLETE,
    OP_FINAL,
    OP_GLOBAL,
    OP_PROMOTE,
    OP_REINJECT,
    OP_REOPEN,
    OP_REVISE,
    OP_ROOT,
    OP_SUPERSEDE,
    OP_TASK,
    World,
)
from wmtsim.twins.field_reference import reference_model
from wmtsim.twins.reference import MemoryTree, Node
from wmtsim.twins.stubs_reference import WORLD_FACTS, AgentStubs, Facts

__all__ = ["simulate_reference"]

def simulate_reference(world: World, policy: str, params: Params, stubs: Stubs,
                       baselines: object = None, memories: list[object] | None = None,
                       facts: list[dict[str, Facts]] | None = None
                       ) -> tuple[np.ndarray, list[MemoryTree]]:
    """Play every trajectory of ``world`` under ``policy``, slowly and readably.

    Returns the counters ``(n, N_COUNTERS)`` (columns: `wmtsim.core.metrics.COUNTERS`) and each
    trajectory's final `MemoryTree`; both must equal the engine's exactly. A policy of the
    field (selection ``baseline``) keeps its store in a
    `wmtsim.twins.field_reference.BaselineMemory` with knobs ``baselines`` (a
    `wmtsim.core.field_knobs.Baselines`; defaults when None); pass a list as ``memories`` to get
    each trajectory's, as ``facts`` to get each trajectory's `Facts` by node id (they too
    equal the engine's per-slot arrays of the same names).
    """
    pol = get_policy(policy)
    counters = np.zeros((world.n, N_COUNTERS))
    trees = []
    for i in range(world.n):
        run = _Trajectory(world, i, pol, params, stubs, baselines)
        counters[i] = run.play()
        trees.append(run.tree)
        if memories is not None:
            memories.append(run.memory)
        if facts is not None:
            facts.append(run.facts)
    return counters, trees


class _Trajectory(AgentStubs):
    """One query's execution: the world's script played against one memory tree."""

    def __init__(self, world: World, i: int, pol: Policy, params: Params,
                 stubs: Stubs, baselines: object = None) -> None:
        self.pol = pol
        self.params = params
        self.st = stubs
        self.seed = world.seed
        self.traj = world.start + i
        self.cross = float(world.spec.cross_relevance)
        self.summary_rel = float(world.spec.summary_relevance)
        self.final_share = float(world.spec.final_share)
        self.p_recover = float(world.spec.p_recover)
        # This trajectory's world, as plain Python values: the node arrays the script plays
        # and every `Facts` field with a `World` node array of the same name (a new per-node
        # world array reaches the twin's stubs by adding it to `Facts`, nothing here).
        self.w_parent = world.parent[i].tolist()
        self.w_kind = world.kind[i].tolist()
        self.w_tokens = world.tokens[i].tolist()
        self.w_poisoned = world.poisoned[i].tolist()
        self.w_outcome = world.outcome[i].tolist()
        self.w_facts = {name: getattr(world, name)[i].tolist() for name in WORLD_FACTS}
        n_ev = int(world.n_events[i])
        self.script = list(zip(world.op[i, :n_ev].tolist(), world.arg[i, :n_ev].tolist(),
                               strict=True))
        # Stub knobs as the engine reads them (its packed vector is float64).
        self.struct = float(stubs.struct_tokens) if pol.tree else 0.0
        self.budget = float(params.budget)

        # What a resumed subtask's fold covers without a reopen (docs/world.md).
        self.resume_folded = world.spec.resume_folded
        self.tree = MemoryTree(params, root_id="w0", root_tokens=self.w_tokens[0],
                               reveal_resumed=self.resume_folded == "new")
        self.facts: dict[str, Facts] = {"w0": self._world_facts(0)}
        self.slot: dict[str, int] = {"w0": 0}
        self.root = "w0"  # the current task's root (conversation mode: one per task)
        self.out = [0.0] * N_COUNTERS
        self.step = 0
        self.answered: dict[int, bool] = {}  # subtask (world id) -> answered correctly
        self.persuaded: dict[str, int] = {}  # memory -> last step it persuaded the reasoner
        # A policy of the field keeps its own store (wmtsim.twins.field_reference).
        self.memory = reference_model(self, pol, baselines)  # None for WMT's own

    # ---------------------------------------------------------------- bookkeeping

    @staticmethod
    def wid_id(w: int) -> str:
        return f"w{w}"

    def _world_facts(self, w: int) -> Facts:
        return Facts(wid=w, **{name: values[w] for name, values in self.w_facts.items()})

    def _created(self, id: str, facts: Facts) -> None:
        self.slot[id] = len(self.slot)
        self.facts[id] = facts

    def add_summary(self, id: str, parent: str, topic: int, top: int) -> None:
        """A summary node made by a field policy (cluster or running summary)."""
        self.tree._add(Node(id, "summary", parent, u=self.params.u_init_summary,
                            created=self.step))
        self._created(id, Facts(wid=-1, topic=topic, rel=self.summary_rel, top=top))

    def draw(self, node: int, purpose: int) -> float:
        return uniform_py(self.seed, self.traj, self.step, node, purpose)

    def draw_id(self, id: str) -> int:
        """The identity a memory's stub draws are keyed by (never its slot): its world id,
        or for a summary ``DRAW_SUMMARY`` + the world id of the task it hangs under."""
        w = self.facts[id].wid
        if w >= 0:
            return w
        parent = self.tree.nodes[id].parent
        assert parent is not None
        return DRAW_SUMMARY + self.facts[parent].wid

    def branch_of(self, id: str) -> str | None:
        """The task branch a node belongs to: its nearest task ancestor-or-self."""
        v: str | None = id
        while v is not None:
            node = self.tree.nodes[v]
            if node.kind == "task":
                return v
            v = node.parent
        return None

    # ---------------------------------------------------------------- the script

    def play(self) -> list[float]:
        tree, out = self.tree, self.out
        last_obs: str | None = None  # the action observed just before this prompt
        took = False  # the last supersession took effect (attack rule reinject)
        final_pool: set[str] = set()  # the final answer's pool (a promotion reads it)
        for op, w in self.script:
            tree.step = self.step  # nodes record the prompt step they were created at
            id = self.wid_id(w)
            if op == OP_REINJECT:
                # The attacker's copy of the poison superseded just before (docs/attack.md):
                # an action when that supersession took effect for this policy, else never.
                if not took:
                    continue
                op = OP_ACTION
            if op == OP_SUPERSEDE and id not in tree.nodes:
                # The detection of a copy that was never made (a revision is always
                # about an action of the visit's own order, which every policy plays).
                took = False
                continue
            if op == OP_GLOBAL:
                tree.add_global(id, tokens=self.w_tokens[w], poisoned=self.w_poisoned[w])
                self._created(id, self._world_facts(w))
            elif op == OP_TASK:
                tree.add_task(id, self.wid_id(self.w_parent[w]), tokens=self.w_tokens[w])
                self._created(id, self._world_facts(w))
                tree.activate(id)
            elif op == OP_ACTION:
                tree.add_action(id, self.wid_id(self.w_parent[w]), tokens=self.w_tokens[w],
                                poisoned=self.w_poisoned[w])
                self._created(id, self._world_facts(w))
                tree.record_outcome(id, self.w_outcome[w] == SUCCESS)  # Eq. 2
                last_obs = id
                topic = self.facts[tree.active].topic
                self.prompt_step(topic, critical=False, last_obs=last_obs)
                self.step += 1
            elif op == OP_SUPERSEDE:
                took = False
                if self.pol.supersede and self.memory is not None:
                    # a field policy with a contradiction rule deletes it from its store
                    if self.memory.supersede(id):
                        out[C.superseded] += 1
                        took = True
                elif self.pol.supersede:  # only policies that act on the event
                    tree.supersede(id)
                    out[C.superseded] += 1
                    took = True
            elif op == OP_REVISE:
                # A later observation revises the outcome: Eq. 2 on the opposite outcome.
                tree.record_outcome(id, tree.nodes[id].outcome != "success")
                out[C.revisions] += 1
            elif op == OP_COMPLETE:
                pool = self.prompt_step(w, critical=True, last_obs=last_obs)
                tree.step = self.step
                if self.pol.fold:
                    self.fold(id, pool)
                else:
                    tree.complete(id, fold=False, strict=False)
                parent = tree.nodes[id].parent
                assert parent is not None
                tree.activate(parent)
                last_obs = None
                self.step += 1
            elif op == OP_REOPEN:
                # Without reopen a folded subtask stays folded, unless the world's rule
                # undoes the fold (resume_folded = "unfold").
                state = tree.nodes[id].state
                unfold = self.pol.reopen or self.resume_folded == "unfold"
                if state == "completed" or (state == "folded" and unfold):
                    tree.reopen(id)
                tree.activate(id)
                last_obs = None
            elif op == OP_FINAL:
                tree.activate(self.root)
                final_pool = self.prompt_step(NO_TOPIC, critical=True, last_obs=None)
                self.step += 1
            elif op == OP_PROMOTE:
                # Conversation mode: a field policy's store carries over; WMT's
                # configurations retire the finished tree, promoting its summary first
                # where they fold (Params.promote_summaries).
                if self.pol.selection != SEL_BASELINE:
                    if self.pol.fold and self.params.promote_summaries:
                        self.promote(w, final_pool)
                    self.retire()
            elif op == OP_ROOT:
                tree._add(Node(id, "root", None, u=self.params.u_init_root,
                               tokens=self.w_tokens[w], created=self.step))
                self._created(id, self._world_facts(w))
                tree.activate(id)
                self.root = id
                last_obs = None

        # IP (Eq. 10): injected poison still eligible once memory management is done.
        if self.memory is not None:
            eligible = self.memory.eligible(set(tree.active_path()))
        else:
            eligible = set(self.context_pool())
        out[C.p_i] = 0.0
        out[C.p_r] = 0.0
        # A memory also remains when an eligible summary carries it (it leaked into the
        # summary, or into a summary that leaked into it, ...).
        # (`Stubs.ip_rule` = carried; under "own" only the memory itself counts.)
        carried: set[str] = set()
        if self.st.ip_rule == "carried":
            for sid in eligible:
                carried |= self.absorbed_closure(sid)
        for id, node in tree.nodes.items():
            if node.poisoned and node.kind != "summary" and self.w_poisoned[self.facts[id].wid]:
                out[C.p_i] += 1
                if self.pol.selection != SEL_NONE and (id in eligible or id in carried):
                    out[C.p_r] += 1
        out[C.nodes] = len(tree.nodes)
        # Simulated LLM latency: a fixed cost per call plus a cost per prompt token.
        out[C.latency_ms] = (float(self.st.call_latency_ms) * out[C.llm_calls]
                             + float(self.st.token_latency_ms) * out[C.prompt_tokens])
        return out

    def tree_of(self, root: str) -> list[str]:
        """The nodes of the task tree under ``root`` (itself included), in slot order."""
        members = {root}
        for id, node in self.tree.nodes.items():
            if node.parent in members:
                members.add(id)
        return [id for id in self.tree.nodes if id in members]

    def retire(self) -> None:
        """Conversation mode: the finished task's tree leaves the candidate pool (its root
        and tasks become obsolete; nothing is deleted)."""
        for v in self.tree_of(self.root):
            if v == self.root or self.tree.nodes[v].kind == "task":
                self.tree.nodes[v].state = "obsolete"

    def promote(self, g: int, eligible: set[str]) -> None:
        """Conversation mode (docs/model.md §3): the summariser writes the finished task's
        summary as global memory ``w<g>``: ceil(c_sum · the tree's tokens) + its failure
        warnings; each poisoned memory eligible at the final answer (the previous step)
        leaks with p_leak (p_leak_rider); it carries the task's result when the final
        answer was correct; u = u_init_global, decayed with ρ_G (Eq. 4)."""
        tree, st, out, facts = self.tree, self.st, self.out, self.facts
        raw = 0.0
        warnings = 0
        read: list[str] = []
        for v in self.tree_of(self.root):
            node = tree.nodes[v]
            if node.kind != "summary":
                raw += node.tokens
            if node.kind == "action" and node.outcome == "failure":
                warnings += 1
            if v in eligible:
                read.append(v)
        id = self.wid_id(g)
        tokens = math.ceil(float(st.c_sum) * raw) + warnings * int(st.warning_tokens)
        tree.add_global(id, tokens=tokens)
        f = self._world_facts(g)
        f.evidence = self.answered.get(facts[self.root].wid, False)
        f.warnings = warnings
        self._created(id, f)
        self.absorb(id, read, self.step - 1)  # read at the final answer, the step before
        out[C.summariser_calls] += 1
        out[C.llm_calls] += 1
        out[C.prompt_tokens] += float(st.summariser_base_tokens) + raw
        out[C.memory_tokens] += float(st.summariser_base_tokens) + raw

    def absorbed_closure(self, sid: str) -> set[str]:
        """Every memory summary ``sid`` carries, directly or through inner summaries."""
        seen: set[str] = set()
        todo = [sid]
        while todo:
            f = self.facts.get(todo.pop())
            for x in (f.absorbed or set()) if f is not None else set():
                if x not in seen:
                    seen.add(x)
                    todo.append(x)
        return seen

    # ---------------------------------------------------------------- one prompt

    def context_pool(self) -> list[str]:
        """ε_t: what this configuration's context construction reaches, in creation order;
        the one pool of the selector and of IP (engine: `agent._context_pool`).

        WMT's candidate pool (`WMTTree.candidate_pool`), except A3 under
        ``branch_folded`` = nodes or both: its whole-branch retrieval reaches every node a
        fold hides; a folded task's summary only under ``both``. Obsolete nodes, the root
        and the active path stay out.
        """
        tree, rule = self.tree, self.st.branch_folded
        if self.pol.selection == SEL_NONE:
            return []
        if self.pol.selection != SEL_BRANCHES or rule == "summary":
            return tree.candidate_pool()
        path = set(tree.active_path())
        pool = []
        for id, node in tree.nodes.items():
            if node.kind == "root" or id in path or tree._in_obsolete(id):
                continue
            if (node.kind == "summary" and node.parent is not None
                    and tree.nodes[node.parent].state == "folded" and rule != "both"):
                continue
            pool.append(id)
        return pool

    def prompt_step(self, topic_now: int, critical: bool, last_obs: str | None
                    ) -> set[str]:
        """One prompt-construction cycle (docs/model.md §4); returns the candidate pool."""
        tree, out, st, pol = self.tree, self.out, self.st, self.pol
        nodes = tree.nodes

        # 2. The candidate pool (nothing at all without memory); a field policy's store.
        if pol.selection == SEL_BASELINE:
            pool, chosen = self.memory.step(topic_now, critical, set(tree.active_path()))
        else:
            pool = self.context_pool()
        pool_tokens = 0.0
        for v in pool:
            pool_tokens += nodes[v].tokens

        # Fresh branch priorities for the selector (Eq. 6 on the current tree).
        priority: dict[str, float] = {}
        if pol.scores:
            priority = {v: tree.branch_priority(v) for v, n in nodes.items()
                        if n.kind == "task"}

        # 3. Selection.
        prompt = float(st.base_tokens)
        if pol.selection == SEL_BASELINE:
            pass  # chosen by the field policy above
        elif pol.selection == SEL_EVERYTHING:
            chosen = set(pool)
        elif pol.selection == SEL_ITEMS and pool:
            chosen = self.select_items(pool, topic_now, priority)
            sel_tokens = (float(st.selector_base_tokens)
                          + float(st.selector_read_fraction) * pool_tokens
                          + self.struct * len(pool))
            prompt += sel_tokens
            out[C.memory_tokens] += sel_tokens
            out[C.selector_calls] += 1
            out[C.llm_calls] += 1
        elif pol.selection == SEL_BRANCHES and pool:
            chosen = self.select_branches(pool, priority)
        else:
            chosen = set()
        selected = [v for v in nodes if v in chosen]  # slot order
        self.chosen = chosen  # this step's context (read by wmtsim.twins.dynamics_reference)

        # Context accounting (Eqs. 9, 11, 13): the path is always in the prompt.
        path = set(tree.active_path())
        ctx_tokens = 0.0
        contaminated = False
        for v, node in nodes.items():
            if v in chosen:
                ctx_tokens += node.tokens + self.struct
                if node.poisoned:
                    out[C.h_p] += 1
                    contaminated = True
                else:
                    out[C.h_c] += 1
            if v in path:
                prompt += node.tokens
        # BR counts whatever can persuade the reasoner (docs/model.md §5), the poisoned
        # observation just made included.
        if last_obs is not None and st.obs_in_context and nodes[last_obs].poisoned:
            contaminated = True
        if contaminated:
            out[C.contaminated_steps] += 1
        # The parity table's budget use (docs/field.md): memory context against B.
        out[C.context_tokens] += ctx_tokens
        out[C.context_max] = max(out[C.context_max], ctx_tokens)
        out[C.context_items_max] = max(out[C.context_items_max], float(len(chosen)))
        if pool_tokens > 0:
            sel_raw = 0.0
            for v in selected:
                sel_raw += nodes[v].tokens
            out[C.ccr_sum] += sel_raw / pool_tokens
            out[C.ccr_steps] += 1
        # The observation just made is fed with the prompt, charged unless selected.
        obs = last_obs if last_obs is not None and last_obs not in chosen else None
        obs_tokens = float(nodes[obs].tokens) if obs is not None else 0.0
        prompt += ctx_tokens + obs_tokens
        out[C.prompt_tokens] += prompt
        out[C.prompt_steps] += 1
        out[C.llm_calls] += 1

        # 4.–6. Selection feedback (Eqs. 3–5), priorities (Eq. 6), suppression (Eq. 7).
        if pol.scores:
            report = tree.select(selected, pool, feedback=True, suppress=pol.lifecycle)
            out[C.suppressed] += len(report.suppressed)

        if critical:
            self.reason(topic_now, last_obs, ctx_tokens + obs_tokens, chosen)
        return set(pool)
