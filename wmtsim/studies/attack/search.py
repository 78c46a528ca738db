"""The strongest attacker: a search of the attack space for the most harmful point.

`search` maximises a harm (`HARMS`: ASR by default, or 1 − TSR, BR, IP; pooled Σ/Σ over
trajectories, as Table 4 is) of one policy over the points of `space` at one
budget k, with Optuna's TPE sampler (docs/attack.md says why) on common random numbers:
every trial runs the same trajectories (``search_seed``, trajectories 0..n_search − 1),
so two attacks are compared on the same tasks, agents and draws. The scenario's scripted
attack at that budget (`space.truncate`) is the search's first trial. The search
is resumable: every finished trial is logged (`TrialLog`, in the result folder); a search
started again with the same settings continues where it stopped. Every trial's harm is a
pure function of its point and each trial's sampler is seeded from the seed and the
trial's number, so a search is reproducible, and a resumed one draws the trials an
uninterrupted run of the same seed and total trials would have (TPE keeps no state the
logged trials do not hold; `test_attack.py` checks it).

The reported worst case is chosen on the search trajectories alone: the most harmful
trial, which is the scripted attack (trial 0) when no trial beats it. It is then
evaluated on *held-out* trajectories (``holdout_seed``, trajectories 0..n_holdout − 1),
beside the scripted attack on the same trajectories, with a paired interval of the
difference (`paired_ratio`). No choice is made on the held-out data, so the held-out harm
of the worst case is an unbiased estimate of its harm (choosing the more harmful of the
two there overstated it); the held-out worst case can therefore come out below
the scripted attack, and the paired interval says whether the search beat the script.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from wmtsim.core.metrics import C, ratio_parts
from wmtsim.studies.attack.log import TrialLog, _logged_trial
from wmtsim.studies.attack.space import (
    Attack,
    AttackSpace,
    Dimension,
    attack_world,
    dimensions,
    fixed,
    from_params,
    outside,
    scripted_attack,
    to_params,
    truncate,
    varied,
)

if TYPE_CHECKING:
    import polars as pl

    from wmtsim.studies.scenarios.scenario import Scenario

HARMS: dict[str, str] = {
    "asr": "ASR (Eq. 8): compromised critical steps / critical steps, pooled",
    "1-tsr": "1 − TSR (Eq. 14): the share of tasks that fail",
    "br": "BR (Eq. 11): prompt steps with contaminated context / prompt steps, pooled",
    "ip": "IP (Eq. 10): injected poison still eligible at the end / injected, pooled",
}
REPORTED = ("asr", "tsr", "br", "ip")  # the metrics every evaluation reports


def harm_parts(counts: np.ndarray, harm: str) -> tuple[np.ndarray, np.ndarray]:
    """Per-trajectory numerator and denominator of a harm (or of ``tsr``): its pooled
    value is Σ num / Σ den."""
    if harm in ("1-tsr", "tsr"):
        success = counts[:, C.success].astype(np.float64)
        tasks = counts[:, C.tasks].astype(np.float64)  # 1, or world.tasks (conversations)
        return (tasks - success if harm == "1-tsr" else success), tasks
    if harm not in HARMS:
        raise ValueError(f"--harm {harm!r} is unknown; allowed: {', '.join(HARMS)}")
    num, den = ratio_parts(counts, harm)
    return num.astype(np.float64), den.astype(np.float64)


def pooled(num: np.ndarray, den: np.ndarray) -> float:
    total = float(den.sum())
    return float(num.sum()) / total if total > 0 else math.nan


@dataclass
class Evaluation:
    """One attack run under one policy on one set of trajectories: the raw counters."""

    policy: str
    seed: int
    counts: np.ndarray  # (n, N_COUNTERS)
    seconds: float

    def value(self, harm: str) -> float:
        return pooled(*harm_parts(self.counts, harm))

    def metrics(self) -> dict[str, float]:
        return {m: self.value(m) for m in REPORTED}


def evaluate(scenario: Scenario, policy: str, attack: Attack, space: AttackSpace, seed: int,
             n: int, threads: int | None = None) -> Evaluation:
    """Run ``policy`` on trajectories 0..n − 1 of ``seed`` with ``attack`` as the world's
    poison (`space.attack_world`), through the engine's one entry point."""
    from wmtsim.engine.simulation import run_engine
    from wmtsim.engine.world import generate

    t0 = time.perf_counter()
    world = generate(attack_world(scenario.world, attack, space), seed=seed, n=n)
    counts, _, _ = run_engine(world, policy, scenario.params, scenario.stubs,
                              scenario.baselines, threads)
    return Evaluation(policy, seed, counts, time.perf_counter() - t0)


