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


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (for a test's server)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def counters(res: SimResult) -> np.ndarray:
    """A result's raw counters as an ``(n, N_COUNTERS)`` matrix, in `COUNTERS` order."""
    from wmtsim.core.metrics import COUNTERS

    return res.trajectories.select([f"n_{c}" for c in COUNTERS]).to_numpy()


def sweep_frames(out: Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A sweep folder's points and trajectories in a canonical order (the chunk layout
    does not matter)."""
    from wmtsim.studies.sweeps.store import load_results

    res = load_results(out)
    return res.points.sort("key"), res.trajectories().collect().sort("key", "trajectory")


def no_exception(at: Any) -> None:
    """A Streamlit `AppTest` run showed no exception."""
    assert not at.exception, [e.value for e in at.exception]


def _values(spec: object, key: str) -> list[Any]:
    """Every value of ``key`` anywhere in a (Vega-Lite) JSON document."""
    if isinstance(spec, dict):
        return [v for k, v in spec.items() if k == key] + \
            [x for v in spec.values() for x in _values(v, key)]
    if isinstance(spec, list):
        return [x for v in spec for x in _values(v, key)]
    return []


def off_policy_tooltips(spec: dict[str, Any]) -> list[str]:
    """The tooltips of a Vega-Lite spec that do not follow the precision policy: a
    quantitative field shown without `wmtsim.core.formatting.D3_FORMAT`, unless every
    value it takes in the chart's data is a whole number (a step, a count), which is
    shown as is (or with ``d``). Empty when every tooltip follows it."""
    from wmtsim.core.formatting import D3_FORMAT

    rows = [r for d in spec.get("datasets", {}).values() for r in d]
    rows += [r for v in _values(spec, "values") if isinstance(v, list)
             for r in v if isinstance(r, dict)]
    bad = []
    for tips in _values(spec, "tooltip"):
        for t in tips if isinstance(tips, list) else [tips]:
            if not isinstance(t, dict) or t.get("type") != "quantitative" \
                    or t.get("format") == D3_FORMAT:
                continue
            field = str(t.get("field", "")).replace("\\.", ".")
            seen = [r[field] for r in rows if r.get(field) is not None]
            whole = all(isinstance(v, int | float) and float(v).is_integer() for v in seen)
            if not (whole and t.get("format") in (None, "d")):
                bad.append(f"{field}: format {t.get('format')!r}, values {seen[:3]}")
    return bad


def tooltips_follow_the_policy(at: Any) -> None:
    """Every chart an `AppTest` run drew writes its tooltips in the precision policy."""
    import json

    import pyarrow as pa

    for chart in at.get("vega_lite_chart"):
        spec = json.loads(chart.proto.spec)
        # Streamlit sends a chart's data beside its spec, as Arrow: put it back.
        spec["datasets"] = {d.name: pa.ipc.open_stream(d.data.data).read_all().to_pylist()
                            for d in chart.proto.datasets}
        if chart.proto.data.data:
            spec["datasets"][""] = pa.ipc.open_stream(chart.proto.data.data).read_all() \
                .to_pylist()
        assert off_policy_tooltips(spec) == [], (spec.get("title"), off_policy_tooltips(spec))


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
