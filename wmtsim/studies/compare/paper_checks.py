"""The paper's claims as tests on a `wmtsim.studies.compare.report.Comparison` (`wmtsim compare`).

Every check is a test with a verdict of `wmtsim.core.inference.VERDICTS`, and the checks
of one comparison are one family, corrected together (Holm by default; `read_checks`):

* **orderings** ("Full WMT best", "Linear worst" on a metric; the directions of Tables
  1–3): `wmtsim.core.verdicts.check_claim` on the same estimand the table ranks on —
  Table 4's pooled values Σ/Σ (the paired test of the difference of pooled ratios), the
  per-trajectory means for Tables 1–3;
* **ranges** ("Full WMT within 0.05 of the paper", "tokens −25…−40% vs Linear"): a
  two one-sided tests (TOST) equivalence test of the pooled value, normal theory with
  the linearised (delta-method) standard error; it *fails (significant)* when the value
  lies significantly outside the range (Bonferroni over the two sides).

A check row: claim, verdict, significant, test, p, p_adjusted, family, detail, and
``passed`` (= holds (significant): the headline counts only significant verdicts).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from wmtsim.core.inference import ALPHA, HOLDS, level_text, metric_bound
from wmtsim.core.metrics import BETTER, RATIOS, frame_parts
from wmtsim.core.verdicts import check_claim, read_family

if TYPE_CHECKING:
    from wmtsim.engine.simulation import SimResult

# A `wmtsim.studies.compare.report.Comparison` (not imported: report imports this module).
Comparison = Any

WITHIN = 0.05  # Full WMT's row must lie this close to the paper (ASR, PRR, BR, TSR)
TABLE4_ORDER = ("asr", "prr", "br", "af", "tsr")


def _favour(metric: str, sense: str) -> int:
    higher = BETTER.get(metric) == "higher"
    return 1 if higher == (sense == "best") else -1


def _pooled_values(r: SimResult, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """Numerator and denominator per trajectory (a metric that is not a ratio: its
    finite values over 1, so the pooled value is the mean)."""
    if metric in RATIOS:
        return frame_parts(r.trajectories, metric)
    x = r.trajectories[metric].to_numpy().astype(np.float64)
    ok = np.isfinite(x)
    return np.where(ok, x, 0.0), ok.astype(np.float64)


def _values(results: dict[str, SimResult], metric: str, pooled: bool) -> dict[str, Any]:
    if pooled and metric in RATIOS:
        return {p: _pooled_values(r, metric) for p, r in results.items()}
    return {p: r.trajectories[metric].to_numpy().astype(np.float64)
            for p, r in results.items()}


def range_test(num: np.ndarray, den: np.ndarray, low: float, high: float,
               den_ref: np.ndarray | None = None) -> dict[str, Any]:
    """TOST of ``low ≤ θ ≤ high`` for θ = Σ num / Σ den (or Σ num / Σ den_ref when
    ``den_ref`` is given: a ratio of two configurations' totals), normal theory with the
    linearised standard error. ``p_holds``: θ inside; ``p_fails``: θ outside."""
    from scipy import stats

    den = den if den_ref is None else den_ref
    ok = np.isfinite(num) & np.isfinite(den)
    num, den = num[ok], den[ok]
    n = num.size
    theta = float(num.sum() / den.sum())
    z = (num - theta * den) / den.mean()
    se = float(z.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan
    if not se > 0:
        inside = low <= theta <= high
        p_in, p_out = (0.0, 1.0) if inside else (1.0, 0.0)
    else:
        p_in = max(stats.norm.sf((theta - low) / se), stats.norm.cdf((theta - high) / se))
        p_out = min(1.0, 2 * min(stats.norm.cdf((theta - low) / se),
                                 stats.norm.sf((theta - high) / se)))
    margin = min(theta - low, high - theta)
    return {"value": theta, "se": se, "n": n, "margin": margin, "p_holds": float(p_in),
            "p_fails": float(p_out), "p": min(1.0, 2 * min(p_in, p_out)),
            "test": "TOST equivalence (normal, linearised SE)", "n_nonzero": n,
            "closest": ""}


def _ordering(results: dict[str, SimResult], claim: str, metric: str, subject: str,
              sense: str, pooled: bool, others: tuple[str, ...] | None = None
              ) -> dict[str, Any] | None:
    have = tuple(results)
    others = tuple(p for p in (others or have) if p != subject and p in have)
    if subject not in have or not others:
        return None
    fav = _favour(metric, sense)
    values = _values({p: results[p] for p in (subject, *others)}, metric, pooled)
    r = check_claim(subject, others, fav, values, ALPHA, metric_bound(metric))
    return {"claim": claim, **r}


def table4_checks(comp: Comparison, correction: str = "holm") -> list[dict[str, Any]]:
    """Table 4's claims on pooled values (Σ/Σ, as the paper's table over its scenarios):
    Full WMT best and Linear worst on ASR, PRR, BR, AF, TSR (each against the other
    Table 4 configurations), and Full WMT within `WITHIN` of the paper on ASR, PRR, BR,
    TSR; one family (``correction``)."""
    # the Table 4 configurations of this comparison: those with a paper value
    results = {p: comp.results[p] for p in comp.policies
               if p in comp.results and comp.cell(p, "asr").get("paper") is not None}
    rows: list[dict[str, Any]] = []
    if "wmt" in results and "linear" in results:
        for m in TABLE4_ORDER:
            vals = {p: comp.cell(p, m)["pooled"] for p in results}
            sign = 1 if BETTER.get(m) == "higher" else -1
            ranked = sorted(results, key=lambda p: -sign * vals[p])
            for subject, sense in (("wmt", "best"), ("linear", "worst")):
                word = sense
                who = "Full WMT" if subject == "wmt" else "Linear"
                r = _ordering(results, f"{m.upper()}: {who} {word}", m, subject, sense,
                              True)
                if r is None:
                    continue
                top = ranked[0] if sense == "best" else ranked[-1]
                r["detail"] = (f"{word} is {top} ({vals[top]:.3f}); margin vs "
                               f"{r['closest'] or '–'} {r['margin']:+.3g} (pooled), "
                               f"{r['n_nonzero']} of {r['n']} trajectories differ")
                rows.append(r)
    if "wmt" in results:
        for m in ("asr", "prr", "br", "tsr"):
            c = comp.cell("wmt", m)
            num, den = _pooled_values(results["wmt"], m)
            r = range_test(num, den, c["paper"] - WITHIN, c["paper"] + WITHIN)
            err = c["pooled"] - c["paper"]
            rows.append({"claim": f"{m.upper()}: Full WMT within {WITHIN} of paper", **r,
                         "detail": f"{c['pooled']:.3f} vs {c['paper']:.3f} ({err:+.3f}), "
                                   f"se {r['se']:.3g}"})
    return read_checks(rows, correction)


def table123_checks(comp: Comparison, correction: str = "holm",
                    paper_range: tuple[float, float] = (-0.40, -0.25)
                    ) -> list[dict[str, Any]]:
    """Tables 1–3's directions as paired tests of per-trajectory means (one family);
    ``paper_range``: the paper's range of WMT's token change vs Linear (shown)."""
    res = comp.results
    rows: list[dict[str, Any]] = []

    def above(a: str, b: str, m: str, claim: str) -> None:
        if a in res and b in res:
            r = _ordering({a: res[a], b: res[b]}, claim, m, a, "best" if BETTER.get(m)
                          == "higher" else "worst", False)
            if r is not None:
                rows.append({**r, "detail": f"{a} − {b} = {r['margin']:+.4g} (mean), "
                                            f"{r['n_nonzero']} of {r['n']} differ"})

    above("wmt", "linear", "tsr", "accuracy: Full WMT > Linear")
    if "wmt" in res and "linear" in res:
        lo, hi = paper_range
        w = res["wmt"].trajectories["prompt_tokens"].to_numpy().astype(np.float64)
        lin = res["linear"].trajectories["prompt_tokens"].to_numpy().astype(np.float64)
        r = range_test(w, lin, 1 - 0.40, 1 - 0.25, den_ref=lin)
        rows.append({"claim": "tokens: Full WMT vs Linear −25…−40%", **r,
                     "detail": f"{r['value'] - 1:+.1%} (paper {lo:+.1%} … {hi:+.1%})"})
    above("tree_selection", "tree", "prompt_tokens", "tokens: selection raises (Tree)")
    above("tree_selection_summary", "tree_summary", "prompt_tokens",
          "tokens: selection raises (Tree + Summary)")
    above("tree", "tree_summary", "prompt_tokens", "tokens: summaries lower (Tree)")
    above("tree_selection", "tree_selection_summary", "prompt_tokens",
          "tokens: summaries lower (Tree + Selection)")
    if "no_memory" in res:
        # the subject's mean is the smallest of all (favour −1) on both
        for claim, m in (("No Memory: fewest tokens", "prompt_tokens"),
                         ("No Memory: least accurate", "tsr")):
            r = check_claim("no_memory", tuple(p for p in res if p != "no_memory"), -1,
                            _values(res, m, False), ALPHA, metric_bound(m))
            rows.append({"claim": claim, **r,
                         "detail": f"margin vs {r['closest'] or '–'} {r['margin']:+.4g} "
                                   f"(mean)"})
    return read_checks(rows, correction)


def read_checks(rows: list[dict[str, Any]], correction: str = "holm",
                alpha: float = ALPHA) -> list[dict[str, Any]]:
    """One family: corrected p-values, verdicts, ``passed`` and the family's text."""
    out = read_family(rows, alpha, correction)
    family = level_text(alpha, correction, len(out))
    for r in out:
        r["passed"] = r["verdict"] == HOLDS
        r["family"] = family
    return out
