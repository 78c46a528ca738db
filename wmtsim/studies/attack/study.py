"""Searches across policies and budgets, and what they say (`wmtsim attack`).

`attack_study` runs `attack.search` for every (policy, budget k), then:

* the **worst-case table** (`robust`): per policy and k, the scripted attack's and the
  worst case's held-out ASR and TSR, the harm's difference worst − scripted with a paired
  interval;
* the **transfer matrix** (`transfer`, at the largest k): the worst case found against each
  policy (row) run against every policy (column) on the held-out trajectories, harm with
  interval and its difference from the column's scripted attack (paired);
* **Table 4's claims under the worst case** (`claims`): Full WMT best and Linear worst on
  ASR and TSR, under the scripted attack and under each policy's own worst case, at each
  k, as tested claims (`wmtsim.core.verdicts.check_claim` on the pooled held-out
  values, the estimand the table ranks on) in the one verdict vocabulary; every claim of
  the study is one family, Holm-corrected (`CLAIMS_CORRECTION`).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wmtsim.core.formatting import D3_FORMAT
from wmtsim.studies.attack.search import (
    Evaluation,
    SearchResult,
    SearchSettings,
    attack_scenario,
    evaluate,
    paired_ratio,
    search,
    trials_frame,
    value_ci,
)
from wmtsim.studies.attack.space import AttackSpace

if TYPE_CHECKING:
    import polars as pl

    from wmtsim.studies.scenarios.scenario import Scenario

LOG = "search"  # the folder of the trial log, kept between runs (resumable)


@dataclass
class AttackStudy:
    scenario: Scenario
    space: AttackSpace
    settings: SearchSettings
    policies: tuple[str, ...]
    budgets: tuple[float, ...]
    results: dict[tuple[str, float], SearchResult]
    transfer: pl.DataFrame
    robust: pl.DataFrame
    claims: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def sim_seconds(self) -> float:
        return sum(r.sim_seconds for r in self.results.values())


def attack_study(scenario: Scenario, policies: Sequence[str], budgets: Sequence[float],
                 space: AttackSpace, settings: SearchSettings, log: Path | None = None,
                 progress: Callable[[str], None] | None = None, workers: int = 1,
                 scheduler: str | None = None,
                 trial_done: Callable[[], None] | None = None) -> AttackStudy:
    """Every search, the transfer matrix, the worst-case table and the claims.

    The searches (one per configuration and budget) are independent, so with ``workers``
    > 1 or a dask ``scheduler`` each runs whole on the sweep's executors
    (`wmtsim.studies.sweeps.run.map_tasks`, one numba thread each): every search is the
    same sequence of trials as in-process, so the results do not depend on the executor.
    There the trial log is kept by this process: a search resumes from the trials logged
    before it started, and its new trials are logged when it finishes (a search killed
    mid-way is run again from its last logged trial; in-process, every trial is logged as
    it finishes). ``progress`` is called as each search finishes; ``trial_done`` (in
    process only) as each new trial of a search finishes."""
    t0 = time.perf_counter()
    results: dict[tuple[str, float], SearchResult] = {}
    jobs = [(p, k) for k in budgets for p in policies]
    if workers > 1 or scheduler is not None:
        results = _distributed(scenario, jobs, space, settings, log, progress, workers,
                               scheduler)
    else:
        for p, k in jobs:
            results[(p, k)] = search(
                scenario, p, k, space, settings, log,
                progress=None if trial_done is None else lambda count, best: trial_done())
            if progress is not None:
                progress(f"{p} k={k:g}")
    results = {job: results[job] for job in jobs}  # the in-process order, whatever finished first
    top = max(budgets)
    study = AttackStudy(scenario, space, settings, tuple(policies), tuple(budgets), results,
                        transfer_matrix(scenario, space, settings, results, policies, top),
                        robust_table(results))
    study.claims = table4_claims(results, policies, budgets, settings.harm)
    study.seconds = time.perf_counter() - t0
    return study


def _search_job(job: tuple[Any, ...]) -> SearchResult:
    """One search on a worker (`attack_study`): no log of its own, resumed from ``prior``."""
    scenario, policy, budget, space, settings, prior = job
    return search(scenario, policy, budget, space, settings, log=None, prior=prior)


def _distributed(scenario: Scenario, jobs: list[tuple[str, float]], space: AttackSpace,
                 settings: SearchSettings, log: Path | None,
                 progress: Callable[[str], None] | None, workers: int,
                 scheduler: str | None) -> dict[tuple[str, float], SearchResult]:
    from dataclasses import replace

    from wmtsim.studies.attack.log import TrialLog
    from wmtsim.studies.attack.search import study_name
    from wmtsim.studies.sweeps.run import map_tasks

    one = replace(settings, threads=1)  # the workers share the cores
    stores: dict[tuple[str, float], TrialLog] = {}
    items = []
    for p, k in jobs:
        store = TrialLog(log, study_name(scenario, p, k, space, one)) if log else None
        prior = store.load() if store is not None else []
        if store is not None:
            stores[(p, k)] = store
        items.append((scenario, p, k, space, one, prior))
    out: dict[tuple[str, float], SearchResult] = {}
    for r in map_tasks(_search_job, items, workers=workers, scheduler=scheduler):
        key = (r.policy, r.budget)
        store = stores.get(key)
        if store is not None:
            done = len(store.load())
            for row in r.log_rows[done:]:
                store.append_row(row)
            store.flush()
        r.log_rows = []
        out[key] = r
        if progress is not None:
            progress(f"{r.policy} k={r.budget:g}")
    return out


def _interval(prefix: str, d: dict[str, float]) -> dict[str, float]:
    out = {f"{prefix}": d["mean"] if "mean" in d else d["value"], f"{prefix}_low": d["low"],
           f"{prefix}_high": d["high"]}
    if "n_nonzero" in d:  # a paired effect: how many differ, and its test
        out.update({f"{prefix}_n": d["n"], f"{prefix}_n_nonzero": d["n_nonzero"],
                    f"{prefix}_p": d["p"]})
    return out


def effect(row: dict[str, Any], prefix: str) -> str:
    """A paired effect of a results or transfer row (``gain``: worst − scripted;
    ``vs_scripted``) as printed everywhere (`wmtsim.core.verdicts.effect_text`): an
    interval, the exact test when few trajectories differ, an upper bound labelled as one
    when none does. A row written before ``{prefix}_n_nonzero`` existed: the interval."""
    from wmtsim.core.verdicts import effect_text

    if row.get(prefix) is None:
        return "–"
    if row.get(f"{prefix}_n_nonzero") is None:
        return _ci(row[prefix], row[f"{prefix}_low"], row[f"{prefix}_high"], sign=True)
    return effect_text({"mean": row[prefix], "low": row[f"{prefix}_low"],
                        "high": row[f"{prefix}_high"], "n": row[f"{prefix}_n"],
                        "n_nonzero": row[f"{prefix}_n_nonzero"],
                        "p": row[f"{prefix}_p"]})


def effect_column(frame: pl.DataFrame, prefix: str, name: str) -> pl.DataFrame:
    """``frame`` with the numbers of the paired effect ``prefix`` replaced by one text
    column ``name`` (`effect`), as the dashboard shows it."""
    import polars as pl

    if prefix not in frame.columns:
        return frame
    text = pl.Series(name, [effect(r, prefix) for r in frame.iter_rows(named=True)],
                     dtype=pl.Utf8)
    drop = [c for c in frame.columns if c == prefix or c.startswith(f"{prefix}_")]
    return frame.with_columns(text).drop(drop)


def robust_table(results: dict[tuple[str, float], SearchResult]) -> pl.DataFrame:
    """policy, budget, the scripted and worst-case held-out ASR and TSR, the harm of both
    with intervals, worst − scripted (paired), which attack is the worst case."""
    import polars as pl

    rows = []
    for (p, k), r in results.items():
        h = r.settings.harm
        worst = r.chosen_eval
        row: dict[str, Any] = {"policy": p, "budget": k, "harm_name": h,
                               "trials": len(r.trials),
                               "worst_is_scripted": r.chosen_is_scripted,
                               **_interval("worst_harm", value_ci(worst, h))}
        row.update({f"worst_{m}": v for m, v in worst.metrics().items()})
        if r.scripted_eval is not None:
            row.update(_interval("scripted_harm", value_ci(r.scripted_eval, h)))
            row.update({f"scripted_{m}": v for m, v in r.scripted_eval.metrics().items()})
            row.update(_interval("gain", paired_ratio(worst, r.scripted_eval, h)))
        rows.append(row)
    return pl.DataFrame(rows)


def transfer_matrix(scenario: Scenario, space: AttackSpace, settings: SearchSettings,
                    results: dict[tuple[str, float], SearchResult], policies: Sequence[str],
                    budget: float) -> pl.DataFrame:
    """tuned_on, evaluated_on, the harm with interval on the held-out trajectories, and
    its difference from the evaluated policy's scripted attack (paired)."""
    import polars as pl

    h = settings.harm
    rows = []
    for a in policies:
        attack = results[(a, budget)].chosen
        for b in policies:
            own = results[(b, budget)]
            e: Evaluation = (own.chosen_eval if a == b else
                             evaluate(scenario, b, attack, space, settings.holdout_seed,
                                      settings.n_holdout, settings.threads))
            row: dict[str, Any] = {"tuned_on": a, "evaluated_on": b, "budget": budget,
                                   "harm_name": h, **_interval("harm", value_ci(e, h))}
            if own.scripted_eval is not None:
                row.update(_interval("vs_scripted", paired_ratio(e, own.scripted_eval, h)))
            rows.append(row)
    return pl.DataFrame(rows)


