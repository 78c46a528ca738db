"""Every dashboard page under `streamlit.testing.v1.AppTest`: it renders without an
exception, its controls change what is shown, and the numbers it shows are the library's."""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import polars as pl
import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest

from wmtsim.params import Params
from wmtsim.simulation import simulate
from wmtsim.trace import replay
from wmtsim.world import PoisonSpec, WorldSpec

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # the pages import `dashboards.*` (app.py does this too)
    sys.path.insert(0, str(REPO))
PAGES = REPO / "dashboards" / "views"
TIMEOUT = 300  # the first simulation in a process may compile or load numba kernels

N = 50
SEED = 3
SCENARIO = f"""
name = "dash_test"
description = "two poison injections, for the dashboard tests"
n = {N}
seed = {SEED}
policies = ["linear", "wmt"]
paper = "table4"

[[poison]]
kind = "plausible"

[[poison]]
kind = "failed"
"""
WORLD = WorldSpec(poison=(PoisonSpec("plausible"), PoisonSpec("failed")))


@pytest.fixture(scope="module")
def scenario_file(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("scenario") / "dash_test.toml"
    path.write_text(SCENARIO, encoding="utf-8")
    return str(path)


def _page(name: str) -> AppTest:
    return AppTest.from_file(str(PAGES / f"{name}.py"), default_timeout=TIMEOUT)


def _with_scenario(at: AppTest, path: str) -> AppTest:
    at.run()
    at.sidebar.radio(key=f"{_prefix(at)}_source").set_value("file path").run()
    at.sidebar.text_input(key=f"{_prefix(at)}_path").set_value(path).run()
    return at


def _prefix(at: AppTest) -> str:
    keys = [str(r.key) for r in at.sidebar.radio]
    return keys[0].split("_")[0]


def _no_exception(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def _frame(at: AppTest, *columns: str) -> pl.DataFrame:
    """The first table shown whose columns include ``columns`` (tables carry no key)."""
    for df in at.dataframe:
        value = df.value
        if hasattr(value, "data"):  # a pandas Styler
            value = value.data
        if set(columns) <= set(value.columns):
            return pl.from_pandas(value)
    raise AssertionError(f"no table with columns {columns}")


def _metrics(at: AppTest) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for m in at.metric:
        out.setdefault(m.label, []).append(m.value)
    return out


# ---------------------------------------------------------------------------------------
# The app and its navigation


def test_app_declares_four_pages_and_renders_the_default() -> None:
    at = AppTest.from_file(str(REPO / "dashboards" / "app.py"), default_timeout=TIMEOUT)
    at.run()
    _no_exception(at)
    assert at.title[0].value == "Poisoning dynamics"
    at.switch_page("views/trace.py").run()
    _no_exception(at)
    assert at.title[0].value == "Trace replay"


# ---------------------------------------------------------------------------------------
# 1. Poisoning dynamics


def test_dynamics_shows_the_library_numbers_and_reacts(scenario_file: str) -> None:
    at = _with_scenario(_page("dynamics"), scenario_file)
    _no_exception(at)
    assert len(at.get("vega_lite_chart")) == 8  # 4 charts x 2 configurations

    ref = simulate(WORLD, "wmt", n=N, seed=SEED, threads=1).trajectories
    lin = simulate(WORLD, "linear", n=N, seed=SEED, threads=1).trajectories
    for k in (0, 7):
        at.sidebar.number_input(key="dyn_trajectory").set_value(k).run()
        _no_exception(at)
        shown = _metrics(at)
        # first column: the scenario's last policy (wmt); second: its first (linear)
        assert shown["BR (trajectory)"] == [f"{ref['br'][k]:.4f}", f"{lin['br'][k]:.4f}"]
        assert shown["PRR (trajectory)"] == [f"{ref['prr'][k]:.4f}", f"{lin['prr'][k]:.4f}"]
        assert shown["ASR (trajectory)"][0] == f"{ref['asr'][k]:.4f}"

    # The step slider moves the view: the caption names the step.
    captions = [c.value for c in at.caption]
    at.slider(key="dyn_step").set_value(3).run()
    _no_exception(at)
    assert [c.value for c in at.caption] != captions
    assert any(c.value.startswith("step 3:") for c in at.caption)

    at.sidebar.checkbox(key="dyn_compare").uncheck().run()
    assert len(at.get("vega_lite_chart")) == 4


def test_dynamics_params_change_the_trajectory(scenario_file: str) -> None:
    at = _with_scenario(_page("dynamics"), scenario_file)
    at.sidebar.number_input(key="dyn_trajectory").set_value(1).run()
    at.sidebar.checkbox(key="dyn_compare").uncheck().run()
    before = [c.proto.spec for c in at.get("vega_lite_chart")]
    # A small budget B makes the selector miss memories, so they decay (Eqs. 3-5).
    at.sidebar.number_input(key="dyn_param_budget").set_value(128).run()
    _no_exception(at)
    after = _metrics(at)["PRR (trajectory)"]
    lib = simulate(WORLD, "wmt", n=N, seed=SEED, threads=1,
                   params=Params(budget=128)).trajectories
    assert after == [f"{lib['prr'][1]:.4f}"]
    assert [c.proto.spec for c in at.get("vega_lite_chart")] != before  # scores decay faster


# ---------------------------------------------------------------------------------------
# 2. Compare configurations


def _table(at: AppTest) -> pl.DataFrame:
    return _frame(at, "configuration", "mean", "low", "high")


def test_compare_table_equals_simulate_summary(scenario_file: str) -> None:
    at = _page("compare")
    at = _with_scenario(at, scenario_file)
    at.sidebar.number_input(key="cmp_n").set_value(N).run()
    _no_exception(at)
    table = _table(at)
    assert set(table["configuration"]) == {"Linear History", "Full WMT"}
    summary = simulate(WORLD, "wmt", n=N, seed=SEED, threads=1).summary()
    for metric in ("asr", "br", "tsr"):
        row = table.filter((pl.col("configuration") == "Full WMT")
                           & (pl.col("metric") == metric))
        lib = summary.filter(pl.col("metric") == metric)
        for col in ("mean", "low", "high"):
            assert row[col][0] == pytest.approx(lib[col][0], rel=1e-12, abs=1e-12)
    # The paper's Table 4 values sit beside them.
    paper = table.filter((pl.col("configuration") == "Full WMT")
                         & (pl.col("metric") == "asr"))["paper"][0]
    assert paper == pytest.approx(0.419)
    assert len(at.get("vega_lite_chart")) == 1

    # Editing a parameter in the sidebar re-runs the library with it.
    at.sidebar.number_input(key="cmp_param_budget").set_value(128).run()
    _no_exception(at)
    changed = _table(at)
    lib = simulate(WORLD, "wmt", n=N, seed=SEED, threads=1, params=Params(budget=128)).summary()
    got = changed.filter((pl.col("configuration") == "Full WMT")
                         & (pl.col("metric") == "prr"))["mean"][0]
    assert got == pytest.approx(lib.filter(pl.col("metric") == "prr")["mean"][0])
    assert not changed.equals(table)

    # Choosing configurations changes the rows.
    at.sidebar.multiselect(key="cmp_policies").set_value(["a1_unweighted"]).run()
    _no_exception(at)
    assert set(_table(at)["configuration"]) == {"A1 Unweighted Tree"}


def test_compare_without_a_scenario_asks_for_one() -> None:
    at = _page("compare").run()
    _no_exception(at)
    at.sidebar.radio(key="cmp_source").set_value("file path").run()
    assert any("Enter the path" in i.value for i in at.info)
    at.sidebar.text_input(key="cmp_path").set_value("/nonexistent/x.toml").run()
    _no_exception(at)
    assert any("cannot load the scenario" in e.value for e in at.error)


# ---------------------------------------------------------------------------------------
# 3. Sweep explorer


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory: pytest.TempPathFactory, scenario_file: str) -> dict[str, str]:
    from wmtsim.sweep import load_sweep, run_sweep

    root = tmp_path_factory.mktemp("sweeps")
    (root / "sc.toml").write_text(SCENARIO, encoding="utf-8")
    (root / "grid.toml").write_text(
        'name = "grid"\nscenario = "sc.toml"\npolicies = ["linear", "wmt"]\n'
        '[parameters]\n"params.rho" = { values = [0.8, 0.9] }\n'
        '"params.M" = { values = [2, 3, 4] }\n'
        '[design]\nkind = "grid"\ntrajectories = 20\nseed = 0\n', encoding="utf-8")
    (root / "sobol.toml").write_text(
        'name = "sobol"\nscenario = "sc.toml"\npolicies = ["wmt"]\n'
        '[parameters]\n"params.rho" = { low = 0.7, high = 0.99 }\n'
        '"params.budget" = { low = 256, high = 2048, integer = true }\n'
        '[design]\nkind = "sobol"\npoints = 8\ntrajectories = 20\nseed = 0\n',
        encoding="utf-8")
    out = {}
    for name in ("grid", "sobol"):
        run_sweep(load_sweep(root / f"{name}.toml"), root / f"{name}_out", progress=False,
                  threads=1)
        out[name] = str(root / f"{name}_out")
    return out


def test_sweep_explorer_renders_and_drills_down(sweeps: dict[str, str]) -> None:
    at = _page("sweep").run()
    _no_exception(at)
    at.sidebar.text_input(key="sweep_folder").set_value(sweeps["grid"]).run()
    _no_exception(at)
    assert at.get("vega_lite_chart")  # heatmap, Pareto front, drill-down charts
    assert any("Sensitivity indices not available" in w.value for w in at.warning)

    # The drill-down shows the stored per-trajectory metrics of the chosen point, and the
    # re-simulated trajectory's BR equals what the sweep stored for it.
    from wmtsim.sweep_store import load_results

    res = load_results(sweeps["grid"])
    key = at.selectbox(key="sweep_point").value
    stored = res.trajectories().filter(pl.col("key") == key).sort("trajectory").collect()
    shown = _frame(at, "trajectory", "br", "tsr")
    assert shown["br"].to_list() == pytest.approx(stored["br"].to_list())
    at.selectbox(key="sweep_trajectory").set_value(5).run()
    _no_exception(at)
    row = stored.filter(pl.col("trajectory") == 5)
    assert _metrics(at)["BR (trajectory)"] == [f"{row['br'][0]:.4f}"]

    # Controls: another metric and another point change what is shown.
    spec_before = [c.proto.spec for c in at.get("vega_lite_chart")]
    at.sidebar.selectbox(key="sweep_metric").set_value("asr").run()
    _no_exception(at)
    assert [c.proto.spec for c in at.get("vega_lite_chart")] != spec_before
    at.selectbox(key="sweep_point").select_index(3).run()
    _no_exception(at)
    assert at.selectbox(key="sweep_point").value != key


def test_sweep_explorer_sobol_and_missing_folder(sweeps: dict[str, str],
                                                 tmp_path: Path) -> None:
    at = _page("sweep").run()
    at.sidebar.text_input(key="sweep_folder").set_value(sweeps["sobol"]).run()
    _no_exception(at)
    from wmtsim.analysis import sobol_indices
    from wmtsim.sweep_store import load_results

    with warnings.catch_warnings():  # NaN intervals where a tiny design has no variance
        warnings.filterwarnings("ignore", "All-NaN slice", RuntimeWarning)
        lib = sobol_indices(load_results(sweeps["sobol"]), "tsr")
    shown = _frame(at, "S1", "parameter")
    assert shown["S1"].to_list() == pytest.approx(lib["S1"].to_list(), nan_ok=True)
    assert at.get("vega_lite_chart")

    at.sidebar.text_input(key="sweep_folder").set_value(str(tmp_path)).run()
    _no_exception(at)
    assert any("not available" in w.value for w in at.warning)


# ---------------------------------------------------------------------------------------
# 4. Trace replay


def test_trace_replay_demo_and_step_slider() -> None:
    at = _page("trace").run()
    _no_exception(at)
    from wmtsim.cli import demo_trace_path

    frame = replay(demo_trace_path())
    assert _metrics(at)["select steps"] == [str(frame.select(pl.col("step").max()).item())]
    assert any("expect lines hold" in s.value for s in at.success)
    table = _frame(at, "node", "u", "selected")
    lib = frame.filter(pl.col("step") == 1)
    assert table["u"].to_list() == lib["u"].to_list()
    at.slider(key="trace_step").set_value(4).run()
    _no_exception(at)
    table4 = _frame(at, "node", "u", "selected")
    assert table4["u"].to_list() == frame.filter(pl.col("step") == 4)["u"].to_list()
    assert table4["u"].to_list() != table["u"].to_list()
    assert len(at.get("vega_lite_chart")) == 2


def test_trace_replay_highlights_every_failed_expect(tmp_path: Path) -> None:
    from wmtsim.cli import demo_trace_path

    lines = demo_trace_path().read_text(encoding="utf-8").splitlines()
    bad: list[int] = []
    for k, line in enumerate(lines):
        ev = json.loads(line) if line.strip() else {}
        if ev.get("op") == "expect" and "u" in ev and len(bad) < 2:
            ev["u"] = float(ev["u"]) + 0.5
            lines[k] = json.dumps(ev)
            bad.append(k + 1)
    path = tmp_path / "broken.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    at = _page("trace").run()
    at.sidebar.text_input(key="trace_path").set_value(str(path)).run()
    _no_exception(at)
    assert _metrics(at)["failed expect lines"] == ["2"]
    expects = _frame(at, "status", "line")
    failed = expects.filter(pl.col("status") == "FAILED")["line"].to_list()
    assert failed == bad

    path.write_text('{"op": "task", "id": "t"}\n', encoding="utf-8")
    at.sidebar.text_input(key="trace_path").set_value(str(path) + "").run()
    _no_exception(at)


@pytest.mark.parametrize("policy", ["linear", "wmt"])
def test_running_rates_end_at_the_library_values(scenario_file: str, policy: str) -> None:
    """The running BR / PRR after the last step are the trajectory's BR and PRR (the step
    records keep each step's poisoned flags, fold summaries included)."""
    from dashboards import services

    lib = simulate(WORLD, policy, n=N, seed=SEED, threads=1).trajectories
    for k in (0, 4, 9):
        view = services.trajectory_view(scenario_file, "", policy, SEED, k)
        last = services.running_rates(view.steps).tail(1)
        assert last["br"][0] == pytest.approx(lib["br"][k])
        assert last["prr"][0] == pytest.approx(lib["prr"][k])
        assert services.n_steps(view.steps) == lib["n_prompt_steps"][k]


def test_dashboard_command_says_when_the_app_is_missing(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    from typer.testing import CliRunner

    from wmtsim import cli

    # As if wmtsim were installed from a wheel: no dashboards/ next to the package.
    monkeypatch.setattr(cli, "__file__", str(tmp_path / "wmtsim" / "cli.py"))
    result = CliRunner().invoke(cli.app, ["dashboard", "--port", "1"])
    assert result.exit_code == 2
    assert "dashboard app was not found" in result.output
