"""The dashboard's service layer: the only module that calls the wmtsim library.

Every public function takes hashable arguments (scenario name or TOML text, policy, n,
seed, parameter overrides as ``((name, value), ...)`` tuples) and is cached with
`st.cache_data`, so a rerun of a page never recomputes what it has already shown. Pages
and chart components only render what these functions return.

Simulations run with ``threads=1``: Streamlit runs each session's script on its own
thread, and numba's thread count is set per call by `wmtsim.simulation.simulate` (its global
threading layer is never touched here).

Parts of the library that may be missing (scenarios, the paper comparison, sweeps) raise
`Unavailable`, whose message the pages show as "not available: <reason>".
"""

from __future__ import annotations

import json
import os
import tomllib
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import streamlit as st

THREADS = 1
"""numba threads per simulation: safe under Streamlit's script threads, and fixed."""

ParamItems = tuple[tuple[str, Any], ...]
"""Parameter overrides as a hashable tuple of ``(name, value)`` pairs."""



def _root() -> Path:
    """The source checkout holding this package (``results/`` and ``scenarios/`` beside
    it), or the working directory when wmtsim is installed from a wheel."""
    checkout = Path(__file__).resolve().parents[3]
    return checkout if (checkout / "pyproject.toml").is_file() else Path.cwd()


REPO = _root()

# Paper metric names (paper_tables.csv) -> wmtsim metric names (wmtsim.metrics.METRICS).
PAPER_METRICS = {"ASR": "asr", "PRR": "prr", "IP": "ip", "BR": "br", "AF": "af",
                 "TSR": "tsr", "CCR": "ccr"}


class Unavailable(RuntimeError):
    """A part of the library this view needs is missing; ``str`` says why."""


# ---------------------------------------------------------------------------------------
# Library metadata


def policy_labels() -> dict[str, str]:
    """Policy name -> the paper's label, in the library's order."""
    from wmtsim.core.policies import POLICIES

    return {name: p.label for name, p in POLICIES.items()}


def metric_info() -> dict[str, tuple[str, str, str]]:
    """Metric name -> (equation, better direction, description)."""
    from wmtsim.core.metrics import METRICS

    return dict(METRICS)


def default_params() -> dict[str, Any]:
    from wmtsim.core.params import Params

    return Params().to_dict()


# ---------------------------------------------------------------------------------------
# Scenarios


def _scenario_module() -> Any:
    try:
        from wmtsim.studies import scenario
    except ImportError as e:
        raise Unavailable(f"wmtsim.scenario cannot be imported ({e})") from None
    return scenario


@st.cache_data(show_spinner=False)
def scenario_catalog() -> dict[str, str]:
    """Shipped scenario name -> its description."""
    mod = _scenario_module()
    out = {}
    for name, path in mod.shipped_scenarios().items():
        try:
            out[name] = mod.load_scenario(path).description
        except Exception as e:  # a broken shipped file should not hide the others
            out[name] = f"(cannot be loaded: {e})"
    return out


def _load(name: str, toml_text: str) -> Any:
    """The `Scenario` of a TOML text when given (``name`` is then its file name, for
    messages), else of a shipped scenario ``name``."""
    mod = _scenario_module()
    if toml_text:
        try:
            data = tomllib.loads(toml_text)
        except tomllib.TOMLDecodeError as e:
            raise ValueError(f"uploaded file: invalid TOML: {e}") from None
        data.setdefault("name", Path(name).stem if name else "uploaded")
        return mod.scenario_from_dict(data, source=name or "uploaded scenario")
    return mod.load_scenario(name)


@st.cache_data(show_spinner=False)
def scenario_info(name: str, toml_text: str = "") -> dict[str, Any]:
    """A scenario's name, description, policies, n, seed, paper table and parameters."""
    sc = _load(name, toml_text)
    return {"name": sc.name, "description": sc.description, "policies": tuple(sc.policies),
            "n": int(sc.n), "seed": int(sc.seed), "paper": sc.paper,
            "params": sc.params.to_dict(), "stubs": sc.stubs.to_dict(),
            "world": sc.world.to_dict()}


def _setup(name: str, toml_text: str, params: ParamItems, stubs: ParamItems
           ) -> tuple[Any, Any, Any]:
    sc = _load(name, toml_text)
    p = sc.params.with_(**dict(params)) if params else sc.params
    s = sc.stubs.from_dict({**sc.stubs.to_dict(), **dict(stubs)}) if stubs else sc.stubs
    return sc.world, p, s


