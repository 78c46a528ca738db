"""The field on equal terms: every policy across token budgets, on common random numbers.

`budget_curves` runs each policy at each budget B (`Params.budget`, the one budget every
selective policy's context memory must fit, docs/field.md) on the very same generated
trajectories, and returns one row per (policy, budget, metric): the mean with a 95%
percentile-bootstrap interval and the paired difference against ``wmt`` at the same
budget (`wmtsim.core.inference.paired_difference`: exact when few trajectories differ).
`read_verdicts` reads each "WMT beats X" on TSR and on ASR as a claim in the verdict
vocabulary of `wmtsim.core.inference`, one family per metric (every policy × budget of
the table), Holm by default. `curve_chart` draws TSR against prompt tokens per policy
across budgets (Altair); `write_curves` writes curves.parquet, curves.md and curves.png
(vl-convert). Used by ``wmtsim compare --budget B1,B2,...`` and ``python scripts/field_table.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import pairwise
from pathlib import Path
from typing import Any

import polars as pl

from wmtsim.core.formatting import D3_FORMAT, interval, num
from wmtsim.core.inference import ALPHA, CORRECTION_NAMES, directed_verdict
from wmtsim.core.inference import adjust as adjust_p
from wmtsim.studies.scenarios.scenario import Scenario

CURVE_METRICS = ("tsr", "asr", "prompt_tokens")
CURVE_RESAMPLES = 2000
"""Bootstrap resamples of the curves' intervals (`budget_curves`'s default)."""


def budget_curves(scenario: Scenario, budgets: Sequence[int], policies: Sequence[str],
                  n: int | None = None, seed: int | None = None, threads: int | None = None,
                  metrics: Sequence[str] = CURVE_METRICS, n_resamples: int = CURVE_RESAMPLES,
                  progress: Callable[[str], None] | None = None) -> pl.DataFrame:
    """policy, budget, metric, mean, low, high, d_mean, d_low, d_high, d_p, d_n_nonzero
    (Δ = policy − wmt, paired per trajectory, with its two-sided p-value and the
    trajectories on which the two differ; null for wmt itself), then `read_verdicts`'s
    columns. One world for every budget and policy."""
    from wmtsim.core.bootstrap import mean_ci
    from wmtsim.core.inference import paired_difference
    from wmtsim.engine.simulation import simulate
    from wmtsim.engine.world import generate

    if "wmt" not in policies:
        policies = ("wmt", *policies)
    n = scenario.n if n is None else n
    seed = scenario.seed if seed is None else seed
    world = generate(scenario.world, seed=seed, n=n)
    rows: list[dict[str, Any]] = []
    for b in budgets:
        s = scenario.with_overrides({"params.budget": int(b)})
        res = {p: simulate(world, p, params=s.params, stubs=s.stubs, threads=threads,
                           baselines=s.baselines) for p in dict.fromkeys(policies)}
        ref = res["wmt"]
        for p, r in res.items():
            for m in metrics:
                x = r.trajectories[m].to_numpy().astype(float)
                ci = mean_ci(x, n_resamples=n_resamples, seed=0)
                row: dict[str, Any] = {"policy": p, "budget": int(b), "metric": m,
                                       "mean": ci["mean"], "low": ci["low"],
                                       "high": ci["high"], "d_mean": None, "d_low": None,
                                       "d_high": None, "d_p": None, "d_n_nonzero": None}
                if p != "wmt":
                    d = paired_difference(r, ref, m, n_resamples=n_resamples)
                    row.update(d_mean=d["mean"], d_low=d["low"], d_high=d["high"],
                               d_p=d["p"], d_n_nonzero=d["n_nonzero"])
                rows.append(row)
        if progress is not None:
            progress(f"B={b}")
    frame = pl.DataFrame(rows, schema={"policy": pl.Utf8, "budget": pl.Int64,
                                       "metric": pl.Utf8, "mean": pl.Float64,
                                       "low": pl.Float64, "high": pl.Float64,
                                       "d_mean": pl.Float64, "d_low": pl.Float64,
                                       "d_high": pl.Float64, "d_p": pl.Float64,
                                       "d_n_nonzero": pl.Int64})
    return read_verdicts(frame)


VERDICT_METRICS = {"tsr": True, "asr": False}
"""The metrics whose "WMT beats X" is read as a claim, and whether higher is better."""
CORRECTION = "holm"


def verdict(d_mean: float | None, p_adjusted: float | None, higher_is_better: bool = True,
            alpha: float = ALPHA) -> str:
    """The claim "WMT beats the policy" from Δ = policy − wmt and its corrected two-sided
    p-value, in the verdict vocabulary (`wmtsim.core.inference.directed_verdict`); empty
    for WMT itself."""
    if d_mean is None or p_adjusted is None:
        return ""
    return directed_verdict(-d_mean if higher_is_better else d_mean, p_adjusted, alpha)


def read_verdicts(frame: pl.DataFrame, correction: str = CORRECTION,
                  by: tuple[str, ...] = ()) -> pl.DataFrame:
    """Add ``d_p_adjusted`` and ``verdict`` ("WMT beats the policy") to the rows of
    `VERDICT_METRICS`: each metric's (policy, budget) tests are one family (within each
    group of ``by``), corrected by ``correction``."""
    out = []
    for part in frame.partition_by(["metric", *by], maintain_order=True):
        m = part["metric"][0]
        ps = part["d_p"].fill_null(float("nan")).to_numpy()
        adj = adjust_p(ps, correction) if m in VERDICT_METRICS else ps * float("nan")
        verdicts = [verdict(d, None if a != a else float(a), VERDICT_METRICS.get(m, True))
                    if m in VERDICT_METRICS else ""
                    for d, a in zip(part["d_mean"].to_list(), adj, strict=True)]
        out.append(part.with_columns(pl.Series("d_p_adjusted", adj, dtype=pl.Float64),
                                     pl.Series("verdict", verdicts, dtype=pl.Utf8)))
    return pl.concat(out) if out else frame.with_columns(
        pl.lit(None, pl.Float64).alias("d_p_adjusted"), pl.lit("").alias("verdict"))


VERDICT_LABEL = "WMT better (Holm)"
"""A cell's verdict, named as adjusted: the Δ interval beside it is not (`ADJUSTMENT`)."""

