"""The one random-trace generator (seeded, deterministic, plain Python on the readable twin).

A trace is built from a list of abstract *moves* ``(op, pick, bits)``: ``op`` names the
event, ``pick`` chooses among the nodes the op may name (modulo how many there are) and
``bits`` chooses which candidates a ``select`` picks. `TraceBuilder` turns any list of
moves into a *valid* trace, because the twin `wmtsim.twins.reference.MemoryTree` applies
every event and a move that cannot apply is skipped. So the same interpreter serves
`random_trace` (moves drawn from ``random.Random(seed)``), the Hypothesis strategy of the
conformance runner (moves drawn and shrunk by Hypothesis), scripts/golden.py and the tests.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from wmtsim.core.params import Params
from wmtsim.twins.reference import MemoryTree, StepReport

OPS = ("task", "action", "outcome", "global", "activate", "complete", "reopen", "supersede",
       "select", "select_explicit")
"""Moves a trace is built from (``select_explicit`` is a select with its own pool)."""

WEIGHTS = (3, 6, 4, 1, 2, 1.5, 1, 0.5, 7, 1)
"""How often `random_trace` draws each of `OPS`."""

PARAM_VARIANTS: tuple[dict[str, Any], ...] = (
    {}, {"tau_obs": 0.55}, {"rho": 0.7, "M": 2}, {"event_resets_m": True},
    {"rho_g": 0.8, "global_miss_count": 0}, {"tau_obs": 0.62, "gamma": 0.6, "delta": 0.9},
)
"""Parameter overrides `random_trace` picks from (seeded): defaults and five variants."""

Move = tuple[str, int, Sequence[bool]]


@dataclass
class TraceBuilder:
    """Applies moves to the twin and records the events that it accepted.

    ``expect_steps``: after every select, add an ``expect`` line per node with the twin's
    values and ``tol: 0`` (the project promises the kernels agree to the bit).
    """

    params: Mapping[str, Any] = field(default_factory=dict)
    expect_steps: bool = False
    root: str = "q"

    def __post_init__(self) -> None:
        self.tree = MemoryTree(Params().with_(**self.params), root_id=self.root)
        self.events: list[dict[str, Any]] = [{"op": "query", "id": self.root,
                                              "params": dict(self.params)}]
        self.reports: list[StepReport] = []
        self._count = 0

    def _fresh(self, prefix: str) -> str:
        self._count += 1
        return f"{prefix}{self._count}"

    def _of_kind(self, *kinds: str) -> list[str]:
        return [i for i, n in self.tree.nodes.items() if n.kind in kinds]

    def move(self, op: str, pick: int, bits: Sequence[bool] = ()) -> None:
        """Apply one move (skipped when nothing can take it)."""
        t = self.tree
        hosts = self._of_kind("root", "task")
        ev: dict[str, Any] | None = None
        if op == "task":
            ev = {"op": "task", "id": self._fresh("t"), "parent": hosts[pick % len(hosts)],
                  "tokens": pick % 50}
            t.add_task(ev["id"], ev["parent"], tokens=ev["tokens"])
        elif op == "action":
            ev = {"op": "action", "id": self._fresh("a"), "parent": hosts[pick % len(hosts)],
                  "poisoned": pick % 3 == 0}
            t.add_action(ev["id"], ev["parent"], poisoned=ev["poisoned"])
        elif op == "outcome" and (actions := self._of_kind("action")):
            ok = (pick // len(actions)) % 5 < 3
            ev = {"op": "outcome", "id": actions[pick % len(actions)],
                  "result": "success" if ok else "failure"}
            t.record_outcome(ev["id"], ok)
        elif op == "global":
            ev = {"op": "global", "id": self._fresh("g"), "poisoned": pick % 2 == 0}
            t.add_global(ev["id"], poisoned=ev["poisoned"])
        elif op == "activate":
            ev = {"op": "activate", "id": hosts[pick % len(hosts)]}
            t.activate(ev["id"])
        elif op == "complete" and (open_ := [i for i in self._of_kind("task")
                                             if t.nodes[i].state == "active"]):
            ev = {"op": "complete", "id": open_[pick % len(open_)], "summary_tokens": pick % 30}
            t.complete(ev["id"], summary_tokens=ev["summary_tokens"])
        elif op == "reopen" and (folded := [i for i in self._of_kind("task")
                                            if t.nodes[i].state == "folded"]):
            ev = {"op": "reopen", "id": folded[pick % len(folded)]}
            t.reopen(ev["id"])
        elif op == "supersede" and (others := [i for i in t.nodes if i != self.root]):
            ev = {"op": "supersede", "id": others[pick % len(others)]}
            t.supersede(ev["id"])
        elif op in ("select", "select_explicit"):
            self._select(op == "select_explicit", bits)
        if ev is not None:
            self.events.append(ev)

    def _select(self, explicit: bool, bits: Sequence[bool]) -> None:
        t = self.tree
        ids = list(t.nodes)
        if explicit:  # bits choose the pool from every node, then the selection from it
            pool = [i for k, i in enumerate(ids) if k < len(bits) and bits[k]]
            rest = bits[len(ids):]
            chosen = [i for k, i in enumerate(pool) if k < len(rest) and rest[k]]
        else:
            pool = t.candidate_pool()
            chosen = [i for k, i in enumerate(pool) if k < len(bits) and bits[k]]
        ev: dict[str, Any] = {"op": "select", "selected": chosen}
        if explicit:
            ev["candidates"] = pool
        self.reports.append(t.select(chosen, pool if explicit else None))
        self.events.append(ev)
        if self.expect_steps:
            for i, n in t.nodes.items():
                self.events.append({"op": "expect", "id": i, "u": n.u, "m": n.m,
                                    "state": n.state, "tol": 0.0})

    def build(self, moves: Iterable[Move]) -> list[dict[str, Any]]:
        for op, pick, bits in moves:
            self.move(op, pick, bits)
        return self.events


def random_moves(rng: random.Random, n_ops: int) -> list[Move]:
    """``n_ops`` moves drawn from ``rng`` with `WEIGHTS` (selects pick each candidate with
    probability 0.4; an explicit pool holds each node with probability 0.5)."""
    moves: list[Move] = []
    for _ in range(n_ops):
        op = rng.choices(OPS, weights=WEIGHTS)[0]
        pick = rng.randrange(1 << 16)
        if op == "select_explicit":
            bits = [rng.random() < 0.5 for _ in range(64)] + [rng.random() < 0.4
                                                              for _ in range(64)]
        else:
            bits = [rng.random() < 0.4 for _ in range(64)]
        moves.append((op, pick, bits))
    return moves


@dataclass(frozen=True)
class RandomTrace:
    """A generated trace: its events and the twin's report of every select step."""

    events: list[dict[str, Any]]
    reports: list[StepReport]
    params: dict[str, Any]


def generate(seed: int, n_ops: int = 70, *, params: Mapping[str, Any] | None = None,
             expect_steps: bool = True) -> RandomTrace:
    """A valid random trace for ``seed`` (same seed, same trace, on any machine).

    ``params``: the query line's overrides (default: one of `PARAM_VARIANTS`, chosen by
    the seed). ``expect_steps``: after every select, one ``expect`` line per node holding
    the twin's values with ``tol: 0``.
    """
    rng = random.Random(seed)
    chosen = dict(rng.choice(PARAM_VARIANTS) if params is None else params)
    builder = TraceBuilder(chosen, expect_steps=expect_steps)
    events = builder.build(random_moves(rng, n_ops))
    return RandomTrace(events, builder.reports, chosen)


def random_trace(seed: int, n_ops: int = 70, *, params: Mapping[str, Any] | None = None,
                 expect_steps: bool = True) -> list[dict[str, Any]]:
    """The events of `generate` (a list of trace lines as dicts)."""
    return generate(seed, n_ops, params=params, expect_steps=expect_steps).events
