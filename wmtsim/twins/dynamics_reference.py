"""The readable twin of the engine's population aggregates (`wmtsim.engine.dynamics`).

`dynamics_reference` plays every trajectory with the readable simulator
(`wmtsim.twins.simulator`) and counts, after each prompt-construction cycle and at the
end, the same things the engine's `_dyn_prompt` and `_dyn_end` count, from the readable
tree: the candidate pool, the context chosen, the summaries' absorbed memories. The
definitions are written once, in the engine module's docstring (and
docs/model_decisions.md, "Population dynamics"); the test is that both give the same
integers (tests/twins/test_dynamics_twin.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from wmtsim.core.metrics import C
from wmtsim.core.params import Params
from wmtsim.core.policies import SEL_BASELINE, SEL_NONE, Policy, get_policy
from wmtsim.core.stubs import Stubs
from wmtsim.core.world_spec import POISON_KINDS, World, max_prompt_steps
from wmtsim.twins.simulator import _Trajectory

# The same names and column orders as the engine's (a test checks them against it).
STEP_COLUMNS = ("prompts", "contaminated", "via_original", "via_summary", "critical",
                "compromised", "poisons", "eligible", "carried", "selected", "compromising")
SINCE_COLUMNS = ("poisons", "eligible", "carried", "selected", "compromising")
FATES = ("superseded", "suppressed", "folded_clean", "laundered", "eligible_at_end",
         "dropped", "never_eligible")

__all__ = ["dynamics_reference"]


def dynamics_reference(world: World, policy: str | Policy, params: Params, stubs: Stubs,
                       baselines: object = None) -> dict[str, np.ndarray]:
    """The population aggregates of ``world`` under ``policy``, slowly and readably:
    the same arrays as the engine's ``DynamicsAcc.totals()``."""
    pol = get_policy(policy)
    t = max(max_prompt_steps(world.op), 1)
    k, f = len(POISON_KINDS), len(FATES)
    acc = {
        "steps": np.zeros((t, len(STEP_COLUMNS)), np.int64),
        "since": np.zeros((k, t, len(SINCE_COLUMNS)), np.int64),
        "fate_k": np.zeros((k, f, t + 1), np.int64),
        "fate_t": np.zeros((k, f, t + 1), np.int64),
        "never_selected": np.zeros((k, f), np.int64),
        "survival": np.zeros((k, t + 1, 2), np.int64),
    }
    for i in range(world.n):
        _Watched(world, i, pol, params, stubs, baselines, acc).play_and_count()
    return acc


class _Watched(_Trajectory):
    """One trajectory of the readable simulator, watched at every prompt."""

    def __init__(self, world: World, i: int, pol: Policy, params: Params, stubs: Stubs,
                 baselines: object, acc: dict[str, np.ndarray]) -> None:
        super().__init__(world, i, pol, params, stubs, baselines)
        self.acc = acc
        self.kind_of: dict[str, int] = {}  # poison -> index in POISON_KINDS, at first sight
        self.last_remains: dict[str, int] = {}  # poison -> its last prompt step remaining
        self.ever_selected: set[str] = set()

    def poisons(self) -> list[tuple[str, Any]]:
        """The injected poisons (poisoned memories that are not summaries), slot order."""
        return [(id, node) for id, node in self.tree.nodes.items()
                if node.poisoned and node.kind != "summary"]

    def first_sight(self, id: str, node: Any) -> int:
        if id not in self.kind_of:
            if node.kind == "global":
                kind = "global"
            elif self.facts[id].rider:
                kind = "summary"
            else:
                kind = "failed" if node.outcome == "failure" else "plausible"
            self.kind_of[id] = POISON_KINDS.index(kind)
        return self.kind_of[id]

    def carried_by(self, eligible: set[str]) -> set[str]:
        """What the eligible summaries carry (IP's rule, Eq. 10)."""
        carried: set[str] = set()
        for sid in eligible:
            carried |= self.absorbed_closure(sid)
        return carried

    def prompt_step(self, topic_now: int, critical: bool, last_obs: str | None) -> set[str]:
        before = (self.out[C.critical_steps], self.out[C.compromised_steps])
        pool = super().prompt_step(topic_now, critical, last_obs)
        nodes, chosen, step = self.tree.nodes, self.chosen, self.step
        row = self.acc["steps"][step]
        row[0] += 1
        via_original = (last_obs is not None and nodes[last_obs].poisoned
                        and bool(self.st.obs_in_context) and last_obs not in chosen)
        via_original |= any(nodes[v].poisoned and nodes[v].kind != "summary" for v in chosen)
        via_summary = any(nodes[v].poisoned and nodes[v].kind == "summary" for v in chosen)
        row[1] += via_original or via_summary
        row[2] += via_original
        row[3] += via_summary
        row[4] += self.out[C.critical_steps] > before[0]
        row[5] += self.out[C.compromised_steps] > before[1]
        carried = self.carried_by(pool)
        memory = self.pol.selection != SEL_NONE
        for id, node in self.poisons():
            since = self.acc["since"][self.first_sight(id, node), step - node.created]
            row[6] += 1
            since[0] += 1
            if id in pool:
                row[7] += 1
                since[1] += 1
            if memory and (id in pool or id in carried):
                self.last_remains[id] = step
                if id not in pool:
                    row[8] += 1
                    since[2] += 1
            if id in chosen:
                row[9] += 1
                since[3] += 1
                self.ever_selected.add(id)
            if self.persuaded.get(id) == step:  # it persuaded the reasoner at this step
                row[10] += 1
                since[4] += 1
        return pool

    def play_and_count(self) -> None:
        self.play()
        tree, acc, n_steps = self.tree, self.acc, self.step
        if self.memory is not None:
            eligible = self.memory.eligible(set(tree.active_path()))
        else:
            eligible = set(self.context_pool())
        carried = self.carried_by(eligible)
        memory = self.pol.selection != SEL_NONE
        for id, node in self.poisons():
            k, created = self.first_sight(id, node), node.created
            remains = memory and (id in eligible or id in carried)
            if remains:
                fate = "eligible_at_end" if id in eligible else "laundered"
                at = n_steps
            elif id not in self.last_remains:
                fate, at = "never_eligible", created
            else:
                fate, at = self.route_out(id), self.last_remains[id] + 1
            j = FATES.index(fate)
            acc["fate_k"][k, j, at - created] += 1
            acc["fate_t"][k, j, at] += 1
            if id not in self.ever_selected:
                acc["never_selected"][k, j] += 1
            if remains:
                if n_steps - 1 - created >= 0:  # censored at the last prompt step
                    acc["survival"][k, n_steps - 1 - created, 1] += 1
            elif created < n_steps:
                acc["survival"][k, at - created, 0] += 1

    def route_out(self, id: str) -> str:
        """How a poison that no longer remains left the pool, read from the final state."""
        if self.pol.selection == SEL_BASELINE:
            return "superseded" if self.memory.items[id].place == "deleted" else "dropped"
        nodes = self.tree.nodes
        if nodes[id].state == "obsolete":
            return "superseded"
        ancestors = self.tree._ancestors(id)
        if any(nodes[a].state == "obsolete" for a in ancestors):
            return "suppressed"
        if any(nodes[a].state == "folded" for a in ancestors):
            return "folded_clean"
        return "dropped"
