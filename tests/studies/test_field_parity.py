"""The parity table (`wmtsim.studies.field.parity`, docs/field.md): its columns come
from the engine's counters, and the counters mean what the table says."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from wmtsim.core.field_knobs import Baselines
from wmtsim.core.params import Params
from wmtsim.core.policies import POLICIES
from wmtsim.core.stubs import Stubs
from wmtsim.core.world_spec import PoisonSpec, WorldSpec
from wmtsim.engine.simulation import simulate
from wmtsim.engine.world import generate
from wmtsim.studies.field.parity import (
    item_cap,
    parity_frame,
    parity_markdown,
    ranking_signal,
)

SPEC = WorldSpec(n_subtasks=(2, 3), n_actions=(1, 4), poison=(PoisonSpec("plausible"),))
SHOWN = ("wmt", "linear", "generative_agents", "memorybank", "memgpt", "mem0")


@pytest.fixture(scope="module")
def results() -> dict:
    world = generate(SPEC, seed=3, n=24)
    params, stubs = Params(budget=300), Stubs(top_k=3)
    return {p: simulate(world, p, params=params, stubs=stubs, record_steps=24)
            for p in SHOWN}


def test_context_counters_match_the_step_records(results: dict) -> None:
    """context_tokens / context_max / context_items_max are the step records' own
    Σ, max and count of in-context memory tokens (no tree serialisation in the field)."""
    for p in ("generative_agents", "memgpt", "mem0"):
        r = results[p]
        steps, t = r.steps, r.trajectories
        sel = steps.filter(steps["selected"])
        for i, row in enumerate(t.iter_rows(named=True)):
            mine = sel.filter(sel["trajectory"] == row["trajectory"])
            per = mine.group_by("step").agg(pl.col("tokens").sum().alias("tok"),
                                            pl.col("tokens").count().alias("k"))
            tok = per["tok"].to_numpy() if per.height else np.zeros(1)
            k = per["k"].to_numpy() if per.height else np.zeros(1)
            assert row["n_context_tokens"] == pytest.approx(float(tok.sum())), (p, i)
            assert row["n_context_max"] == pytest.approx(float(tok.max())), (p, i)
            assert row["n_context_items_max"] == float(k.max()), (p, i)


def test_parity_frame_reads_the_counters(results: dict) -> None:
    frame = parity_frame(results, Stubs(top_k=3), Baselines(), 300.0)
    rows = {r["policy"]: r for r in frame.iter_rows(named=True)}
    for p in ("wmt", "generative_agents", "memorybank", "memgpt", "mem0"):
        assert rows[p]["share_max"] <= 1.0 + 1e-9, p  # every selective policy within B
    assert rows["linear"]["share_max"] > 1.0  # unselective: B does not bind it
    # MemoryBank rates nothing: its only calls of its own are the daily summaries.
    mb = results["memorybank"].trajectories
    assert rows["memorybank"]["memory_calls_per_step"] == pytest.approx(
        float(mb["n_summariser_calls"].sum()) / float(mb["n_prompt_steps"].sum()))
    assert rows["memorybank"]["memory_tokens_per_step"] > 0.0
    assert rows["wmt"]["memory_calls_per_step"] > 0.0  # the selector's call
    t = results["mem0"].trajectories
    calls = float(t["n_llm_calls"].sum()) - float(t["n_prompt_steps"].sum())
    assert rows["mem0"]["memory_calls_per_step"] == pytest.approx(
        calls / float(t["n_prompt_steps"].sum()))
    assert rows["wmt"]["items_max"] <= 3
    text = parity_markdown(frame)
    assert text.count("\n") == len(SHOWN) + 2 and "`memgpt`" in text
    assert rows["wmt"]["flagged"] == 0.0


def test_caps_and_signals_are_declared_for_every_policy() -> None:
    for p in POLICIES:
        assert item_cap(p, Stubs(top_k=3), Baselines())
        assert ranking_signal(p)
    assert item_cap("wmt", Stubs(top_k=0), Baselines()) == "none"
    # One shared cap: the designs' own sizes beneath it, queues capped too.
    assert item_cap("generative_agents_code", Stubs(top_k=3), Baselines()) == "3"
    assert item_cap("memgpt", Stubs(top_k=3), Baselines()) == "3"
    assert item_cap("memgpt", Stubs(top_k=3), Baselines(own_caps=True)) == "none (queue)"
    assert "evidence" not in ranking_signal("generative_agents")
    assert "evidence" in ranking_signal("generative_agents",
                                        Baselines(importance_reads_evidence=True))


@pytest.mark.parametrize("own_caps", [False, True])
def test_declared_item_caps_bound_what_the_engine_puts_in_context(own_caps: bool) -> None:
    """Each field family's `ItemCap` (`wmtsim.core.policies`) is the engine's: with B
    out of the way, the most memories any prompt step holds is its declared cap."""
    from wmtsim.core.policies import FIELD_POLICIES, family_of

    world = generate(SPEC, seed=5, n=12)
    knobs = Baselines(own_caps=own_caps, ga_top_k=3, mb_code_recent=1, mb_code_top_k=1)
    for p in FIELD_POLICIES:
        pol = POLICIES[p]
        size = family_of(pol.family).cap(pol.variant).size(2, knobs)
        r = simulate(world, p, params=Params(budget=2000), stubs=Stubs(top_k=2),
                     baselines=knobs)
        most = int(r.trajectories["n_context_items_max"].max())  # type: ignore[arg-type]
        assert size == 0 or most == size, (p, most, size)
