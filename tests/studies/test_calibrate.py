"""`wmtsim calibrate`: a small fit writes a loadable scenario and a per-cell error report;
the objective and the knob parser behave as documented."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from wmtsim.interfaces.cli.main import app
from wmtsim.studies.calibration.calibrate import Knob, objective_value, parse_knob
from wmtsim.studies.compare.report import paper_table4
from wmtsim.studies.scenarios.scenario import load_scenario


def test_small_fit_writes_a_scenario_and_an_error_report(tmp_path: Path) -> None:
    out = tmp_path / "fit"
    result = CliRunner().invoke(app, [
        "calibrate", "paper_poisoning", "--target", "paper-table4", "-n", "20",
        "--maxiter", "1", "--knob", "stubs.p_leak=0:1", "--knob", "params.budget=100:600:int",
        "--fit-on", "wmt", "--fit-on", "linear", "--weight", "wmt=4", "--out", str(out)])
    assert result.exit_code == 0, result.output
    fitted = load_scenario(out / "calibrated.toml")  # the source's comments are kept; it loads
    assert 0.0 <= fitted.stubs.p_leak <= 1.0
    assert 100 <= fitted.params.budget <= 600
    with (out / "errors.csv").open() as f:
        cells = list(csv.DictReader(f))
    assert {c["policy"] for c in cells} == set(paper_table4())
    fitted_cells = {(c["policy"], c["metric"]) for c in cells if c["fitted"] == "True"}
    assert ("wmt", "asr") in fitted_cells and ("a2_no_controller", "asr") not in fitted_cells
    for c in cells:
        assert math.isclose(float(c["error"]), float(c["simulated"]) - float(c["paper"]),
                            rel_tol=1e-4, abs_tol=1e-3)  # printed with 6 digits


def test_bad_arguments_exit_2_and_write_nothing(tmp_path: Path) -> None:
    out = tmp_path / "fit"
    for extra in (["--fit-on", "bogus"], ["--knob", "stubs.nope=0:1"],
                  ["--knob", "stubs.p_leak"], ["--weight", "wmt=x"], ["--target", "table9"]):
        result = CliRunner().invoke(app, ["calibrate", "paper_poisoning", "-n", "5",
                                          "--maxiter", "1", "--out", str(out), *extra])
        assert result.exit_code == 2, (extra, result.output)
        assert not out.exists()


def test_objective_is_zero_on_the_target_and_penalises_a_broken_ordering() -> None:
    table = paper_table4()
    metrics = ("asr", "prr", "br", "af", "tsr")
    assert objective_value(table, table, tuple(table), metrics) == pytest.approx(0.0)
    worse = {p: dict(row) for p, row in table.items()}
    worse["wmt"]["asr"] = 0.99  # Full WMT no longer best on ASR
    # The ordering penalty is opt-in (order_weight, default 0: the claims are tested,
    # not fitted for).
    assert objective_value(worse, table, ("linear",), metrics) == pytest.approx(0.0)
    assert objective_value(worse, table, ("linear",), metrics, order_weight=4.0) > 0.0
    heavier = objective_value(worse, table, ("wmt",), metrics, row_weights={"wmt": 5.0})
    assert heavier > objective_value(worse, table, ("wmt",), metrics)


def test_knob_parser() -> None:
    assert parse_knob("stubs.top_k=1:8:int") == Knob("stubs.top_k", 1.0, 8.0, True)
    assert parse_knob("poison[0].p_inject=0:1").value(1.7) == 1.0
    with pytest.raises(ValueError, match="allowed: key=low:high"):
        parse_knob("stubs.p_leak")
