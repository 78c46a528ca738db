"""The numba kernels against the readable reference on random event sequences.

`ArrayTree` below is a minimal flat-array twin of `wmtsim.twins.reference.MemoryTree` whose
equations all come from the kernels (`wmtsim.core.lifecycle`, `wmtsim.core.scoring`); only the
bookkeeping of events (append a node, flip a state) is written here. Both trees receive
the same random events and must agree exactly (==, not approx) after every event.
"""

from __future__ import annotations

import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from wmtsim.core import codes
from wmtsim.core.lifecycle import _branch_priorities, _candidate_pool, _mark_active_path, _suppress
from wmtsim.core.params import Params
from wmtsim.core.scoring import _event_resets_m, _event_score, _selection_feedback
from wmtsim.twins.reference import MemoryTree

CAP = 256
KIND = {name: code for code, name in enumerate(codes.KIND_NAMES)}


class ArrayTree:
    """One tree as parallel arrays in creation order, driven by the kernels."""

    def __init__(self, params: Params) -> None:
        self.p = params.pack()
        self.params = params
        self.parent = np.full(CAP, codes.NO_PARENT, dtype=np.int64)
        self.kind = np.zeros(CAP, dtype=np.int64)
        self.state = np.zeros(CAP, dtype=np.int64)
        self.outcome = np.zeros(CAP, dtype=np.int64)
        self.u = np.zeros(CAP, dtype=np.float64)
        self.m = np.zeros(CAP, dtype=np.int64)
        self.summary = np.full(CAP, -1, dtype=np.int64)
        self.ids: list[str] = []
        self.index: dict[str, int] = {}
        self.n = 0
        self.active = 0
        self.on_path = np.zeros(CAP, dtype=np.bool_)
        self.priority = np.zeros(CAP, dtype=np.float64)
        self.add("root", codes.ROOT, codes.NO_PARENT, params.u_init_root)

    def add(self, id: str, kind: int, parent: int, u: float) -> int:
        i = self.n
        self.parent[i], self.kind[i], self.u[i] = parent, kind, u
        self.ids.append(id)
        self.index[id] = i
        self.n += 1
        return i

    def record_outcome(self, i: int, success: bool) -> None:
        self.outcome[i] = codes.SUCCESS if success else codes.FAILURE
        self.u[i] = _event_score(success, self.p)
        if _event_resets_m(self.p):
            self.m[i] = 0

    def path(self) -> np.ndarray:
        _mark_active_path(self.parent, self.active, self.n, self.on_path)
        return self.on_path

    def complete(self, i: int, fold: bool) -> None:
        on_path = bool(self.path()[i])
        if fold:
            self.state[i] = codes.FOLDED
            if self.summary[i] < 0:
                self.summary[i] = self.add(f"{self.ids[i]}/summary", codes.SUMMARY, i,
                                           self.params.u_init_summary)
            else:
                s = self.summary[i]
                self.u[s], self.m[s] = self.params.u_init_summary, 0
        else:
            self.state[i] = codes.COMPLETED
        if on_path:
            self.active = int(self.parent[i])

    def pool(self) -> np.ndarray:
        eligible = np.zeros(self.n, dtype=np.bool_)
        _candidate_pool(self.parent, self.kind, self.state, self.path(), self.n, eligible)
        return eligible

    def select(self, selected: list[int], candidates: list[int] | None) -> list[int]:
        n = self.n
        if candidates is None:
            eligible = self.pool()
        else:
            eligible = np.zeros(n, dtype=np.bool_)
            eligible[candidates] = True
        sel = np.zeros(n, dtype=np.bool_)
        sel[selected] = True
        assert not np.any(sel & ~eligible)
        is_global = self.kind[:n] == codes.GLOBAL
        _selection_feedback(self.u, self.m, eligible, sel, is_global, self.p, n)
        _branch_priorities(self.parent, self.kind, self.state, self.u, self.outcome, n,
                           self.p, self.priority)
        before = self.state[:n].copy()
        _suppress(self.kind, self.state, self.path(), self.priority, n, self.p)
        return [int(i) for i in np.flatnonzero(before != self.state[:n])]


def random_params(rng: random.Random) -> Params:
    u_fail = rng.uniform(0.0, 0.6)
    return Params(
        u_success=rng.uniform(u_fail + 0.01, 1.0), u_failure=u_fail,
        u_init_task=rng.uniform(0.2, 1.0), u_init_action=rng.random(),
        u_init_global=rng.random(), u_init_summary=rng.random(),
        rho=rng.choice([1.0, rng.uniform(0.3, 1.0)]), rho_g=rng.uniform(0.3, 1.0),
        M=rng.randint(1, 5), alpha=rng.random(), beta=rng.random(), gamma=rng.random(),
        delta=rng.random(), tau_obs=rng.uniform(-0.1, 0.6),
        event_resets_m=rng.random() < 0.7, global_miss_count=rng.randint(0, 2))


