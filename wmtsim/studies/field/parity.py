"""The parity table: does every policy play on equal terms? (docs/field.md)

Per policy on one scenario, from the simulation's own counters (not written by hand):

* **budget use**: memory tokens in context per prompt step as a share of B (mean over
  all steps, pooled Σ/Σ, and the largest single step of any trajectory);
* **items**: the item cap the configuration runs with (`Stubs.top_k` or its own knob)
  and the most memories it actually put in context at one step;
* **LLM calls per step**: all calls, and memory's own calls (selector, ratings,
  summaries, mem0's decisions, Letta's tool calls: every call but the reasoner's);
* **memory tokens per step**: the prompt tokens of memory's own calls (retrieval and
  upkeep), ``memory_tokens`` / ``prompt_steps``;
* **runs flagged**: the share of trajectories where Letta would have raised
  ContextWindowExceededError (`context_overflows` > 0; MemGPT only);
* **signal**: what its ranking reads (declared beside the rules, `ranking_signal`).

Used by ``wmtsim compare --parity`` and scripts/field_table.py (docs/field.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from wmtsim.core.field_knobs import Baselines
from wmtsim.core.field_policies import QUEUE, REL
from wmtsim.core.policies import (
    SEL_BASELINE,
    SEL_BRANCHES,
    SEL_EVERYTHING,
    SEL_ITEMS,
    SEL_NONE,
    family_of,
    get_policy,
)
from wmtsim.core.stubs import Stubs

PARITY_COLUMNS = ("policy", "budget", "share_mean", "share_max", "cap", "items_max",
                  "calls_per_step", "memory_calls_per_step", "memory_tokens_per_step",
                  "flagged", "signal")


def item_cap(policy: str, stubs: Stubs, knobs: Baselines) -> str:
    """The item cap a configuration runs with, as the engine reads it ("none" = 0): its
    family's `ItemCap` (`wmtsim.core.policies`): `Stubs.top_k` for WMT's selector
    and, unless `Baselines.own_caps`, for every field retrieval, queue and window, with a
    design's own size beneath it."""
    pol = get_policy(policy)
    if pol.selection == SEL_NONE:
        return "– (no memory)"
    if pol.selection == SEL_EVERYTHING:
        return "– (everything)"
    if pol.selection == SEL_BRANCHES:
        return "– (whole branches)"
    cap = family_of(pol.family).cap(pol.variant)
    size = cap.size(int(stubs.top_k), knobs)
    shown = str(size) if size > 0 else "none"
    if cap.rule == QUEUE and knobs.own_caps:
        return f"{shown} (queue)"
    if cap.detail:
        values = {k: int(getattr(knobs, k)) for k in cap.knobs}
        return f"{shown} {cap.detail.format(**values)}"
    return shown


def ranking_signal(policy: str, knobs: Baselines | None = None) -> str:
    """What a configuration's ranking (or admission) reads: its selection mode, or for a
    policy of the field its family's declared `signal`."""
    pol = get_policy(policy)
    knobs = knobs or Baselines()
    if pol.selection == SEL_NONE:
        return "–"
    if pol.selection == SEL_EVERYTHING:
        return "– (everything eligible)"
    if pol.selection == SEL_BRANCHES:
        return "branch priority U_b (Eq. 6)"
    if pol.selection == SEL_ITEMS:
        return REL + (" + w_u·u + w_b·U_b" if pol.scores else "")
    signal = family_of(pol.family).signal
    if pol.selection != SEL_BASELINE or signal is None:
        raise ValueError(f"{pol.name}: selection {pol.selection} of family "
                         f"{family_of(pol.family).name!r} has no ranking signal")
    return signal(pol.variant, knobs)


def parity_frame(results: Mapping[str, Any], stubs: Stubs, knobs: Baselines,
                 budget: float) -> pl.DataFrame:
    """One row per policy (`PARITY_COLUMNS`) from each `SimResult`'s raw counters."""
    rows = []
    for name, r in results.items():
        t = r.trajectories
        steps = float(t["n_prompt_steps"].sum())
        per = max(steps, 1.0)
        calls = float(t["n_llm_calls"].sum())
        rows.append({
            "policy": name,
            "budget": float(budget),
            "share_mean": float(t["n_context_tokens"].sum()) / per / float(budget),
            "share_max": float(t["n_context_max"].max()) / float(budget),
            "cap": item_cap(name, stubs, knobs),
            "items_max": int(t["n_context_items_max"].max()),
            "calls_per_step": calls / per,
            "memory_calls_per_step": (calls - steps) / per,
            "memory_tokens_per_step": float(t["n_memory_tokens"].sum()) / per,
            "flagged": float((t["n_context_overflows"] > 0).mean()),
            "signal": ranking_signal(name, knobs),
        })
    return pl.DataFrame(rows, schema={"policy": pl.Utf8, "budget": pl.Float64,
                                      "share_mean": pl.Float64, "share_max": pl.Float64,
                                      "cap": pl.Utf8, "items_max": pl.Int64,
                                      "calls_per_step": pl.Float64,
                                      "memory_calls_per_step": pl.Float64,
                                      "memory_tokens_per_step": pl.Float64,
                                      "flagged": pl.Float64, "signal": pl.Utf8})


def parity_markdown(frame: pl.DataFrame, policies: Sequence[str] | None = None) -> str:
    """The parity table as Markdown (one row per policy)."""
    head = ("| policy | B used: mean / max share | item cap (most in context) | "
            "LLM calls / step (memory's own) | memory tokens / step | runs flagged | "
            "ranking reads |")
    lines = [head, "|---|---|---|---|---|---|---|"]
    index = {r["policy"]: r for r in frame.iter_rows(named=True)}
    for p in policies or list(index):
        r = index.get(p)
        if r is None:
            continue
        lines.append(
            f"| `{p}` | {r['share_mean']:.2f} / {r['share_max']:.2f} | {r['cap']} "
            f"({r['items_max']}) | {r['calls_per_step']:.2f} "
            f"({r['memory_calls_per_step']:.2f}) | {r['memory_tokens_per_step']:.0f} | "
            f"{r['flagged']:.0%} | {r['signal']} |")
    return "\n".join(lines) + "\n"


def parity_table(scenario: Any, policies: Sequence[str], n: int | None = None,
                 seed: int | None = None, threads: int | None = None) -> pl.DataFrame:
    """Run ``policies`` on the scenario (common random numbers) and tabulate parity."""
    from wmtsim.studies.compare.report import run_policies

    res = run_policies(scenario, tuple(policies), n=n, seed=seed, threads=threads)
    return parity_frame(res, scenario.stubs, scenario.baselines,
                        float(scenario.params.budget))


def write_parity(frame: pl.DataFrame, out: Path) -> list[Path]:
    """parity.parquet and parity.md in ``out``."""
    from wmtsim.core.output import atomic_write_bytes, atomic_write_parquet

    out.mkdir(parents=True, exist_ok=True)
    return [atomic_write_parquet(frame, out / "parity.parquet"),
            atomic_write_bytes(out / "parity.md", parity_markdown(frame).encode())]
