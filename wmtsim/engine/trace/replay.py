"""Replay of validated trace events on one growable tree of flat numpy arrays (`_FlatTree`,
node index = creation order, so ``parent[v] < v``), driven by the engine's kernels:
`scoring._event_score` (Eq. 2), `lifecycle._mark_active_path` and
`lifecycle._candidate_pool` (docs/model.md §4), `scoring._selection_feedback` (Eqs. 3–5),
`lifecycle._branch_priorities` (Eq. 6) and `lifecycle._suppress` (Eq. 7).

Reading events is `wmtsim.engine.trace.events`; the public API is `wmtsim.engine.trace.trace`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from wmtsim.core.codes import (
    ACTION,
    ACTIVE,
    FAILURE,
    FOLDED,
    GLOBAL,
    KIND_NAMES,
    NO_OUTCOME,
    NO_PARENT,
    OBSOLETE,
    ROOT,
    STATE_NAMES,
    SUCCESS,
    SUMMARY,
    TASK,
)
from wmtsim.core.params import Params
from wmtsim.engine.trace.events import TraceError

if TYPE_CHECKING:
    import polars as pl

    from wmtsim.engine.trace.rules import RuleRecorder

DEFAULT_TOL = 1e-9
"""Default tolerance of an ``expect`` line's ``u`` (|got − expected| ≤ tol)."""

REPLAY_COLUMNS: tuple[tuple[str, str], ...] = (
    ("step", "Int64"),
    ("line", "Int64"),
    ("node", "String"),
    ("kind", "String"),
    ("state", "String"),
    ("u", "Float64"),
    ("m", "Int64"),
    ("eligible", "Boolean"),
    ("selected", "Boolean"),
    ("priority", "Float64"),
    ("poisoned", "Boolean"),
)
"""Columns of the replay frame and their polars dtypes, in order."""


@dataclass(frozen=True)
class Divergence:
    """The first ``expect`` line that does not hold."""

    line: int
    node: str
    field: str
    expected: object
    got: object
    tol: float | None  # the u tolerance; None for the exact fields m and state
    # The named rules (`wmtsim.engine.trace.rules`) that last set the node's values, when
    # the replay records rules; not part of equality.
    rules: tuple[str, ...] = dataclasses.field(default=(), compare=False)

    def __str__(self) -> str:
        tol = "exact" if self.tol is None else f"tolerance {self.tol:g}"
        return (f"line {self.line}: node {self.node!r} field {self.field}: "
                f"expected {self.expected!r}, got {self.got!r} ({tol})")


class _FlatTree:
    """One memory tree as growable parallel arrays (node index = creation order)."""

    def __init__(self, capacity: int = 16) -> None:
        self.n = 0
        self.parent = np.full(capacity, NO_PARENT, dtype=np.int64)
        self.kind = np.zeros(capacity, dtype=np.int64)
        self.state = np.zeros(capacity, dtype=np.int64)
        self.u = np.zeros(capacity, dtype=np.float64)
        self.m = np.zeros(capacity, dtype=np.int64)
        self.outcome = np.zeros(capacity, dtype=np.int64)
        self.tokens = np.zeros(capacity, dtype=np.int64)
        self.poisoned = np.zeros(capacity, dtype=np.bool_)
        # Work arrays for the kernels.
        self.on_path = np.zeros(capacity, dtype=np.bool_)
        self.eligible = np.zeros(capacity, dtype=np.bool_)
        self.selected = np.zeros(capacity, dtype=np.bool_)
        self.priority = np.zeros(capacity, dtype=np.float64)
        self.ids: list[str] = []
        self.index: dict[str, int] = {}
        self.defined_on: list[int] = []  # trace line that created each node
        self.summary_of: dict[int, int] = {}  # task index -> its summary node index

    _ARRAYS = ("parent", "kind", "state", "u", "m", "outcome", "tokens", "poisoned",
               "on_path", "eligible", "selected", "priority")

    def _grow(self) -> None:
        cap = 2 * self.parent.shape[0]
        for name in self._ARRAYS:
            old = getattr(self, name)
            new = np.zeros(cap, dtype=old.dtype)
            if name == "parent":
                new[:] = NO_PARENT
            new[: old.shape[0]] = old
            setattr(self, name, new)

    def add(self, node_id: str, kind: int, parent: int, u: float, tokens: int,
            poisoned: bool, line: int) -> int:
        if self.n == self.parent.shape[0]:
            self._grow()
        v = self.n
        self.parent[v] = parent
        self.kind[v] = kind
        self.state[v] = ACTIVE
        self.u[v] = u
        self.m[v] = 0
        self.outcome[v] = NO_OUTCOME
        self.tokens[v] = tokens
        self.poisoned[v] = poisoned
        self.ids.append(node_id)
        self.index[node_id] = v
        self.defined_on.append(line)
        self.n += 1
        return v


