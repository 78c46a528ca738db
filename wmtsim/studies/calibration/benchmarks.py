"""Tables 1–3 per model × benchmark: a world per benchmark, a stub profile per model.

The paper reports accuracy (the percentage of correctly completed tasks) and prompt tokens
(millions, over the whole benchmark) for three base models (Qwen3-8B, Gemma 4 E4B,
Llama-3.1-8B) on two benchmarks (GAIA-Text, 127 questions; GAIA, 165). Each cell of
Tables 1–3 is one corpus of that many questions, so it is judged like Table 4
(`wmtsim.studies.calibration.inference`): the simulator's predictive distribution over replicate
corpora of the benchmark's size.

* `paper_cell` gives one model × benchmark's paper values: accuracy as a fraction (the
  simulator's TSR) and prompt tokens per task (millions · 10⁶ / questions).
* `benchmark_scenario` is the benchmark's world (``gaia_text`` / ``gaia`` scenario) with
  the model's stub profile (``wmtsim/data/profiles.toml``) applied as overrides.
* `directions` lists the paper's own directions in a cell, read from its numbers: for
  each pair of configurations that the paper's text compares, the sign of the paper's
  difference (a tie has no direction).
* `check_directions` tests each direction on replicate corpora on common random numbers:
  the mean difference over all simulated tasks with its 95% interval (normal, from the
  replicate spread), and the 95% predictive interval of the difference in one corpus of
  the benchmark's size, with whether the paper's difference falls inside it.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

import numpy as np

from wmtsim.studies.calibration.inference import Replicates, replicate

if TYPE_CHECKING:
    from wmtsim.studies.scenarios.scenario import Scenario

BENCHMARKS = {"GAIA-Text": 127, "GAIA": 165}  # questions (Appendix A.2)
MODELS = ("Qwen3-8B", "Gemma 4 E4B", "Llama-3.1-8B")
SCENARIOS = {"GAIA-Text": "gaia_text", "GAIA": "gaia"}
CONFIGS = ("no_memory", "linear", "tree", "tree_selection", "tree_summary",
           "tree_selection_summary", "wmt")
# Pairs the paper's text compares (Table 1 headline, Tables 2–3 trends): (a, b, metric).
PAIRS = (
    ("wmt", "linear", "tsr"), ("wmt", "linear", "prompt_tokens"),
    ("tree", "linear", "tsr"),
    ("tree_selection", "tree", "tsr"), ("tree_selection", "tree", "prompt_tokens"),
    ("tree_selection_summary", "tree_summary", "prompt_tokens"),
    ("tree_summary", "tree", "prompt_tokens"),
    ("tree_selection_summary", "tree_selection", "prompt_tokens"),
    ("wmt", "tree_summary", "tsr"), ("wmt", "tree_selection_summary", "tsr"),
    ("no_memory", "linear", "tsr"), ("no_memory", "linear", "prompt_tokens"),
)
METRICS = ("tsr", "prompt_tokens")


def paper_cell(benchmark: str, model: str) -> dict[str, dict[str, float]]:
    """config -> {"tsr": accuracy fraction, "prompt_tokens": tokens per task}."""
    from wmtsim.studies.compare.report import paper_rows

    if benchmark not in BENCHMARKS or model not in MODELS:
        raise ValueError(f"no Tables 1–3 cell {benchmark!r} × {model!r}; allowed: "
                         f"{', '.join(BENCHMARKS)} × {', '.join(MODELS)}")
    q = BENCHMARKS[benchmark]
    out: dict[str, dict[str, float]] = {}
    for r in paper_rows():
        if r["table"] not in ("table1", "table2", "table3"):
            continue
        if r["benchmark"] != benchmark or r["model"] != model:
            continue
        v = float(r["value"])
        if r["metric"] == "accuracy_pct":
            out.setdefault(r["config"], {})["tsr"] = v / 100.0
        elif r["metric"] == "prompt_tokens_millions":
            out.setdefault(r["config"], {})["prompt_tokens"] = v * 1e6 / q
    return out


@cache
def profiles() -> dict[str, dict[str, Any]]:
    """Model -> its stub profile (overrides), from ``wmtsim/data/profiles.toml``."""
    text = (resources.files("wmtsim") / "data" / "profiles.toml").read_text("utf-8")
    data = tomllib.loads(text)
    out = {}
    for model in MODELS:
        section = data.get(model)
        if section is None:
            raise ValueError(f"profiles.toml: no [{model!r}] profile")
        out[model] = {f"{part}.{k}": v for part, table in section.items()
                      for k, v in table.items()}
    return out


def benchmark_scenario(benchmark: str, model: str,
                       overrides: Mapping[str, Any] | None = None) -> Scenario:
    """The benchmark's world with the model's profile (and ``overrides``) applied."""
    from wmtsim.studies.scenarios.scenario import load_scenario

    paper_cell(benchmark, model)  # validates the names
    sc = load_scenario(SCENARIOS[benchmark])
    return sc.with_overrides({**profiles()[model], **(overrides or {})})


def directions(cell: Mapping[str, Mapping[str, float]]) -> list[dict[str, Any]]:
    """The paper's directions in one cell: +1 when a's value is above b's, −1 below."""
    out = []
    for a, b, m in PAIRS:
        if a in cell and b in cell and m in cell[a] and m in cell[b]:
            d = cell[a][m] - cell[b][m]
            if d != 0:
                out.append({"a": a, "b": b, "metric": m, "sign": 1 if d > 0 else -1,
                            "paper_diff": d})
    return out