# ---------------------------------------------------------------------------------------
# Compare configurations


@st.cache_data(show_spinner="Simulating…", max_entries=64)
def run_summary(name: str, toml_text: str, policy: str, n: int, seed: int,
                params: ParamItems = (), stubs: ParamItems = ()) -> pl.DataFrame:
    """`SimResult.summary()` (policy, metric, mean, low, high, n) of one configuration."""
    from wmtsim.engine.simulation import simulate

    world, p, s = _setup(name, toml_text, params, stubs)
    return simulate(world, policy, n=n, seed=seed, params=p, stubs=s, threads=THREADS,
                    baselines=_load(name, toml_text).baselines).summary()


def compare(name: str, toml_text: str, policies: tuple[str, ...], n: int, seed: int,
            params: ParamItems = (), stubs: ParamItems = ()) -> pl.DataFrame:
    """The summaries of several configurations on the same trajectories, stacked."""
    frames = [run_summary(name, toml_text, pol, n, seed, params, stubs) for pol in policies]
    return pl.concat(frames) if frames else pl.DataFrame()


def _table4() -> dict[str, dict[str, float]]:
    """Table 4 as policy -> metric -> value: `wmtsim.report.paper_table4` when the
    library has it, else the values printed in the paper (MODEL.md §6)."""
    try:
        from wmtsim.studies.report import paper_table4
    except ImportError:
        return {config: {PAPER_METRICS[m]: values[k] for m, values in _TABLE4.items()}
                for k, config in enumerate(TABLE4_CONFIGS)}
    return paper_table4()


TABLE4_CONFIGS = ("linear", "a1_unweighted", "a2_no_controller", "a3_no_semantic", "wmt")
_TABLE4 = {  # paper Table 4 (MODEL.md §6), in the order of TABLE4_CONFIGS
    "ASR": (0.995, 0.631, 0.601, 0.680, 0.419),
    "PRR": (0.246, 0.125, 0.158, 0.139, 0.097),
    "IP": (1.000, 0.009, 0.009, 0.009, 0.009),
    "BR": (0.906, 0.388, 0.509, 0.669, 0.315),
    "AF": (6.103, 1.280, 1.638, 1.977, 0.965),
    "TSR": (0.183, 0.431, 0.451, 0.393, 0.575),
    "CCR": (1.000, 0.815, 0.634, 1.000, 0.819),
}


@st.cache_data(show_spinner=False)
def paper_values(paper: str | None) -> pl.DataFrame:
    """The paper's value per (policy, metric) for Table 4 (columns policy, metric, paper).

    Only Table 4 reports the simulated metrics; Tables 1–3 report accuracy and tokens on
    real benchmarks, which the simulator does not reproduce on the same scale.
    """
    if paper != "table4":
        raise Unavailable(f"the paper reports these metrics only in Table 4 "
                          f"(this scenario: {paper or 'no paper table'})")
    rows = [{"policy": policy, "metric": metric, "paper": float(value)}
            for policy, values in _table4().items() for metric, value in values.items()]
    if not rows:
        raise Unavailable("no Table 4 rows in the paper's tables")
    return pl.DataFrame(rows)


@st.cache_data(show_spinner=False)
def paper_benign(policies: tuple[str, ...]) -> pl.DataFrame:
    """Tables 1–3 (benign study) per configuration, averaged over models and benchmarks
    (`wmtsim.report.paper_table123`): accuracy % and prompt tokens in millions."""
    try:
        from wmtsim.studies.report import paper_table123
    except ImportError as e:
        raise Unavailable(f"wmtsim.report cannot be imported ({e})") from None
    table = paper_table123()
    rows = [{"policy": p, **{k: float(v) for k, v in table[p].items()}}
            for p in policies if p in table]
    if not rows:
        raise Unavailable("the paper's Tables 1–3 have none of these configurations")
    return pl.DataFrame(rows)


# ---------------------------------------------------------------------------------------
# Poisoning dynamics: one trajectory, step by step


