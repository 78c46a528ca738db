"""From sweep to design: multi-objective search over WMT's parameters (`wmtsim tune`).

Optuna's NSGA-II sampler (Deb et al. 2002) proposes settings of the knobs in
`wmtsim.studies.sweeps.knob_ranges`; each is simulated on every fit scenario and fit seed with
the sweep's executors (`wmtsim.studies.sweeps.evaluate`: in-process, a local pool or dask) on
common random numbers (every trial sees the same trajectories). An objective is a
metric and a direction (``tsr:max``, ``asr:min``, ``prompt_tokens:min``); its value for
a setting is robust over the fit scenarios: the worst scenario's mean (``worst``) or a
quantile on the bad side (``q0.25``: the value 75% of the scenarios do at least as well
as). Optuna's journal storage (``optuna.journal`` in the output folder: an append-only
log, one fsynced line per finished trial; `wmtsim.studies.tune.journal` checks it, drops a
line cut short and locks it for one run at a time) makes a run resumable: killed, it
continues from the trials it has saved (the generation in flight is proposed again).
Each trial's sampler is seeded from ``--seed`` and the trial's number, so a resumed run
proposes the trials one uninterrupted run of the same seed and total trials would have
(`test_tune.py` checks it); a run killed mid-generation proposes that generation again.

Why Optuna: NSGA-II is the standard evolutionary multi-objective method, Optuna keeps it
well tested, its ask/tell interface lets us evaluate a whole generation as one batch on
the sweep machinery, and its storage gives resumability without code of ours. scipy has
no multi-objective optimiser.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from wmtsim.core.metrics import BETTER
from wmtsim.studies.sweeps.design import content_hash
from wmtsim.studies.sweeps.evaluate import Outcome, evaluate, make_point
from wmtsim.studies.sweeps.knob_ranges import WMT_RANGES, KnobRange
from wmtsim.studies.sweeps.spec import METRIC_NAMES
from wmtsim.studies.tune.journal import STORAGE as STORAGE  # where callers find them
from wmtsim.studies.tune.journal import STUDY as STUDY
from wmtsim.studies.tune.journal import (
    HeldLock,
    Journal,
    JournalError,
    drop_cut,
    read_journal,
    study_lock,
)

if TYPE_CHECKING:
    import polars as pl

    from wmtsim.studies.scenarios.scenario import Scenario

class TuneError(ValueError):
    """A tuning request that cannot run (bad objective, a folder of another study)."""


@dataclass(frozen=True)
class Objective:
    metric: str
    maximize: bool

    @property
    def label(self) -> str:
        return f"{self.metric}:{'max' if self.maximize else 'min'}"


def parse_objective(text: str) -> Objective:
    """``metric:max`` / ``metric:min`` (``metric`` alone: its natural direction)."""
    metric, _, way = text.partition(":")
    if metric not in METRIC_NAMES:
        raise TuneError(f"--objective {text!r}: unknown metric {metric!r}; allowed: "
                        + ", ".join(METRIC_NAMES))
    if way not in ("", "max", "min"):
        raise TuneError(f"--objective {text!r}: direction {way!r}; allowed: max | min")
    if way:
        return Objective(metric, way == "max")
    # The natural direction is the metric's own declaration (core/metrics.py), never a
    # hand list here: a list kept apart once maximised PRR and CCR, which are lower-is-better.
    better = BETTER[metric]
    if better == "-":
        raise TuneError(f"--objective {text!r}: {metric!r} has no better direction (it is a "
                        f"count); give one: {metric}:max or {metric}:min")
    return Objective(metric, better == "higher")


def parse_robust(text: str) -> float | None:
    """``worst`` (None) or ``qX`` with X in (0, 1) (the bad-side quantile)."""
    if text == "worst":
        return None
    try:
        q = float(text[1:]) if text.startswith("q") else math.nan
    except ValueError:
        q = math.nan
    if not 0 < q < 1:
        raise TuneError(f"--robust {text!r}: allowed: worst | qX with 0 < X < 1 (e.g. q0.25)")
    return q


def robust_value(per_scenario: Sequence[float], maximize: bool, q: float | None) -> float:
    """The worst scenario's value, or the bad-side ``q`` quantile across scenarios."""
    x = np.asarray(per_scenario, dtype=float)
    if q is None:
        return float(x.min() if maximize else x.max())
    return float(np.quantile(x, q if maximize else 1 - q))