RESAMPLES = 2000
"""Bootstrap resamples of the held-out intervals (`paired_ratio`, `value_ci`)."""


def paired_ratio(a: Evaluation, b: Evaluation, harm: str, confidence: float = 0.95,
                 n_resamples: int = RESAMPLES, seed: int = 0) -> dict[str, Any]:
    """``harm(a) − harm(b)`` (pooled Σ/Σ) on the same trajectories, with its paired test
    and interval (`wmtsim.core.inference.paired_effect`, the one estimator: exact when
    few trajectories differ, the rule of three when none does)."""
    from wmtsim.core.inference import metric_bound, paired_effect

    na, da = harm_parts(a.counts, harm)
    nb, db = harm_parts(b.counts, harm)
    return paired_effect(na, nb, da, db, alpha=1.0 - confidence, n_resamples=n_resamples,
                         seed=seed, bound=metric_bound(harm))


def value_ci(e: Evaluation, harm: str, confidence: float = 0.95,
             n_resamples: int = RESAMPLES,
             seed: int = 0) -> dict[str, float]:
    """A pooled harm with its percentile-bootstrap interval over trajectories."""
    from wmtsim.core.bootstrap import pooled_ci

    num, den = harm_parts(e.counts, harm)
    out = pooled_ci(num, den, confidence, n_resamples, seed)
    return {"value": out["pooled"], "low": out["pooled_low"], "high": out["pooled_high"]}


# --- the search --------------------------------------------------------------------------


@dataclass(frozen=True)
class SearchSettings:
    """How a search runs (the CLI's options): harm, trials, trajectories and seeds."""

    harm: str = "asr"
    trials: int = 60
    n_search: int = 300
    n_holdout: int = 1000
    search_seed: int = 0
    holdout_seed: int = 1
    startup: int = 10  # TPE's random trials before it models the harm
    threads: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in ("harm", "trials", "n_search", "n_holdout",
                                             "search_seed", "holdout_seed", "startup")}


@dataclass
class SearchResult:
    """A search at one (policy, budget): its trials and the held-out evaluation."""

    policy: str
    budget: float
    settings: SearchSettings
    trials: list[dict[str, Any]]  # number, harm, scripted, params (JSON), sim_seconds
    best: Attack  # the most harmful point on the search trajectories
    scripted: Attack | None  # the scripted attack at this budget (trial 0), if any
    found: Evaluation  # ``best`` on the held-out trajectories
    scripted_eval: Evaluation | None  # ``scripted`` on the held-out trajectories
    sim_seconds: float  # simulation time of this call's trials and held-out runs
    total_seconds: float  # the whole call (sampler, storage, simulation)
    new_trials: int = 0
    study_name: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    log_rows: list[dict[str, Any]] = field(default_factory=list)  # without a log: its lines

    @property
    def chosen_is_scripted(self) -> bool:
        """No trial beat the scripted attack on the search trajectories (trial 0 is the
        scripted attack, and a tie goes to the earliest trial)."""
        return self.scripted is not None and self.best == self.scripted

    @property
    def chosen(self) -> Attack:
        """The reported worst case: the most harmful trial on the search trajectories,
        the scripted attack when none beat it. Chosen on the search data only, so its
        held-out harm (`chosen_eval`) is an unbiased estimate of its harm; picking the
        more harmful of two candidates on the held-out data itself overstated it
        (+0.003 ASR when nothing beat the script)."""
        return self.best

    @property
    def chosen_eval(self) -> Evaluation:
        if self.chosen_is_scripted and self.scripted_eval is not None:
            return self.scripted_eval
        return self.found


