"""The claims map: where does each of the paper's claims hold?

A *claim* compares configurations on one metric: ``subject`` is the best (or the worst)
of itself and ``others`` — "Full WMT lowest ASR" is ``Claim(metric="asr",
subject="wmt", others=(the other Table 4 configurations), sense="best")``; with one
other configuration it is a plain comparison of two. `claims_map` evaluates a list of
claims (`table4_claims` by default) on every cell of a grid over two world or stub knobs,
run by the sweep machinery (`wmtsim.studies.sweeps.sweep.run_sweep`: resumable, local pool or
Dask), and draws a heatmap per claim.

The test in a cell, on common random numbers (every configuration on the same
trajectories): for each other configuration o, the paired test of
``d_t = s · (x_subject,t − x_o,t)`` with s = ±1 so that the claim says ``mean d > 0``,
over the trajectories where both values are finite (`wmtsim.core.inference.paired_effect`:
the exact permutation test when at most 16 trajectories differ, else the paired t-test).
The claim is an intersection–union test: its p-value for "holds" is the largest pairwise
one-sided p-value; for "fails" (another configuration is better) the smallest, times m
(Bonferroni over the m others); its two-sided p-value is 2 · min of the two
(`wmtsim.core.verdicts.check_claim`).

**The family** is every (claim, cell) test of the map. Its p-values are corrected
together — Holm by default (family-wise error at alpha, valid under any dependence,
which matters: cells run on common random numbers, so their tests are correlated), or
Benjamini–Hochberg (false discovery rate, for exploratory maps), or none — and each
(claim, cell) gets one of the verdicts of `wmtsim.core.inference.VERDICTS`: *holds
(significant)* / *fails (significant)* when its corrected p-value is at most alpha
(two-sided 5% by default, each direction 2.5%), else *holds (not significant)* when the
point estimate favours the claim and *tie* when it does not.

``margin`` is the smallest pairwise mean ``d`` (against ``closest``, the nearest
competitor on the point estimate), in the metric's units, with its 95% interval
(``margin_low``, ``margin_high``: `wmtsim.core.verdicts.margin_interval`, the interval
of the smallest difference over every rival from Bonferroni-simultaneous `paired_effect`
intervals, so it keeps its level when rivals tie and does not depend on which one is
named closest; a sparse or null margin gets the conservative bound, never ``[0, 0]``);
``n_nonzero`` counts the trajectories on which the subject and ``closest`` differ.
``wmtsim claims --precision H`` grows n until every margin interval has a half-width
of at most H (`wmtsim.studies.compare.precision.claims_to_precision`).
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from wmtsim.core.formatting import D3_FORMAT
from wmtsim.core.inference import (
    ALPHA,
    CORRECTION_NAMES,
    CORRECTIONS,
    VERDICT_COLORS,
    VERDICTS,
    level_text,
    resamples_for,
)
from wmtsim.core.metrics import METRICS
from wmtsim.core.policies import POLICIES, TABLE4_POLICIES

if TYPE_CHECKING:
    import altair as alt

    from wmtsim.studies.scenarios.scenario import Scenario
    from wmtsim.studies.sweeps.sweep import Sweep, SweepReport

STATUSES = VERDICTS
STATUS_COLORS = VERDICT_COLORS
CLAIMS_FILE = "claims.parquet"
SWEEP_DIR = "sweep"


@dataclass(frozen=True)
class Claim:
    """``subject`` is the ``sense`` ("best" or "worst") of itself and ``others`` on
    ``metric`` (better = the metric's direction in `wmtsim.core.metrics.METRICS`)."""

    label: str
    metric: str
    subject: str
    others: tuple[str, ...]
    sense: str = "best"

    def __post_init__(self) -> None:
        if self.metric not in METRICS or METRICS[self.metric][1] not in ("higher", "lower"):
            allowed = [m for m, v in METRICS.items() if v[1] in ("higher", "lower")]
            raise ValueError(f"claim {self.label!r}: metric {self.metric!r} has no better "
                             f"direction; allowed: {', '.join(allowed)}")
        if self.sense not in ("best", "worst"):
            raise ValueError(f"claim {self.label!r}: sense must be best or worst, got "
                             f"{self.sense!r}")
        for p in (self.subject, *self.others):
            if p not in POLICIES:
                raise ValueError(f"claim {self.label!r}: policy {p!r} is unknown")
        if not self.others or self.subject in self.others:
            raise ValueError(f"claim {self.label!r}: needs other configurations than "
                             f"{self.subject!r}")

    @property
    def policies(self) -> tuple[str, ...]:
        return (self.subject, *self.others)

    @property
    def favour(self) -> int:
        """+1 when the claim says the subject's mean is the largest, −1 the smallest."""
        higher = METRICS[self.metric][1] == "higher"
        return 1 if higher == (self.sense == "best") else -1


def table4_claims() -> tuple[Claim, ...]:
    """Table 4's orderings: Full WMT best and Linear worst on ASR, PRR, BR, AF and TSR,
    among the five Table 4 configurations (as
    `wmtsim.studies.compare.paper_checks.table4_checks`)."""
    out = []
    for m in ("asr", "prr", "br", "af", "tsr"):
        higher = METRICS[m][1] == "higher"
        best, worst = ("highest", "lowest") if higher else ("lowest", "highest")
        out.append(Claim(f"Full WMT {best} {m.upper()}", m, "wmt",
                         tuple(p for p in TABLE4_POLICIES if p != "wmt"), "best"))
        out.append(Claim(f"Linear {worst} {m.upper()}", m, "linear",
                         tuple(p for p in TABLE4_POLICIES if p != "linear"), "worst"))
    return tuple(out)


# --- the test in one cell ------------------------------------------------------------------


def evaluate(claim: Claim, values: dict[str, np.ndarray], alpha: float = ALPHA
             ) -> dict[str, Any]:
    """The claim's test on one cell (before the family's correction); ``values[policy]``
    are per-trajectory values on the same trajectories (see the module docstring)."""
    from wmtsim.core.inference import metric_bound
    from wmtsim.core.verdicts import check_claim

    return check_claim(claim.subject, claim.others, claim.favour, values, alpha,
                       metric_bound(claim.metric), interval=True)


# --- the map -------------------------------------------------------------------------------


@dataclass
class ClaimsMap:
    """Claims evaluated per grid cell: ``table`` has claim, metric, subject, sense, row,
    the two knobs, status, margin, closest and n (one row per claim and cell)."""

    scenario: str
    parameters: tuple[str, str]
    claims: tuple[Claim, ...]
    table: pl.DataFrame
    sweep_dir: Path
    seconds: float
    report: SweepReport | None = None
    alpha: float = ALPHA
    correction: str = "holm"
    seed: int | None = None
    n: int | None = None
    flatness: pl.DataFrame | None = None  # does each claim's margin differ across cells?

    @property
    def family(self) -> str:
        """The family of tests and how it was read."""
        return (f"{self.table.height} (claim, cell) tests, "
                f"{level_text(self.alpha, self.correction, self.table.height)}")


def parse_vary(item: str) -> tuple[str, float, float]:
    """``KNOB=lo:hi`` -> (knob, lo, hi); ValueError says what is expected."""
    key, eq, rng = item.partition("=")
    lo, colon, hi = rng.partition(":")
    try:
        if not (eq and colon and key.strip()):
            raise ValueError
        low, high = float(lo), float(hi)
        if not (math.isfinite(low) and math.isfinite(high)):
            raise ValueError
        return key.strip(), low, high
    except ValueError:
        raise ValueError(f"--vary {item!r}: expected KNOB=lo:hi with finite numbers, e.g. "
                         "--vary 'poison[*].p_supersede=0:1'") from None


def grid_sweep(scenario: Scenario, vary: Sequence[tuple[str, float, float]], levels: int,
               n: int, seed: int | None, claims: Sequence[Claim]) -> Sweep:
    """The sweep of a claims map: a ``levels`` × ``levels`` grid over two knobs, every
    configuration the claims name, one replicate (validated like a sweep file)."""
    from wmtsim.studies.sweeps.sweep import sweep_from_dict

    if len(vary) != 2 or vary[0][0] == vary[1][0]:
        raise ValueError("a claims map varies exactly two different knobs (--vary twice)")
    policies = list(dict.fromkeys(p for c in claims for p in c.policies))
    data: dict[str, Any] = {
        "name": f"claims-{scenario.name}",
        "description": f"claims map of {scenario.name} over {vary[0][0]} x {vary[1][0]}",
        "scenario": scenario.name, "policies": policies,
        "parameters": {k: {"low": lo, "high": hi, "levels": levels} for k, lo, hi in vary},
        "design": {"kind": "grid", "trajectories": n,
                   **({} if seed is None else {"seed": seed})},
    }
    return sweep_from_dict(data, loader=lambda ref: scenario)


def claims_map(sweep: Sweep, out: str | os.PathLike[str],
               claims: Sequence[Claim] | None = None, *, workers: int = 1,
               scheduler: str | None = None, resume: bool = False, progress: bool = False,
               threads: int | None = None, alpha: float = ALPHA,
               correction: str = "holm") -> ClaimsMap:
    """Run ``sweep`` into ``out``/sweep (only missing points) and evaluate the claims on
    each of its grid cells, as one family of tests (``correction``, module docstring)."""
    from wmtsim.studies.sweeps.sweep import SweepError, run_sweep

    t0 = time.perf_counter()
    if correction not in CORRECTIONS:
        raise ValueError(f"--correction {correction!r} is unknown; allowed: "
                         f"{', '.join(CORRECTIONS)}")
    claims = tuple(claims or table4_claims())
    if sweep.kind != "grid" or len(sweep.parameters) != 2:
        raise SweepError(f"{sweep.name}: a claims map needs a grid design over two "
                         f"parameters (got {sweep.kind} over {len(sweep.parameters)})")
    if len(sweep.scenarios) != 1:
        raise SweepError(f"{sweep.name}: a claims map covers one scenario")
    missing = sorted({p for c in claims for p in c.policies} - set(sweep.policies))
    if missing:
        raise SweepError(f"{sweep.name}: the claims need policies the sweep does not run: "
                         f"{', '.join(missing)}")
    sweep_dir = Path(out) / SWEEP_DIR
    report = run_sweep(sweep, sweep_dir, workers=workers, scheduler=scheduler,
                       resume=resume, progress=progress, threads=threads)
    from wmtsim.studies.sweeps.flatness import margin_flatness

    margins: dict[str, list[tuple[int, np.ndarray]]] = {}
    table = evaluate_sweep(sweep_dir, claims, alpha, correction, margins)
    params = (sweep.parameters[0].key, sweep.parameters[1].key)
    return ClaimsMap(sweep.scenarios[0].name, params, claims, table, sweep_dir,
                     time.perf_counter() - t0, report, alpha, correction,
                     sweep.scenario_seed(sweep.scenarios[0]), sweep.trajectories,
                     margin_flatness(margins, alpha, correction))


def evaluate_sweep(sweep_dir: str | os.PathLike[str], claims: Sequence[Claim],
                   alpha: float = ALPHA, correction: str = "holm",
                   margins: dict[str, list[tuple[int, np.ndarray]]] | None = None
                   ) -> pl.DataFrame:
    """Evaluate ``claims`` on every design row of a sweep folder whose configurations
    are all computed (replicates are pooled: pairs stay within a replicate), and read
    them as one family (``correction``: holm, bh or none). ``margins``, when given,
    receives per claim each cell's (row, per-trajectory favour-signed difference from
    its closest rival), for `wmtsim.studies.sweeps.flatness.margin_flatness`."""
    from wmtsim.core.verdicts import read_family
    from wmtsim.studies.sweeps.store import load_results

    if correction not in CORRECTIONS:
        raise ValueError(f"--correction {correction!r} is unknown; allowed: "
                         f"{', '.join(CORRECTIONS)}")

    res = load_results(sweep_dir)
    params = res.parameters
    metrics = sorted({c.metric for c in claims})
    design = res.design.select("row", "replicate", "policy", "key", *params)
    traj = res.trajectories(["key", "trajectory", *metrics]).collect()
    joined = design.select("row", "replicate", "policy", "key").join(traj, on="key")
    rows: list[dict[str, Any]] = []
    knobs = design.group_by("row").agg([pl.col(p).first() for p in params]).sort("row")
    for knob in knobs.iter_rows(named=True):
        cell = joined.filter(pl.col("row") == knob["row"])
        for claim in claims:
            wide = (cell.filter(pl.col("policy").is_in(claim.policies))
                    .pivot(on="policy", index=["replicate", "trajectory"],
                           values=claim.metric)
                    .sort("replicate", "trajectory"))
            if not set(claim.policies) <= set(wide.columns):
                continue  # a configuration of this cell is not computed yet
            values = {p: wide[p].to_numpy().astype(np.float64) for p in claim.policies}
            r = evaluate(claim, values, alpha)
            rows.append({"claim": claim.label, "metric": claim.metric,
                         "subject": claim.subject, "sense": claim.sense, **knob, **r})
            if margins is not None and r["closest"]:
                d = claim.favour * (values[claim.subject] - values[r["closest"]])
                margins.setdefault(claim.label, []).append((knob["row"], d))
    rows = read_family(rows, alpha, correction)
    for r in rows:
        r["status"] = r.pop("verdict")
        del r["significant"]
    schema: dict[str, Any] = {
        "claim": pl.Utf8, "metric": pl.Utf8, "subject": pl.Utf8, "sense": pl.Utf8,
        "row": pl.Int64, **{p: design.schema[p] for p in params},
        "margin": pl.Float64, "margin_low": pl.Float64, "margin_high": pl.Float64,
        "closest": pl.Utf8, "n": pl.Int64, "n_nonzero": pl.Int64,
        "test": pl.Utf8, "p_holds": pl.Float64, "p_fails": pl.Float64, "p": pl.Float64,
        "p_adjusted": pl.Float64, "status": pl.Utf8}
    return pl.DataFrame(rows, schema=schema)


# --- charts, tables, files -----------------------------------------------------------------


def heatmap_chart(table: pl.DataFrame, x: str, y: str, title: str = "", columns: int = 5
                  ) -> alt.FacetChart:
    """One heatmap per claim over the two knobs, coloured by verdict
    (`wmtsim.core.inference.VERDICTS`), ``columns`` claims per row."""
    import altair as alt

    # Knob names such as poison[*].p_supersede are not valid Vega-Lite field names.
    data = table.with_columns(pl.col(x).alias("x"), pl.col(y).alias("y")).with_columns(
        margin_text=pl.col("margin").round_sig_figs(2).cast(pl.Utf8))
    order = table["claim"].unique(maintain_order=True).to_list()
    base = alt.Chart().encode(
        x=alt.X("x:O", title=x, axis=alt.Axis(format=D3_FORMAT, labelAngle=0)),
        y=alt.Y("y:O", title=y, sort="descending", axis=alt.Axis(format=D3_FORMAT)))
    rect = base.mark_rect(stroke="white").encode(
        color=alt.Color("status:N", scale=alt.Scale(domain=list(STATUSES),
                                                    range=list(STATUS_COLORS)),
                        title="verdict"),
        tooltip=["claim", alt.Tooltip("status:N", title="verdict"),
                 alt.Tooltip("x:Q", title=x, format=D3_FORMAT),
                 alt.Tooltip("y:Q", title=y, format=D3_FORMAT),
                 alt.Tooltip("margin:Q", format=D3_FORMAT), "closest", "n", "n_nonzero",
                 "test", alt.Tooltip("p_adjusted:Q", format=D3_FORMAT)])
    text = base.mark_text(fontSize=9).encode(text="margin_text:N")
    chart = alt.layer(rect, text, data=data.to_pandas()).properties(width=170, height=150)
    faceted = chart.facet(facet=alt.Facet("claim:N", sort=order, title=None),
                          columns=columns)
    return faceted.properties(title=title) if title else faceted


def summary_frame(table: pl.DataFrame, flatness: dict[str, Any] | None = None
                  ) -> pl.DataFrame:
    """Per claim: how many cells have each verdict (one column per verdict); with
    ``flatness`` (claims.json's ``margin_flatness``), whether its margin differs across
    the grid (`margin_words`)."""
    out = (table.group_by("claim", maintain_order=True)
           .agg(*(pl.col("status").eq(s).sum().alias(s) for s in STATUSES),
                pl.len().alias("cells")))
    if flatness:
        words = margin_words(flatness)
        out = out.with_columns(pl.Series("margin across the grid", [
            words.get(c, "–") for c in out["claim"]], dtype=pl.Utf8))
    return out


def render_summary(cm: ClaimsMap) -> Any:
    from rich.table import Table

    cells = cm.table["row"].n_unique() if cm.table.height else 0
    t = Table(title=f"{cm.scenario}: claims over {cm.parameters[0]} × {cm.parameters[1]} "
                    f"({cells} cells per verdict; family: {cm.family})",
              title_justify="left")
    t.add_column("claim")
    headers = ("holds\nsignificant", "holds\nnot sig.", "tie", "fails\nsignificant")
    for h in headers:
        t.add_column(h, justify="right")
    styles = ("green", "", "", "red")
    for r in summary_frame(cm.table).iter_rows(named=True):
        t.add_row(r["claim"], *[f"[{st}]{r[v]}[/{st}]" if st else str(r[v])
                                for v, st in zip(STATUSES, styles, strict=True)])
    return t


def render_flatness(cm: ClaimsMap) -> Any:
    """Per claim: does its margin (against each cell's closest rival) differ across the
    cells at all? (`margin_words`; the family in the title), or None without a test."""
    from rich.table import Table

    if cm.flatness is None or not cm.flatness.height:
        return None
    t = Table(title="Does each claim's margin differ across the grid? "
                    f"({cm.flatness['family'][0]})", title_justify="left")
    t.add_column("claim")
    t.add_column("margin across the grid")
    for claim, words in margin_words(_flatness_record(cm)).items():
        t.add_row(claim, words)
    return t


def margin_words(record: dict[str, Any] | None) -> dict[str, str]:
    """Per claim, the flatness of its margin across the cells in a few words: "flat
    (p = …)" (no significant difference across the grid) or "differs (p = …; k of m
    cells deviate)", p corrected over the map's claims. ``record``: claims.json's
    ``margin_flatness`` (`_flatness_record`)."""
    from wmtsim.core.formatting import num

    if not record:
        return {}
    return {claim: (f"flat (p = {num(r['p_adjusted'], 2)})" if r["flat"] else
                    f"differs (p = {num(r['p_adjusted'], 2)}; {r['deviating']} of "
                    f"{r['points']} cells deviate)")
            for claim, r in record["claims"].items()}


CRN_NOTE = ("Cells run on common random numbers, so their tests are correlated: a claim "
            "that holds in every cell is one finding seen many times, not many "
            "independent ones. Holm is valid under any dependence; Benjamini–Hochberg "
            "assumes positive dependence.")


def write_claims(cm: ClaimsMap, out: str | os.PathLike[str], charts: bool = True,
                 precision: dict[str, Any] | None = None) -> list[Path]:
    """claims.parquet, claims_map.html/.png, claims.json (definitions, knobs) and
    manifest.json into ``out`` (the hidden folder of `wmtsim.core.output.result_folder`;
    the sweep stays in the result's ``sweep/``). ``precision``: how ``--precision`` grew
    n (`wmtsim.studies.compare.precision.precision_record`), recorded in both files."""
    from wmtsim.core.output import atomic_write_bytes, atomic_write_parquet, write_manifest
    from wmtsim.studies.sweeps.analysis import write_chart

    root = Path(out)
    root.mkdir(parents=True, exist_ok=True)
    written = [atomic_write_parquet(cm.table, root / CLAIMS_FILE)]
    if charts and cm.table.height:
        title = f"{cm.scenario}: where each claim holds"
        written += write_chart(heatmap_chart(cm.table, *cm.parameters, title),
                               root / "claims_map")
    from wmtsim.core.provenance import provenance

    meta = {"scenario": cm.scenario, "parameters": list(cm.parameters),
            "claims": [asdict(c) for c in cm.claims], "sweep": SWEEP_DIR,
            "family": cm.family, "correction_name": CORRECTION_NAMES[cm.correction],
            "note": CRN_NOTE, "seconds": round(cm.seconds, 3),
            "margin_flatness": _flatness_record(cm),
            # the margin intervals are paired bootstraps (`paired_effect`)
            **provenance(cm.seed, cm.n, resamples_for(cm.alpha), cm.alpha,
                         cm.correction),
            **({} if precision is None else {"precision": precision})}
    written.append(atomic_write_bytes(root / "claims.json",
                                      json.dumps(meta, indent=2).encode()))
    written.append(write_manifest(root, "claims", {
        **meta, "files": [p.name for p in written], "cells": cm.table["row"].n_unique()
        if cm.table.height else 0}))
    return written


def _flatness_record(cm: ClaimsMap) -> dict[str, Any] | None:
    """What claims.json records of `margin_flatness`: its family and, per claim, the
    test's reading (`wmtsim.studies.sweeps.flatness`)."""
    if cm.flatness is None or not cm.flatness.height:
        return None
    keep = ("points", "n", "statistic", "critical", "p", "p_adjusted", "flat",
            "deviating", "low", "high", "test")
    return {"family": cm.flatness["family"][0],
            "claims": {r["policy"]: {k: _json_value(r[k]) for k in keep}
                       for r in cm.flatness.iter_rows(named=True)}}


def _json_value(v: Any) -> Any:
    """A float that JSON can hold: an infinite or undefined statistic is null."""
    return None if isinstance(v, float) and not np.isfinite(v) else v


_TABLE_COLUMNS = ("claim", "metric", "subject", "sense", "row", "status", "margin",
                  "margin_low", "margin_high", "closest", "n", "n_nonzero", "test",
                  "p_holds", "p_fails", "p", "p_adjusted")


def knob_columns(table: pl.DataFrame) -> tuple[str, ...]:
    """The knob columns of a claims table (everything but the fixed columns)."""
    return tuple(c for c in table.columns if c not in _TABLE_COLUMNS)


def load_claims(path: str | os.PathLike[str], root: str | os.PathLike[str] | None = None
                ) -> tuple[dict[str, Any], pl.DataFrame]:
    """A claims map written by `write_claims` (its folder or its claims.parquet) or a table
    alone (a .parquet, as why_study/tables/ holds them), read through the one door
    (`wmtsim.core.input_files`: regular files, size-capped, never a FIFO): no link below
    ``root`` (default: the map's own folder; a table alone may not be one)."""
    from wmtsim.core.input_files import MAX_TABLE_BYTES, open_regular, read_regular, read_table

    folder = Path(path)
    if folder.name == CLAIMS_FILE and (folder.parent / "claims.json").exists():
        folder = folder.parent  # a map's own table: read with the map's claims.json
    if folder.is_file() and folder.suffix == ".parquet":
        with open_regular(folder, inside=True, limit=MAX_TABLE_BYTES, root=root) as f:
            table = _current(folder, pl.read_parquet(f))
        return {"scenario": None, "parameters": list(knob_columns(table))}, table
    try:
        meta = json.loads(read_regular(folder / "claims.json", root=root or folder))
    except FileNotFoundError:
        raise ValueError(f"{folder}: not a claims map (no claims.json, and not a "
                         ".parquet claims table)") from None
    return meta, _current(folder, read_table(folder / CLAIMS_FILE, root or folder))


# Columns a claims table of this version has; an older table lacks some (and speaks the
# older verdict vocabulary), so it is refused with a message rather than misdrawn.
_REQUIRED = ("claim", "status", "margin", "n", "n_nonzero", "test", "p_adjusted")


def _current(path: Path, table: pl.DataFrame) -> pl.DataFrame:
    missing = [c for c in _REQUIRED if c not in table.columns]
    if missing or not set(table["status"].unique().to_list()) <= set(STATUSES):
        raise ValueError(f"{path}: a claims table written by an older wmtsim (missing "
                         f"{', '.join(missing) or 'nothing'}; verdicts "
                         f"{sorted(table['status'].unique().to_list())}); rerun "
                         "`wmtsim claims` (or `make study`) to rewrite it")
    return table
