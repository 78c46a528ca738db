"""The field's own memory tools (docs/field.md, issue 20): Letta's memory-pressure warning,
core and archival memory; MemoryBank's daily summaries; the field's retrieval noise.

Engine == twin for every policy is `test_baselines.test_engine_equals_reference`; here
each rule's characteristic behaviour, on the engine or on the twin's store.
"""

from __future__ import annotations

from itertools import pairwise
from typing import ClassVar

import numpy as np
import polars as pl
import pytest
from conftest import counters

from wmtsim.core.field_knobs import B_CORE, Baselines
from wmtsim.core.metrics import C
from wmtsim.core.params import Params
from wmtsim.core.policies import get_policy
from wmtsim.core.stubs import Stubs
from wmtsim.core.world_spec import PoisonSpec, World, WorldSpec
from wmtsim.engine.simulation import SimResult, simulate
from wmtsim.engine.world import generate
from wmtsim.twins.field_reference import BaselineMemory
from wmtsim.twins.simulator import simulate_reference

OFF = {"letta_memory": False}


def world(seed: int = 2, n: int = 12) -> World:
    return generate(WorldSpec(n_subtasks=(3, 4), n_actions=(4, 6), tokens_sigma=0.3,
                              poison=(PoisonSpec("plausible"),)), seed=seed, n=n)


def total(res: SimResult, counter: str) -> float:
    return float(counters(res)[:, getattr(C, counter)].sum())


def final_places(w: World, policy: str, knobs: Baselines) -> np.ndarray:
    from wmtsim.engine import run

    _, _, rec = run(w, get_policy(policy).pack(), Params().pack(), Stubs().pack(), 0, None,
                    knobs.pack())
    return np.asarray(rec["baseline_place"])


class Watched(BaselineMemory):
    """The twin's store, recording every prompt step's (pool, context, core memory)."""

    log: ClassVar[list[tuple[list[str], set[str], set[str], float]]] = []

    def step(self, topic_now: int, critical: bool, path: set[str]
             ) -> tuple[list[str], set[str]]:
        pool, chosen = super().step(topic_now, critical, path)
        core = {v for v in pool if self.items[v].place == "core"}
        Watched.log.append((pool, chosen, core, self.core_tokens()))
        return pool, chosen


def watch(w: World, policy: str, knobs: Baselines, monkeypatch: pytest.MonkeyPatch
          ) -> list[tuple[list[str], set[str], set[str], float]]:
    import wmtsim.twins.field_reference as ref

    Watched.log = []
    monkeypatch.setattr(ref, "BaselineMemory", Watched)
    simulate_reference(w, policy, Params(), Stubs(), knobs)
    return Watched.log


# ---------------------------------------------------------------- Letta


def test_core_memory_is_always_in_context_within_the_window(
        monkeypatch: pytest.MonkeyPatch) -> None:
    knobs = Baselines(window_tokens=300)
    log = watch(world(), "memgpt", knobs, monkeypatch)
    assert any(core for _, _, core, _ in log)  # the agent saved into core memory
    for _, chosen, core, core_tokens in log:
        assert core <= chosen  # always in context
        assert core_tokens <= knobs.core_fraction * 300  # never more than its share of W
    res = simulate(world(), "memgpt", baselines=knobs, record_steps=12)
    assert res.trajectories["n_context_max"].to_numpy().max() <= Params().budget
    # Core memory + summary + queue stay within W at every action step, unless Letta's
    # walk would have raised ContextWindowExceededError (the run is flagged): core
    # memory's share of W leaves the walk less room.
    flagged = res.trajectories["n_context_overflows"].to_numpy() > 0
    per_step = (res.steps.filter(pl.col("selected") & (pl.col("event") == "action"))
                .group_by(["trajectory", "step"]).agg(pl.col("tokens").sum()))
    for row in per_step.iter_rows(named=True):
        assert row["tokens"] <= 300 or flagged[row["trajectory"]]