def scripted_at(scenario: Scenario, space: AttackSpace, budget: float) -> Attack | None:
    """The scenario's scripted attack at budget k (its first injections), when it is a
    point of the search at k; None when the scenario scripts fewer injections. A
    scripted attack outside the space's bounds is a ValueError naming the reason."""
    if not scenario.world.poison:
        return None
    head = truncate(scripted_attack(scenario.world), budget)
    if head is None:
        return None
    reasons = outside(head, space, scenario.world, budget)
    if reasons:
        raise ValueError(f"the scripted attack of {scenario.name} at budget {budget:g} is "
                         f"not a point of the attack space: {'; '.join(reasons)}")
    return head


def _distributions(dims: list[Dimension]) -> dict[str, Any]:
    from optuna.distributions import CategoricalDistribution, FloatDistribution

    return {d.name: CategoricalDistribution(d.choices)  # type: ignore[arg-type]
            if d.choices
            else FloatDistribution(d.lo, d.hi) for d in dims}


def _digest(*parts: Any) -> str:
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _seed(*parts: Any) -> int:
    return int(_digest(*parts)[:8], 16)


def study_name(scenario: Scenario, policy: str, budget: float, space: AttackSpace,
               settings: SearchSettings) -> str:
    """The study's name in the storage: what it searched and a digest of everything that
    changes its trials (scenario, space, harm, search trajectories and seed)."""
    key = _digest(scenario.to_dict(), space.to_dict(), settings.harm, settings.n_search,
                  settings.search_seed, settings.startup, policy, budget)
    return f"{policy}-k{budget:g}-{settings.harm}-{key}"