@dataclass(frozen=True)
class TrajectoryView:
    """One trajectory of one configuration, as the engine recorded it.

    steps: the per-step records of `SimResult.steps` plus each slot's ``parent``.
    metrics: the library's per-trajectory metrics (one row of `SimResult.trajectories`).
    final_tree: `SimResult.tree` of the trajectory.
    """

    policy: str
    trajectory: int
    steps: pl.DataFrame
    metrics: dict[str, Any]
    final_tree: list[dict[str, Any]]


@st.cache_data(show_spinner="Simulating the trajectory…", max_entries=128)
def trajectory_view(name: str, toml_text: str, policy: str, seed: int, trajectory: int,
                    params: ParamItems = (), stubs: ParamItems = ()) -> TrajectoryView:
    """Run trajectory ``trajectory`` of ``(seed, world)`` alone, recording every step.

    The engine's counter-based generator makes a trajectory identical whether it runs
    alone or in a batch, so this is row ``trajectory`` of ``simulate(world, n, seed)``.
    """
    from wmtsim.engine.simulation import simulate

    world, p, s = _setup(name, toml_text, params, stubs)
    res = simulate(world, policy, n=1, seed=seed, params=p, stubs=s, threads=THREADS,
                   record_steps=1, start=trajectory,
                   baselines=_load(name, toml_text).baselines)
    return _view(res, trajectory)


def _view(res: Any, trajectory: int) -> TrajectoryView:
    """A `TrajectoryView` of the only trajectory of a `SimResult`."""
    from wmtsim.core.metrics import METRICS

    tree = res.tree(trajectory)
    parents = pl.DataFrame({"slot": [r["slot"] for r in tree],
                            "parent": [r["parent"] for r in tree]},
                           schema={"slot": pl.Int64, "parent": pl.Int64})
    steps = res.steps.join(parents, on="slot", how="left")
    row = res.trajectories.row(0, named=True)
    return TrajectoryView(res.policy, trajectory, steps, {k: row[k] for k in METRICS}, tree)


def n_steps(steps: pl.DataFrame) -> int:
    """How many steps a per-step frame covers (steps are numbered from 0)."""
    return 0 if steps.is_empty() else int(steps.select(pl.col("step").max()).item()) + 1


DETAIL_LIMIT = 40
"""Above this many memories a trajectory is drawn as a summary: score bands instead of a
line per memory, a window of steps in the selection raster, a tree without labels."""
WINDOW = 30
"""Steps in the selection raster's window of a large trajectory."""
MEMORY_KINDS = ("action", "global", "summary")


def memory_count(steps: pl.DataFrame) -> int:
    """How many action, global and summary memories a per-step frame holds."""
    return steps.filter(pl.col("kind").is_in(MEMORY_KINDS))["slot"].n_unique()


def score_bands(steps: pl.DataFrame) -> pl.DataFrame:
    """Per step and memory class (poisoned / clean): the mean, lowest and highest
    retention score u of the memories at that step, and how many there are."""
    return (steps.filter(pl.col("kind").is_in(MEMORY_KINDS))
            .with_columns(memory=pl.when(pl.col("poisoned")).then(pl.lit("poisoned"))
                          .otherwise(pl.lit("clean")))
            .group_by("step", "memory")
            .agg(mean=pl.col("u").mean(), low=pl.col("u").min(), high=pl.col("u").max(),
                 memories=pl.len())
            .sort("step", "memory"))


WINDOW_MEMORIES = 60
"""At most this many memories (the newest in the pool) in a step window."""


@dataclass(frozen=True)
class StepWindow:
    """Rows of a window of steps, for some of the memories in the candidate pool."""

    rows: pl.DataFrame
    first: int
    last: int
    shown: int  # memories in ``rows``
    in_pool: int  # memories in the candidate pool at some step of the window


def step_window(steps: pl.DataFrame, step: int, width: int = WINDOW,
                most: int = WINDOW_MEMORIES) -> StepWindow:
    """The ``width`` steps ending at ``step`` (or starting at 0), for the ``most`` newest
    memories (highest slots) in the candidate pool at some step of the window."""
    last = min(max(step, width - 1), n_steps(steps) - 1)
    first = max(last - width + 1, 0)
    rows = steps.filter(pl.col("step").is_between(first, last))
    pool = rows.filter(pl.col("eligible"))["slot"].unique().sort()
    keep = pool.tail(most)
    return StepWindow(rows.filter(pl.col("slot").is_in(keep.implode())), first, last,
                      keep.len(), pool.len())


