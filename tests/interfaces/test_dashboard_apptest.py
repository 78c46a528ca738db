"""Every dashboard page under `streamlit.testing.v1.AppTest`: it renders without an
exception, its controls change what is shown, and the numbers it shows are the library's."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import polars as pl
import pytest

pytest.importorskip("streamlit")
from conftest import REPO, no_exception, tooltips_follow_the_policy
from streamlit.testing.v1 import AppTest

from wmtsim.core.formatting import interval, num, plural
from wmtsim.core.params import Params
from wmtsim.core.world_spec import PoisonSpec, WorldSpec
from wmtsim.engine.simulation import simulate
from wmtsim.engine.trace.trace import replay

PAGES = REPO / "wmtsim" / "interfaces" / "dashboard" / "views"
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
    at = AppTest.from_file(str(PAGES.parent / "app.py"), default_timeout=TIMEOUT)
    at.run()
    no_exception(at)
    assert at.title[0].value == "Poisoning dynamics"
    at.switch_page("views/trace.py").run()
    no_exception(at)
    assert at.title[0].value == "Trace replay"


# ---------------------------------------------------------------------------------------
# 1. Poisoning dynamics


def test_dynamics_shows_the_library_numbers_and_reacts(scenario_file: str) -> None:
    at = _with_scenario(_page("dynamics"), scenario_file)
    no_exception(at)
    assert len(at.get("vega_lite_chart")) == 8  # 4 charts x 2 configurations

    ref = simulate(WORLD, "wmt", n=N, seed=SEED, threads=1).trajectories
    lin = simulate(WORLD, "linear", n=N, seed=SEED, threads=1).trajectories
    for k in (0, 7):
        at.sidebar.number_input(key="dyn_trajectory").set_value(k).run()
        no_exception(at)
        shown = _metrics(at)
        # first column: the scenario's last policy (wmt); second: its first (linear)
        assert shown["BR (trajectory)"] == [num(ref["br"][k]), num(lin["br"][k])]
        assert shown["PRR (trajectory)"] == [num(ref["prr"][k]), num(lin["prr"][k])]
        assert shown["ASR (trajectory)"][0] == num(ref["asr"][k])

    # The step slider moves the view: the caption names the step.
    captions = [c.value for c in at.caption]
    at.slider(key="dyn_step").set_value(3).run()
    no_exception(at)
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
    no_exception(at)
    after = _metrics(at)["PRR (trajectory)"]
    lib = simulate(WORLD, "wmt", n=N, seed=SEED, threads=1,
                   params=Params(budget=128)).trajectories
    assert after == [num(lib["prr"][1])]
    assert [c.proto.spec for c in at.get("vega_lite_chart")] != before  # scores decay faster


# ---------------------------------------------------------------------------------------
# 2. Compare configurations


def _table(at: AppTest) -> pl.DataFrame:
    return _frame(at, "configuration", "mean", "low", "high")


def test_compare_table_equals_simulate_summary(scenario_file: str) -> None:
    at = _page("compare")
    at = _with_scenario(at, scenario_file)
    at.sidebar.number_input(key="cmp_n").set_value(N).run()
    no_exception(at)
    table = _table(at)
    assert set(table["configuration"]) == {"Linear History", "Full WMT"}
    summary = simulate(WORLD, "wmt", n=N, seed=SEED, threads=1).summary()
    for metric in ("asr", "br", "tsr"):
        row = table.filter((pl.col("configuration") == "Full WMT")
                           & (pl.col("metric") == metric))
        lib = summary.filter(pl.col("metric") == metric)
        # Shown by default: the pooled value (Σ/Σ, as the paper's table).
        for col, lib_col in (("mean", "pooled"), ("low", "pooled_low"),
                             ("high", "pooled_high")):
            assert row[col][0] == pytest.approx(lib[lib_col][0], rel=1e-12, abs=1e-12)
    # The other reading, the mean of per-trajectory values, one click away.
    at.sidebar.radio(key="cmp_value").set_value("mean of per-trajectory values").run()
    per_trajectory = _table(at)
    for metric in ("asr", "br"):
        row = per_trajectory.filter((pl.col("configuration") == "Full WMT")
                                    & (pl.col("metric") == metric))
        lib = summary.filter(pl.col("metric") == metric)
        assert row["mean"][0] == pytest.approx(lib["mean"][0], rel=1e-12, abs=1e-12)
    at.sidebar.radio(key="cmp_value").set_value("pooled over trajectories (Σ/Σ)").run()
    # The paper's Table 4 values sit beside them.
    paper = table.filter((pl.col("configuration") == "Full WMT")
                         & (pl.col("metric") == "asr"))["paper"][0]
    assert paper == "0.419"  # as shown: a column with a missing value ("–") is text
    assert len(at.get("vega_lite_chart")) == 1

    # Editing a parameter in the sidebar re-runs the library with it.
    at.sidebar.number_input(key="cmp_param_budget").set_value(128).run()
    no_exception(at)
    changed = _table(at)
    lib = simulate(WORLD, "wmt", n=N, seed=SEED, threads=1, params=Params(budget=128)).summary()
    got = changed.filter((pl.col("configuration") == "Full WMT")
                         & (pl.col("metric") == "prr"))["mean"][0]
    assert got == pytest.approx(lib.filter(pl.col("metric") == "prr")["pooled"][0])
    assert not changed.equals(table)

    # Choosing configurations changes the rows.
    at.sidebar.multiselect(key="cmp_policies").set_value(["a1_unweighted"]).run()
    no_exception(at)
    assert set(_table(at)["configuration"]) == {"A1 Unweighted Tree"}


def test_compare_without_a_scenario_asks_for_one() -> None:
    at = _page("compare").run()
    no_exception(at)
    at.sidebar.radio(key="cmp_source").set_value("file path").run()
    assert any("Enter the path" in i.value for i in at.info)
    at.sidebar.text_input(key="cmp_path").set_value("/nonexistent/x.toml").run()
    no_exception(at)
    assert any("cannot load the scenario" in e.value for e in at.error)


# ---------------------------------------------------------------------------------------
# 3. Sweep explorer


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory: pytest.TempPathFactory, scenario_file: str) -> dict[str, str]:
    from wmtsim.studies.sweeps.sweep import load_sweep, run_sweep

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
        '[design]\nkind = "sobol"\npoints = 8\nscramblings = 2\ntrajectories = 20\n'
        'seed = 0\n',
        encoding="utf-8")
    out = {}
    for name in ("grid", "sobol"):
        run_sweep(load_sweep(root / f"{name}.toml"), root / f"{name}_out", progress=False,
                  threads=1)
        out[name] = str(root / f"{name}_out")
    return out


def _sweep_page(folder: str) -> AppTest:
    at = _page("sweep")
    at.query_params["folder"] = folder  # a shareable link opens that sweep
    return at.run()


def test_sweep_explorer_renders_and_drills_down(sweeps: dict[str, str]) -> None:
    at = _sweep_page(sweeps["grid"])
    no_exception(at)
    assert at.get("vega_lite_chart")  # heatmap, Pareto front, drill-down charts
    # A grid has no Sobol indices: said in a caption, not a warning (issue 52, row 12).
    assert not any("Sensitivity" in w.value for w in at.warning)
    assert any("need a Sobol design" in c.value for c in at.caption)

    # The drill-down shows the stored per-trajectory metrics of the chosen point, and the
    # re-simulated trajectory's BR equals what the sweep stored for it.
    from wmtsim.studies.sweeps.store import load_results

    res = load_results(sweeps["grid"])
    key = at.selectbox(key="sweep_point").value
    stored = res.trajectories().filter(pl.col("key") == key).sort("trajectory").collect()
    shown = _frame(at, "trajectory", "br", "tsr")
    assert shown["br"].to_list() == pytest.approx(stored["br"].to_list())
    at.selectbox(key="sweep_trajectory").set_value(5).run()
    no_exception(at)
    row = stored.filter(pl.col("trajectory") == 5)
    assert _metrics(at)["BR (trajectory)"] == [num(row["br"][0])]

    # Controls: another metric and another point change what is shown.
    spec_before = [c.proto.spec for c in at.get("vega_lite_chart")]
    at.sidebar.selectbox(key="sweep_metric").set_value("asr").run()
    no_exception(at)
    assert [c.proto.spec for c in at.get("vega_lite_chart")] != spec_before
    at.selectbox(key="sweep_point").select_index(3).run()
    no_exception(at)
    assert at.selectbox(key="sweep_point").value != key
    # Flat means flat: the page reads analyze's test before it names a best point.
    from wmtsim.studies.sweeps.flatness import flatness
    from wmtsim.studies.sweeps.store import load_results as _load

    test = flatness(_load(sweeps["grid"]), "tsr")
    for policy in ("linear", "wmt"):  # linear reads neither ρ nor M: flat by design
        at.sidebar.selectbox(key="sweep_policy").set_value(policy)
        at.sidebar.selectbox(key="sweep_metric").set_value("tsr").run()
        row = test.filter(pl.col("policy") == policy).row(0, named=True)
        said = [m.value for m in [*at.info, *at.success] if "across the grid" in m.value]
        assert len(said) == 1 and ("no significant difference" in said[0]) == row["flat"]
        assert ("no best point is named" in said[0]) == row["flat"], said
        assert policy != "linear" or row["flat"]


def test_sweep_explorer_sobol_and_missing_folder(sweeps: dict[str, str],
                                                 tmp_path: Path) -> None:
    at = _sweep_page(sweeps["sobol"])
    no_exception(at)
    at.sidebar.selectbox(key="sweep_metric").set_value("tsr").run()  # opened on another
    from wmtsim.studies.sweeps.analysis import sobol_indices
    from wmtsim.studies.sweeps.store import load_results

    with warnings.catch_warnings():  # NaN intervals where a tiny design has no variance
        warnings.filterwarnings("ignore", "All-NaN slice", RuntimeWarning)
        lib = sobol_indices(load_results(sweeps["sobol"]), "tsr")
    shown = _frame(at, "S1", "parameter")
    assert shown["S1"].to_list() == [interval(r["S1"], r["S1_low"], r["S1_high"])
                                     for r in lib.iter_rows(named=True)]
    assert "NaN" not in " ".join(shown["S1"].to_list() + shown["ST"].to_list())
    assert set(lib["scramblings"]) == {2}
    # The method the indices rest on (or why they are undefined), said on the page.
    assert any("over 2 scramblings" in c.value for c in at.caption), [
        c.value for c in at.caption]
    assert at.get("vega_lite_chart")

    missing = _sweep_page(str(tmp_path))  # a link to a folder that holds no sweep
    no_exception(missing)
    assert any("not available" in w.value for w in missing.warning)


# ---------------------------------------------------------------------------------------
# 4. Trace replay


def test_trace_replay_demo_and_step_slider() -> None:
    at = _page("trace").run()
    no_exception(at)
    from wmtsim.interfaces.cli.main import demo_trace_path

    frame = replay(demo_trace_path())
    assert _metrics(at)["select steps"] == [str(frame.select(pl.col("step").max()).item())]
    assert any("expect lines hold" in s.value for s in at.success)
    table = _frame(at, "node", "u", "selected")
    lib = frame.filter(pl.col("step") == 1)
    assert table["u"].to_list() == lib["u"].to_list()
    at.slider(key="trace_step").set_value(4).run()
    no_exception(at)
    table4 = _frame(at, "node", "u", "selected")
    assert table4["u"].to_list() == frame.filter(pl.col("step") == 4)["u"].to_list()
    assert table4["u"].to_list() != table["u"].to_list()
    assert len(at.get("vega_lite_chart")) == 2


def test_trace_replay_highlights_every_failed_expect(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from wmtsim.interfaces.cli.main import demo_trace_path

    monkeypatch.setenv("WMTSIM_RESULTS", str(tmp_path))  # the path box reads only there
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
    no_exception(at)
    assert _metrics(at)["failed expect lines"] == ["2"]
    expects = _frame(at, "status", "line")
    failed = expects.filter(pl.col("status") == "FAILED")["line"].to_list()
    assert failed == bad

    path.write_text('{"op": "task", "id": "t"}\n', encoding="utf-8")
    at.sidebar.text_input(key="trace_path").set_value(str(path) + "").run()
    no_exception(at)


@pytest.mark.parametrize("policy", ["linear", "wmt"])
def test_running_rates_end_at_the_library_values(scenario_file: str, policy: str) -> None:
    """The running BR / PRR after the last step are the trajectory's BR and PRR (the step
    records keep each step's poisoned flags, fold summaries included)."""
    from wmtsim.interfaces.dashboard import services_dynamics

    lib = simulate(WORLD, policy, n=N, seed=SEED, threads=1).trajectories
    for k in (0, 4, 9):
        view = services_dynamics.trajectory_view(scenario_file, "", policy, SEED, k)
        last = services_dynamics.running_rates(view.steps).tail(1)
        assert last["br"][0] == pytest.approx(lib["br"][k])
        assert last["prr"][0] == pytest.approx(lib["prr"][k])
        assert services_dynamics.n_steps(view.steps) == lib["n_prompt_steps"][k]