CLAIMS_CORRECTION = "holm"
"""The multiplicity correction over all of a study's Table 4 claims (one family)."""


def table4_claims(results: dict[tuple[str, float], SearchResult], policies: Sequence[str],
                  budgets: Sequence[float], harm: str) -> list[dict[str, Any]]:
    """Full WMT best and Linear worst on ASR and TSR, under the scripted attack and under
    each policy's own worst case (held-out, pooled Σ/Σ), at every budget: each claim
    tested on the paired held-out trajectories (`check_claim`: intersection–union over
    the rivals), the family corrected by `CLAIMS_CORRECTION` (`read_family`). Each row
    has ``verdict``, ``significant``, ``p``, ``p_adjusted``, ``family`` and ``detail``."""
    from wmtsim.core.inference import ALPHA, level_text
    from wmtsim.core.policies import TABLE4_POLICIES
    from wmtsim.core.verdicts import check_claim, read_family
    from wmtsim.studies.attack.search import harm_parts

    present = [p for p in TABLE4_POLICIES if p in policies]
    if "wmt" not in present or "linear" not in present or len(present) < 3:
        return []
    rows = []
    for k in budgets:
        for attack in ("scripted", "worst"):
            evals: dict[str, Evaluation] = {}
            for p in present:
                r = results[(p, k)]
                e = r.scripted_eval if attack == "scripted" else r.chosen_eval
                if e is not None:
                    evals[p] = e
            if len(evals) != len(present):
                continue
            for m in ("asr", "tsr"):
                sign = 1 if m == "tsr" else -1  # +1: higher is better
                values = {p: harm_parts(e.counts, m) for p, e in evals.items()}
                vals = {p: e.value(m) for p, e in evals.items()}
                base: dict[str, Any] = {"budget": k, "attack": attack, "metric": m}
                for claim, subject, favour in (("Full WMT best", "wmt", sign),
                                               ("Linear worst", "linear", -sign)):
                    others = [p for p in present if p != subject]
                    c = check_claim(subject, others, favour, values, ALPHA)
                    rows.append({**base, "claim": f"{m.upper()}: {claim}", **c,
                                 "detail": _detail(subject, favour, favour == sign, vals,
                                                   c)})
    out = read_family(rows, ALPHA, CLAIMS_CORRECTION)
    family = level_text(ALPHA, CLAIMS_CORRECTION, len(out))
    return [{**r, "family": family} for r in out]


