"""Mechanism attribution: why does configuration Q beat configuration P?

`attribute` decomposes ``mean(Q) − mean(P)`` of a metric into one contribution per
mechanism switch in which the two configurations differ, as Shapley values of the
cooperative game whose players are those switches and whose value of a coalition S is the
metric's mean under P with the switches of S set to Q's values:

    φ_i = Σ_{S ⊆ N∖{i}} |S|! (k − |S| − 1)! / k! · (v(S ∪ {i}) − v(S))        (Shapley 1953)

Every coalition runs on the same generated world (common random numbers: the same
trajectories, the same draws), so the game is played per trajectory: ``v_t(S)`` is the
metric of trajectory t under coalition S, ``φ_i(t)`` its Shapley value, and ``φ_i`` the
mean of ``φ_i(t)`` (the Shapley value is linear in v). That gives

* exact efficiency, per trajectory and so in the mean: ``Σ_i φ_i = mean(Q) − mean(P)``;
* paired intervals for free: a bootstrap over trajectories resamples the ``φ_i(t)`` of
  every mechanism with the same indices (percentile intervals, 95% by default).

Lattices of up to `EXACT_MAX_SWITCHES` switches (2^k coalitions) are solved exactly;
larger ones, or any with ``permutations=R``, by sampling R random orders of the switches
(Castro, Gómez & Tejada 2009): ``φ_i`` is the mean marginal contribution of i over the
orders, reported with its standard error over the orders (``perm_se``); efficiency still
holds exactly, because every order telescopes from P to Q.

**Switches.** A mechanism switch is a field of `wmtsim.core.policies.Policy` declared one
(``field(metadata=SWITCH)``: tree, scores, selection, ...; not its name, label or the
field's variant switches), so a switch added to `Policy` is picked up without touching
this module, and a field that is not declared a switch never becomes one. A non-boolean switch
(``selection``) is one player moving from P's value to Q's.

**Undefined values.** A metric can be undefined for a trajectory (NaN: e.g. IP without an
injection, PRR without a selection). For each metric the means are taken over the
*common set*: the trajectories whose value is finite under every coalition evaluated,
including P and Q; ``n`` says how many. Efficiency holds exactly on that set; with no NaN
the set is every trajectory and the sum is ``mean(Q) − mean(P)`` of
``simulate(...).trajectories`` for the same n and seed.

**Coalitions that are not meaningful configurations** follow one rule, *a dependent
switch follows its prerequisite* (`DEPENDENCIES`, checked in dependency order): when a
coalition gives a switch a value that needs a prerequisite the coalition has turned off
(or not yet on), that switch takes its other end's value — the one of P or Q that needs
nothing. P and Q themselves must be meaningful. Today's dependencies:

* ``reopen`` needs ``fold``: only folded branches are reopened (without fold the engine
  runs the two values identically; the rule just names the configuration);
* ``selection = branches`` (A3) needs ``scores``: it ranks whole branches by the priority
  U_b (Eq. 6), which only the retention scores maintain;
* ``lifecycle`` (suppression, Eq. 7) needs ``scores``: it compares branch priorities.
  Supersession is its own switch (``supersede``) and needs nothing: any tree can mark a
  memory obsolete.

`Attribution.coalitions` lists every coalition, the configuration it ran and whether
the rule remapped it, so no coalition is dropped silently.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from wmtsim.core.bootstrap import paired_bootstrap
from wmtsim.core.formatting import did_you_mean
from wmtsim.core.inference import adjust, metric_bound
from wmtsim.core.metrics import BETTER, METRICS, metrics_from_counters
from wmtsim.core.policies import (
    POLICIES,
    SEL_BRANCHES,
    SEL_EVERYTHING,
    SEL_ITEMS,
    SEL_NONE,
    WMT,
    Policy,
)
from wmtsim.core.verdicts import contribution_tests
from wmtsim.studies.attribution.shapley import (
    _finite_mean,
    permutation_masks,
    shapley_exact,
    shapley_sampled,
)

if TYPE_CHECKING:
    import altair as alt

    from wmtsim.core.world_spec import World
    from wmtsim.studies.scenarios.scenario import Scenario

EXACT_MAX_SWITCHES = 10  # 2^10 = 1024 coalitions: beyond that, sample permutations
DEFAULT_METRICS = ("asr", "prr", "br", "tsr", "prompt_tokens")
SELECTION_NAMES = {SEL_NONE: "none", SEL_EVERYTHING: "everything", SEL_ITEMS: "items",
                   SEL_BRANCHES: "branches"}
SWITCH_LABELS = {
    "tree": "tree serialisation",
    "scores": "retention scores + priority",
    "selection": "selection",
    "fold": "fold / summary",
    "reopen": "reopen",
    "lifecycle": "suppression",
    "supersede": "supersession",
}


def switch_names(policy_class: type = Policy) -> tuple[str, ...]:
    """The mechanism switches: the fields of ``policy_class`` (a `Policy` dataclass)
    declared one (``metadata={"switch": True}``, `wmtsim.core.policies.SWITCH`), in field
    order."""
    return tuple(f.name for f in fields(policy_class) if f.metadata.get("switch"))


def differing_switches(p: Policy, q: Policy) -> tuple[str, ...]:
    """The switches in which ``p`` and ``q`` differ (the players), in field order."""
    return tuple(s for s in switch_names(type(p)) if getattr(p, s) != getattr(q, s))


def mechanism_label(switch: str, p: Policy, q: Policy) -> str:
    """A readable name of a player: its label, and the move for a non-boolean switch."""
    label = SWITCH_LABELS.get(switch, switch.replace("_", " "))
    a, b = getattr(p, switch), getattr(q, switch)
    if isinstance(a, bool):
        return label if b else f"no {label}"
    if switch == "selection":
        return f"selection {SELECTION_NAMES.get(a, a)}→{SELECTION_NAMES.get(b, b)}"
    return f"{label} {a}→{b}"


# --- the dependency rule -------------------------------------------------------------------


@dataclass(frozen=True)
class Dependency:
    """``switch`` acts only through ``needs``: ``ok(policy)`` is False when the policy
    gives ``switch`` a value that needs ``needs`` and ``needs`` is off."""

    switch: str
    needs: str
    ok: Callable[[Policy], bool]
    reason: str


def _dependencies() -> tuple[Dependency, ...]:
    deps = [
        Dependency("reopen", "fold", lambda p: bool(p.fold) or not p.reopen,
                   "only folded branches are reopened"),
        Dependency("selection", "scores",
                   lambda p: bool(p.scores) or p.selection != SEL_BRANCHES,
                   "A3 ranks whole branches by the priority U_b that scores maintain"),
    ]
    if "supersede" in switch_names():  # lifecycle is then suppression (Eq. 7) alone
        deps.append(Dependency("lifecycle", "scores",
                               lambda p: bool(p.scores) or not p.lifecycle,
                               "suppression (Eq. 7) compares branch priorities"))
    return tuple(deps)


DEPENDENCIES = _dependencies()


def is_meaningful(policy: Policy) -> bool:
    """True when no switch of ``policy`` needs a prerequisite it has turned off."""
    return all(d.ok(policy) for d in DEPENDENCIES)


def resolve(config: Policy, p: Policy, q: Policy) -> tuple[Policy, tuple[str, ...]]:
    """The meaningful configuration a coalition runs, and the switches the rule moved.

    *A dependent switch follows its prerequisite*: while ``config`` gives a switch a
    value that needs a prerequisite it lacks, the switch takes its other end's value
    (P's if it has Q's, else Q's). Raises ValueError when that does not help.
    """
    moved: list[str] = []
    for _ in range(len(DEPENDENCIES) + 1):
        broken = [d for d in DEPENDENCIES if not d.ok(config)]
        if not broken:
            return config, tuple(moved)
        d = broken[0]
        value = getattr(config, d.switch)
        other = getattr(p, d.switch) if value == getattr(q, d.switch) else getattr(
            q, d.switch)
        if other == value:
            break
        config = replace(config, **{d.switch: other})
        moved.append(d.switch)
    raise ValueError(f"no meaningful configuration for {config}: {d.switch} needs "
                     f"{d.needs} ({d.reason})")


def coalition_policy(p: Policy, q: Policy, players: Sequence[str], mask: int
                     ) -> tuple[Policy, tuple[str, ...]]:
    """P with the players in ``mask`` (bit j = players[j]) set to Q's values, resolved
    by the dependency rule; named ``P+switch+...``."""
    config = replace(p, **{s: getattr(q, s) for j, s in enumerate(players)
                           if mask >> j & 1})
    config, moved = resolve(config, p, q)
    on = [s for s in players if getattr(config, s) != getattr(p, s)]
    name = "+".join([p.name, *on])
    if not on:
        name = p.name
    elif not differing_switches(config, q):
        name = q.name
    return replace(config, name=name, label=name), moved


# --- running the coalitions ----------------------------------------------------------------


def _metric_values(counts: np.ndarray) -> dict[str, np.ndarray]:
    """Per-trajectory metrics, as `simulate(...).trajectories` has them."""
    return {k: np.asarray(v, dtype=np.float64) for k, v in metrics_from_counters(counts).items()}


class CoalitionRunner:
    """Runs configurations on one generated world, each distinct configuration once.

    This is `wmtsim.engine.simulation.simulate` without its provenance frame (the same
    `simulation.run_engine` call and `metrics_from_counters`, as
    `wmtsim.studies.sweeps.run.run_task`), so the values are those of ``simulate(world,
    ...).trajectories``.
    """

    def __init__(self, world: World, scenario: Scenario, threads: int | None = None) -> None:
        self.world, self.scenario, self.threads = world, scenario, threads
        self._cache: dict[bytes, dict[str, np.ndarray]] = {}
        self.runs = 0

    def __call__(self, policy: Policy) -> dict[str, np.ndarray]:
        from wmtsim.engine.simulation import run_engine

        key = policy.pack().tobytes()
        if key not in self._cache:
            sc = self.scenario
            counts, _, _ = run_engine(self.world, policy, sc.params, sc.stubs, sc.baselines,
                                      self.threads)
            self._cache[key] = _metric_values(counts)
            self.runs += 1
        return self._cache[key]


# --- the attribution -----------------------------------------------------------------------


@dataclass(kw_only=True)
class Attribution:
    """The result of `attribute`.

    table: one row per (metric, mechanism): contribution (mean of φ_i(t) over the
        common set), low / high (paired percentile-bootstrap interval), perm_se
        (standard error over sampled orders; NaN when exact), n (common trajectories),
        from_mean / to_mean (P's and Q's means on the common set), plus provenance.
    coalitions: one row per coalition evaluated: mask, the switches it sets to Q's
        values, the configuration it ran, the switches the dependency rule moved, and
        each metric's mean over all trajectories with a finite value.
    common: metric -> the trajectory ids of its common set (finite under every
        coalition), over which every mean of ``table`` is taken.
    """

    scenario: str
    from_policy: str
    to_policy: str
    players: tuple[str, ...]
    method: str
    n: int
    seed: int
    table: pl.DataFrame
    coalitions: pl.DataFrame
    runs: int
    seconds: float
    common: dict[str, np.ndarray]


def _as_policy(policy: str | Policy) -> Policy:
    if isinstance(policy, Policy):
        return policy
    if policy not in POLICIES:
        raise ValueError(f"policy={policy!r} is unknown{did_you_mean(policy, POLICIES)}; "
                         f"allowed: {', '.join(POLICIES)}")
    return POLICIES[policy]


def _check_metrics(metrics: Sequence[str]) -> tuple[str, ...]:
    allowed = tuple(METRICS)
    for m in metrics:
        if m not in allowed:
            raise ValueError(f"metric {m!r} is unknown; allowed: {', '.join(allowed)}")
    if not metrics:
        raise ValueError("give at least one metric")
    return tuple(dict.fromkeys(metrics))


def attribute(scenario: Scenario, from_policy: str | Policy, to_policy: str | Policy,
              metrics: Sequence[str] = DEFAULT_METRICS, n: int | None = None,
              seed: int | None = None, threads: int | None = None,
              permutations: int | None = None, n_resamples: int = 2000,
              confidence: float = 0.95, world: World | None = None,
              progress: Callable[[int, int], None] | None = None) -> Attribution:
    """Shapley attribution of ``to − from`` over the switches in which they differ.

    ``progress(done, total)`` hears each coalition run (for a progress bar).

    Exact over the 2^k coalitions when k ≤ `EXACT_MAX_SWITCHES` and ``permutations`` is
    None; else ``permutations`` (default 200) sampled orders, seeded by ``seed``. The
    world of ``(scenario.world, seed, n)`` is generated once (or ``world`` is used) and
    every coalition runs on it. See the module docstring for the rules.
    """
    from wmtsim.engine.world import generate

    t0 = time.perf_counter()
    p, q = _as_policy(from_policy), _as_policy(to_policy)
    for end, pol in (("--from", p), ("--to", q)):
        if not is_meaningful(pol):
            raise ValueError(f"{end} {pol.name}: not a meaningful configuration")
        if pol.family != WMT.code:
            raise ValueError(f"{end} {pol.name}: attribution covers WMT's own "
                             "configurations (the field's policies are not switch sets "
                             "over WMT's mechanisms)")
    metrics = _check_metrics(metrics)
    players = differing_switches(p, q)
    if not players:
        raise ValueError(f"{p.name} and {q.name} have the same switches: nothing to "
                         "attribute")
    n = scenario.n if n is None else n
    seed = scenario.seed if seed is None else seed
    w = world if world is not None else generate(scenario.world, seed=seed, n=n)
    runner = CoalitionRunner(w, scenario, threads)
    k = len(players)
    exact = permutations is None and k <= EXACT_MAX_SWITCHES
    if exact:
        masks = list(range(1 << k))
        orders = np.empty((0, k), dtype=np.int64)
    else:
        rng = np.random.default_rng([seed, 13])
        orders = np.stack([rng.permutation(k) for _ in range(permutations or 200)])
        masks = permutation_masks(k, orders)
    configs = {mask: coalition_policy(p, q, players, mask) for mask in masks}
    runs = {}
    for done, mask in enumerate(masks, 1):
        runs[mask] = runner(configs[mask][0])
        if progress is not None:
            progress(done, len(masks))

    rows: list[dict[str, Any]] = []
    common_ids: dict[str, np.ndarray] = {}
    rng = np.random.default_rng([seed, 2])
    alpha = 1.0 - confidence
    for metric in metrics:
        stack = np.stack([runs[mask][metric] for mask in masks])  # (coalitions, n)
        common = np.all(np.isfinite(stack), axis=0)
        x = stack[:, common]
        common_ids[metric] = np.asarray(w.trajectories)[common]
        index = {mask: i for i, mask in enumerate(masks)}
        if exact:
            phi_t = shapley_exact(x)  # (k, n_common)
            perm_se = np.full(k, np.nan)
        else:
            def value(mask: int, x: np.ndarray = x, index: dict[int, int] = index
                      ) -> np.ndarray:
                return x[index[mask]]

            phi_t, per_order = shapley_sampled(value, k, orders)
            r = per_order.shape[0]
            per_order_means = per_order.mean(axis=2)  # (R, k)
            perm_se = (per_order_means.std(axis=0, ddof=1) / math.sqrt(r) if r > 1
                       else np.full(k, np.nan))
        n_common = int(common.sum())
        contribution = phi_t.mean(axis=1) if n_common else np.full(k, np.nan)
        low, high = paired_bootstrap(phi_t, n_resamples, alpha, rng)
        tests = contribution_tests(phi_t, low, high, alpha, metric_bound(metric))
        from_mean = float(x[index[0]].mean()) if n_common else math.nan
        to_mean = float(x[index[(1 << k) - 1]].mean()) if n_common else math.nan
        for j, s in enumerate(players):
            rows.append({"scenario": scenario.name, "from_policy": p.name,
                         "to_policy": q.name, "metric": metric, "order": j,
                         "mechanism": mechanism_label(s, p, q), "switch": s,
                         "contribution": float(contribution[j]), **tests[j],
                         "perm_se": float(perm_se[j]),
                         "n": n_common, "from_mean": from_mean, "to_mean": to_mean,
                         "method": "exact" if exact else f"sampled ({len(orders)} orders)",
                         "seed": seed, "trajectories": w.n, "resamples": n_resamples})
    for r, pa in zip(rows, adjust([r["p"] for r in rows], "holm"), strict=True):
        r["p_holm"] = float(pa)  # the family: every (metric, mechanism) of this table
    coalitions = pl.DataFrame([{
        "mask": mask, "switches": ",".join(s for j, s in enumerate(players) if mask >> j & 1),
        "configuration": configs[mask][0].name, "moved_by_rule": ",".join(configs[mask][1]),
        **{m: _finite_mean(runs[mask][m]) for m in metrics}} for mask in masks])
    return Attribution(scenario=scenario.name, from_policy=p.name, to_policy=q.name,
                       players=players, method="exact" if exact else "sampled", n=w.n,
                       seed=seed, table=pl.DataFrame(rows), coalitions=coalitions,
                       runs=runner.runs, seconds=time.perf_counter() - t0,
                       common=common_ids)


# --- rendering and writing -----------------------------------------------------------------


def waterfall_frame(table: pl.DataFrame) -> pl.DataFrame:
    """Bars of a waterfall per metric: P's mean, each contribution, Q's mean."""
    rows: list[dict[str, Any]] = []
    for metric in table["metric"].unique(maintain_order=True).to_list():
        t = table.filter(pl.col("metric") == metric).sort("order")
        first = t.row(0, named=True)
        level = first["from_mean"]
        rows.append({"metric": metric, "step": 0, "bar": first["from_policy"],
                     "start": 0.0, "end": level, "low": None, "high": None,
                     "kind": "configuration", "value": level})
        for r in t.iter_rows(named=True):
            rows.append({"metric": metric, "step": len(rows), "bar": r["mechanism"],
                         "start": level, "end": level + r["contribution"],
                         "low": level + r["low"], "high": level + r["high"],
                         "kind": _effect(metric, r["contribution"]),
                         "value": r["contribution"]})
            level += r["contribution"]
        rows.append({"metric": metric, "step": len(rows), "bar": first["to_policy"],
                     "start": 0.0, "end": first["to_mean"], "low": None, "high": None,
                     "kind": "configuration", "value": first["to_mean"]})
    return pl.DataFrame(rows, schema={"metric": pl.Utf8, "step": pl.Int64, "bar": pl.Utf8,
                                      "start": pl.Float64, "end": pl.Float64,
                                      "low": pl.Float64, "high": pl.Float64,
                                      "kind": pl.Utf8, "value": pl.Float64})


def _effect(metric: str, contribution: float) -> str:
    """``improves`` / ``worsens`` by the metric's better direction; ``no effect`` at 0."""
    if contribution == 0 or not math.isfinite(contribution):
        return "no effect"
    better = BETTER.get(metric, "lower")
    if better not in ("higher", "lower"):
        return "raises" if contribution > 0 else "lowers"
    return "improves" if (contribution > 0) == (better == "higher") else "worsens"


def waterfall_chart(table: pl.DataFrame, title: str = "", columns: int = 3
                    ) -> alt.FacetChart:
    """An Altair waterfall per metric (independent y scales), with 95% intervals,
    ``columns`` metrics per row."""
    import altair as alt

    frame = waterfall_frame(table)
    order = list(dict.fromkeys(frame.sort("step")["bar"].to_list()))
    x = alt.X("bar:N", sort=order, title=None,
              axis=alt.Axis(labelAngle=-40, labelLimit=220, labelOverlap=False))
    palette = dict(zip(("configuration", "improves", "worsens", "no effect", "raises",
                        "lowers"),
                       ("#4c78a8", "#54a24b", "#e45756", "#bab0ac", "#f58518", "#72b7b2"),
                       strict=True))
    kinds = [k for k in palette if k in set(frame["kind"].to_list())]
    from wmtsim.core.formatting import D3_FORMAT

    bars = alt.Chart().mark_bar().encode(  # an all-zero metric's axis reads 0, not 0.000000
        x=x, y=alt.Y("start:Q", title=None, axis=alt.Axis(format=D3_FORMAT)), y2="end:Q",
        color=alt.Color("kind:N", scale=alt.Scale(domain=kinds,
                                                  range=[palette[k] for k in kinds]),
                        title=None),
        tooltip=["bar", alt.Tooltip("value:Q", format=D3_FORMAT),
                 alt.Tooltip("low:Q", format=D3_FORMAT), alt.Tooltip("high:Q", format=D3_FORMAT)])
    rules = alt.Chart().mark_rule(color="black").encode(x=x, y="low:Q", y2="high:Q")
    chart = alt.layer(bars, rules, data=frame.to_pandas()).properties(width=260, height=200)
    faceted = chart.facet(facet=alt.Facet("metric:N", title=None,
                                          sort=table["metric"].unique(
                                              maintain_order=True).to_list()),
                          columns=columns).resolve_scale(y="independent", x="independent")
    return faceted.properties(title=title) if title else faceted


def write_attribution(att: Attribution, out: Path, charts: bool = True) -> list[Path]:
    """attribution.parquet, coalitions.parquet, waterfall.html/.png, manifest.json, into
    ``out`` (the hidden folder of `wmtsim.core.output.result_folder`)."""
    from wmtsim.core.output import atomic_write_parquet, write_manifest
    from wmtsim.core.provenance import provenance
    from wmtsim.studies.sweeps.analysis import write_chart

    out.mkdir(parents=True, exist_ok=True)
    written = [atomic_write_parquet(att.table, out / "attribution.parquet"),
               atomic_write_parquet(att.coalitions, out / "coalitions.parquet")]
    if charts:
        title = f"{att.scenario}: {att.from_policy} → {att.to_policy} (n={att.n})"
        written += write_chart(waterfall_chart(att.table, title), out / "waterfall")
    written.append(write_manifest(out, "attribute", {
        "scenario": att.scenario, "from": att.from_policy, "to": att.to_policy,
        "switches": list(att.players), "method": att.method, "n": att.n, "seed": att.seed,
        "configurations_run": att.runs, "coalitions": att.coalitions.height,
        "seconds": round(att.seconds, 3)}, extra=provenance(
            att.seed, att.n, int(att.table["resamples"][0])
            if "resamples" in att.table.columns else None, 0.05, "holm")))
    return written
