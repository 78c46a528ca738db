"""Helpers shared by the test suite, which mirrors the package: tests/core, tests/engine,
tests/twins, tests/studies, tests/interfaces; package-wide checks (layout, README,
kernel cache, benchmarks) sit at the top.

Test modules import these helpers with ``from conftest import ...`` (pytest puts this
folder on ``sys.path``: the test folders are not packages).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

if TYPE_CHECKING:
    import polars as pl

    from wmtsim.engine.simulation import SimResult

REPO = Path(__file__).resolve().parents[1]
"""The repository root (scenarios/, docs/, sweeps/ ... are read from here)."""


def counters(res: SimResult) -> np.ndarray:
    """A result's raw counters as an ``(n, N_COUNTERS)`` matrix, in `COUNTERS` order."""
    from wmtsim.core.metrics import COUNTERS

    return res.trajectories.select([f"n_{c}" for c in COUNTERS]).to_numpy()


def sweep_frames(out: Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A sweep folder's points and trajectories in a canonical order (the chunk layout
    does not matter)."""
    from wmtsim.studies.sweep_store import load_results

    res = load_results(out)
    return res.points.sort("key"), res.trajectories().collect().sort("key", "trajectory")


def no_exception(at: Any) -> None:
    """A Streamlit `AppTest` run showed no exception."""
    assert not at.exception, [e.value for e in at.exception]


@pytest.fixture(autouse=True)
def _keep_main_module() -> Iterator[None]:
    """Put ``sys.modules['__main__']`` back after every test. Streamlit's AppTest runs a
    page script as ``__main__`` and may leave it there; a later test that starts
    spawn-method worker processes (the sweep's local pool, a Dask cluster) would then
    have every worker re-run that page script on start-up and die."""
    main = sys.modules.get("__main__")
    yield
    if main is not None:
        sys.modules["__main__"] = main