class _Replayer:
    """Applies validated events, in order, to a `_FlatTree`."""

    def __init__(self, params: Params, on_step: Callable[[_Step], None] | None = None,
                 rules: RuleRecorder | None = None) -> None:
        self.params = params
        self.p = params.pack()
        self.tree = _FlatTree()
        self.active = 0
        self.step = 0
        self.query_line = 0
        self.expectations = 0
        self.divergence: Divergence | None = None
        self.divergences: list[Divergence] = []  # every failing field of every expect
        self.rules = rules  # records which named rule fired at each op, when given
        self.on_step = on_step
        self.last: _Step | None = None

    # -- helpers --------------------------------------------------------------------

    def _node(self, node_id: str, line: int, role: str = "id") -> int:
        v = self.tree.index.get(node_id)
        if v is None:
            what = "id" if role == "id" else f"{role} id"
            raise TraceError(line, f"unknown {what} {node_id!r}")
        return v

    def _kind_name(self, v: int) -> str:
        """The node's kind with its article: "a task", "an action"."""
        name = KIND_NAMES[int(self.tree.kind[v])]
        return f"an {name}" if name[0] in "aeiou" else f"a {name}"

    def _task_or_root(self, node_id: str, line: int, role: str) -> int:
        v = self._node(node_id, line, "parent" if role == "parent" else "id")
        if self.tree.kind[v] not in (ROOT, TASK):
            raise TraceError(line, f"{role} {node_id!r} is {self._kind_name(v)}, "
                                   "not a task or the root")
        return v

    def _task(self, node_id: str, line: int, op: str) -> int:
        v = self._node(node_id, line)
        if self.tree.kind[v] != TASK:
            raise TraceError(line, f"{op} needs a task; {node_id!r} is "
                                   f"{self._kind_name(v)}")
        return v

    def _new(self, node_id: str, line: int, kind: int, parent: int, u: float,
             event: Mapping[str, Any], tokens_field: str = "tokens") -> int:
        if node_id in self.tree.index:
            first = self.tree.defined_on[self.tree.index[node_id]]
            raise TraceError(line, f"duplicate id {node_id!r} (already defined on line "
                                   f"{first})")
        v = self.tree.add(node_id, kind, parent, u, int(event.get(tokens_field, 0)),
                          bool(event.get("poisoned", False)), line)
        if self.rules is not None:
            self.rules.created(v)
        return v

    def _on_path(self) -> np.ndarray:
        from wmtsim.core.lifecycle import _mark_active_path

        t = self.tree
        _mark_active_path(t.parent, self.active, t.n, t.on_path)
        return t.on_path

    def _pool(self) -> np.ndarray:
        from wmtsim.core.lifecycle import _candidate_pool

        t = self.tree
        on_path = self._on_path()
        _candidate_pool(t.parent, t.kind, t.state, on_path, t.n, t.eligible)
        return t.eligible

    def _why_not_in_pool(self, v: int) -> str:
        t = self.tree
        if t.kind[v] == ROOT:
            return "it is the root (always in the prompt)"
        if t.on_path[v]:
            return "it is on the active path (always in the prompt)"
        a = v
        while a != NO_PARENT:
            if t.state[a] == OBSOLETE:
                return ("it is obsolete" if a == v
                        else f"it is inside the obsolete branch {t.ids[a]!r}")
            a = int(t.parent[a])
        if t.kind[v] == TASK and t.state[v] == FOLDED:
            return "it is folded (its summary stands for it)"
        return "it is hidden inside a folded branch"

    # -- ops ------------------------------------------------------------------------

    def apply(self, line: int, ev: dict[str, Any]) -> None:
        op = ev["op"]
        if self.query_line == 0 and op != "query":
            raise TraceError(line, f"the first line must be a query, got op {op!r}")
        getattr(self, f"_op_{op}")(line, ev)

    def _op_query(self, line: int, ev: dict[str, Any]) -> None:
        if self.query_line:
            raise TraceError(line, "a trace has exactly one query (already on line "
                                   f"{self.query_line})")
        if "params" in ev:
            try:
                self.params = self.params.with_(**ev["params"])
            except (TypeError, ValueError) as e:
                raise TraceError(line, f"params: {e}") from None
            self.p = self.params.pack()
        if self.rules is not None:
            self.rules.query(bool(ev.get("params")))
        self.query_line = line
        self._new(ev.get("id", "root"), line, ROOT, NO_PARENT, self.params.u_init_root, ev)
        self.active = 0

    def _op_task(self, line: int, ev: dict[str, Any]) -> None:
        parent = self._task_or_root(ev["parent"], line, "parent")
        self._new(ev["id"], line, TASK, parent, self.params.u_init_task, ev)

    def _op_action(self, line: int, ev: dict[str, Any]) -> None:
        parent = self._task_or_root(ev["parent"], line, "parent")
        self._new(ev["id"], line, ACTION, parent, self.params.u_init_action, ev)

    def _op_global(self, line: int, ev: dict[str, Any]) -> None:
        self._new(ev["id"], line, GLOBAL, NO_PARENT, self.params.u_init_global, ev)

    def _op_activate(self, line: int, ev: dict[str, Any]) -> None:
        self.active = self._task_or_root(ev["id"], line, "activate target")

    def _op_outcome(self, line: int, ev: dict[str, Any]) -> None:
        from wmtsim.core.scoring import _event_resets_m, _event_score

        v = self._node(ev["id"], line)
        if self.tree.kind[v] != ACTION:
            raise TraceError(line, f"outcome on {ev['id']!r}, which is "
                                   f"{self._kind_name(v)}; outcomes belong to actions")
        success = ev["result"] == "success"
        t = self.tree
        if self.rules is not None:
            self.rules.outcome(v, success, bool(t.outcome[v] != NO_OUTCOME), int(t.m[v]),
                               bool(_event_resets_m(self.p)))
        t.outcome[v] = SUCCESS if success else FAILURE
        t.u[v] = _event_score(success, self.p)  # Eq. 2: replaces u
        if _event_resets_m(self.p):
            t.m[v] = 0

    def _op_complete(self, line: int, ev: dict[str, Any]) -> None:
        v = self._task(ev["id"], line, "complete")
        t = self.tree
        if t.state[v] in (FOLDED, OBSOLETE):
            raise TraceError(line, f"cannot complete task {ev['id']!r}: it is "
                                   f"{STATE_NAMES[int(t.state[v])]}")
        on_path = bool(self._on_path()[v])
        t.state[v] = FOLDED
        s = t.summary_of.get(v)
        first = s is None
        if s is None:
            s = self._new(f"{ev['id']}/summary", line, SUMMARY, v, self.params.u_init_summary,
                          ev, tokens_field="summary_tokens")
            t.summary_of[v] = s
        else:  # re-fold after reopen: same node, summarised anew
            t.u[s] = self.params.u_init_summary
            t.m[s] = 0
            t.tokens[s] = int(ev.get("summary_tokens", 0))
        if self.rules is not None:
            self.rules.complete(t.parent, t.kind, t.state, t.n, v, first, on_path, s)
        if on_path:
            self.active = int(t.parent[v])

    def _op_reopen(self, line: int, ev: dict[str, Any]) -> None:
        v = self._task(ev["id"], line, "reopen")
        state = int(self.tree.state[v])
        if state != FOLDED:
            raise TraceError(line, f"cannot reopen task {ev['id']!r}: it is "
                                   f"{STATE_NAMES[state]}, not folded")
        self.tree.state[v] = ACTIVE
        if self.rules is not None:
            self.rules.reopen(v)

    def _op_supersede(self, line: int, ev: dict[str, Any]) -> None:
        v = self._node(ev["id"], line)
        if self.tree.kind[v] == ROOT:
            raise TraceError(line, f"cannot supersede the root {ev['id']!r}")
        if self.rules is not None:
            self.rules.supersede(int(self.tree.kind[v]), self.tree.state[v] == FOLDED, v)
        self.tree.state[v] = OBSOLETE

    def _op_select(self, line: int, ev: dict[str, Any]) -> None:
        from wmtsim.core.lifecycle import _branch_priorities, _suppress
        from wmtsim.core.scoring import _selection_feedback

        t = self.tree
        n = t.n
        on_path = self._on_path()
        if "candidates" in ev:
            eligible = t.eligible
            eligible[:n] = False
            for c in ev["candidates"]:
                eligible[self._node(c, line, "candidate")] = True
        else:
            eligible = self._pool()
        selected = t.selected
        selected[:n] = False
        for s in ev["selected"]:
            v = self._node(s, line, "selected")
            if not eligible[v]:
                if "candidates" in ev:
                    raise TraceError(line, f"selected {s!r} is not among the candidates")
                raise TraceError(line, f"selected {s!r} is not in the candidate pool: "
                                       f"{self._why_not_in_pool(v)}")
            selected[v] = True
        is_global = t.kind == GLOBAL
        if self.rules is not None:
            u0, m0 = t.u[:n].copy(), t.m[:n].copy()
        _selection_feedback(t.u, t.m, eligible, selected, is_global, self.p, n)  # Eqs. 3-5
        _branch_priorities(t.parent, t.kind, t.state, t.u, t.outcome, n, self.p,
                           t.priority)  # Eq. 6
        priority = t.priority[:n].copy()
        state0 = t.state[:n].copy()
        _suppress(t.kind, t.state, on_path, t.priority, n, self.p)  # Eq. 7
        if self.rules is not None:
            self.rules.select(t, n, "candidates" in ev, u0, m0, state0, priority,
                              self.params)
        self.step += 1
        self.last = _Step(self.step, line, n, t.state[:n].copy(), t.u[:n].copy(),
                          t.m[:n].copy(), eligible[:n].copy(), selected[:n].copy(), priority)
        if self.on_step is not None:
            self.on_step(self.last)

    def _op_expect(self, line: int, ev: dict[str, Any]) -> None:
        v = self._node(ev["id"], line)
        t = self.tree
        self.expectations += 1
        tol = float(ev.get("tol", DEFAULT_TOL))
        got_u = float(t.u[v])
        rules = self.rules.last.get(v, ()) if self.rules is not None else ()
        found = []
        if "u" in ev and not abs(got_u - float(ev["u"])) <= tol:
            found.append(Divergence(line, ev["id"], "u", ev["u"], got_u, tol, rules))
        if "m" in ev and int(t.m[v]) != ev["m"]:
            found.append(Divergence(line, ev["id"], "m", ev["m"], int(t.m[v]), None, rules))
        if "state" in ev and STATE_NAMES[int(t.state[v])] != ev["state"]:
            found.append(Divergence(line, ev["id"], "state", ev["state"],
                                    STATE_NAMES[int(t.state[v])], None, rules))
        if found and self.divergence is None:
            self.divergence = found[0]  # u, then m, then state: the first that fails
        self.divergences.extend(found)

    # -- output ---------------------------------------------------------------------

    def frame(self, steps: Sequence[_Step]) -> pl.DataFrame:
        """The replay frame of ``steps`` (node ids, kinds and poison flags never change
        once a node exists, so they are read from the tree)."""
        import polars as pl

        schema = {name: getattr(pl, dtype) for name, dtype in REPLAY_COLUMNS}
        if not steps:
            return pl.DataFrame(schema=schema)
        t = self.tree
        ids = np.array(t.ids, dtype=object)
        kinds = np.array(KIND_NAMES, dtype=object)[t.kind[: t.n]]
        states = np.array(STATE_NAMES, dtype=object)
        sizes = [z.n for z in steps]
        cols: dict[str, Any] = {
            "step": np.repeat([z.step for z in steps], sizes),
            "line": np.repeat([z.line for z in steps], sizes),
            "node": np.concatenate([ids[: z.n] for z in steps]).tolist(),
            "kind": np.concatenate([kinds[: z.n] for z in steps]).tolist(),
            "state": states[np.concatenate([z.state for z in steps])].tolist(),
            "poisoned": np.concatenate([t.poisoned[: z.n] for z in steps]),
        }
        for name in ("u", "m", "eligible", "selected", "priority"):
            cols[name] = np.concatenate([getattr(z, name) for z in steps])
        df = pl.DataFrame({name: cols[name] for name, _ in REPLAY_COLUMNS}, schema=schema)
        return df.with_columns(pl.col("priority").fill_nan(None))


@dataclass(frozen=True)
class _Step:
    """One select step's per-node values (for the replay frame)."""

    step: int
    line: int
    n: int
    state: np.ndarray
    u: np.ndarray
    m: np.ndarray
    eligible: np.ndarray
    selected: np.ndarray
    priority: np.ndarray
