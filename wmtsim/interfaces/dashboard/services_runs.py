"""Dashboard services shared by every page, and the Compare page's: the scenario catalog,
parameter defaults, one cached simulation summary per (scenario, policy, n, seed,
overrides), and the paper's reference values. Part of the service layer
(`wmtsim.interfaces.dashboard`).
"""

from __future__ import annotations

import contextlib
import os
import tomllib
from pathlib import Path
from typing import Any, BinaryIO

import polars as pl
import streamlit as st

THREADS = 1
"""numba threads per simulation: safe under Streamlit's script threads, and fixed."""


ParamItems = tuple[tuple[str, Any], ...]
"""Parameter overrides as a hashable tuple of ``(name, value)`` pairs."""


def _root() -> Path | None:
    """The source checkout holding this package (the shipped studies in why_study/), or
    None when wmtsim is installed from a wheel."""
    checkout = Path(__file__).resolve().parents[3]
    return checkout if (checkout / "pyproject.toml").is_file() else None


REPO = _root()
"""The source checkout, for the shipped studies only: the user's results are read from
the folder the dashboard was started in (`results_dir`)."""

RESULTS_ENV = "WMTSIM_RESULTS"
"""Set by ``wmtsim dashboard --results DIR`` (an absolute path)."""


def results_dir() -> Path:
    """Where the pages look for the user's results: ``$WMTSIM_RESULTS`` (``wmtsim
    dashboard --results DIR``), else ``results/`` of the folder the dashboard was started
    in. ``wmtsim dashboard`` runs Streamlit in that folder, so a relative path typed in a
    page or given in a link (``?folder=results/rho_m``) is read from there too."""
    return Path(os.environ.get(RESULTS_ENV) or "results").absolute()


def short_path(path: str) -> str:
    """A path relative to the folder the dashboard was started in when it is inside it,
    else as given."""
    p = Path(path).absolute()
    return str(p.relative_to(Path.cwd())) if p.is_relative_to(Path.cwd()) else path


LISTED_MANIFEST_BYTES = 16 << 20
"""The largest ``manifest.json`` a listing reads (a sweep's, with thousands of chunks,
is a few hundred kilobytes)."""


def listed_manifest(path: Path) -> Any:
    """The JSON of the ``manifest.json`` at ``path`` a page's listing found, or None when
    it is not one to list: read through the one door (`wmtsim.core.input_files`), so a
    FIFO, a device, a link (to ``/dev/zero``, or anywhere out of the result) or a file
    larger than `LISTED_MANIFEST_BYTES` (a sparse 2 GiB one) is skipped at once, never
    waited on or read whole: anyone who can drop a file into a shared results folder
    must not be able to wedge the server."""
    import json

    from wmtsim.core.input_files import read_regular

    try:
        return json.loads(read_regular(path, inside=True, limit=LISTED_MANIFEST_BYTES))
    except (OSError, ValueError):  # UnicodeDecodeError and JSONDecodeError included
        return None


def shown_root(path: str | os.PathLike[str]) -> str | None:
    """The results folder (`results_dir`) when ``path`` lies under it, else None: the
    folder below which a page follows no link (`open_shown`)."""
    base = str(results_dir())
    with contextlib.suppress(ValueError):  # ValueError: a NUL byte, another drive
        if os.path.commonpath([base, os.path.abspath(path)]) == base:
            return base
    return None


def open_shown(path: str | os.PathLike[str], limit: int,
               result: str | os.PathLike[str] | None = None) -> BinaryIO:
    """A file a page shows (typed in a path box, found by a listing, or a file of the
    result chosen), opened through the one door (`wmtsim.core.input_files.open_regular`):
    a regular file of at most ``limit`` bytes, never waited on (a FIFO) nor read without
    end (a link to ``/dev/zero``, a sparse 2 GiB file: refused from its size). Under the
    results folder no link anywhere below that folder is followed (`shown_root`), so a
    file dropped into a shared results folder cannot lead the server out of it;
    elsewhere no link below ``result`` (the result folder the file belongs to), or,
    without one, the file itself may not be a link. An `OSError` naming the file and
    what is allowed otherwise."""
    from wmtsim.core.input_files import open_regular

    root = shown_root(path) or result
    return open_regular(os.path.abspath(path), inside=True, limit=limit, root=root)


class Unavailable(RuntimeError):
    """A part of the library this view needs is missing; ``str`` says why."""


def policy_labels() -> dict[str, str]:
    """Policy name -> the paper's label, in the library's order."""
    from wmtsim.core.policies import POLICIES

    return {name: p.label for name, p in POLICIES.items()}


def metric_info() -> dict[str, tuple[str, str, str]]:
    """Metric name -> (equation, better direction, description)."""
    from wmtsim.core.metrics import METRICS

    return dict(METRICS)


def poison_metrics() -> tuple[str, ...]:
    """The metrics that count poison (ASR, PRR, IP, BR, AF: shown beside Table 4 only),
    which a world without poison leaves at 0 or undefined."""
    from wmtsim.core.metrics import DECLARED

    return tuple(m.name for m in DECLARED if m.compare == ("table4",))


def count_metrics() -> tuple[str, ...]:
    """The metrics whose per-trajectory value is a count (a numerator without a
    denominator: prompt tokens, steps, LLM calls), which tables show as whole numbers."""
    from wmtsim.core.metrics import DECLARED

    return tuple(m.name for m in DECLARED if not m.den)


def default_params() -> dict[str, Any]:
    from wmtsim.core.params import Params

    return Params().to_dict()


def _scenario_module() -> Any:
    try:
        from wmtsim.studies.scenarios import scenario
    except ImportError as e:
        raise Unavailable(f"wmtsim.studies.scenarios.scenario cannot be imported ({e})") from None
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
            raise ValueError(f"{name or 'uploaded file'}: invalid TOML: {e}") from None
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
    """Table 4 as policy -> metric -> value: `wmtsim.studies.compare.report.paper_table4` when the
    library has it, else the values printed in the paper (docs/model.md §6)."""
    try:
        from wmtsim.studies.compare.report import paper_table4
    except ImportError:
        from wmtsim.core.metrics import PAPER_NAMES

        return {config: {PAPER_NAMES[m]: values[k] for m, values in _TABLE4.items()}
                for k, config in enumerate(TABLE4_CONFIGS)}
    return paper_table4()


TABLE4_CONFIGS = ("linear", "a1_unweighted", "a2_no_controller", "a3_no_semantic", "wmt")


_TABLE4 = {  # paper Table 4 (docs/model.md §6), in the order of TABLE4_CONFIGS
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
    (`wmtsim.studies.compare.report.paper_table123`): accuracy % and prompt tokens in millions."""
    try:
        from wmtsim.studies.compare.report import paper_table123
    except ImportError as e:
        raise Unavailable(f"wmtsim.studies.compare.report cannot be imported ({e})") from None
    table = paper_table123()
    rows = [{"policy": p, **{k: float(v) for k, v in table[p].items()}}
            for p in policies if p in table]
    if not rows:
        raise Unavailable("the paper's Tables 1–3 have none of these configurations")
    return pl.DataFrame(rows)