def test_the_warning_is_charged_and_saves_go_to_core_then_archival() -> None:
    w = world()
    on = simulate(w, "memgpt", baselines=Baselines(window_tokens=300))
    off = simulate(w, "memgpt", baselines=Baselines(window_tokens=300, **OFF))
    # Every save and every search is a charged tool call of memory's own.
    assert total(on, "llm_calls") > total(off, "llm_calls")
    assert total(on, "memory_tokens") > total(off, "memory_tokens")
    places = final_places(w, "memgpt", Baselines(window_tokens=300))
    assert (places == B_CORE).any()
    assert not (final_places(w, "memgpt", Baselines(window_tokens=300, **OFF))
                == B_CORE).any()
    # No core memory: every save is an archival passage.
    assert not (final_places(w, "memgpt", Baselines(window_tokens=300, core_fraction=0.0))
                == B_CORE).any()


def test_the_warning_fires_once_until_the_next_summary(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import wmtsim.twins.field_queues as q

    seen: list[tuple[int, bool, bool, float]] = []
    original = q.QueueStore.letta_pressure

    def spy(self: q.QueueStore, limit: float) -> None:
        before = self.alerted
        original(self, limit)
        seen.append((id(self), before, self.alerted, self.h.out[C.summariser_calls]))

    monkeypatch.setattr(q.QueueStore, "letta_pressure", spy)
    alive: list[object] = []  # keeps every store alive, so that id() stays unique
    simulate_reference(world(), "memgpt", Params(), Stubs(), Baselines(window_tokens=300),
                       alive)
    fired: dict[int, list[float]] = {}
    for store, before, after, summaries in seen:
        if after and not before:
            fired.setdefault(store, []).append(summaries)
    assert sum(len(f) for f in fired.values()) >= 2
    # Between two warnings to one agent its queue was summarised.
    for f in fired.values():
        assert all(b > a for a, b in pairwise(f))


def test_archival_search_is_a_charged_tool_call(monkeypatch: pytest.MonkeyPatch) -> None:
    import wmtsim.twins.field_queues as q

    calls: list[float] = []
    original = q.QueueStore.archival_search

    def spy(self: q.QueueStore, *args: object) -> None:
        before = self.h.out[C.llm_calls]
        original(self, *args)  # type: ignore[arg-type]
        calls.append(self.h.out[C.llm_calls] - before)

    monkeypatch.setattr(q.QueueStore, "archival_search", spy)
    simulate_reference(world(), "memgpt", Params(), Stubs(), Baselines(window_tokens=300))
    assert calls and all(c == 1.0 for c in calls)
    w = world()
    a = simulate(w, "memgpt", baselines=Baselines(window_tokens=300))
    b = simulate(w, "memgpt", baselines=Baselines(window_tokens=300, archival_k=0))
    assert total(a, "llm_calls") - total(b, "llm_calls") == len(calls)


# ---------------------------------------------------------------- MemoryBank


@pytest.mark.parametrize("policy", ["memorybank", "memorybank_code"])
def test_daily_summaries_are_charged_and_retrieved(policy: str) -> None:
    w = world(n=16)
    on = simulate(w, policy, record_steps=16)
    off = simulate(w, policy, baselines=Baselines(mb_summaries=False))
    assert total(off, "summariser_calls") == 0.0
    assert total(on, "summariser_calls") > 0.0
    # One summariser call per session start with memories of the day: at most one per
    # Baselines.mb_session_steps prompt steps.
    steps = counters(on)[:, C.prompt_steps]
    calls = counters(on)[:, C.summariser_calls]
    assert (calls <= np.floor((steps - 1) / Baselines().mb_session_steps)).all()
    # The summaries are memories like any other: retrieved into the context.
    kind = on.forest.kind
    sel = on.steps.filter(on.steps["selected"])
    assert any(kind[r["trajectory"], r["slot"]] == 4 for r in sel.iter_rows(named=True))


def test_summaries_are_not_forgotten_by_the_curve(monkeypatch: pytest.MonkeyPatch) -> None:
    knobs = Baselines(mb_session_steps=2, mb_time_scale=0.5)
    log = watch(world(), "memorybank", knobs, monkeypatch)
    assert any(any(v.endswith("/summary") for v in pool) for pool, _, _, _ in log)


# ---------------------------------------------------------------- retrieval noise


def test_retrieval_noise_scales_the_field_only() -> None:
    w = world()
    tight = Params(budget=120)  # retrieval order matters only when B binds
    noisy = Baselines(retrieval_noise=3.0)
    for p in ("traceretain_z", "generative_agents", "memorybank", "mem0"):
        a = counters(simulate(w, p, params=tight))
        b = counters(simulate(w, p, params=tight, baselines=noisy))
        assert not np.array_equal(a, b), p
        # Without any selector noise there is nothing to scale.
        quiet = Stubs(selector_noise=0.0)
        c = counters(simulate(w, p, params=tight, stubs=quiet))
        d = counters(simulate(w, p, params=tight, stubs=quiet, baselines=noisy))
        np.testing.assert_array_equal(c, d, err_msg=p)
    # WMT's selector never reads it.
    np.testing.assert_array_equal(counters(simulate(w, "wmt", params=tight)),
                                  counters(simulate(w, "wmt", params=tight, baselines=noisy)))


# ---------------------------------------------------------------- a hand-worked case


def test_letta_pressure_hand_worked() -> None:
    # Four tool messages of 30 tokens in the queue, W = 100: 120 > 0.75 · 100, so the
    # warning fires. Ratings without noise: round(10 · (0.75 · rel + 0.25)): rel 0.9 → 9,
    # rel 0.2 → 4. Saves (≥ 7), oldest first: a0 into core memory (30 ≤ 0.3 · 100), a1
    # not saved, a2 and a3 archival (core is full). Calls: the chained step (60 + the
    # queue's 120) and three saves (60 + 30 each): 4 calls, 450 tokens. Once alerted,
    # nothing more until a summary clears the alert.
    from wmtsim.core.codes import ACTION, SUCCESS
    from wmtsim.core.field_knobs import B_IN, N_MISC, M
    from wmtsim.core.metrics import N_COUNTERS
    from wmtsim.core.packing import as_array
    from wmtsim.engine.field.letta import _letta_pressure
    from wmtsim.engine.forest import Forest
    from wmtsim.engine.records import FieldScratch, FieldState, LifecycleScratch, Trajectory

    n = 4
    F = Forest.allocate(1, n, n).row(0)
    F.kind[:] = ACTION
    F.outcome[:] = SUCCESS
    F.tokens[:] = 30
    F.rel[:] = [0.9, 0.2, 0.9, 0.9]
    F.wid[:] = np.arange(n)
    b = np.zeros(n, np.bool_)
    f = np.zeros(n)
    S = LifecycleScratch(b, b, f, f, f, f, f, np.full(1, -1, np.int64))
    out = np.zeros(N_COUNTERS)
    T = Trajectory(np.int64(0), np.int64(0), F, np.zeros(n, np.int64), b, b, b, b, f, b,
                   out, S)
    store = FieldState(np.full(n, B_IN, np.int8), np.zeros(n), np.zeros(n, np.int64),
                       np.zeros(n, np.int64), np.ones(n), np.zeros(n, np.bool_))
    knobs = Baselines(importance_noise=0.0)
    X = FieldScratch(store, np.zeros(2), np.zeros(N_MISC, np.int64), as_array(knobs.pack()))
    _letta_pressure(T, X, 3, n, 100.0)
    assert store.place.tolist() == [B_CORE, B_IN, B_IN, B_IN]
    assert store.archival.tolist() == [False, False, True, True]
    assert out[C.llm_calls] == 4 and out[C.memory_tokens] == 450.0
    assert X.misc[M.letta_alerted] == 1
    _letta_pressure(T, X, 4, n, 100.0)
    assert out[C.llm_calls] == 4


def test_memorybank_daily_summary_hand_worked() -> None:
    # Day 0 (steps 0-9) ends at step 10: subtask w1 (30 tokens), its actions a2 (40, the
    # evidence) and a3 (20), and a4 (10) about subtask 2, which has no node. One
    # summariser call reads all four (100 tokens); its one part is about w1 (the only
    # subtask with a node): 30 + 40 + 20 = 90 → ceil(0.5 · 90) = 45 tokens, w1's
    # evidence, so it stands for w1's result (top = w1). When every memory about w1 is
    # forgotten, the summary is dropped too.
    from wmtsim.core.codes import ACTION, SUMMARY, TASK
    from wmtsim.core.field_knobs import B_FORGOTTEN, B_IN, B_UNSEEN, N_MISC
    from wmtsim.core.metrics import N_COUNTERS
    from wmtsim.core.packing import as_array
    from wmtsim.engine.field.memorybank import _mb_drop_orphans, _mb_summarize
    from wmtsim.engine.forest import Forest
    from wmtsim.engine.records import (
        FieldScratch,
        FieldState,
        Knobs,
        LifecycleScratch,
        Trajectory,
    )

    cap = 6
    F = Forest.allocate(1, cap, cap).row(0)
    F.kind[:5] = [TASK, TASK, ACTION, ACTION, ACTION]
    F.parent[:5] = [-1, 0, 1, 1, 1]
    F.tokens[:5] = [10, 30, 40, 20, 10]
    F.topic[:5] = [-1, 1, 1, 1, 2]
    F.top[:5] = [-1, 1, 1, 1, 1]
    F.created[:5] = [0, 0, 1, 3, 4]
    F.evidence[:5] = [False, False, True, False, False]
    F.wid[:5] = np.arange(5)
    F.summary[:] = -1
    slot_of = np.array([0, 1, -1, -1, -1, -1], np.int64)
    b = np.zeros(cap, np.bool_)
    f = np.zeros(cap)
    out = np.zeros(N_COUNTERS)
    T = Trajectory(np.int64(0), np.int64(0), F, slot_of, b, b, b, b, f, b, out,
                   LifecycleScratch(b, b, f, f, f, f, f, np.full(1, -1, np.int64)))
    place = np.array([B_UNSEEN, B_IN, B_IN, B_IN, B_IN, B_UNSEEN], np.int8)
    store = FieldState(place, np.zeros(cap), np.zeros(cap, np.int64),
                       np.zeros(cap, np.int64), np.ones(cap), np.zeros(cap, np.bool_))
    X = FieldScratch(store, np.zeros(2), np.zeros(N_MISC, np.int64),
                     as_array(Baselines().pack()))
    st = Stubs(c_sum=0.5)
    K = Knobs(get_policy("memorybank").pack(), Params().pack(), st.pack(),
              WorldSpec().pack()[0])
    # A day is mb_time_scale = 10 prompt steps: at the session start of step 5 day 0 is
    # still under way (nothing written); at step 10 it has ended and gets its summary.
    assert _mb_summarize(T, K, X, 5, 5, 5) == 5 and out[C.summariser_calls] == 0
    n = _mb_summarize(T, K, X, 10, 5, 5)
    assert n == 6 and F.kind[5] == SUMMARY and F.summary[1] == 5
    assert F.tokens[5] == 45 and F.evidence[5] and F.top[5] == 1 and F.topic[5] == 1
    assert place[5] == B_IN
    assert out[C.summariser_calls] == 1 and out[C.llm_calls] == 1
    assert out[C.memory_tokens] == st.summariser_base_tokens + 100
    place[1:4] = B_FORGOTTEN
    _mb_drop_orphans(n, F, place)
    assert place[5] == B_FORGOTTEN and place[4] == B_IN
