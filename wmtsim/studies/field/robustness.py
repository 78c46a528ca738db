"""How robust is each "WMT beats X"? Every verdict of the field's budget table
(docs/field.md) re-tested over seeds and over the flips of the field's modelling
choices: the verdict's share of (seed, flip) settings that agree, and the
settings that flip it.

A *flip* is one named modelling choice of the field set the other way (`FLIPS`); it
runs only the policies whose rules read that knob (WMT's configurations read none, so
WMT's own runs are shared). Every run pairs the policy with ``wmt`` on the same
trajectories (common random numbers), Δ TSR = policy − wmt with its paired test and 95%
interval (`wmtsim.core.inference.paired_difference`), and the verdict of "WMT beats
the policy" is `wmtsim.studies.field.curves.verdict` of the p-value after Holm's
correction over the run's family: every (policy, budget) test of one (seed, setting),
the same family shape as the budget table's TSR verdicts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from wmtsim.core.inference import adjust
from wmtsim.core.knob_readers import readers
from wmtsim.core.policies import FIELD_POLICIES, family_of, get_policy
from wmtsim.studies.field.curves import verdict


@dataclass(frozen=True)
class Flip:
    """One modelling choice of the field set the other way: its overrides and the
    policies whose rules read it."""

    name: str
    overrides: dict[str, Any]
    reads: Callable[[str], bool]


def _readers(*keys: str) -> Callable[[str], bool]:
    """The policies that read any of ``keys`` (`wmtsim.core.knob_readers.READS`): a flip
    is applied to every policy whose rules read its knob, none left out."""
    names = {p for k in keys for p in readers(k)}
    return lambda p: p in names


def _own_cap(p: str) -> bool:
    """The policies whose own cap differs from the shared one, by their family's declared
    `ItemCap` (the rest read ``own_caps`` too, but it changes nothing for them)."""
    pol = get_policy(p)
    return family_of(pol.family).cap(pol.variant).reads_own_caps


def _flip(name: str, overrides: dict[str, Any]) -> Flip:
    """A flip applied to every reader of its knobs."""
    return Flip(name, overrides, _readers(*overrides))


FLIPS: tuple[Flip, ...] = (
    # Every policy whose rating reads the importance stub: TraceRetain's admission, GA's
    # importance, MemGPT's saves at the memory-pressure warning.
    _flip("rater reads the evidence flag", {"baselines.importance_reads_evidence": True}),
    Flip("designs' own item caps", {"baselines.own_caps": True}, _own_cap),
    _flip("TraceRetain rates on arrival (no buffer)", {"baselines.tr_buffer": 0}),
    _flip("Generative Agents never reflects", {"baselines.ga_reflect_threshold": 0}),
    _flip("mem0 decides by fixed draws", {"baselines.mem0_random_decision": True}),
    _flip("MemoryBank: one session (no forgetting)", {"baselines.mb_session_steps": 0}),
    _flip("MemGPT pops through the crossing message", {"baselines.letta_walk": False}),
    _flip("MemGPT never searches", {"baselines.recall_k": 0}),
    _flip("MemGPT without its warning, core and archival memory",
          {"baselines.letta_memory": False}),
    _flip("MemGPT appends only (no core_memory_replace)", {"baselines.core_replace": False}),
    _flip("MemGPT searches at every subtask's answer", {"baselines.search_on_need": False}),
    _flip("MemoryBank without daily summaries", {"baselines.mb_summaries": False}),
    # One summary per day; how many prompt steps a day lasts is the curve's time scale
    # (10). A day as long as a session (5) summarises every session, and forgets faster.
    _flip("MemoryBank: a day is one session (mb_time_scale = 5)",
          {"baselines.mb_time_scale": 5.0}),
    # One rule for every derived summary (GA's thoughts, MemoryBank's daily summaries,
    # TraceRetain's clusters): a result only with the subtask's evidence; flipped, always.
    _flip("the field's summaries are results without evidence",
          {"baselines.summary_is_result": True}),
    # WMT's selector is an LLM call; the field's retrieval is an embedding search, which
    # the stub gives the selector's relevance score for free. Tripling its noise is the
    # other reading (every policy whose retrieval reads the query similarity).
    _flip("the field's retrieval noise tripled", {"baselines.retrieval_noise": 3.0}),
)


def _delta(res: Any, ref: Any, n_resamples: int) -> tuple[float, float, float, float]:
    from wmtsim.core.inference import paired_difference

    d = paired_difference(res, ref, "tsr", n_resamples=n_resamples)
    return float(d["mean"]), float(d["low"]), float(d["high"]), float(d["p"])


def robustness(scenario: Any, budgets: Sequence[int], seeds: Sequence[int],
               policies: Sequence[str] = FIELD_POLICIES, n: int | None = None,
               flips: Sequence[Flip] = FLIPS, n_resamples: int = 2000,
               threads: int | None = None,
               progress: Callable[[str], None] | None = None) -> pl.DataFrame:
    """One row per (policy, budget, seed, setting): Δ TSR vs WMT, its interval and
    WMT's verdict; setting ``default`` or a flip's name."""
    from wmtsim.engine.simulation import simulate
    from wmtsim.engine.world import generate

    n = scenario.n if n is None else n
    rows: list[dict[str, Any]] = []
    for seed in seeds:
        world = generate(scenario.world, seed=seed, n=n)
        for b in budgets:
            s = scenario.with_overrides({"params.budget": int(b)})

            def run(policy: str, sc: Any, w: Any = world) -> Any:
                return simulate(w, policy, params=sc.params, stubs=sc.stubs,
                                threads=threads, baselines=sc.baselines)

            ref = run("wmt", s)
            settings = [("default", s, tuple(policies))]
            for f in flips:
                settings.append((f.name, s.with_overrides(f.overrides),
                                 tuple(p for p in policies if f.reads(p))))
            for name, sc, pols in settings:
                for p in pols:
                    mean, low, high, pv = _delta(run(p, sc), ref, n_resamples)
                    rows.append({"policy": p, "budget": int(b), "seed": int(seed),
                                 "setting": name, "d_tsr": mean, "low": low,
                                 "high": high, "p": pv})
            if progress is not None:
                progress(f"seed={seed} B={b}")
    frame = pl.DataFrame(rows, schema={"policy": pl.Utf8, "budget": pl.Int64,
                                       "seed": pl.Int64, "setting": pl.Utf8,
                                       "d_tsr": pl.Float64, "low": pl.Float64,
                                       "high": pl.Float64, "p": pl.Float64})
    if frame.is_empty():
        return frame.with_columns(pl.lit(None, pl.Float64).alias("p_adjusted"),
                                  pl.lit("").alias("verdict"))
    parts = []
    for part in frame.partition_by(["seed", "setting"], maintain_order=True):
        adj = adjust(part["p"].to_numpy(), "holm")
        parts.append(part.with_columns(
            pl.Series("p_adjusted", adj, dtype=pl.Float64),
            pl.Series("verdict", [verdict(d, float(a)) for d, a in
                                  zip(part["d_tsr"].to_list(), adj, strict=True)],
                      dtype=pl.Utf8)))
    return pl.concat(parts).sort(["seed", "budget"], maintain_order=True)


def significance(verdict: str) -> str:
    """What a verdict says for robustness: *holds (significant)*, *fails (significant)*
    or ``not significant`` (*holds (not significant)* and *tie* differ only in the sign of
    a point estimate that is not significant)."""
    from wmtsim.core.inference import SIGNIFICANT

    return verdict if verdict in SIGNIFICANT else "not significant"


def robustness_markdown(frame: pl.DataFrame, headline_seed: int) -> str:
    """Per (policy, budget): the headline verdict (default setting, ``headline_seed``),
    the share of all (seed, setting) runs whose `significance` agrees, and the settings
    that flip it."""
    lines = ["| policy | B | headline: WMT better (Δ TSR) | agree | flipped by |",
             "|---|---|---|---|---|"]
    for (p, b), g in frame.group_by(["policy", "budget"], maintain_order=True):
        head = g.filter((pl.col("setting") == "default") & (pl.col("seed") == headline_seed))
        if head.height == 0:
            continue
        h = head.row(0, named=True)
        cls = g["verdict"].map_elements(significance, return_dtype=pl.Utf8)
        same = cls == significance(h["verdict"])
        agree = int(same.sum())
        by = sorted({f"{r['setting']} (seed {r['seed']}: {significance(r['verdict'])})"
                     for r, ok in zip(g.iter_rows(named=True), same, strict=True) if not ok})
        lines.append(f"| `{p}` | {b} | {h['verdict']} ({h['d_tsr']:+.3f}) | "
                     f"{agree}/{g.height} | {'; '.join(by) if by else '–'} |")
    lines += ["", "Each (seed, setting) run is one family of (policy, budget) tests of "
              "\"WMT beats the policy\" on TSR, two-sided 5%, Holm within the family; "
              "\"agree\" counts the runs whose verdict is as significant as the "
              "headline's (significant for WMT, significant against, or not significant)."]
    return "\n".join(lines) + "\n"