ADJUSTMENT = ("The Δ intervals are paired 95% intervals, not adjusted; the verdicts are "
              "Holm-adjusted, so an interval that excludes 0 can stand beside a tie.")


def curves_family(frame: pl.DataFrame, correction: str = CORRECTION) -> str:
    """The family and level of the table's verdicts, as printed under it."""
    tests = frame.filter(pl.col("metric").is_in(list(VERDICT_METRICS))
                         & pl.col("d_p").is_not_null())
    per = tests.group_by("metric").len()
    sizes = ", ".join(f"{r['metric'].upper()}: {r['len']}" for r in per.sort("metric")
                      .iter_rows(named=True))
    return (f"Verdicts of \"WMT beats the policy\": each metric is one family ({sizes} "
            f"tests), two-sided {ALPHA:.0%}, {CORRECTION_NAMES[correction]} within each "
            "family. The policies run on common random numbers, so the tests are "
            "correlated (Holm holds under any dependence). " + ADJUSTMENT)


def curves_markdown(frame: pl.DataFrame, policies: Sequence[str] | None = None,
                    metrics: Sequence[str] = CURVE_METRICS) -> str:
    """One row per policy, one column per (budget, metric): mean and, for the field,
    Δ vs WMT [95% interval] with the verdict of "WMT better" on TSR and ASR
    (`read_verdicts`), and the family under the table."""
    budgets = sorted(set(frame["budget"].to_list()))
    pols = list(policies or dict.fromkeys(frame["policy"].to_list()))
    head = ["policy"] + [f"B={b} {m}" for b in budgets for m in metrics]
    lines = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    index = {(r["policy"], r["budget"], r["metric"]): r for r in frame.iter_rows(named=True)}
    for p in pols:
        cells = [f"`{p}`"]
        for b in budgets:
            for m in metrics:
                r = index.get((p, b, m))
                if r is None:
                    cells.append("–")
                    continue
                # The precision policy (three significant digits), as `wmtsim compare
                # --budget` prints the same cells.
                cell = num(r["mean"])
                if r["d_mean"] is not None:
                    cell += "<br>Δ " + interval(r["d_mean"], r["d_low"], r["d_high"],
                                                sign=True)
                    if r.get("verdict"):
                        cell += f"<br>{VERDICT_LABEL}: {r['verdict']}"
                cells.append(cell)
        lines.append("| " + " | ".join(cells) + " |")
    note = flat_note(frame.filter(pl.col("policy").is_in(pols)))
    family = curves_family(frame) if "d_p" in frame.columns else ""
    return ("\n".join(lines) + "\n" + (f"\n{family}\n" if family else "")
            + (f"\n{note}\n" if note else ""))