def _detail(subject: str, favour: int, best: bool, vals: dict[str, float],
            claim: dict[str, Any]) -> str:
    """A claim's detail: who is best (or worst) and the runner-up, a configuration other
    than the leaders (or "no rival": all equal), then the subject's margin against its
    closest rival (negative: the rival is ahead)."""
    from wmtsim.core.formatting import num

    ranked = sorted(vals, key=lambda p: -favour * vals[p])
    top = vals[ranked[0]]
    rest = [p for p in ranked if vals[p] != top]
    runner_up = (f"then {_tied(vals, vals[rest[0]])} ({vals[rest[0]]:.3f})" if rest
                 else "no rival (all equal)")
    word = "best" if best else "worst"
    text = f"{word} is {_tied(vals, top)} ({top:.3f}); {runner_up}"
    if claim["closest"] and math.isfinite(claim["margin"]):
        text += (f"; {subject}'s margin over {claim['closest']}: "
                 f"{num(claim['margin'], sign=True)}")
    return text


def _tied(vals: dict[str, float], value: float) -> str:
    """The configurations at ``value`` ("a", or "a = b" for a tie)."""
    return " = ".join(p for p, v in vals.items() if v == value)


# --- rendering and writing ---------------------------------------------------------------


def _ci(v: float, lo: float, hi: float, sign: bool = False) -> str:
    from wmtsim.core.formatting import interval

    return interval(v, lo, hi, sign=sign)


