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
from wmtsim.core.policies import (
    FAM_GENERATIVE,
    FAM_MEM0,
    FAM_MEMGPT,
    FAM_MEMORYBANK,
    FAM_TOKEN_BUFFER,
    FAM_TRACERETAIN,
    FAM_WINDOW,
    MB_CODE,
    SEL_BRANCHES,
    SEL_EVERYTHING,
    SEL_ITEMS,
    SEL_NONE,
    get_policy,
)
from wmtsim.core.stubs import Stubs

PARITY_COLUMNS = ("policy", "budget", "share_mean", "share_max", "cap", "items_max",
                  "calls_per_step", "memory_calls_per_step", "memory_tokens_per_step",
                  "flagged", "signal")


def item_cap(policy: str, stubs: Stubs, knobs: Baselines) -> str:
    """The item cap a configuration runs with, as the engine reads it ("none" = 0):
    `Stubs.top_k` for WMT's selector and, unless `Baselines.own_caps`, for every field
    retrieval, queue and window, with a design's own size beneath it."""
    pol = get_policy(policy)

    def shown(k: int) -> str:
        return str(k) if k > 0 else "none"

    shared = int(stubs.top_k)

    def capped(size: int) -> int:
        return size if knobs.own_caps or shared <= 0 else min(size, shared)

    if pol.selection == SEL_NONE:
        return "– (no memory)"
    if pol.selection == SEL_EVERYTHING:
        return "– (everything)"
    if pol.selection == SEL_BRANCHES:
        return "– (whole branches)"
    if pol.selection == SEL_ITEMS:
        return shown(shared)
    fam = pol.family
    if fam == FAM_GENERATIVE and pol.variant == 1:
        return shown(capped(int(knobs.ga_top_k)))
    if fam == FAM_MEMORYBANK and pol.variant == MB_CODE:
        recent, top = int(knobs.mb_code_recent), int(knobs.mb_code_top_k)
        return f"{shown(capped(recent + top))} ({recent} recent + {top})"
    if fam in (FAM_MEMGPT, FAM_WINDOW, FAM_TOKEN_BUFFER):
        return "none (queue)" if knobs.own_caps else shown(shared)
    own = int(knobs.top_k) if knobs.top_k > 0 else shared
    return shown(own)


def ranking_signal(policy: str, knobs: Baselines | None = None) -> str:
    """What a configuration's ranking (or admission) reads, from its family's rules."""
    pol = get_policy(policy)
    knobs = knobs or Baselines()
    rel = "apparent relevance + noise"
    rating = ("rating: apparent relevance, outcome"
              + (", evidence flag" if knobs.importance_reads_evidence else ""))
    if pol.selection == SEL_NONE:
        return "–"
    if pol.selection == SEL_EVERYTHING:
        return "– (everything eligible)"
    if pol.selection == SEL_BRANCHES:
        return "branch priority U_b (Eq. 6)"
    if pol.selection == SEL_ITEMS:
        return rel + (" + w_u·u + w_b·U_b" if pol.scores else "")
    fam = pol.family
    if fam == FAM_TRACERETAIN:
        return f"admission: {rating}; retrieval: {rel}"
    if fam == FAM_GENERATIVE:
        reflect = "; reflection on a poignancy sum" if knobs.ga_reflect_threshold > 0 else ""
        return f"recency + importance ({rating}) + {rel}{reflect}"
    if fam == FAM_MEMORYBANK:
        daily = "; daily summaries" if knobs.mb_summaries else ""
        return f"{rel}; forgetting: time since recall, strength{daily}"
    if fam == FAM_MEM0:
        decision = ("fixed draws" if knobs.mem0_random_decision
                    else "which looks more informative (apparent relevance, outcome)")
        return f"{rel}; decision on a match: {decision}"
    if fam == FAM_MEMGPT:
        when = ("searches when no successful tool result about the subtask is in context "
                "(outcome); " if knobs.search_on_need else "")
        search = (f"{when}conversation_search: string match on the subtask over user "
                  "messages" if knobs.recall_k > 0 else "no search")
        if knobs.letta_memory:
            core = " (or in place of a lower-rated entry)" if knobs.core_replace else ""
            search += ("; on the memory-pressure warning: saves by rating (apparent "
                       f"relevance, outcome) to core memory{core} (always in context) or "
                       "archival"
                       + (f"; archival_memory_search: {rel}" if knobs.archival_k > 0 else ""))
        return f"recency (queue); {search}"
    return "recency (queue)"


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
    from wmtsim.studies.report import run_policies

    res = run_policies(scenario, tuple(policies), n=n, seed=seed, threads=threads)
    return parity_frame(res, scenario.stubs, scenario.baselines,
                        float(scenario.params.budget))


def write_parity(frame: pl.DataFrame, out: Path) -> list[Path]:
    """parity.parquet and parity.md in ``out``."""
    from wmtsim.core.output import atomic_write_bytes, atomic_write_parquet

    out.mkdir(parents=True, exist_ok=True)
    return [atomic_write_parquet(frame, out / "parity.parquet"),
            atomic_write_bytes(out / "parity.md", parity_markdown(frame).encode())]
