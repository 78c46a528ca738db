"""Dashboard services of the Dynamics page: one simulated trajectory's step records, the
step window around a chosen step, score bands, running rates and the tree layout.
Part of the service layer (`wmtsim.interfaces.dashboard`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl
import streamlit as st

from wmtsim.interfaces.dashboard.services_runs import THREADS, ParamItems, _load, _setup


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