def robust_markdown(study: AttackStudy) -> str:
    """The worst-case table as Markdown (README, docs/findings.md, report.md)."""
    h = study.settings.harm
    lines = [f"| configuration | k | scripted ASR | worst-case ASR | scripted TSR | "
             f"worst-case TSR | worst − scripted ({h}) |", "|---|---|---|---|---|---|---|"]
    for r in study.robust.iter_rows(named=True):
        s_asr = f"{r['scripted_asr']:.3f}" if r.get("scripted_asr") is not None else "–"
        s_tsr = f"{r['scripted_tsr']:.3f}" if r.get("scripted_tsr") is not None else "–"
        gain = effect(r, "gain")
        mark = " (scripted)" if r["worst_is_scripted"] else ""
        lines.append(f"| {r['policy']} | {r['budget']:g} | {s_asr} | {r['worst_asr']:.3f}{mark}"
                     f" | {s_tsr} | {r['worst_tsr']:.3f} | {gain} |")
    return "\n".join(lines) + "\n"


def transfer_markdown(study: AttackStudy) -> str:
    """The transfer matrix as Markdown: rows tuned on, columns evaluated on."""
    pols = study.policies
    cells = {(r["tuned_on"], r["evaluated_on"]): r for r in study.transfer.iter_rows(named=True)}
    lines = ["| tuned on ↓ / evaluated on → | " + " | ".join(pols) + " |",
             "|---|" + "---|" * len(pols)]
    for a in pols:
        row = [_ci(cells[(a, b)]["harm"], cells[(a, b)]["harm_low"], cells[(a, b)]["harm_high"])
               for b in pols]
        lines.append(f"| {a} | " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def claims_markdown(study: AttackStudy) -> str:
    if not study.claims:
        return "(Table 4's claims need linear, wmt and at least one other configuration.)\n"
    from wmtsim.core.formatting import num

    lines = ["| k | attack | claim | verdict | p (Holm) | detail |",
             "|---|---|---|---|---|---|"]
    for c in study.claims:
        lines.append(f"| {c['budget']:g} | {c['attack']} | {c['claim']} | {c['verdict']} | "
                     f"{num(c['p_adjusted'], 2)} | {c['detail']} |")
    family = study.claims[0]["family"]
    lines += ["", f"Each claim is an intersection–union test on the paired held-out "
              f"trajectories (pooled Σ/Σ, the table's estimand); the family is every claim "
              f"above: {family}. The configurations run on common random numbers, so the "
              "tests are correlated."]
    return "\n".join(lines) + "\n"


def report_markdown(study: AttackStudy) -> str:
    st = study.settings
    head = (f"# wmtsim attack: {study.scenario.name}\n\nHarm: {st.harm}. Searched on "
            f"{st.n_search} trajectories of seed {st.search_seed} ({st.trials} trials per "
            f"configuration and budget), reported on {st.n_holdout} held-out trajectories "
            f"of seed {st.holdout_seed}; 95% intervals (percentile bootstrap; paired where two "
            "attacks or configurations meet on the same trajectories, with the exact "
            "test's bound when few trajectories differ, docs/statistics.md).\n\n")
    return (head + "## Scripted and worst-case attacks\n\n" + robust_markdown(study)
            + f"\n## Transfer at k = {max(study.budgets):g} ({st.harm})\n\n"
            + transfer_markdown(study) + "\n## Table 4's claims\n\n" + claims_markdown(study))


def budget_chart(robust: pl.DataFrame, title: str = "", harm: str = "asr") -> Any:
    """Harm vs attacker budget k per configuration (a `robust_table`): the worst case
    (solid) and the scripted attack (dashed), with their intervals."""
    import altair as alt

    rows = []
    for r in robust.iter_rows(named=True):
        rows.append({"policy": r["policy"], "budget": r["budget"], "attack": "worst case",
                     "harm": r["worst_harm"], "low": r["worst_harm_low"],
                     "high": r["worst_harm_high"]})
        if r.get("scripted_harm") is not None:
            rows.append({"policy": r["policy"], "budget": r["budget"], "attack": "scripted",
                         "harm": r["scripted_harm"], "low": r["scripted_harm_low"],
                         "high": r["scripted_harm_high"]})
    whole = all(float(r["budget"]).is_integer() for r in rows)  # ticks 1, 2, not 1.10
    base = alt.Chart(alt.Data(values=rows)).encode(
        x=alt.X("budget:Q", title="attacker budget k (injections per task)",
                scale=alt.Scale(zero=False),
                axis=alt.Axis(format="d", tickMinStep=1) if whole else alt.Axis()),
        color=alt.Color("policy:N", title="configuration"))
    line = base.mark_line(point=True).encode(
        y=alt.Y("harm:Q", title=f"{harm} (held-out)"),
        strokeDash=alt.StrokeDash("attack:N", title="attack (dashed: worst case)",
                                  sort=["scripted", "worst case"],
                                  legend=alt.Legend(symbolType="stroke")))
    band = base.mark_errorbar().encode(y=alt.Y("low:Q", title=f"{harm} (held-out)"),
                                       y2="high:Q")
    return (band + line).properties(title=title or f"{harm} vs attacker budget (held-out, "
                                    "95% CI)", width=420, height=280)


def transfer_chart(transfer: pl.DataFrame, harm: str = "asr") -> Any:
    """The transfer matrix as a heatmap: rows tuned on, columns evaluated on."""
    import altair as alt

    data = transfer.select("tuned_on", "evaluated_on", "harm").to_dicts()
    base = alt.Chart(alt.Data(values=data)).encode(
        x=alt.X("evaluated_on:N", title="evaluated on", sort=None),
        y=alt.Y("tuned_on:N", title="tuned on", sort=None))
    cells = base.mark_rect().encode(color=alt.Color("harm:Q", title=harm,
                                                    scale=alt.Scale(scheme="reds")))
    text = base.mark_text().encode(text=alt.Text("harm:Q", format=D3_FORMAT))
    return (cells + text).properties(title=f"Transfer ({harm}, held-out)", width=360,
                                     height=300)


def write_study(study: AttackStudy, out: Path, charts: bool = True) -> list[Path]:
    """search.parquet, results.parquet, transfer.parquet, claims.json, report.md, the found
    attacks as scenario files (attacks/<policy>-k<k>.toml) and harm_vs_budget.png into
    ``out`` (the hidden folder of `wmtsim.core.output.result_folder`)."""
    from wmtsim.core.output import atomic_write_bytes, atomic_write_parquet

    written = [atomic_write_parquet(trials_frame(list(study.results.values())),
                                    out / "search.parquet"),
               atomic_write_parquet(study.robust, out / "results.parquet"),
               atomic_write_parquet(study.transfer, out / "transfer.parquet"),
               atomic_write_bytes(out / "claims.json",
                                  (json.dumps(study.claims, indent=2) + "\n").encode()),
               atomic_write_bytes(out / "report.md", report_markdown(study).encode())]
    (out / "attacks").mkdir()
    for (p, k), r in study.results.items():
        s = attack_scenario(study.scenario, r, study.space)
        held = r.chosen_eval.value(r.settings.harm)
        header = (f"# Found by `wmtsim attack` ({r.settings.harm}, budget {k:g}) against "
                  f"{p}: {'the scripted attack' if r.chosen_is_scripted else 'the search'}"
                  f"'s point, held-out {r.settings.harm} {held:.4f} on seed "
                  f"{r.settings.holdout_seed}, n = {r.settings.n_holdout}.\n"
                  "# `wmtsim run` this file to replay it.\n")
        atomic_write_bytes(out / "attacks" / f"{p}-k{k:g}.toml",
                           (header + s.to_toml()).encode())
    written.append(out / "attacks")
    if charts:
        import vl_convert as vlc

        spec = budget_chart(study.robust, f"{study.scenario.name}: harm vs attacker budget "
                            "(held-out, 95% CI)", study.settings.harm).to_json()
        written.append(atomic_write_bytes(out / "harm_vs_budget.png",
                                          vlc.vegalite_to_png(spec, scale=2)))
    return written
