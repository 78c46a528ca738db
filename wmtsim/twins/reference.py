"""The readable oracle: one Weighted Memory Tree, one Python object per node.

This module restates docs/model.md in plain Python so that it can be read beside the
model's statement and used as the independent twin of the numba kernels (`wmtsim.core.scoring`,
`wmtsim.core.lifecycle`). It is slow on purpose and imports neither numba nor those kernels;
the only shared piece is `Params`.

Two floating-point conventions make it agree with the kernels to the bit (docs/model.md says
nothing about rounding; the project fixes them):

* ρ^k is a product of ``k`` factors ρ (``g *= rho`` in a loop), never ``rho ** k``;
* Eq. 6 sums Σ u_i with plain ``+=`` over V_b in creation order, root first, and
  evaluates ``α·max + (β/|V_b|)·Σ − γ·(F/|V_b|) − δ·(O/|V_b|)`` in exactly that order.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from wmtsim.core.params import Params

KINDS = ("root", "task", "action", "global", "summary")
STATES = ("active", "completed", "folded", "obsolete")
OUTCOMES = (None, "success", "failure")


@dataclass
class Node:
    """One memory (docs/model.md §1): kind, parent, lifecycle state z, score u, miss count m.

    ``created`` is the tree's step count when the node was added. ``outcome`` is set on
    action nodes by Eq. 2. ``summary`` is, on a task, the id of its summary node once the
    task has been folded, and ``folded_at`` the step of its latest fold. ``u`` must be
    given (it has a NaN placeholder default only so the fields can keep the documented
    order).
    """

    id: str
    kind: str
    parent: str | None
    state: str = "active"
    u: float = math.nan
    m: int = 0
    tokens: int = 0
    created: int = 0
    outcome: str | None = None
    poisoned: bool = False
    summary: str | None = None
    folded_at: int = -1

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"node {self.id!r}: kind={self.kind!r}; allowed: {KINDS}")
        if self.state not in STATES:
            raise ValueError(f"node {self.id!r}: state={self.state!r}; allowed: {STATES}")
        if not 0.0 <= self.u <= 1.0:  # also rejects the NaN placeholder
            raise ValueError(f"node {self.id!r}: u={self.u!r}; allowed: [0, 1] (required)")
        if self.m < 0:
            raise ValueError(f"node {self.id!r}: m={self.m!r}; allowed: an integer >= 0")
        if self.outcome not in OUTCOMES:
            raise ValueError(f"node {self.id!r}: outcome={self.outcome!r}; allowed: {OUTCOMES}")


@dataclass
class StepReport:
    """What one `MemoryTree.select` call did (docs/model.md §4 steps 2–6).

    ``candidates`` and ``selected`` are in creation order; ``priorities`` holds Eq. 6 for
    every task node, computed after Eqs. 3–5 and before suppression; ``suppressed`` lists
    the branch roots that Eq. 7 made obsolete in this step.
    """

    candidates: list[str]
    selected: list[str]
    priorities: dict[str, float] = field(default_factory=dict)
    suppressed: list[str] = field(default_factory=list)


def _clip01(x: float) -> float:
    """clip_[0,1] of Eq. 5."""
    return 0.0 if x < 0.0 else 1.0 if x > 1.0 else x


def _rho_power(rho: float, k: int) -> float:
    """ρ^k of Eq. 4 as a product of k factors (the project's rounding convention)."""
    g = 1.0
    for _ in range(k):
        g *= rho
    return g


class MemoryTree:
    """One query's memory tree M_t (docs/model.md §1) with the WMT update rules.

    ``nodes`` keeps insertion order, which is creation order (parents before children).
    ``active`` is the active task v*_t; ``step`` counts `select` calls.
    ``reveal_resumed``: the world's rule `WorldSpec.resume_folded` = ``new`` (a fold covers
    only what it folded: what is created while execution is back in a folded task that
    was not reopened is a candidate); False keeps everything under a fold hidden.
    """

    def __init__(self, params: Params | None = None, root_id: str = "root",
                 root_tokens: int = 0, reveal_resumed: bool = False) -> None:
        """Create the tree with its root (the user query, u = u_init_root, §2)."""
        self.params: Params = params if params is not None else Params()
        self.reveal_resumed = reveal_resumed
        self.nodes: dict[str, Node] = {}
        self._children: dict[str, list[str]] = {}
        self.step: int = 0
        self.root_id = root_id
        self._add(Node(root_id, "root", None, u=self.params.u_init_root, tokens=root_tokens))
        self.active: str = root_id

    # ------------------------------------------------------------------ helpers

    def _add(self, node: Node) -> Node:
        if node.id in self.nodes:
            raise ValueError(f"duplicate node id {node.id!r}")
        if node.tokens < 0:
            raise ValueError(f"node {node.id!r}: tokens={node.tokens!r}; allowed: >= 0")
        self.nodes[node.id] = node
        self._children[node.id] = []
        if node.parent is not None:
            self._children[node.parent].append(node.id)
        return node

    def _get(self, id: str) -> Node:
        try:
            return self.nodes[id]
        except KeyError:
            raise ValueError(f"unknown node id {id!r}") from None

    def _task_or_root(self, id: str, role: str) -> Node:
        node = self._get(id)
        if node.kind not in ("root", "task"):
            raise ValueError(f"{role} {id!r} is a {node.kind} node; allowed: root or task")
        return node

    def _task(self, id: str, what: str) -> Node:
        node = self._get(id)
        if node.kind != "task":
            raise ValueError(f"cannot {what} {id!r}: it is a {node.kind} node, not a task")
        return node

    def _ancestors(self, id: str) -> list[str]:
        """Strict ancestors of ``id``, nearest first."""
        out = []
        p = self.nodes[id].parent
        while p is not None:
            out.append(p)
            p = self.nodes[p].parent
        return out

    def _descendants(self, id: str) -> list[str]:
        out: list[str] = []
        stack = list(reversed(self._children[id]))
        while stack:
            v = stack.pop()
            out.append(v)
            stack.extend(reversed(self._children[v]))
        return out

    # ------------------------------------------------------------------ §1, Eq. 2: events

    def add_task(self, id: str, parent: str, tokens: int = 0) -> Node:
        """Add a task (goal/subtask) node, u = u_init_task, state active (§1–2).

        The active task is not changed; call `activate` for that.
        """
        self._task_or_root(parent, "parent")
        return self._add(Node(id, "task", parent, u=self.params.u_init_task, tokens=tokens,
                              created=self.step))

    def add_action(self, id: str, parent: str, tokens: int = 0,
                   poisoned: bool = False) -> Node:
        """Add an action node, u = u_init_action, outcome not yet recorded (§1–2)."""
        self._task_or_root(parent, "parent")
        return self._add(Node(id, "action", parent, u=self.params.u_init_action,
                              tokens=tokens, created=self.step, poisoned=poisoned))

    def add_global(self, id: str, tokens: int = 0, poisoned: bool = False) -> Node:
        """Add a global (cross-task) memory G_t: no parent, u = u_init_global (§1–2)."""
        return self._add(Node(id, "global", None, u=self.params.u_init_global,
                              tokens=tokens, created=self.step, poisoned=poisoned))

    def record_outcome(self, id: str, success: bool) -> None:
        """Eq. 2: ũ = u_success on success, u_failure on failure; it replaces u.

        m is left as it is (Eq. 3 changes m only on selection feedback); with
        ``params.event_resets_m`` the event also resets m to 0.
        """
        node = self._get(id)
        if node.kind != "action":
            raise ValueError(f"cannot record an outcome on {id!r}: it is a {node.kind} "
                             "node; outcomes belong to action nodes (Eq. 2)")
        node.outcome = "success" if success else "failure"
        node.u = self.params.u_success if success else self.params.u_failure
        if self.params.event_resets_m:
            node.m = 0

    # ------------------------------------------------------------------ §3: lifecycle

    def activate(self, id: str) -> None:
        """Set the active task v*_t (§1); the active path becomes Path(root, id)."""
        self._task_or_root(id, "active task")
        self.active = id

    def complete(self, id: str, fold: bool = True, summary_tokens: int = 0, *,
                 strict: bool = True) -> str | None:
        """Complete task ``id`` (§3); with ``fold`` also fold it.

        fold=False: z ← completed. fold=True: z ← folded and the branch is represented by
        a summary node ``f"{id}/summary"`` (kind summary, parent ``id``,
        u = u_init_summary, m = 0). The summary is created on the first fold; a re-fold
        after `reopen` keeps the same node, resets u = u_init_summary and m = 0 and sets
        its tokens to ``summary_tokens`` (the branch is summarised anew); its own state is
        left as it is. If ``id`` is on the active path, the active task becomes its parent.
        Returns the summary id, or None when not folding. The root cannot be completed;
        an obsolete or already folded task cannot be completed, unless ``strict`` is
        False: then execution that returned to a task without reopening it (a policy
        without reopen leaves it folded; Eq. 7 may have made it obsolete meanwhile)
        completes it anyway — a fold summarises the branch again (creating or refreshing
        the summary) and an obsolete task stays obsolete.
        """
        node = self._get(id)
        if node.kind == "root":
            raise ValueError(f"cannot complete the root {id!r}")
        node = self._task(id, "complete")
        if strict and node.state in ("obsolete", "folded"):
            raise ValueError(f"cannot complete task {id!r}: it is {node.state}; "
                             "allowed: active or completed")
        if summary_tokens < 0:
            raise ValueError(f"summary_tokens={summary_tokens!r}; allowed: >= 0")
        on_path = id in self.active_path()
        sid: str | None = None
        keep = node.state == "obsolete"
        if fold:
            node.state = "obsolete" if keep else "folded"
            node.folded_at = self.step
            if node.summary is None:
                sid = f"{id}/summary"
                self._add(Node(sid, "summary", id, u=self.params.u_init_summary,
                               tokens=summary_tokens, created=self.step))
                node.summary = sid
            else:
                sid = node.summary
                s = self.nodes[sid]
                s.u = self.params.u_init_summary
                s.m = 0
                s.tokens = summary_tokens
        else:
            node.state = "obsolete" if keep else "completed"
        if on_path:
            parent = node.parent
            assert parent is not None  # a task always has a parent
            self.active = parent
        return sid

    def reopen(self, id: str) -> None:
        """Reopen a folded or completed task (§3): z ← active.

        The summary node stays available and the branch's nodes re-enter the candidate
        pool. The active task is not changed.
        """
        node = self._task(id, "reopen")
        if node.state not in ("folded", "completed"):
            raise ValueError(f"cannot reopen task {id!r}: it is {node.state}; "
                             "allowed: folded or completed")
        node.state = "active"

    def supersede(self, id: str) -> None:
        """Supersede / invalidate (§3): z ← obsolete regardless of score."""
        node = self._get(id)
        if node.kind == "root":
            raise ValueError(f"cannot supersede the root {id!r}")
        node.state = "obsolete"

    # ------------------------------------------------------------------ §4: the pool

    def active_path(self) -> list[str]:
        """P_t = Path(root, v*_t), root first (§1)."""
        return [*reversed(self._ancestors(self.active)), self.active]

    def _in_obsolete(self, id: str) -> bool:
        """The node or any ancestor is obsolete (it lies inside an obsolete branch)."""
        return any(self.nodes[a].state == "obsolete" for a in [id, *self._ancestors(id)])

    def _strict_ancestor_folded(self, id: str, created: int | None = None) -> bool:
        """A strict ancestor of ``id`` is folded and hides a memory created at step
        ``created`` (None: any folded ancestor hides). With ``reveal_resumed``, a folded
        ancestor on the active path (resumed, not reopened) does not hide what was created
        after its latest fold: its summary does not cover it."""
        path = set(self.active_path()) if self.reveal_resumed else set()
        for a in self._ancestors(id):
            node = self.nodes[a]
            if node.state != "folded":
                continue
            if created is not None and a in path and created > node.folded_at:
                continue
            return True
        return False

    def is_candidate(self, id: str) -> bool:
        """ε_i of docs/model.md §4 step 2 for one node.

        Never: the root, active-path nodes, anything obsolete or inside an obsolete
        branch. Otherwise: globals yes; summaries unless a strict ancestor of their task is
        folded; tasks unless folded themselves or inside a folded branch; actions unless
        inside a folded branch. Completed (unfolded) tasks stay candidates. With
        ``reveal_resumed``, a folded branch that execution is back in (on the active path)
        does not hide what was created after its latest fold.
        """
        node = self._get(id)
        if node.kind == "root" or id in self.active_path() or self._in_obsolete(id):
            return False
        if node.kind == "global":
            return True
        if node.kind == "summary":
            assert node.parent is not None
            return not self._strict_ancestor_folded(node.parent, node.created)
        if node.kind == "task":
            return (node.state != "folded"
                    and not self._strict_ancestor_folded(id, node.created))
        return not self._strict_ancestor_folded(id, node.created)  # action

    def candidate_pool(self) -> list[str]:
        """The candidate pool of docs/model.md §4 step 2, in creation order."""
        return [i for i in self.nodes if self.is_candidate(i)]

    # ------------------------------------------------------------------ Eq. 6

    def branch_nodes(self, task_id: str) -> list[str]:
        """V_b of Eq. 6: the branch root and all its descendants (summary included),
        in creation order, root first."""
        self._task(task_id, "take the branch of")
        members = {task_id, *self._descendants(task_id)}
        return [i for i in self.nodes if i in members]

    def branch_priority(self, task_id: str) -> float:
        """Eq. 6: U_b = α·max u + (β/|V_b|)·Σ u − γ·F_b − δ·O_b.

        F_b = failed action nodes / |V_b|; O_b = nodes that are obsolete or have an
        obsolete ancestor up to and including the branch root / |V_b|.
        """
        p = self.params
        vb = self.branch_nodes(task_id)
        u_max = self.nodes[vb[0]].u
        u_sum = 0.0
        n_failed = 0
        n_obsolete = 0
        for i in vb:
            node = self.nodes[i]
            u_max = max(u_max, node.u)
            u_sum += node.u
            if node.kind == "action" and node.outcome == "failure":
                n_failed += 1
            if self._obsolete_within(i, task_id):
                n_obsolete += 1
        size = float(len(vb))
        return (p.alpha * u_max + (p.beta / size) * u_sum
                - p.gamma * (n_failed / size) - p.delta * (n_obsolete / size))

    def _obsolete_within(self, id: str, branch_root: str) -> bool:
        """``id`` or an ancestor up to and including ``branch_root`` is obsolete."""
        v: str | None = id
        while v is not None:
            if self.nodes[v].state == "obsolete":
                return True
            if v == branch_root:
                return False
            v = self.nodes[v].parent
        raise ValueError(f"{id!r} is not in the branch of {branch_root!r}")

    # ------------------------------------------------------------------ §4 steps 3–6

    def _feedback(self, node: Node, eligible: bool, selected: bool) -> None:
        """Eqs. 3–5 for one node.

        Eq. 3: selected → m = 0 (u kept); missed (eligible, not selected) → m + 1;
        not eligible → nothing changes. Global memories have m reset before each decay,
        so a miss leaves m = global_miss_count. Eq. 4: g = ρ_G for globals,
        ρ^min(m_new, M) otherwise. Eq. 5: a miss sets u = clip(u · g).
        """
        p = self.params
        if selected:
            node.m = 0
        elif eligible:
            if node.kind == "global":
                node.m = p.global_miss_count
                g = p.rho_g
            else:
                node.m += 1
                g = _rho_power(p.rho, min(node.m, p.M))
            node.u = _clip01(node.u * g)

    def select(self, selected: Iterable[str],
               candidates: Iterable[str] | None = None, *, feedback: bool = True,
               suppress: bool = True) -> StepReport:
        """One prompt-construction cycle after the selector (docs/model.md §4 steps 3–6).

        ε = ``candidates`` if given, else `candidate_pool`; every selected id must be in
        ε (Eq. 3 requires s ≤ ε). Then Eqs. 3–5 on every node, Eq. 6 for every task
        branch, Eq. 7 on every task off the active path and not already obsolete
        (z ← obsolete when U_b < τ_obs), and ``step`` advances by one.

        Ablations (docs/model.md §7) switch parts off: ``feedback=False`` skips Eqs. 3–5
        (no retention scores), ``suppress=False`` skips Eq. 7 (no lifecycle control).
        """
        eps_in = self.candidate_pool() if candidates is None else list(candidates)
        sel_in = list(selected)
        for i in [*eps_in, *sel_in]:
            self._get(i)
        eps, sel = set(eps_in), set(sel_in)
        outside = [i for i in sel_in if i not in eps]
        if outside:
            raise ValueError(f"selected node(s) {outside} are not candidates "
                             "(Eq. 3 requires s <= eps)")
        if feedback:
            for i, node in self.nodes.items():  # Eqs. 3-5
                self._feedback(node, i in eps, i in sel)
        priorities = {i: self.branch_priority(i)  # Eq. 6
                      for i, node in self.nodes.items() if node.kind == "task"}
        path = set(self.active_path())
        suppressed = []
        for i, u_b in priorities.items():  # Eq. 7
            node = self.nodes[i]
            if (suppress and i not in path and node.state != "obsolete"
                    and u_b < self.params.tau_obs):
                node.state = "obsolete"
                suppressed.append(i)
        self.step += 1
        return StepReport(candidates=[i for i in self.nodes if i in eps],
                          selected=[i for i in self.nodes if i in sel],
                          priorities=priorities, suppressed=suppressed)
