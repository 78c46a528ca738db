"""Dashboard services of the Population dynamics page: a scenario's configurations over
many trajectories with the engine's aggregates (`wmtsim.studies.dynamics.dynamics`), and the
search for one trajectory that shows a point of a curve (opened on the Poisoning dynamics
page). Part of the service layer (`wmtsim.interfaces.dashboard`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import polars as pl
import streamlit as st

from wmtsim.interfaces.dashboard.services_runs import THREADS, _load


def fate_chart(fates: pl.DataFrame) -> Any:
    """`wmtsim.studies.dynamics.charts.fate_chart` (the library draws it)."""
    from wmtsim.studies.dynamics.charts import fate_chart as chart

    return chart(fates)


def steps_chart(steps: pl.DataFrame) -> Any:
    """`wmtsim.studies.dynamics.charts.steps_chart` (the library draws it)."""
    from wmtsim.studies.dynamics.charts import steps_chart as chart

    return chart(steps)


SEARCH_LIMIT = 300
"""Trajectories searched for one that shows a clicked point of a survival curve."""


@st.cache_data(show_spinner="Simulating the population…", max_entries=16)
def population_tables(name: str, toml_text: str, policies: tuple[str, ...], n: int,
                      seed: int) -> dict[str, pl.DataFrame]:
    """`wmtsim.studies.dynamics.dynamics.population_dynamics` of the scenario's configurations
    ``policies`` on trajectories 0 .. n−1: its tables by name."""
    from wmtsim.studies.dynamics.dynamics import population_dynamics

    sc = _load(name, toml_text)
    rep = population_dynamics(replace(sc, policies=policies), policies, n, seed, THREADS)
    return rep.tables()


@st.cache_data(show_spinner="Looking for a trajectory that shows it…", max_entries=64)
def trajectory_showing(name: str, toml_text: str, policy: str, seed: int, kind: str,
                       k: int) -> dict[str, Any] | None:
    """The first trajectory (of the first `SEARCH_LIMIT`) in which a poison of ``kind``
    (``"all"``: any kind) stops remaining exactly ``k`` steps after its injection under
    ``policy``: ``trajectory``, ``fate``, ``step`` (the last prompt step at which it
    remained; its injection step when k = 0); None when none does."""
    from wmtsim.core.world_spec import POISON_KINDS
    from wmtsim.engine.dynamics import FATES
    from wmtsim.engine.simulation import simulate

    sc = _load(name, toml_text)
    kinds = range(len(POISON_KINDS)) if kind == "all" else [POISON_KINDS.index(kind)]
    for i in range(SEARCH_LIMIT):
        res = simulate(sc.world, policy, n=1, seed=seed, start=i, params=sc.params,
                       stubs=sc.stubs, threads=THREADS, baselines=sc.baselines,
                       dynamics=True)
        counts = res.dynamics().counts
        surv, fate_k = counts["survival"], counts["fate_k"]
        for q in kinds:
            if k >= surv.shape[1] or surv[q, k, 0] == 0:
                continue
            for j, fate in enumerate(FATES):
                if fate not in ("eligible_at_end", "laundered") and fate_k[q, j, k] > 0:
                    at = int(np.argwhere(counts["fate_t"][q, j])[0][0])
                    return {"trajectory": i, "fate": fate, "kind": POISON_KINDS[q],
                            "step": max(at - 1, at - k)}
    return None