def flat_note(frame: pl.DataFrame) -> str:
    """Which policies' rows do not change between two neighbouring budgets (every metric
    the same): B does not bind there, something else does (the item cap, the world's
    size, a window). Empty when every curve moves."""
    budgets = sorted(set(frame["budget"].to_list()))
    index = {(r["policy"], r["budget"], r["metric"]): r["mean"]
             for r in frame.iter_rows(named=True)}
    metrics = sorted(set(frame["metric"].to_list()))
    from wmtsim.core.policies import SEL_EVERYTHING, SEL_NONE, get_policy

    notes = []
    for lo, hi in pairwise(budgets):  # B does not apply to the unselective ones at all
        same = [p for p in dict.fromkeys(frame["policy"].to_list())
                if get_policy(p).selection not in (SEL_NONE, SEL_EVERYTHING)
                and all(index.get((p, lo, m)) == index.get((p, hi, m)) for m in metrics)]
        if same:
            notes.append(f"B = {lo} and B = {hi} give identical rows for "
                         + ", ".join(f"`{p}`" for p in same)
                         + ": B does not bind them there (the item cap, the world's size or "
                           "their own window does).")
    return "\n".join(notes)


def curve_chart(frame: pl.DataFrame, title: str = "") -> Any:
    """TSR against mean prompt tokens per trajectory, one line per policy across budgets
    (points labelled by B), WMT drawn thicker."""
    import altair as alt

    wide = (frame.filter(pl.col("metric").is_in(["tsr", "prompt_tokens"]))
            .pivot(on="metric", index=["policy", "budget"], values="mean")
            .sort(["policy", "budget"]))
    data = wide.with_columns((pl.col("policy") == "wmt").alias("is_wmt")).to_dicts()
    base = alt.Chart(alt.Data(values=data)).encode(
        x=alt.X("prompt_tokens:Q", title="prompt tokens per trajectory (mean)",
                scale=alt.Scale(zero=False)),
        y=alt.Y("tsr:Q", title="task success rate (TSR)"),
        color=alt.Color("policy:N", legend=alt.Legend(columns=2, symbolLimit=0)),
        detail="policy:N",
    )
    lines = base.mark_line(point=True).encode(
        order="budget:Q",
        strokeWidth=alt.condition("datum.is_wmt", alt.value(4), alt.value(1.5)),
        tooltip=["policy:N", "budget:Q", alt.Tooltip("tsr:Q", format=D3_FORMAT),
                 alt.Tooltip("prompt_tokens:Q", format=D3_FORMAT)])
    return lines.properties(width=640, height=420, title=title)


def write_curves(frame: pl.DataFrame, out: Path, title: str = "",
                 policies: Sequence[str] | None = None) -> list[Path]:
    """curves.parquet, curves.md and curves.png (Altair through vl-convert) in ``out``."""
    import vl_convert as vlc

    from wmtsim.core.output import atomic_write_bytes, atomic_write_parquet

    out.mkdir(parents=True, exist_ok=True)
    written = [atomic_write_parquet(frame, out / "curves.parquet"),
               atomic_write_bytes(out / "curves.md",
                                  curves_markdown(frame, policies).encode())]
    spec = curve_chart(frame, title).to_json()
    written.append(atomic_write_bytes(out / "curves.png", vlc.vegalite_to_png(spec, scale=2)))
    return written


def parse_budgets(text: str) -> list[int]:
    """``"200,400,800"`` → [200, 400, 800]; ValueError naming the bad item."""
    import re

    out = []
    for part in text.split(","):
        part = part.strip()
        # ASCII digits only ("²".isdigit() is true); B is bounded like Params.budget.
        if not re.fullmatch(r"[0-9]{1,16}", part) or not 1 <= int(part) <= 2**53:
            raise ValueError(f"--budget {part[:40]!r} is invalid; allowed: integers in "
                             "[1, 2^53] separated by commas, e.g. 200,400,800")
        out.append(int(part))
    if len(out) > 1000:
        raise ValueError(f"--budget: {len(out)} budgets; allowed: at most 1000")
    if not out:
        raise ValueError("--budget is empty; allowed: e.g. 200,400,800")
    return list(dict.fromkeys(out))
