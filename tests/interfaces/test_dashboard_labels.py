"""Every label the dashboard shows derives from the current selection: switch
the scenario, the sweep folder or the trace on a page and compare each label, default
and widget with the new selection; the charts' ticks, legends and titles follow the
precision policy and are never truncated (checked on the charts drawn by vl-convert);
one empty-value mark; every figure and table exportable."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import polars as pl
import pytest

pytest.importorskip("streamlit")
from conftest import REPO, no_exception, tooltips_follow_the_policy
from streamlit.testing.v1 import AppTest

from wmtsim.interfaces.dashboard import (
    charts,
    export,
    services_dynamics,
    services_runs,
    services_sweep,
    services_why,
)

PAGES = REPO / "wmtsim" / "interfaces" / "dashboard" / "views"
TIMEOUT = 300

ATTACK_WORLD = """
name = "{name}"
description = "{name}: two poison injections, for the label tests"
n = {n}
seed = {seed}
policies = ["linear", "wmt"]
{paper}

[[poison]]
kind = "plausible"

[[poison]]
kind = "failed"
"""


@pytest.fixture(scope="module")
def scenarios(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("label_scenarios")
    out = {}
    for name, n, seed, paper in (("table_world", 30, 3, 'paper = "table4"'),
                                 ("plain_world", 24, 7, "")):
        path = root / f"{name}.toml"
        path.write_text(ATTACK_WORLD.format(name=name, n=n, seed=seed, paper=paper),
                        encoding="utf-8")
        out[name] = str(path)
    return out


def _page(name: str) -> AppTest:
    return AppTest.from_file(str(PAGES / f"{name}.py"), default_timeout=TIMEOUT)


def _pick(at: AppTest, prefix: str, path: str) -> AppTest:
    at.sidebar.radio(key=f"{prefix}_source").set_value("file path").run()
    at.sidebar.text_input(key=f"{prefix}_path").set_value(path).run()
    no_exception(at)
    return at


def _specs(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("vega_lite_chart")]


def _find(spec: object, key: str) -> list[object]:
    """Every value of ``key`` anywhere in a Vega-Lite spec."""
    if isinstance(spec, dict):
        return [v for k, v in spec.items() if k == key] + \
            [x for v in spec.values() for x in _find(v, key)]
    if isinstance(spec, list):
        return [x for v in spec for x in _find(v, key)]
    return []


# ---------------------------------------------------------------------------------------
# Why: switching the scenario resets metrics, n and seed; the claims map names its scenario


def test_why_follows_a_scenario_switch_and_labels_the_claims_map(
        scenarios: dict[str, str]) -> None:
    at = _page("why")
    at.query_params["claims"] = "why_study/tables/claims_detection.parquet"
    at.run()
    _pick(at, "why", scenarios["table_world"])
    assert at.sidebar.multiselect(key="why_metrics").value == ["asr", "prr", "br", "tsr",
                                                              "prompt_tokens"]
    assert at.sidebar.number_input(key="why_n").value == 30
    assert at.sidebar.number_input(key="why_seed").value == 3
    assert "on table_world" in at.subheader[0].value
    at.sidebar.multiselect(key="why_metrics").set_value(["asr"]).run()
    at.sidebar.number_input(key="why_n").set_value(12).run()

    at.sidebar.text_input(key="why_path").set_value(scenarios["plain_world"]).run()
    no_exception(at)
    # Another scenario: its own defaults (a benign reading: accuracy), its n and seed.
    assert at.sidebar.multiselect(key="why_metrics").value == ["tsr", "accuracy",
                                                              "prompt_tokens"]
    assert at.sidebar.number_input(key="why_n").value == 24
    assert at.sidebar.number_input(key="why_seed").value == 7
    assert "on plain_world" in at.subheader[0].value
    waterfall = _specs(at)[0]
    facets = _find(waterfall, "facet")
    assert facets and facets[0]["sort"] == ["tsr", "accuracy", "prompt_tokens"]
    # The shipped claims map (a bare table) takes its scenario from its study file.
    labels = [s.value for s in at.subheader]
    # (Markdown source: the knobs' "*" escaped, so that they are shown, not read as italics)
    assert (r"Claims map: paper\_poisoning, over poison\[\*\].p\_supersede × "
            r"poison\[\*\].persuasiveness") in labels, labels
    claims_map = _specs(at)[-1]
    assert _find(claims_map, "columns") == [services_why.CLAIMS_COLUMNS]
    tooltips_follow_the_policy(at)  # the waterfall and the claims map


# ---------------------------------------------------------------------------------------
# Compare: the y-axis says what the bars are; panels in the library's order; a scenario
# without a paper table gets a quiet caption, not a warning


def test_compare_axis_panels_and_paper_note_follow_the_selection(
        scenarios: dict[str, str]) -> None:
    at = _pick(_page("compare").run(), "cmp", scenarios["table_world"])
    spec = _specs(at)[0]
    assert "pooled (Σ/Σ)" in _find(spec, "title")
    order = list(services_runs.metric_info())
    shown = _find(spec, "facet")[0]["sort"]
    assert shown == [m for m in order if m in shown]
    assert any("black tick marks: the paper's Table 4 value" in c.value for c in at.caption)
    assert not at.warning
    at.sidebar.radio(key="cmp_value").set_value("mean of per-trajectory values").run()
    spec = _specs(at)[0]
    assert "mean" in _find(spec, "title") and "pooled (Σ/Σ)" not in _find(spec, "title")

    at.sidebar.text_input(key="cmp_path").set_value(scenarios["plain_world"]).run()
    no_exception(at)
    assert not at.warning, [w.value for w in at.warning]
    assert any("reports no table for this scenario" in c.value for c in at.caption)
    assert "accuracy" in at.sidebar.multiselect(key="cmp_metrics").value
    assert at.sidebar.number_input(key="cmp_n").value == 24
    assert not any("tick marks" in c.value for c in at.caption)
    assert "pooled (Σ/Σ)" in _find(_specs(at)[0], "title")  # back to the default value
    tooltips_follow_the_policy(at)


# ---------------------------------------------------------------------------------------
# Sweep explorer: the folder picker drives the point, the URL and the labels


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory, scenarios: dict[str, str]) -> Path:
    """A results folder with two sweeps over different knobs and a claims map (whose own
    sweep in claims/sweep is not offered as a sweep)."""
    from wmtsim.studies.compare.claims import Claim, claims_map, grid_sweep, write_claims
    from wmtsim.studies.scenarios.scenario import load_scenario
    from wmtsim.studies.sweeps.sweep import load_sweep, run_sweep

    root = tmp_path_factory.mktemp("label_results")
    for name, knobs in (("rho_m", '"params.rho" = { values = [0.9, 0.95] }\n'
                                  '"params.M" = { values = [4, 8] }\n'),
                        ("budget", '"params.budget" = { values = [128, 512, 1024] }\n'
                                   '"params.rho" = { values = [0.8] }\n')):
        (root / f"{name}.toml").write_text(
            f'name = "{name}"\nscenario = "{scenarios["table_world"]}"\n'
            'policies = ["linear", "wmt"]\n[parameters]\n' + knobs +
            '[design]\nkind = "grid"\ntrajectories = 8\nseed = 0\n', encoding="utf-8")
        run_sweep(load_sweep(root / f"{name}.toml"), root / name, progress=False, threads=1)
    claim = (Claim("Full WMT lowest ASR", "asr", "wmt", ("linear",)),)
    sweep = grid_sweep(load_scenario(scenarios["table_world"]),
                       [("params.rho", 0.8, 0.9), ("stubs.poison_boost", -0.1, 0.2)], 2, 8, 0,
                       claim)
    write_claims(claims_map(sweep, root / "claims", claim), root / "claims", charts=False)
    assert (root / "claims" / "sweep" / "manifest.json").is_file()
    return root


def test_sweep_picker_drives_the_point_the_url_and_the_labels(
        results: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(services_runs.RESULTS_ENV, str(results))
    first, second = str(results / "rho_m"), str(results / "budget")
    assert sorted(services_sweep.find_sweeps()) == sorted([first, second])  # not claims/sweep
    at = _page("sweep")
    at.query_params["folder"] = first
    at.run()
    no_exception(at)
    assert at.sidebar.selectbox(key="sweep_folder").value == first
    assert at.subheader[0].value.startswith("rho_m:")
    assert all("params.M=" in o for o in at.selectbox(key="sweep_point").options)
    at.selectbox(key="sweep_point").select_index(3).run()

    at.sidebar.selectbox(key="sweep_folder").set_value(second).run()
    no_exception(at)
    assert at.query_params["folder"] == second  # the address names the sweep shown
    assert at.subheader[0].value.startswith("budget:")
    points = at.selectbox(key="sweep_point")
    assert all("params.budget=" in o and "params.M" not in o for o in points.options)
    table = services_sweep.load_sweep_folder(second).table
    assert points.value in table["key"].to_list()
    # The first point of the default configuration, Full WMT (the sweep has it).
    assert points.value == table.filter(pl.col("policy") == "wmt")["key"][0]
    assert second in str(points.help)
    tooltips_follow_the_policy(at)  # heatmap, Pareto front, the point's trajectory
    # The drill-down's tables write a missing value as the one mark, never None or nan.
    for df in at.dataframe:
        if hasattr(df.value, "to_string"):
            text = df.value.to_string()
            assert "None" not in text and "nan" not in text.lower().split(), text[:300]
    # Its counts are whole numbers, as the data the grid draws (issue 39: "67.0").
    traj = next(df.value for df in at.dataframe if "trajectory" in df.value.columns)
    assert {"prompt_tokens", "steps", "llm_calls"} <= set(traj.columns), traj.columns
    for column in ("prompt_tokens", "steps", "llm_calls"):
        cells = [str(v) for v in traj[column]]
        assert all(re.fullmatch(r"\d+|–", v) for v in cells), (column, cells[:5])

    # Back to the first sweep through the picker: the URL follows again.
    at.sidebar.selectbox(key="sweep_folder").set_value(first).run()
    assert at.query_params["folder"] == first
    assert all("params.M=" in o for o in at.selectbox(key="sweep_point").options)


# ---------------------------------------------------------------------------------------
# Trace replay: a failed expect line shows what was expected


def test_a_failed_expect_line_shows_the_expected_value(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WMTSIM_RESULTS", str(tmp_path))  # the path box reads only there
    trace = tmp_path / "one.jsonl"
    trace.write_text('{"op": "query"}\n{"op": "action", "id": "a", "parent": "root"}\n'
                     '{"op": "select", "selected": ["a"]}\n'
                     '{"op": "expect", "id": "a", "u": 0.123}\n', encoding="utf-8")
    at = _page("trace").run()
    at.sidebar.text_input(key="trace_path").set_value(str(trace)).run()
    no_exception(at)
    message = at.error[0].value
    assert re.search(r"line 4 \(a u: expected 0\.123, got [0-9.]+, tolerance", message), message
    # A one-step trace: its step axis is whole numbers.
    scores = next(s for s in _specs(at) if "retention scores" in json.dumps(s))
    assert {"format": "d", "tickMinStep": 1}.items() <= _find(scores, "axis")[0].items()
    tooltips_follow_the_policy(at)


# ---------------------------------------------------------------------------------------
# Charts as drawn (vl-convert's SVG): ticks, legends, titles


def _texts(svg: bytes) -> list[str]:
    return [re.sub(r"<[^>]+>", "", t) for t in
            re.findall(r"<text[^>]*>(.*?)</text>", svg.decode("utf-8"), flags=re.S)]


def _tree(leaves: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    rows = [{"slot": 0, "parent": -1, "kind": "task", "state": "active", "u": 1.0, "m": 0,
             "poisoned": False, "selected": False, "eligible": False}]
    rows += [{"slot": k, "parent": 0, "kind": "action", "state": "active", "u": 0.29,
              "m": 1, "poisoned": k % 2 == 0, "selected": k == 1, "eligible": k < 4}
             for k in range(1, leaves + 1)]
    return services_dynamics.tree_layout(pl.DataFrame(rows))


def test_charts_follow_the_precision_policy_and_truncate_nothing() -> None:
    zero = pl.DataFrame({"policy": ["linear", "wmt"], "metric": ["ip", "ip"],
                         "mean": [0.0, 0.0], "low": [0.0, 0.0], "high": [0.0, 0.0],
                         "n": [10, 10]})
    texts = _texts(export.svg(charts.metric_bars(zero, {}, ["ip"], "pooled (Σ/Σ)")))
    assert "0" in texts and not any(re.fullmatch(r"0\.0+", t) for t in texts), texts
    assert "pooled (Σ/Σ)" in texts

    one_step = pl.DataFrame({"slot": [0, 1], "kind": ["action", "global"], "step": [1, 1],
                             "u": [0.5, 0.75], "poisoned": [False, True], "m": [0, 0],
                             "state": ["active"] * 2, "selected": [True, False]})
    texts = _texts(export.svg(charts.score_lines(one_step, 1, "scores")))
    assert "1" in texts and "1.000000" not in texts, texts
    assert not any(re.fullmatch(r"-?[\d,]*\.\d*0", t) for t in texts), texts  # 0.0, 1.0

    nodes, edges = _tree(4)
    texts = _texts(export.svg(charts.tree_chart(nodes, edges, "a small tree")))
    assert {"missed (in pool)", "outside the pool", "selected"} <= set(texts), texts
    assert not any("…" in t for t in texts), texts
    assert texts.count("0.29") == 4  # each leaf labelled
    nodes, edges = _tree(charts.TREE_LABELS + 1)
    texts = _texts(export.svg(charts.tree_chart(nodes, edges, "a wide tree")))
    assert "0.29" not in texts  # too many leaves to label side by side


def test_exports_hold_the_full_table_and_a_drawn_figure() -> None:
    frame = pl.DataFrame({"step": [0, 1], "u": [0.123456789, None], "kind": ["a", None],
                          "path": [[1, 2], None]})
    back = pl.read_csv(io.BytesIO(export.csv(frame)))
    assert back["u"].to_list() == [0.123456789, None] and back["path"][0] == "[1, 2]"
    assert pl.read_parquet(io.BytesIO(export.parquet(frame))).equals(frame)
    chart = charts.running_chart(pl.DataFrame({"step": [0, 1], "br": [0.0, 0.5],
                                               "prr": [None, 0.25]}), 1, "running")
    assert export.png(chart)[:8] == b"\x89PNG\r\n\x1a\n"
    assert export.svg(chart).lstrip().startswith(b"<svg")
    assert export.file_stem("wmt trajectory 3 / step 4") == "wmt_trajectory_3_step_4"


def test_every_page_offers_its_figures_and_tables_for_download(
        scenarios: dict[str, str]) -> None:
    at = _pick(_page("dynamics").run(), "dyn", scenarios["table_world"])
    buttons = at.get("download_button")
    labels = [b.proto.label for b in buttons]
    charts_shown = len(at.get("vega_lite_chart"))
    tooltips_follow_the_policy(at)  # the trajectory panel's charts
    assert labels.count("SVG") == labels.count("PNG") == charts_shown
    # The nodes table and every step record of each trajectory, as CSV and Parquet.
    assert labels.count("CSV") == labels.count("Parquet") == 2 * 2
    names = [b.proto.file_name if hasattr(b.proto, "file_name") else "" for b in buttons]
    assert any("steps.parquet" in str(n) for n in names) or len(names) == len(labels)