@dataclass
class Fit:
    """What a tuning run fits on: scenarios, seeds, size, policy, knobs, objectives."""

    scenarios: tuple[Scenario, ...]
    seeds: tuple[int, ...]
    n: int
    objectives: tuple[Objective, ...]
    policy: str = "wmt"
    ranges: tuple[KnobRange, ...] = WMT_RANGES
    robust: float | None = None
    workers: int = 1
    scheduler: str | None = None

    def fingerprint(self) -> str:
        """What makes two runs the same study (a resumed run must match)."""
        text = json.dumps({
            "scenarios": [content_hash(s.world, s.params, s.stubs, s.baselines)
                          for s in self.scenarios],
            "seeds": self.seeds, "n": self.n, "policy": self.policy, "robust": self.robust,
            "objectives": [o.label for o in self.objectives],
            "ranges": [[r.key, r.low, r.high, r.integer, r.log] for r in self.ranges],
        }, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def setting(self, trial: Any) -> dict[str, Any]:
        """The values an Optuna trial proposes (factors for relative ranges: a budget is
        tuned as a multiple of each scenario's own)."""
        out: dict[str, Any] = {}
        for r in self.ranges:
            if r.integer and not r.relative:
                out[r.key] = trial.suggest_int(r.key, int(r.low), int(r.high), log=r.log)
            else:
                out[r.key] = trial.suggest_float(r.key, r.low, r.high, log=r.log)
        return out

    def resolve(self, setting: dict[str, Any], scenario: Scenario) -> dict[str, Any]:
        """A setting's overrides on ``scenario`` (relative ranges applied)."""
        ranges = {r.key: r for r in self.ranges}
        return {k: ranges[k].resolve(v, scenario) if k in ranges else v
                for k, v in setting.items()}

    def outcomes(self, settings: Sequence[dict[str, Any]], seeds: Sequence[int] | None = None,
                 scenarios: Sequence[Scenario] | None = None
                 ) -> list[dict[str, list[Outcome]]]:
        """For each setting: scenario name -> its outcomes on every seed (one batch)."""
        seeds = self.seeds if seeds is None else seeds
        scs = self.scenarios if scenarios is None else scenarios
        grid = [[[make_point(sc, self.resolve(s, sc), self.policy, seed, self.n)
                  for seed in seeds] for sc in scs] for s in settings]
        res = evaluate([p for a in grid for b in a for p in b], self.n, workers=self.workers,
                       scheduler=self.scheduler)
        return [{sc.name: [res[p.key] for p in row] for sc, row in zip(scs, g, strict=True)}
                for g in grid]

    def values(self, by_scenario: dict[str, list[Outcome]]) -> tuple[list[float],
                                                                     dict[str, float]]:
        """The robust objective values and every (scenario, metric) mean."""
        means = {f"{name}.{o.metric}": _pooled(outs, o.metric)
                 for name, outs in by_scenario.items() for o in self.objectives}
        vals = [robust_value([means[f"{s}.{o.metric}"] for s in by_scenario], o.maximize,
                             self.robust) for o in self.objectives]
        return vals, means


def _pooled(outs: Sequence[Outcome], metric: str) -> float:
    x = np.concatenate([o.metric(metric) for o in outs])
    x = x[np.isfinite(x)]
    return float(x.mean()) if x.size else float("nan")


@dataclass
class Tuning:
    """A finished (or resumed) tuning run: every trial, the Pareto set, the baseline."""

    fit: Fit
    trials: pl.DataFrame
    pareto: pl.DataFrame
    baseline: dict[str, float]
    computed: int
    seconds: float
    sim_seconds: float
    extra: dict[str, Any] = field(default_factory=dict)


def tune(fit: Fit, storage: Path, trials: int = 40, batch: int = 8, seed: int = 0,
         progress: Callable[[int, int], None] | None = None) -> Tuning:
    """Run NSGA-II until ``trials`` trials are complete in ``storage`` (resuming what is
    there); ``batch`` trials are evaluated together (the population size)."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    t0 = time.perf_counter()
    check_study(fit, storage)  # refused before the lock creates a file
    storage.parent.mkdir(parents=True, exist_ok=True)
    with study_lock(storage):
        journal = check_study(fit, storage)  # again: a run may have ended in between
        drop_cut(storage, journal)
        saved = _open_study(storage, journal, fit)
        # The sampler works on an in-memory copy; a generation's finished trials are
        # appended to the journal together. Killed, a run loses at most its generation in
        # flight. A failed trial (an objective undefined: NaN) is kept, so trial numbers,
        # and with them the samplers' seeds, are those of an uninterrupted run.
        states = optuna.trial.TrialState
        study = optuna.create_study(directions=_directions(fit))
        study.add_trials(saved.get_trials(deepcopy=False,
                                          states=(states.COMPLETE, states.FAIL)))
        resumed_from = len(study.trials)
        _restore_parents(study, batch, seed)
        result = _search(fit, saved, study, trials, batch, seed, progress, t0)
        # A resume equals an uninterrupted run when it starts at a generation boundary
        # (a kill loses the generation in flight, so a killed run always resumes at one).
        # From inside a generation (an earlier --trials not a multiple of --batch, or a
        # journal cut inside the last generation) its remaining trials are proposed after
        # its earlier ones finished, which NSGA-II can answer differently: a different,
        # equally valid search, said in the manifest.
        result.extra.update(resumed_from=resumed_from,
                            equals_uninterrupted=resumed_from % batch == 0)
        return result


def _directions(fit: Fit) -> list[Any]:
    return ["maximize" if o.maximize else "minimize" for o in fit.objectives]


def check_study(fit: Fit, storage: Path) -> Journal:
    """The journal at ``storage`` read and checked (`read_journal`), refused
    (`TuneError`) when it holds a study of another request; writes nothing."""
    journal = read_journal(storage)
    want = [2 if o.maximize else 1 for o in fit.objectives]
    if (journal.directions is not None and journal.directions != want) or \
            journal.fingerprint not in (None, fit.fingerprint()):
        raise TuneError(f"{storage}: holds a tuning study with other scenarios, seeds, "
                        "size, objectives or knobs; allowed: the same request to resume it, "
                        "or another --out folder")
    return journal


def _open_study(storage: Path, journal: Journal, fit: Fit) -> Any:
    """The study in the (checked, locked) journal; created with its fingerprint when new.
    `optuna.load_study` for an existing one: `create_study(load_if_exists=True)` appends a
    second creation record before it finds the first."""
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    backend = JournalFileBackend(str(storage), lock_obj=HeldLock())  # type: ignore[arg-type]
    store = JournalStorage(backend)
    if journal.directions is None:
        saved = optuna.create_study(study_name=STUDY, storage=store,
                                    directions=_directions(fit))
    else:
        saved = optuna.load_study(study_name=STUDY, storage=store)
    if journal.fingerprint is None:
        saved.set_user_attr("fingerprint", fit.fingerprint())
    return saved


def _sampler(batch: int, seed: int, number: int) -> Any:
    """NSGA-II for trial ``number``, seeded from ``seed`` and the number: the trial a
    resumed run proposes is the one an uninterrupted run would have (the sampler keeps no
    state the journal does not hold: generations and parents are trials' attributes)."""
    import optuna

    digest = hashlib.sha256(f"tune/{seed}/{number}".encode()).hexdigest()
    return optuna.samplers.NSGAIISampler(population_size=max(2, batch),
                                         seed=int(digest[:8], 16))


def _restore_parents(study: Any, batch: int, seed: int) -> None:
    """Recompute, generation by generation, the parent populations an uninterrupted run
    holds in its study (Optuna caches each in the study's system attributes, which the
    journal does not keep).

    NSGA-II reads a cached parent population back in trial order, but returns a freshly
    selected one in its selection order; with tied objective values the next selection
    keeps different trials of the two orders. Without this a resumed study proposed other
    trials than one uninterrupted run from the third generation on. The selection is
    deterministic (no random draws), so this recomputes exactly the cached populations."""
    sampler = _sampler(batch, seed, 0)
    generations = {sampler.get_trial_generation(study, t)
                   for t in study.get_trials(deepcopy=False)}
    for generation in sorted(g for g in generations if g >= 1):
        sampler.get_parent_population(study, generation)


def _search(fit: Fit, saved: Any, study: Any, trials: int, batch: int, seed: int,
            progress: Callable[[int, int], None] | None, t0: float) -> Tuning:
    import polars as pl

    computed, sim = 0, 0.0
    done = len(study.trials)
    while done < trials:
        asked: list[Any] = []
        settings: list[dict[str, Any]] = []
        # Generations start at multiples of the batch, also after a resume from a count
        # that is not one: NSGA-II assigns a trial's generation from the trials finished
        # when it is asked, so the same grouping gives the same generations.
        for _ in range(min(batch - done % batch, trials - done)):
            # Each trial's values are drawn (suggest_*) before the next trial's sampler
            # replaces this one: the study reads its sampler at every draw.
            study.sampler = _sampler(batch, seed, done + len(asked))
            asked.append(study.ask())
            settings.append(fit.setting(asked[-1]))
        s0 = time.perf_counter()
        results = fit.outcomes(settings)
        sim += time.perf_counter() - s0
        for t, res in zip(asked, results, strict=True):
            vals, means = fit.values(res)
            for k, v in means.items():
                t.set_user_attr(k, v)
            study.tell(t, vals)
        frozen = study.get_trials(deepcopy=False)  # (`study.trials` deep-copies them all)
        saved.add_trials([frozen[t.number] for t in asked])
        computed += len(asked)
        done += len(asked)
        if progress is not None:
            progress(done, trials)
    base_vals, base_means = fit.values(fit.outcomes([{}])[0])
    baseline = {**{o.label: v for o, v in zip(fit.objectives, base_vals, strict=True)},
                **base_means}
    frame = _trials_frame(study, fit)
    front = {t.number for t in study.best_trials}
    pareto = frame.filter(pl.col("trial").is_in(sorted(front))).sort(fit.objectives[0].label,
                                                                     descending=True)
    return Tuning(fit, frame, pareto, baseline, computed, time.perf_counter() - t0, sim)


def is_journal(path: Path) -> bool:
    """Whether ``path`` is a readable journal of wmtsim's tuning study (`read_journal`
    finds nothing wrong in it and it creates the study)."""
    try:
        return read_journal(path).directions is not None
    except JournalError:
        return False


def _trials_frame(study: Any, fit: Fit) -> pl.DataFrame:
    import optuna
    import polars as pl

    rows = []
    for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)):
        row: dict[str, Any] = {"trial": t.number}
        row.update({o.label: v for o, v in zip(fit.objectives, t.values, strict=True)})
        row.update({r.key: t.params[r.key] for r in fit.ranges})
        row.update({k: float(v) for k, v in sorted(t.user_attrs.items())})
        rows.append(row)
    return pl.DataFrame(rows, infer_schema_length=None)