def test_dashboard_command_says_when_the_app_is_missing(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    from typer.testing import CliRunner

    import wmtsim.interfaces.dashboard as shipped
    from wmtsim.interfaces.cli import main as cli
    # As if wmtsim were installed from a wheel: no dashboard app inside the package.
    monkeypatch.setattr(shipped, "__file__", str(tmp_path / "dashboard" / "__init__.py"))
    result = CliRunner().invoke(cli.app, ["dashboard", "--port", "1"])
    assert result.exit_code == 2
    assert "dashboard app was not found" in result.output


def test_dashboard_command_refuses_a_results_folder_that_is_not_there(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from wmtsim.interfaces.cli import main as cli

    result = CliRunner().invoke(cli.app, ["dashboard", "--results", str(tmp_path / "no")])
    assert result.exit_code == 2
    assert "no such folder" in result.output


# ---------------------------------------------------------------------------------------
# Switching the scenario (or sweep, or trace): every label, title and count follows it


OTHER_SEED = 5
OTHER_N = 40
OTHER = f"""
name = "dash_other"
description = "one injection, two other configurations"
n = {OTHER_N}
seed = {OTHER_SEED}
policies = ["a1_unweighted", "a3_no_semantic"]

[[poison]]
kind = "failed"
"""
OTHER_WORLD = WorldSpec(poison=(PoisonSpec("failed"),))


@pytest.fixture(scope="module")
def other_file(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("other") / "dash_other.toml"
    path.write_text(OTHER, encoding="utf-8")
    return str(path)


def _charts(at: AppTest) -> list[tuple[dict[str, object], dict[str, pl.DataFrame]]]:
    """Every chart's Vega-Lite spec and its datasets, as drawn."""
    import pyarrow as pa

    out = []
    for chart in at.get("vega_lite_chart"):
        data = {d.name: pl.from_arrow(pa.ipc.open_stream(d.data.data).read_all())
                for d in chart.proto.datasets}
        out.append((json.loads(chart.proto.spec), data))
    return out  # type: ignore[return-value]


def _title(spec: dict[str, object]) -> str:
    title = spec.get("title", "")
    return str(title.get("text", "") if isinstance(title, dict) else title)


def test_dynamics_follows_a_scenario_switch(scenario_file: str, other_file: str) -> None:
    at = _with_scenario(_page("dynamics"), scenario_file)
    at.sidebar.selectbox(key="dyn_policy_a").set_value("a2_no_controller").run()
    at.sidebar.number_input(key="dyn_trajectory").set_value(4).run()
    at.slider(key="dyn_step").set_value(2).run()
    at.sidebar.text_input(key="dyn_path").set_value(other_file).run()
    no_exception(at)
    at.sidebar.number_input(key="dyn_trajectory").set_value(1).run()  # one more rerun
    no_exception(at)

    # The controls show the new scenario's defaults, not the old choices.
    assert at.sidebar.selectbox(key="dyn_policy_a").value == "a3_no_semantic"
    assert at.sidebar.selectbox(key="dyn_policy_b").value == "a1_unweighted"
    assert at.sidebar.number_input(key="dyn_seed").value == OTHER_SEED
    labels = {"a3_no_semantic": "A3 No Semantic Retrieval", "a1_unweighted":
              "A1 Unweighted Tree"}
    assert [h.value for h in at.subheader] == list(labels.values())
    # What the panels show is the library's trajectory 1 of those configurations.
    for column, policy in enumerate(labels):
        res = simulate(OTHER_WORLD, policy, n=2, seed=OTHER_SEED, threads=1, record_steps=2)
        lib = res.trajectories
        assert _metrics(at)["BR (trajectory)"][column] == num(lib["br"][1])
        assert _metrics(at)["PRR (trajectory)"][column] == num(lib["prr"][1])
    steps = res.steps.filter(pl.col("trajectory") == 1)
    last = int(steps["step"].max())  # type: ignore[arg-type]
    assert at.slider(key="dyn_step").value == last  # opens on the last step again
    # The tree's title names the step, and it draws as many nodes as the caption counts.
    nodes = steps.filter(pl.col("step") == last).height
    trees = [(spec, data) for spec, data in _charts(at)
             if _title(spec).startswith("memory tree")]
    assert len(trees) == 2
    assert _title(trees[1][0]) == f"memory tree at step {last}"
    assert max(d.height for d in trees[1][1].values()) == nodes
    assert f"step {last}: after the `final` event, {plural(nodes, 'memory', 'memories')}" \
        in [c.value for c in at.caption]


def test_compare_follows_a_scenario_switch(scenario_file: str, other_file: str) -> None:
    at = _with_scenario(_page("compare"), scenario_file)
    at.sidebar.multiselect(key="cmp_policies").set_value(["wmt", "a2_no_controller",
                                                          "linear"]).run()
    at.sidebar.number_input(key="cmp_n").set_value(30).run()
    at.sidebar.text_input(key="cmp_path").set_value(other_file).run()
    no_exception(at)

    assert at.sidebar.multiselect(key="cmp_policies").value == ["a1_unweighted",
                                                                "a3_no_semantic"]
    assert at.sidebar.number_input(key="cmp_n").value == OTHER_N
    assert at.sidebar.number_input(key="cmp_seed").value == OTHER_SEED
    assert at.subheader[0].value == (f"2 configurations × {OTHER_N} trajectories, "
                                     f"seed {OTHER_SEED}")
    table = _table(at)
    assert table["configuration"].unique(maintain_order=True).to_list() == [
        "A1 Unweighted Tree", "A3 No Semantic Retrieval"]
    summary = simulate(OTHER_WORLD, "a3_no_semantic", n=OTHER_N, seed=OTHER_SEED,
                       threads=1).summary()
    row = table.filter((pl.col("configuration") == "A3 No Semantic Retrieval")
                       & (pl.col("metric") == "br"))
    lib = summary.filter(pl.col("metric") == "br")
    assert row["mean"][0] == pytest.approx(lib["pooled"][0])  # pooled by default
    assert set(row["n"]) == {OTHER_N}
    # The wide table: one column per configuration, cells in the precision policy.
    wide = at.table[0].value
    assert list(wide.columns) == ["better", "A1 Unweighted Tree", "A3 No Semantic Retrieval"]
    assert wide.loc["br", "A3 No Semantic Retrieval"] == interval(
        lib["pooled"][0], lib["pooled_low"][0], lib["pooled_high"][0])
    # The chart plots the same configurations.
    (_spec, data), = _charts(at)
    plotted = set().union(*(set(d["config"]) for d in data.values() if "config" in d.columns))
    assert plotted == {"A1 Unweighted Tree", "A3 No Semantic Retrieval"}


def test_sweep_explorer_opens_the_newest_sweep_and_follows_a_switch(
        sweeps: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import os

    from wmtsim.interfaces.dashboard import services_runs, services_sweep

    # Only sweep folders are offered: a compare folder's manifest is not a sweep's.
    root = Path(sweeps["grid"]).parent
    (root / "compare_out").mkdir(exist_ok=True)
    (root / "compare_out" / "manifest.json").write_text('{"command": "compare"}')
    os.utime(Path(sweeps["sobol"]) / "manifest.json")  # the newest
    monkeypatch.setenv(services_runs.RESULTS_ENV, str(root))
    at = _page("sweep").run()
    no_exception(at)
    assert at.sidebar.selectbox(key="sweep_folder").options == [sweeps["sobol"],
                                                                sweeps["grid"]]
    assert at.subheader[0].value == "sobol: sobol design, 64 of 64 points computed"
    # Continuous parameters: the heatmap's axes are quantitative with bin bounds.
    opened = at.sidebar.selectbox(key="sweep_metric").value
    heat = next(spec for spec, _ in _charts(at) if _title(spec).startswith(f"{opened} over"))
    assert heat["encoding"]["x"]["type"] == "quantitative"  # type: ignore[index]
    assert "x2" in heat["encoding"]  # type: ignore[operator]
    at.sidebar.selectbox(key="sweep_metric").set_value("ccr").run()
    # The grid's default: the first metric it varies (`opening_metric`).
    grid = services_sweep.load_sweep_folder(sweeps["grid"])
    default = services_sweep.opening_metric(grid, "wmt")
    assert default != "ccr"

    at.sidebar.selectbox(key="sweep_folder").set_value(sweeps["grid"]).run()
    no_exception(at)
    assert at.subheader[0].value == "grid: grid design, 12 of 12 points computed"
    assert at.sidebar.selectbox(key="sweep_metric").value == default  # the default again
    # The default again: Full WMT, the configuration that reads the swept knobs.
    assert "wmt" in at.sidebar.selectbox(key="sweep_policy").options
    assert at.sidebar.selectbox(key="sweep_policy").value == "wmt"
    titles = [_title(spec) for spec, _ in _charts(at)]
    assert f"{default} over params.rho × params.M" in titles
    heat = next(spec for spec, _ in _charts(at) if _title(spec).startswith(f"{default} over"))
    assert heat["encoding"]["x"]["type"] == "ordinal"  # type: ignore[index]
    front = services_sweep.pareto(services_sweep.load_sweep_folder(sweeps["grid"]).table,
                                  "prompt_tokens", "tsr")
    assert f"{plural(front.height, 'point')} on the front" in [e.label for e in at.expander]


def test_trace_replay_follows_a_trace_switch(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WMTSIM_RESULTS", str(tmp_path))  # the path box reads only there
    at = _page("trace").run()
    at.slider(key="trace_step").set_value(6).run()
    trace = tmp_path / "short.jsonl"
    trace.write_text('{"op": "query"}\n{"op": "action", "id": "a", "parent": "root"}\n'
                     '{"op": "select", "selected": []}\n{"op": "select", "selected": []}\n',
                     encoding="utf-8")
    at.sidebar.text_input(key="trace_path").set_value(str(trace)).run()
    no_exception(at)
    assert at.slider(key="trace_step").value == 1
    assert at.subheader[0].value == str(trace)
    assert _metrics(at)["select steps"] == ["2"]
    titles = [_title(spec) for spec, _ in _charts(at)]
    assert titles[0] == "tree after select step 1 (line 3)"


# ---------------------------------------------------------------------------------------
# The strongest attacker


@pytest.fixture(scope="module")
def attack_folder(tmp_path_factory: pytest.TempPathFactory) -> str:
    from typer.testing import CliRunner

    from wmtsim.interfaces.cli.main import app

    out = tmp_path_factory.mktemp("attack") / "atk"
    res = CliRunner().invoke(app, ["attack", "paper_poisoning", "-p", "wmt", "-p", "linear",
                                   "-p", "a1_unweighted", "--budget", "1,2", "--trials",
                                   "2", "--n", "20", "--n-holdout", "20", "--no-charts",
                                   "--out", str(out)])
    assert res.exit_code == 0, res.output
    return str(out)


def test_attack_page_shows_the_results_and_opens_an_attack_on_dynamics(
        attack_folder: str) -> None:
    at = _page("attack")
    at.query_params["attack"] = attack_folder
    at.run()
    no_exception(at)
    assert len(at.get("vega_lite_chart")) == 2  # harm vs budget, transfer heatmap
    tooltips_follow_the_policy(at)
    shown = _frame(at, "policy", "budget", "worst_asr")
    stored = pl.read_parquet(Path(attack_folder) / "results.parquet")
    assert shown["worst_asr"].to_list() == pytest.approx(stored["worst_asr"].to_list())
    transfer = _frame(at, "tuned_on", "evaluated_on", "harm")
    assert transfer.height == 9
    # Through the app: the button opens the attack's trajectories on the Dynamics page.
    app = AppTest.from_file(str(PAGES.parent / "app.py"), default_timeout=TIMEOUT)
    app.run()
    app.switch_page("views/attack.py").run()
    app.text_input(key="atk_path").set_value(attack_folder).run()
    chosen = str(Path(attack_folder) / "attacks" / "wmt-k2.toml")
    app.selectbox(key="atk_pick").set_value(chosen).run()
    app.button(key="atk_open").click().run()
    no_exception(app)
    assert app.title[0].value == "Poisoning dynamics"
    assert app.session_state["dyn_path"] == chosen
    assert any("wmt" in c.value for c in app.sidebar.caption)  # the attack's description


def test_attack_page_without_a_result_says_so(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WMTSIM_RESULTS", str(tmp_path))
    at = _page("attack").run()
    no_exception(at)
    assert any("wmtsim attack" in i.value for i in at.info)
    at.text_input(key="atk_path").set_value(str(tmp_path)).run()
    assert any("not available" in w.value for w in at.warning)


# ---------------------------------------------------------------------------------------
# Population dynamics


def test_population_page_shows_the_library_tables(scenario_file: str) -> None:
    from wmtsim.studies.dynamics.dynamics import population_dynamics
    from wmtsim.studies.scenarios.scenario import load_scenario

    at = _with_scenario(_page("population"), scenario_file)
    no_exception(at)
    assert at.title[0].value == "Population dynamics"
    assert len(at.get("vega_lite_chart")) == 3  # survival, fates, contamination
    assert any("blast radius" in c.value for c in at.caption)
    tooltips_follow_the_policy(at)  # survival, fates, contamination
    at.sidebar.number_input(key="pop_n").set_value(N).run()
    no_exception(at)
    rep = population_dynamics(load_scenario(scenario_file), ("linear", "wmt"), N, SEED)
    shown = _frame(at, "policy", "median", "median_low", "median_high")
    lib = rep.lifetimes.filter(pl.col("kind") == "all")
    assert shown["policy"].to_list() == lib["policy"].to_list()
    # As the table writes them: whole steps, "–" where there is no median.
    assert [str(v) for v in shown["median"]] == [
        "–" if math.isnan(v) else str(int(v)) for v in lib["median"]]
    fates = _frame(at, "policy", "fate", "poisons", "share")
    assert fates["poisons"].sum() == 2 * N * 2  # two poisons per trajectory, two policies


def test_a_point_of_a_curve_opens_a_trajectory_that_shows_it(scenario_file: str) -> None:
    from wmtsim.interfaces.dashboard.services_population import trajectory_showing
    from wmtsim.studies.scenarios.scenario import load_scenario

    hit = trajectory_showing(scenario_file, "", "wmt", SEED, "plausible", 2)
    assert hit is not None
    sc = load_scenario(scenario_file)
    one = simulate(sc.world, "wmt", n=1, seed=SEED, start=hit["trajectory"],
                   params=sc.params, stubs=sc.stubs, dynamics=True).dynamics()
    assert one.counts["survival"][1, 2, 0] > 0  # a plausible poison's lifetime ends at 2
    # The jump the page's button leaves is applied by the Poisoning dynamics page.
    at = _with_scenario(_page("dynamics"), scenario_file)
    at.session_state["population_jump"] = {"policy": "wmt", "seed": SEED,
                                           "trajectory": hit["trajectory"],
                                           "step": hit["step"]}
    at.run()
    no_exception(at)
    assert at.session_state["dyn_trajectory"] == hit["trajectory"]
    assert at.slider(key="dyn_step").value == hit["step"]
    assert "population_jump" not in at.session_state