def search(scenario: Scenario, policy: str, budget: float, space: AttackSpace,
           settings: SearchSettings, log: Path | None = None,
           progress: Callable[[int, float], None] | None = None,
           prior: list[dict[str, Any]] | None = None) -> SearchResult:
    """Search the attack space at budget k for the point most harmful to ``policy`` (the
    module docstring). ``log``: the trial log (`TrialLog`) to resume from and append to
    (None: nothing kept); ``prior``: without a log, the logged trials to resume from
    (`TrialLog.load`'s rows: a search run on a worker, its log kept by the caller)."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    t0 = time.perf_counter()
    dims = dimensions(space, scenario.world, budget)
    dists = _distributions(varied(dims))
    constant = fixed(dims)
    name = study_name(scenario, policy, budget, space, settings)
    study = optuna.create_study(study_name=name, direction="maximize")
    store = TrialLog(log, name) if log is not None else None
    logged = store.load() if store is not None else list(prior or [])
    if logged:
        where = store.lines if store is not None else [None] * len(logged)
        study.add_trials([_logged_trial(t, dists, log, line) for t, line in
                          zip(logged, where, strict=True)][:settings.trials])
    scripted = scripted_at(scenario, space, budget)
    sim = 0.0
    new = 0

    def run(attack: Attack) -> tuple[float, float]:
        e = evaluate(scenario, policy, attack, space, settings.search_seed,
                     settings.n_search, settings.threads)
        return _finite(e.value(settings.harm)), e.seconds

    count = len(study.get_trials(deepcopy=False))
    best_value = -math.inf
    try:
        if scripted is not None and count == 0:
            value, seconds = run(scripted)  # trial 0: the scripted attack at this budget
            sim += seconds
            new += 1
            frozen = optuna.trial.create_trial(
                params={k: v for k, v in to_params(scripted).items() if k in dists},
                distributions=dists, value=value,
                user_attrs={"scripted": True, "sim_seconds": seconds})
            study.add_trial(frozen)
            count += 1
            if store is not None:
                store.append(0, frozen)
        while count < settings.trials:
            study.sampler = _sampler(settings, policy, budget, count)
            trial = study.ask(dists)
            value, seconds = run(from_params({**constant, **trial.params}, budget))
            sim += seconds
            new += 1
            trial.set_user_attr("sim_seconds", seconds)
            frozen = study.tell(trial, value)
            count += 1
            best_value = max(best_value, value)
            if store is not None:
                store.append(trial.number, frozen)
            if progress is not None:
                progress(count, best_value)
    finally:
        if store is not None:
            store.flush()
    done = study.get_trials(deepcopy=False)
    best_trial = max(done, key=lambda t: (t.value, -t.number))
    best = from_params({**constant, **best_trial.params}, budget)
    found = evaluate(scenario, policy, best, space, settings.holdout_seed,
                     settings.n_holdout, settings.threads)
    sim += found.seconds
    held = None
    if scripted is not None:
        held = (found if best == scripted else
                evaluate(scenario, policy, scripted, space, settings.holdout_seed,
                         settings.n_holdout, settings.threads))
        sim += held.seconds if held is not found else 0.0
    rows = [{"number": t.number, "harm": t.value, "scripted": bool(t.user_attrs.get(
        "scripted", False)), "params": json.dumps(t.params, sort_keys=True),
        "sim_seconds": float(t.user_attrs.get("sim_seconds", math.nan))} for t in done]
    if store is None:  # the caller keeps the log: hand it the trials' log lines
        extra_log = [TrialLog.row(name, t.number, t) for t in done]
    else:
        extra_log = []
    return SearchResult(policy, budget, settings, rows, best, scripted, found, held, sim,
                        time.perf_counter() - t0, new, name,
                        {"best_trial": best_trial.number, "best_search_harm": best_trial.value},
                        extra_log)


def _finite(value: float) -> float:
    """A harm for the sampler: an undefined one (no critical step, no injection) is 0."""
    return value if math.isfinite(value) else 0.0


def _sampler(settings: SearchSettings, policy: str, budget: float, done: int) -> Any:
    """TPE for the trial numbered ``done``, seeded from the settings and that number: a
    sampler per trial, so a resumed search draws what an uninterrupted one would (it
    rebuilds the search space each trial: microseconds beside a trial's simulation)."""
    import optuna

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return optuna.samplers.TPESampler(
            seed=_seed(settings.search_seed, policy, budget, done),
            n_startup_trials=settings.startup, multivariate=True)


def trials_frame(results: list[SearchResult]) -> pl.DataFrame:
    """Every trial of every search: policy, budget, harm name, number, harm, scripted,
    the point's coordinates (JSON) and its simulation seconds."""
    import polars as pl

    rows = [{"policy": r.policy, "budget": r.budget, "harm_name": r.settings.harm, **t}
            for r in results for t in r.trials]
    return pl.DataFrame(rows, schema={"policy": pl.Utf8, "budget": pl.Float64,
                                      "harm_name": pl.Utf8, "number": pl.Int64,
                                      "harm": pl.Float64, "scripted": pl.Boolean,
                                      "params": pl.Utf8, "sim_seconds": pl.Float64})


def attack_scenario(scenario: Scenario, result: SearchResult, space: AttackSpace) -> Scenario:
    """The reported worst case as a scenario `wmtsim run` replays: the attack as its
    poison, the held-out seed and size, the policy it was tuned against."""
    from wmtsim.studies.scenarios.scenario import scenario_from_dict

    s = replace(scenario, world=attack_world(scenario.world, result.chosen, space))
    data = s.to_dict()
    data.update(name=f"{scenario.name}-attack-{result.policy}-k{result.budget:g}",
                description=f"The most harmful attack on {result.policy} found by wmtsim "
                            f"attack ({result.settings.harm}, budget {result.budget:g}) "
                            f"on {scenario.name}.",
                seed=result.settings.holdout_seed, n=result.settings.n_holdout,
                policies=[result.policy])
    return scenario_from_dict(data, source="<attack>")