def running_rates(steps: pl.DataFrame) -> pl.DataFrame:
    """Running BR (Eq. 11) and PRR (Eq. 9) after each recorded step.

    Counted from the recorded selections with each slot's ``poisoned`` flag at that step
    (a fold summary's contamination is recorded per step), so the last row equals the
    library's BR and PRR.
    """
    per = (steps.group_by("step", maintain_order=True)
           .agg((pl.col("selected") & pl.col("poisoned")).sum().alias("h_p"),
                (pl.col("selected") & ~pl.col("poisoned")).sum().alias("h_c"))
           .sort("step"))
    hp = pl.col("h_p").cum_sum()
    hc = pl.col("h_c").cum_sum()
    contaminated = (pl.col("h_p") > 0).cast(pl.Int64).cum_sum()
    return per.with_columns(
        br=contaminated / pl.int_range(1, pl.len() + 1),
        prr=pl.when(hp + hc > 0).then(hp / (hp + hc)).otherwise(None),
    ).select("step", "br", "prr")


def tree_layout(nodes: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Positions for a tree drawing: ``(nodes + x, depth)`` and edges ``(x, y, x2, y2)``.

    ``nodes`` needs ``slot`` and ``parent`` (-1 for roots and global memories). Leaves
    get consecutive x in depth-first order; a parent sits above the middle of its
    children.
    """
    slots = nodes["slot"].to_list()
    parent = dict(zip(slots, nodes["parent"].to_list(), strict=True))
    children: dict[int, list[int]] = {}
    for v in slots:
        children.setdefault(parent[v] if parent[v] in parent else -1, []).append(v)
    x: dict[int, float] = {}
    depth: dict[int, int] = {}
    next_leaf = [0.0]

    def place(v: int, d: int) -> float:
        depth[v] = d
        kids = children.get(v, [])
        if not kids:
            x[v] = next_leaf[0]
            next_leaf[0] += 1.0
        else:
            xs = [place(c, d + 1) for c in kids]
            x[v] = (min(xs) + max(xs)) / 2.0
        return x[v]

    for root in children.get(-1, []):
        place(root, 0)
    placed = nodes.with_columns(
        x=pl.Series([x[v] for v in slots], dtype=pl.Float64),
        depth=pl.Series([depth[v] for v in slots], dtype=pl.Int64),
    )
    edges = pl.DataFrame(
        [{"x": x[parent[v]], "y": depth[parent[v]], "x2": x[v], "y2": depth[v]}
         for v in slots if parent[v] in x],
        schema={"x": pl.Float64, "y": pl.Int64, "x2": pl.Float64, "y2": pl.Int64},
    )
    return placed, edges


# ---------------------------------------------------------------------------------------
# Trace replay


@dataclass(frozen=True)
class TraceView:
    """A replayed trace: the replay frame (plus ``parent``), expectations and parameters."""

    frame: pl.DataFrame
    steps: int
    expectations: pl.DataFrame
    params: dict[str, Any]


def _expect_lines(lines: list[str]) -> list[tuple[int, dict[str, Any]]]:
    from wmtsim.engine.trace import read_events

    return [(line, dict(ev)) for line, ev in read_events(lines) if ev.get("op") == "expect"]


@st.cache_data(show_spinner="Replaying…", max_entries=32)
def replay_trace(text: str) -> TraceView:
    """Replay a JSONL trace with `wmtsim.trace.run`; raises `TraceError` for a bad trace.

    Every ``expect`` line is checked on its own (the trace with the other expect lines
    blanked), so all failing lines are reported, not only the first.
    """
    from wmtsim.engine.trace import read_events, run

    lines = text.splitlines()
    result = run(lines)
    parents: dict[str, str | None] = {}
    for _, ev in read_events(lines):
        if ev.get("op") in ("task", "action"):
            parents[ev["id"]] = ev["parent"]
        elif ev.get("op") == "query":
            parents[ev.get("id", "root")] = None  # the trace format's default root id
        elif ev.get("op") == "global":
            parents[ev["id"]] = None
    nodes = result.frame["node"].unique(maintain_order=True).to_list()
    for node in nodes:  # fold summaries: "<task>/summary" under the task
        if node not in parents and node.endswith("/summary"):
            parents[node] = node[: -len("/summary")]
    frame = result.frame.join(
        pl.DataFrame({"node": nodes, "parent": [parents.get(v) for v in nodes]},
                     schema={"node": pl.String, "parent": pl.String}),
        on="node", how="left")
    expects = _expect_lines(lines)
    rows = []
    for line, ev in expects:
        alone = [ln if k + 1 == line or not _is_expect(ln) else "" for k, ln in
                 enumerate(lines)]
        d = run(alone).divergence
        checks = ", ".join(f"{f}={ev[f]!r}" for f in ("u", "m", "state") if f in ev)
        rows.append({"line": line, "node": ev["id"], "expect": checks,
                     "status": "ok" if d is None else "FAILED",
                     "field": None if d is None else d.field,
                     "got": None if d is None else repr(d.got),
                     "tolerance": None if d is None else
                     ("exact" if d.tol is None else f"{d.tol:g}")})
    schema = {"line": pl.Int64, "node": pl.String, "expect": pl.String, "status": pl.String,
              "field": pl.String, "got": pl.String, "tolerance": pl.String}
    return TraceView(frame, result.steps, pl.DataFrame(rows, schema=schema),
                     result.params.to_dict())


def _is_expect(line: str) -> bool:
    try:
        return json.loads(line).get("op") == "expect"
    except (ValueError, AttributeError):
        return False


def demo_trace_text() -> str:
    """The paper's A.4 worked example trace."""
    from wmtsim.interfaces.cli import demo_trace_path

    return demo_trace_path().read_text(encoding="utf-8")


def trace_tree(view: TraceView, step: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The replayed tree after select step ``step``: node positions and edges."""
    at = view.frame.filter(pl.col("step") == step)
    index = {v: k for k, v in enumerate(at["node"].to_list())}
    nodes = at.with_columns(
        slot=pl.Series(list(range(at.height)), dtype=pl.Int64),
        parent=pl.Series([index.get(p, -1) if p is not None else -1
                          for p in at["parent"].to_list()], dtype=pl.Int64),
    )
    return tree_layout(nodes)


# ---------------------------------------------------------------------------------------
# Sweeps


def _analysis() -> Any:
    try:
        from wmtsim.studies import analysis
    except ImportError as e:
        raise Unavailable(f"wmtsim.analysis cannot be imported ({e})") from None
    return analysis


@dataclass(frozen=True)
class SweepView:
    """A sweep folder: its manifest, varied parameters and one row per computed point."""

    root: str
    manifest: dict[str, Any]
    parameters: tuple[str, ...]
    metrics: tuple[str, ...]
    table: pl.DataFrame


@st.cache_data(show_spinner="Reading the sweep…", max_entries=16)
def load_sweep_folder(folder: str, mtime: float = 0.0) -> SweepView:
    """`wmtsim.sweep_store.load_results` of ``folder`` (``mtime`` invalidates the cache
    when the sweep grows)."""
    try:
        from wmtsim.studies.sweep_store import load_results
    except ImportError as e:
        raise Unavailable(f"wmtsim.sweep_store cannot be imported ({e})") from None
    res = load_results(folder)
    metrics = tuple(res.manifest.get("metrics") or ())
    return SweepView(str(res.root), res.manifest, tuple(res.parameters), metrics,
                     res.table())


def sweep_mtime(folder: str) -> float:
    manifest = Path(folder) / "manifest.json"
    return manifest.stat().st_mtime if manifest.is_file() else 0.0


RESULTS_ENV = "WMTSIM_RESULTS"
"""Where the sweep explorer looks for sweeps (default: the repository's results/)."""


def find_sweeps(base: str | None = None) -> list[str]:
    """Sweep output folders under ``base`` (default ``$WMTSIM_RESULTS`` or results/;
    relative to the repository or absolute), newest first: folders whose manifest.json
    was written by `wmtsim sweep` (run and compare folders have one too, not a sweep's)."""
    base = base or os.environ.get(RESULTS_ENV) or "results"
    root = Path(base) if Path(base).is_absolute() else REPO / base
    if not root.is_dir():
        return []
    found = []
    for manifest in root.glob("**/manifest.json"):
        try:
            data = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and "sweep_id" in data and "design" in data:
            found.append((manifest.stat().st_mtime, str(manifest.parent)))
    return [folder for _, folder in sorted(found, reverse=True)][:200]


def short_path(folder: str) -> str:
    """A folder relative to the repository when it is inside it."""
    path = Path(folder)
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else folder


HEATMAP_BINS = (8, 8)
"""Bins per axis of a heatmap over two continuous parameters."""


def is_continuous(view: SweepView, parameter: str) -> bool:
    """Whether a sweep parameter takes values from a range (lhs, sobol or random design)
    rather than from a list of levels (grid)."""
    return view.manifest["design"]["kind"] != "grid" and \
        view.table.schema[parameter].is_numeric()


def grid_means(table: pl.DataFrame, x: str, y: str, metric: str,
               bins: tuple[int, int] | None = None) -> pl.DataFrame:
    """Mean of the per-point means of ``metric`` in each ``(x, y)`` cell (averaging over
    the other parameters, replicates and scenarios of the rows given), with the number of
    points per cell.

    ``bins``: cut a continuous ``x`` and ``y`` into that many equal-width bins; each cell
    then has its bounds ``x_low``, ``x_high``, ``y_low``, ``y_high`` (``x`` and ``y`` are
    the bin centres).
    """
    if bins is None:
        return (table.group_by(x, y).agg(pl.col(metric).mean(), pl.len().alias("points"))
                .sort(x, y))
    edges = {}
    binned = table
    for name, k in ((x, bins[0]), (y, bins[1])):
        lo, hi = float(table[name].min()), float(table[name].max())  # type: ignore[arg-type]
        width = (hi - lo) / k if hi > lo else 1.0
        edges[name] = (lo, width)
        index = ((pl.col(name) - lo) / width).floor().clip(0, k - 1)
        binned = binned.with_columns(index.alias(f"{name}__bin"))
    cells = binned.group_by(f"{x}__bin", f"{y}__bin").agg(
        pl.col(metric).mean(), pl.len().alias("points"))
    out = []
    for name in (x, y):
        lo, width = edges[name]
        b = pl.col(f"{name}__bin")
        out += [(lo + b * width).alias(f"{name}_low"), (lo + (b + 1) * width).alias(
            f"{name}_high"), (lo + (b + 0.5) * width).alias(name)]
    return cells.select(*out, metric, "points").sort(x, y)


def pareto(table: pl.DataFrame, cost: str, benefit: str) -> pl.DataFrame:
    """The points of ``table`` on the Pareto front of ``benefit`` (maximised) against
    ``cost`` (minimised): `wmtsim.analysis.pareto_front`."""
    return _analysis().pareto_front(table, cost=cost, value=benefit)


@st.cache_data(show_spinner="Computing sensitivity indices…", max_entries=16)
def sensitivity(folder: str, metric: str, mtime: float = 0.0) -> pl.DataFrame:
    """Sobol indices (S1, ST with intervals) of ``metric`` per policy and parameter:
    `wmtsim.analysis.sobol_indices` (needs a sobol design)."""
    from wmtsim.studies.sweep_store import load_results

    with warnings.catch_warnings():
        # An index is NaN when the metric does not vary across the design (numpy warns
        # about the all-NaN slice); the table shows the NaN.
        warnings.filterwarnings("ignore", "All-NaN slice", RuntimeWarning)
        warnings.filterwarnings("ignore", "invalid value encountered", RuntimeWarning)
        return _analysis().sobol_indices(load_results(folder), metric)


def sensitivity_chart(indices: pl.DataFrame) -> Any:
    """`wmtsim.analysis.sensitivity_chart` of the indices."""
    return _analysis().sensitivity_chart(indices)


@st.cache_data(show_spinner=False, max_entries=64)
def point_trajectories(folder: str, key: str, mtime: float = 0.0) -> pl.DataFrame:
    """The per-trajectory metrics a sweep stored for one point."""
    from wmtsim.studies.sweep_store import load_results

    return (load_results(folder).trajectories().filter(pl.col("key") == key)
            .sort("trajectory").collect())


def _sweep_point(manifest: dict[str, Any], key: str) -> Any:
    try:
        from wmtsim.studies.sweep import load_sweep, plan
    except ImportError as e:
        raise Unavailable(f"wmtsim.sweep cannot be imported ({e})") from None
    path = manifest.get("sweep_file")
    if not path or not Path(path).is_file():
        raise Unavailable(f"the sweep file {path!r} is not there any more, so the point "
                          "cannot be re-simulated")
    for p in plan(load_sweep(path)).points:
        if p.key == key:
            return p
    raise Unavailable(f"the sweep file {path} no longer defines point {key} "
                      "(it was edited after the sweep ran)")


@st.cache_data(show_spinner="Re-simulating the trajectory…", max_entries=64)
def sweep_trajectory(folder: str, key: str, trajectory: int, mtime: float = 0.0
                     ) -> TrajectoryView:
    """One trajectory of a sweep point, re-run with step recording (same seed and
    trajectory index, so it is the trajectory the sweep aggregated)."""
    from wmtsim.engine.simulation import simulate

    view = load_sweep_folder(folder, mtime)
    p = _sweep_point(view.manifest, key)
    res = simulate(p.world, p.policy, n=1, seed=p.seed, params=p.params, stubs=p.stubs,
                   threads=THREADS, record_steps=1, start=trajectory, baselines=p.baselines)
    return _view(res, trajectory)


# ---------------------------------------------------------------------------------------
# Why: mechanism attribution (wmtsim.attribution) and claims maps (wmtsim.claims)


def wmt_configurations() -> dict[str, str]:
    """WMT's own configurations (the ones attribution decomposes): name -> label."""
    from wmtsim.core.policies import FAM_WMT, POLICIES

    return {name: p.label for name, p in POLICIES.items() if p.family == FAM_WMT}


@dataclass(frozen=True)
class AttributionView:
    """`wmtsim.attribution.attribute`'s table and coalitions, and what it ran."""

    table: pl.DataFrame
    coalitions: pl.DataFrame
    runs: int
    seconds: float


@st.cache_data(show_spinner="Running every coalition of switches…", max_entries=32)
def attribution(name: str, toml_text: str, from_policy: str, to_policy: str,
                metrics: tuple[str, ...], n: int, seed: int) -> AttributionView:
    """Shapley attribution of ``to − from`` over their differing switches, on one world
    (`wmtsim.attribution.attribute`); raises ValueError for a request it refuses."""
    from wmtsim.studies.attribution import attribute

    att = attribute(_load(name, toml_text), from_policy, to_policy, metrics=metrics, n=n,
                    seed=seed, threads=THREADS, n_resamples=1000)
    return AttributionView(att.table, att.coalitions, att.runs, att.seconds)


def waterfall_chart(table: pl.DataFrame) -> Any:
    """`wmtsim.attribution.waterfall_chart` of an attribution table, two metrics per row
    (three overflow the page at 1280 px)."""
    from wmtsim.studies.attribution import waterfall_chart as chart

    return chart(table, columns=2)


def find_claims(bases: tuple[str, ...] = ("results", "studies/tables")) -> list[str]:
    """Claims maps under ``bases`` (relative to the repository): folders written by
    ``wmtsim claims`` and the shipped study's claims tables (claims_*.parquet)."""
    found: list[str] = []
    for base in bases:
        root = REPO / base
        if root.is_dir():
            found += sorted(str(p.parent) for p in root.glob("**/claims.json"))
            found += sorted(str(p) for p in root.glob("claims_*.parquet"))
    return found[:200]


@st.cache_data(show_spinner="Reading the claims map…", max_entries=16)
def claims_view(path: str, mtime: float = 0.0) -> tuple[tuple[str, ...], pl.DataFrame]:
    """The knobs and table of a claims map (`wmtsim.claims.load_claims`; ``mtime``
    invalidates the cache when it is rewritten)."""
    from wmtsim.studies.claims import load_claims

    meta, table = load_claims(path)
    return tuple(meta["parameters"]), table


def claims_mtime(path: str) -> float:
    p = Path(path)
    target = p / "claims.parquet" if p.is_dir() else p
    return target.stat().st_mtime if target.is_file() else 0.0


def claims_chart(table: pl.DataFrame, x: str, y: str) -> Any:
    """`wmtsim.claims.heatmap_chart`: one heatmap per claim."""
    from wmtsim.studies.claims import heatmap_chart

    return heatmap_chart(table, x, y)


def claims_summary(table: pl.DataFrame) -> pl.DataFrame:
    """Per claim: cells where it holds, is undecided, fails (`wmtsim.claims`)."""
    from wmtsim.studies.claims import summary_frame

    return summary_frame(table)