def chosen(tuning: Tuning, k: int) -> pl.DataFrame:
    """Up to ``k`` Pareto points spread along the first objective."""
    front = tuning.pareto
    if front.height <= k:
        return front
    idx = sorted({round(i * (front.height - 1) / (k - 1)) for i in range(k)}) if k > 1 else [0]
    return front[idx]


def setting_of(row: dict[str, Any], fit: Fit) -> dict[str, Any]:
    """The overrides of a trials-table row."""
    return {r.key: row[r.key] for r in fit.ranges}


def params_toml(setting: dict[str, Any], fit: Fit, header: str) -> str:
    """A setting as TOML tables ([params], [stubs]) to paste into a scenario (relative
    knobs resolved for the first fit scenario; the factor is in a comment)."""
    import tomli_w

    tables: dict[str, dict[str, Any]] = {}
    sc = fit.scenarios[0]
    for r in fit.ranges:
        if r.relative and r.key in setting:
            header += (f"\n{r.key} = {setting[r.key]:.4g} x each scenario's own value "
                       f"({r.resolve(setting[r.key], sc)} on {sc.name})")
    for key, value in fit.resolve(setting, sc).items():
        section, name = key.split(".", 1)
        tables.setdefault(section, {})[name] = value
    return "".join(f"# {line}\n" for line in header.splitlines()) + tomli_w.dumps(tables)