def replicate_cell(scenario: Scenario, benchmark: str, replicates: int,
                   seed: int | None = None) -> Replicates:
    """Every Tables 1–3 configuration on ``replicates`` corpora of the benchmark's size."""
    return replicate(scenario, CONFIGS, replicates, BENCHMARKS[benchmark], seed,
                     metrics=METRICS)


def check_directions(rep: Replicates, cell: Mapping[str, Mapping[str, float]]
                     ) -> list[dict[str, Any]]:
    """Each of the paper's directions on the replicate corpora (module doc).

    ``status``: ``holds`` when the mean difference's 95% interval has the paper's sign,
    ``fails`` when it has the opposite sign, ``undecided`` when it contains 0.
    """
    out = []
    for d in directions(cell):
        x = rep.values[d["a"]][d["metric"]] - rep.values[d["b"]][d["metric"]]
        x = x[np.isfinite(x)]
        mean = float(x.mean())
        half = 1.96 * float(x.std(ddof=1)) / math.sqrt(x.size) if x.size > 1 else math.inf
        lo, hi = mean - half, mean + half
        s = d["sign"]
        status = ("holds" if s * lo > 0 and s * hi > 0 else
                  "fails" if s * lo < 0 and s * hi < 0 else "undecided")
        p_lo, p_hi = (float(q) for q in np.quantile(x, [0.025, 0.975]))
        out.append({**d, "sim_diff": mean, "low": lo, "high": hi, "status": status,
                    "predictive_low": p_lo, "predictive_high": p_hi,
                    "paper_inside": bool(p_lo <= d["paper_diff"] <= p_hi)})
    return out


def summary(checks: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """How many directions hold, fail and are undecided."""
    return {s: sum(c["status"] == s for c in checks) for s in ("holds", "undecided", "fails")}


# --- fitting a model's profile on both benchmarks ------------------------------------------


def profile_objective(model: str, overrides: Mapping[str, Any], replicates: int,
                      metrics: Sequence[str] = ("tsr",), kind: str = "nll",
                      seed: int | None = None) -> tuple[float, dict[str, Replicates]]:
    """The model's objective summed over both benchmarks (`inference.objective` on each
    benchmark's seven configurations), with the replicates it was computed from."""
    from wmtsim.studies.calibration.inference import objective, predictive_cells

    total = 0.0
    reps = {}
    for b in BENCHMARKS:
        rep = replicate_cell(benchmark_scenario(b, model, overrides), b, replicates, seed)
        cell = paper_cell(b, model)
        total += objective(predictive_cells(rep, cell), CONFIGS, metrics, kind)
        reps[b] = rep
    return total, reps


def fit_profile(model: str, knobs: Sequence[Any], replicates: int = 8, maxiter: int = 3,
                popsize: int = 3, metrics: Sequence[str] = ("tsr",), kind: str = "nll",
                seed: int = 0) -> dict[str, Any]:
    """Fit ``knobs`` (`wmtsim.studies.calibration.calibrate.Knob`) of the model's profile on both
    benchmarks at once (differential evolution, seeded, started from the profile)."""
    from scipy import optimize

    from wmtsim.studies.calibration.calibrate import _current

    start_sc = benchmark_scenario("GAIA", model)
    bounds = [(k.low, k.high) for k in knobs]
    x0 = np.clip([_current(start_sc, k) for k in knobs], [b[0] for b in bounds],
                 [b[1] for b in bounds])
    history: list[tuple[dict[str, Any], float]] = []

    def decode(x: np.ndarray) -> dict[str, Any]:
        return {k.key: k.value(float(v)) for k, v in zip(knobs, x, strict=True)}

    def f(x: np.ndarray) -> float:
        values = decode(x)
        val = profile_objective(model, values, replicates, metrics, kind, seed)[0]
        history.append((values, val))
        return val

    optimize.differential_evolution(f, bounds, maxiter=maxiter, popsize=popsize, seed=seed,
                                    polish=False, tol=1e-8, x0=x0)
    best, val = min(history, key=lambda h: h[1])
    return {"model": model, "fitted": best, "objective": val, "evaluations": len(history)}