def assert_same(ref: MemoryTree, arr: ArrayTree) -> None:
    assert list(ref.nodes) == arr.ids
    n = arr.n
    for i, (id, node) in enumerate(ref.nodes.items()):
        assert node.kind == codes.KIND_NAMES[arr.kind[i]], id
        assert node.state == codes.STATE_NAMES[arr.state[i]], id
        assert node.u == arr.u[i], id
        assert node.m == arr.m[i], id
        want_parent = -1 if node.parent is None else arr.index[node.parent]
        assert want_parent == arr.parent[i], id
        assert (node.outcome or "none") == codes.OUTCOME_NAMES[arr.outcome[i]], id
    assert ref.active == arr.ids[arr.active]
    pool = [arr.ids[i] for i in np.flatnonzero(arr.pool())]
    assert ref.candidate_pool() == pool
    assert n == len(ref.nodes)


def run_sequence(seed: int, n_events: int = 70) -> dict[str, int]:
    """Apply one random event sequence to both trees; returns counts of what happened."""
    rng = random.Random(seed)
    params = random_params(rng)
    ref, arr = MemoryTree(params), ArrayTree(params)
    seen = dict.fromkeys(["select", "suppressed", "fold", "complete", "reopen", "supersede",
                          "outcome", "explicit"], 0)
    for e in range(n_events):
        tasks = [i for i, nd in ref.nodes.items() if nd.kind == "task"]
        holders = ["root", *tasks]
        actions = [i for i, nd in ref.nodes.items() if nd.kind == "action"]
        r = rng.random()
        if r < 0.14:
            par = rng.choice(holders)
            ref.add_task(f"t{e}", par)
            arr.add(f"t{e}", codes.TASK, arr.index[par], params.u_init_task)
        elif r < 0.30:
            par = rng.choice(holders)
            ref.add_action(f"a{e}", par)
            arr.add(f"a{e}", codes.ACTION, arr.index[par], params.u_init_action)
        elif r < 0.34:
            ref.add_global(f"g{e}")
            arr.add(f"g{e}", codes.GLOBAL, codes.NO_PARENT, params.u_init_global)
        elif r < 0.44 and actions:
            a, ok = rng.choice(actions), rng.random() < 0.5
            ref.record_outcome(a, ok)
            seen["outcome"] += 1
            arr.record_outcome(arr.index[a], ok)
        elif r < 0.52:
            v = rng.choice(holders)
            ref.activate(v)
            arr.active = arr.index[v]
        elif r < 0.60:
            open_ = [t for t in tasks if ref.nodes[t].state in ("active", "completed")]
            if open_:
                t, fold = rng.choice(open_), rng.random() < 0.75
                ref.complete(t, fold=fold)
                arr.complete(arr.index[t], fold)
                seen["fold" if fold else "complete"] += 1
        elif r < 0.66:
            closed = [t for t in tasks if ref.nodes[t].state in ("folded", "completed")]
            if closed:
                t = rng.choice(closed)
                ref.reopen(t)
                arr.state[arr.index[t]] = codes.ACTIVE
                seen["reopen"] += 1
        elif r < 0.69 and len(ref.nodes) > 1:
            v = rng.choice(list(ref.nodes)[1:])
            ref.supersede(v)
            arr.state[arr.index[v]] = codes.OBSOLETE
            seen["supersede"] += 1
        else:
            seen["select"] += 1
            explicit = rng.random() < 0.1
            seen["explicit"] += explicit
            if explicit:
                candidates: list[str] | None = [i for i in ref.nodes if rng.random() < 0.5]
                eps = list(candidates or [])
            else:
                candidates = None
                eps = ref.candidate_pool()
            chosen = [i for i in eps if rng.random() < rng.choice([0.1, 0.4])]
            rep = ref.select(chosen, candidates)
            sup = arr.select([arr.index[i] for i in chosen],
                             None if candidates is None else [arr.index[i] for i in eps])
            assert rep.suppressed == [arr.ids[i] for i in sup]
            seen["suppressed"] += len(sup)
            for b, u_b in rep.priorities.items():
                assert u_b == arr.priority[arr.index[b]], b
            kernel_tasks = [arr.ids[i] for i in range(arr.n) if arr.kind[i] == codes.TASK]
            assert list(rep.priorities) == kernel_tasks
        assert_same(ref, arr)
    return seen


@settings(max_examples=250, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_reference_equals_kernels(seed: int) -> None:
    run_sequence(seed)


def test_long_sequences_cover_every_event() -> None:
    """A few long runs; together they must exercise every event kind and suppression."""
    total: dict[str, int] = {}
    for seed in range(40):
        for k, v in run_sequence(seed, n_events=160).items():
            total[k] = total.get(k, 0) + v
    assert min(total.values()) > 20, total
