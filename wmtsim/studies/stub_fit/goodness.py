"""Goodness of fit of a fitted stub log (docs/stub_logs.md, "Goodness of fit"): does the
stub family describe the log at all?

For each kind of observation, selections (L2), compromises (L3) and answers' correctness
(L4), the observations are sorted by the probability the fitted model gives them and cut
into ten groups of equal size (deciles of predicted probability); each group's observed
rate is set beside its mean predicted probability (with a Wilson 95% interval), and the
Hosmer–Lemeshow statistic Σ_g (O_g − E_g)² / (E_g (1 − E_g / n_g)) is referred to χ² with
(groups − 2) degrees of freedom: a small p says the log is not what the family produces.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from scipy.stats import chi2

from wmtsim.studies.stub_fit import likelihoods as L
from wmtsim.studies.stub_fit.fit import StubFit

GROUPS = 10
MISFIT_P = 0.01
"""A kind whose Hosmer–Lemeshow p is below this is reported as not described."""
KINDS = ("selection", "compromise", "correct")


def predictions(fit: StubFit) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """(predicted probability, observed 0/1) per kind of observation, at the fit."""
    st, d = fit.stubs(), fit.data
    theta = np.array([getattr(st, n) for n in L.SELECTOR], dtype=float)
    out = {"selection": (L.selector_probability(theta, *d.selector[:4]), d.selector[4])}
    c_no = L.compromise_probability(st.p_persuade, d.persuasiveness, d.event,
                                    d.evidence.shape[0])
    c_ev = L.compromise_probability(st.p_persuade_vs_evidence, d.persuasiveness, d.event,
                                    d.evidence.shape[0])
    c = np.where(d.evidence > 0, c_ev, c_no)
    has_poison = np.zeros(d.evidence.shape[0], dtype=bool)
    has_poison[d.event[d.persuasiveness > 0]] = True
    out["compromise"] = (c[has_poison], d.compromised[has_poison])
    theta_c = np.array([getattr(st, n) for n in L.CORRECTNESS], dtype=float)
    out["correct"] = (L.correct_probability(theta_c, d.evidence, d.compromised, d.tokens),
                      d.correct)
    return out


def _wilson(k: float, n: int) -> tuple[float, float]:
    z = 1.959963984540054
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def calibration(fit: StubFit, groups: int = GROUPS) -> pl.DataFrame:
    """One row per kind and decile of predicted probability: ``n``, mean ``predicted``,
    ``observed`` rate with its Wilson interval (``low``, ``high``)."""
    rows: list[dict[str, Any]] = []
    for kind, (p, y) in predictions(fit).items():
        if p.shape[0] == 0:
            continue
        order = np.argsort(p, kind="stable")
        for g, idx in enumerate(np.array_split(order, min(groups, p.shape[0]))):
            if idx.shape[0] == 0:
                continue
            k = float(y[idx].sum())
            low, high = _wilson(k, idx.shape[0])
            rows.append({"kind": kind, "decile": g + 1, "n": int(idx.shape[0]),
                         "predicted": float(p[idx].mean()),
                         "observed": k / idx.shape[0], "low": low, "high": high})
    schema = {"kind": pl.String, "decile": pl.Int64, "n": pl.Int64, "predicted": pl.Float64,
              "observed": pl.Float64, "low": pl.Float64, "high": pl.Float64}
    return pl.DataFrame(rows, schema=schema)


def misfit(table: pl.DataFrame) -> pl.DataFrame:
    """Hosmer–Lemeshow per kind of ``table`` (`calibration`): ``statistic``, ``df``, ``p``,
    ``described`` (p ≥ `MISFIT_P`)."""
    rows = []
    for kind in KINDS:
        t = table.filter(pl.col("kind") == kind)
        if t.height == 0:
            continue
        n = t["n"].to_numpy().astype(float)
        e = t["predicted"].to_numpy() * n
        o = t["observed"].to_numpy() * n
        var = e * (1 - e / n)
        stat = float(np.sum(np.where(var > 0, (o - e) ** 2 / np.maximum(var, 1e-300), 0.0)))
        df = max(t.height - 2, 1)
        p = float(chi2.sf(stat, df))
        rows.append({"kind": kind, "statistic": stat, "df": df, "p": p,
                     "described": p >= MISFIT_P})
    return pl.DataFrame(rows, schema={"kind": pl.String, "statistic": pl.Float64,
                                      "df": pl.Int64, "p": pl.Float64,
                                      "described": pl.Boolean})


def calibration_chart(table: pl.DataFrame, title: str = "") -> Any:
    """Observed vs predicted rate per decile, one panel per kind, the diagonal the perfect
    calibration (Altair)."""
    import altair as alt

    from wmtsim.core.formatting import D3_FORMAT

    x = alt.X("predicted:Q", title="predicted probability (decile mean)",
              scale=alt.Scale(domain=[0, 1]))
    y = alt.Y("observed:Q", title="observed rate", scale=alt.Scale(domain=[0, 1]))
    diagonal = alt.Chart().mark_rule(strokeDash=[4, 4], color="gray").encode(
        x=alt.datum(0.0), y=alt.datum(0.0), x2=alt.datum(1.0), y2=alt.datum(1.0))
    bars = alt.Chart().mark_rule().encode(x=x, y="low:Q", y2="high:Q")
    # Tooltips in the project's precision policy (D3_FORMAT), as every chart's.
    points = alt.Chart().mark_point(filled=True, size=50).encode(
        x=x, y=y, tooltip=["kind:N", "decile:Q", "n:Q",
                           *(alt.Tooltip(f"{c}:Q", format=D3_FORMAT)
                             for c in ("predicted", "observed", "low", "high"))])
    panel = alt.layer(diagonal, bars, points, data=alt.Data(values=table.to_dicts())
                      ).properties(width=220, height=220)
    return panel.facet(column=alt.Column("kind:N", title=None, sort=list(KINDS))
                       ).properties(title=title or "observed vs predicted, by decile of "
                                    "predicted probability")


def write_chart(table: pl.DataFrame, path: Path, title: str = "") -> Path:
    """The calibration chart as PNG at ``path`` through vl-convert, or, where vl-convert
    is not installed, its Vega-Lite JSON beside it (``.vl.json``)."""
    from wmtsim.core.output import atomic_write_bytes, atomic_write_text

    spec = calibration_chart(table, title).to_json()
    try:
        import vl_convert as vlc
    except ImportError:
        return atomic_write_text(path.with_suffix(".vl.json"), spec)
    return atomic_write_bytes(path, vlc.vegalite_to_png(spec, scale=2))
