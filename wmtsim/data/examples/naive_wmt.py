"""An independent, readable Weighted Memory Tree, written from the model's equations.

It imports nothing from wmtsim: it is what a user building WMT into an agent would write,
plugged into the conformance kit through the adapter protocol (``__init__(params)``,
``apply(event)``, ``nodes()``; see docs/conformance.md). Each rule is a small method so that
``examples/naive_wmt_mutants.py`` can break one at a time.

    wmtsim conformance run examples.naive_wmt:NaiveWMT
    pytest --wmt-impl examples.naive_wmt:NaiveWMT
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class Memory:
    kind: str  # root, task, action, global, summary
    parent: str | None
    u: float
    m: int = 0
    state: str = "active"  # active, folded, obsolete
    outcome: str | None = None  # success / failure (actions)


class NaiveWMT:
    """One query's memory tree, one dict entry per node, in creation order."""

    def __init__(self, params: dict[str, Any]) -> None:
        self.p = params
        self.nodes_: dict[str, Memory] = {}
        self.active = ""

    # -- the protocol --------------------------------------------------------------

    def nodes(self) -> dict[str, tuple[float, int, str]]:
        return {i: (n.u, n.m, n.state) for i, n in self.nodes_.items()}

    def apply(self, ev: dict[str, Any]) -> None:
        getattr(self, "on_" + ev["op"])(ev)

    # -- events --------------------------------------------------------------------

    def on_query(self, ev: dict[str, Any]) -> None:
        root = ev.get("id", "root")
        self.nodes_[root] = Memory("root", None, self.p["u_init_root"])
        self.active = root

    def on_task(self, ev: dict[str, Any]) -> None:
        self.nodes_[ev["id"]] = Memory("task", ev["parent"], self.p["u_init_task"])

    def on_action(self, ev: dict[str, Any]) -> None:
        self.nodes_[ev["id"]] = Memory("action", ev["parent"], self.p["u_init_action"])

    def on_global(self, ev: dict[str, Any]) -> None:
        self.nodes_[ev["id"]] = Memory("global", None, self.p["u_init_global"])

    def on_activate(self, ev: dict[str, Any]) -> None:
        self.active = ev["id"]

    def on_outcome(self, ev: dict[str, Any]) -> None:
        """Eq. 2: the event sets the score (no blending)."""
        n = self.nodes_[ev["id"]]
        n.outcome = ev["result"]
        n.u = self.p["u_success"] if n.outcome == "success" else self.p["u_failure"]
        if self.p["event_resets_m"]:
            n.m = 0

    def on_complete(self, ev: dict[str, Any]) -> None:
        """Fold: the task becomes folded and gets (or refreshes) its summary node."""
        task = ev["id"]
        was_on_path = task in self.path()
        self.nodes_[task].state = "folded"
        summary = task + "/summary"
        if summary in self.nodes_:
            self.nodes_[summary].u = self.p["u_init_summary"]
            self.nodes_[summary].m = 0
        else:
            self.nodes_[summary] = Memory("summary", task, self.p["u_init_summary"])
        if was_on_path:
            self.active = self.nodes_[task].parent or self.active

    def on_reopen(self, ev: dict[str, Any]) -> None:
        self.nodes_[ev["id"]].state = "active"

    def on_supersede(self, ev: dict[str, Any]) -> None:
        self.nodes_[ev["id"]].state = "obsolete"

    def on_select(self, ev: dict[str, Any]) -> None:
        """One prompt-construction cycle: pool, feedback (Eqs. 3–5), Eq. 6, Eq. 7."""
        pool = set(ev["candidates"]) if "candidates" in ev else set(self.pool())
        chosen = set(ev["selected"])
        for i, n in self.nodes_.items():
            if i in chosen:
                n.m = 0
            elif i in pool:
                self.miss(n)
        path = self.path()
        priorities = {i: self.priority(i) for i, n in self.nodes_.items() if n.kind == "task"}
        for i, u_b in priorities.items():
            n = self.nodes_[i]
            if i not in path and n.state != "obsolete" and self.suppressed(u_b):
                n.state = "obsolete"

    # -- the rules -----------------------------------------------------------------

    def ancestors(self, i: str) -> list[str]:
        out, p = [], self.nodes_[i].parent
        while p is not None:
            out.append(p)
            p = self.nodes_[p].parent
        return out

    def path(self) -> set[str]:
        return {self.active, *self.ancestors(self.active)}

    def hidden_by_fold(self, i: str) -> bool:
        """Inside a folded branch: a strict ancestor is folded."""
        return any(self.nodes_[a].state == "folded" for a in self.ancestors(i))

    def eligible(self, i: str, path: set[str]) -> bool:
        """The candidate pool of docs/model.md §4."""
        n = self.nodes_[i]
        if n.kind == "root" or i in path:
            return False
        if any(self.nodes_[a].state == "obsolete" for a in [i, *self.ancestors(i)]):
            return False
        if n.kind == "global":
            return True
        if n.kind == "summary":
            return not self.hidden_by_fold(n.parent or i)
        if n.kind == "task" and n.state == "folded":
            return False
        return not self.hidden_by_fold(i)

    def pool(self) -> list[str]:
        path = self.path()
        return [i for i in self.nodes_ if self.eligible(i, path)]

    def decay(self, n: Memory) -> float:
        """Eq. 4: g = ρ_G for a global memory, ρ^min(m, M) otherwise."""
        if n.kind == "global":
            return self.p["rho_g"]
        return self.p["rho"] ** min(n.m, self.p["M"])

    def miss(self, n: Memory) -> None:
        """Eq. 3 then Eq. 5 for a candidate that was not selected."""
        n.m = self.p["global_miss_count"] if n.kind == "global" else n.m + 1
        n.u = min(1.0, max(0.0, n.u * self.decay(n)))

    def branch(self, task: str) -> list[str]:
        return [i for i in self.nodes_ if i == task or task in self.ancestors(i)]

    def priority(self, task: str) -> float:
        """Eq. 6: α·max u + β·mean u − γ·F_b − δ·O_b over the branch's nodes."""
        members = self.branch(task)
        us = [self.nodes_[i].u for i in members]
        failed = sum(1 for i in members if self.nodes_[i].outcome == "failure")
        obsolete = sum(1 for i in members if any(
            self.nodes_[a].state == "obsolete"
            for a in [i, *self.ancestors(i)][: [i, *self.ancestors(i)].index(task) + 1]))
        size = len(members)
        return (self.p["alpha"] * max(us) + self.p["beta"] * sum(us) / size
                - self.p["gamma"] * failed / size - self.p["delta"] * obsolete / size)

    def suppressed(self, u_b: float) -> bool:
        """Eq. 7: a branch whose priority is below τ_obs becomes obsolete."""
        return u_b < self.p["tau_obs"]
