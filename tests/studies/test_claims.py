"""The claims map (`wmtsim.studies.compare.claims`): the per-cell test, the grid on the sweep
machinery, the files and the ``claims`` command."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from wmtsim.core.inference import FAILS, HOLDS, TIE
from wmtsim.core.policies import TABLE4_POLICIES
from wmtsim.core.verdicts import read_family
from wmtsim.interfaces.cli.main import app
from wmtsim.studies.compare.claims import (
    STATUSES,
    Claim,
    claims_map,
    evaluate,
    grid_sweep,
    load_claims,
    parse_vary,
    table4_claims,
    write_claims,
)
from wmtsim.studies.scenarios.scenario import load_scenario
from wmtsim.studies.sweeps.sweep import SweepError


def test_table4_claims() -> None:
    claims = table4_claims()
    assert len(claims) == 10
    labels = [c.label for c in claims]
    assert "Full WMT lowest ASR" in labels and "Full WMT highest TSR" in labels
    assert "Linear highest BR" in labels and "Linear lowest TSR" in labels
    for c in claims:
        assert set(c.policies) == set(TABLE4_POLICIES)
    by = {c.label: c for c in claims}
    assert by["Full WMT lowest ASR"].favour == -1
    assert by["Full WMT highest TSR"].favour == 1
    assert by["Linear highest ASR"].favour == 1
    assert by["Linear lowest TSR"].favour == -1


@pytest.mark.parametrize("kwargs, match", [
    ({"metric": "steps"}, "no better direction"),
    ({"sense": "middle"}, "best or worst"),
    ({"others": ("nope",)}, "unknown"),
    ({"others": ()}, "other configurations"),
    ({"others": ("wmt",)}, "other configurations"),
])
def test_bad_claims(kwargs: dict[str, object], match: str) -> None:
    args: dict[str, object] = {"label": "x", "metric": "asr", "subject": "wmt",
                               "others": ("linear",), **kwargs}
    with pytest.raises(ValueError, match=match):
        Claim(**args)  # type: ignore[arg-type]


def _values(rng: np.random.Generator, shift: float, n: int = 400) -> dict[str, np.ndarray]:
    base = rng.normal(size=n)
    return {"wmt": base + shift + 0.1 * rng.normal(size=n),
            "linear": base + 0.1 * rng.normal(size=n),
            "a2_no_controller": base + 0.5 + 0.1 * rng.normal(size=n)}


def _verdict(claim: Claim, values: dict[str, np.ndarray]) -> dict:
    return read_family([evaluate(claim, values)])[0]


def test_the_cell_test() -> None:
    rng = np.random.default_rng(0)
    lowest = Claim("wmt lowest", "asr", "wmt", ("linear", "a2_no_controller"))
    # wmt clearly below both: holds; margin is against the closer one (linear).
    r = _verdict(lowest, _values(rng, -1.0))
    assert r["verdict"] == HOLDS and r["closest"] == "linear"
    assert r["margin"] == pytest.approx(1.0, abs=0.05)
    # wmt clearly above linear: another configuration is significantly better.
    assert _verdict(lowest, _values(rng, 0.3))["verdict"] == FAILS
    # the same values as linear: a tie (the paired difference is exactly 0).
    v = _values(rng, 0.0)
    v["wmt"] = v["linear"].copy()
    r = _verdict(lowest, v)
    assert r["verdict"] == TIE and r["margin"] == 0.0 and r["n_nonzero"] == 0


def test_the_cell_test_reports_the_margins_interval() -> None:
    """`claims.evaluate` gives every cell its margin's interval (the claims map's margin
    columns read it): a margin of about 1 lies inside it, and the interval is ordered."""
    rng = np.random.default_rng(2)
    r = _verdict(Claim("wmt lowest", "asr", "wmt", ("linear",)), _values(rng, -1.0))
    assert r["margin_low"] <= r["margin"] <= r["margin_high"]
    assert 0.8 < r["margin_low"] < 1.0 < r["margin_high"] < 1.2


def test_the_cell_test_pairs_finite_values() -> None:
    rng = np.random.default_rng(1)
    v = _values(rng, -1.0)
    v["wmt"][:100] = np.nan
    r = _verdict(Claim("x", "prr", "wmt", ("linear",)), v)
    assert r["n"] == 300 and r["verdict"] == HOLDS


def test_parse_vary() -> None:
    assert parse_vary("poison[*].p_supersede=0:1") == ("poison[*].p_supersede", 0.0, 1.0)
    assert parse_vary("stubs.poison_boost=-0.2:0.3") == ("stubs.poison_boost", -0.2, 0.3)
    for bad in ("p_supersede", "x=1", "=0:1", "x=a:b"):
        with pytest.raises(ValueError, match="KNOB=lo:hi"):
            parse_vary(bad)


def test_grid_sweep_needs_two_knobs() -> None:
    sc = load_scenario("paper_poisoning")
    with pytest.raises(ValueError, match="exactly two"):
        grid_sweep(sc, [("rho", 0.5, 0.9)], 3, 10, 0, table4_claims())
    with pytest.raises(ValueError, match="exactly two"):
        grid_sweep(sc, [("rho", 0.5, 0.9), ("rho", 0.5, 0.9)], 3, 10, 0, table4_claims())
    sw = grid_sweep(sc, [("rho", 0.5, 0.9), ("stubs.poison_boost", -0.2, 0.3)], 3, 10, 0,
                    table4_claims())
    assert sw.kind == "grid" and sw.rows == 9 and set(sw.policies) == set(TABLE4_POLICIES)


def test_claims_map_runs_resumes_and_writes(tmp_path: Path) -> None:
    sc = load_scenario("paper_poisoning")
    # paper_poisoning never resumes a subtask: A1 and Tree + Selection + Summary differ
    # only in reopen, so their comparison is a tie in every cell.
    null = Claim("reopen changes nothing", "asr", "a1_unweighted",
                 ("tree_selection_summary",))
    claims = (*table4_claims()[:2], null)
    sw = grid_sweep(sc, [("poison[*].p_supersede", 0.0, 1.0),
                         ("poison[*].persuasiveness", 0.5, 1.0)], 2, 40, 3, claims)
    cm = claims_map(sw, tmp_path, claims)
    # 4 cells x (Table 4's five configurations + tree_selection_summary)
    assert cm.report is not None and cm.report.computed == 4 * 6
    t = cm.table
    assert t.height == 3 * 4
    assert set(t["status"]) <= set(STATUSES)
    assert (t.filter(pl.col("claim") == null.label)["status"] == TIE).all()
    assert sorted(t["poison[*].p_supersede"].unique().to_list()) == [0.0, 1.0]
    again = claims_map(sw, tmp_path, claims)
    assert again.report is not None and again.report.computed == 0
    assert again.table.equals(t)
    written = {p.name for p in write_claims(cm, tmp_path)}
    assert {"claims.parquet", "claims_map.html", "claims_map.png", "claims.json"} <= written
    meta, back = load_claims(tmp_path)
    assert back.equals(t) and meta["parameters"] == list(cm.parameters)
    # Flat means flat: the null claim's margin is 0 on every trajectory of every cell, so
    # the paired test across the grid finds nothing (p = 1), and claims.json says so.
    assert cm.flatness is not None and cm.flatness.height == 3
    null_flat = cm.flatness.filter(pl.col("policy") == null.label).row(0, named=True)
    assert null_flat["flat"] and null_flat["p"] == 1.0 and null_flat["points"] == 4
    record = meta["margin_flatness"]
    assert "Holm over 3 claims" in record["family"]
    assert record["claims"][null.label]["flat"] is True
    assert (t["margin_low"] <= t["margin"]).all() and (t["margin"] <= t["margin_high"]).all()
    with pytest.raises(SweepError, match="does not run: memgpt"):
        claims_map(sw, tmp_path / "other",
                   (Claim("x", "asr", "wmt", ("memgpt",)),))


def test_claims_command(tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["claims", "paper_poisoning", "--vary", "stubs.selector_noise=0:0.3",
                              "--vary", "stubs.poison_boost=-0.1:0.2", "--levels", "2",
                              "--n", "20", "-o", str(tmp_path), "--no-charts",
                              "--no-progress"])
    assert res.exit_code == 0, res.output
    assert "Full WMT lowest ASR" in res.output
    said = " ".join(res.output.split())  # the titles wrap at the terminal's width
    assert "margin across the grid" in said and "paired max-t bootstrap" in said
    assert (tmp_path / "claims.parquet").is_file()
    for argv in (["claims", "paper_poisoning", "--vary", "rho=0.5:0.9"],
                 ["claims", "paper_poisoning", "--vary", "rho", "--vary", "M=1:3"],
                 ["claims", "paper_poisoning", "--vary", "nope=0:1", "--vary", "rho=0.5:0.9"],
                 ["claims"]):
        bad = runner.invoke(app, [*argv, "-o", str(tmp_path / "bad"), "--no-progress"])
        assert bad.exit_code == 2, (argv, bad.output)
    assert not (tmp_path / "bad").exists()


def test_poison_wildcard_override_sets_every_injection() -> None:
    sc = load_scenario("paper_poisoning")
    out = sc.with_overrides({"poison[*].p_supersede": 0.2, "poison[*].persuasiveness": 0.5})
    assert len(out.world.poison) == len(sc.world.poison) >= 2
    assert all(p.p_supersede == 0.2 and p.persuasiveness == 0.5 for p in out.world.poison)
    assert [p.kind for p in out.world.poison] == [p.kind for p in sc.world.poison]
    with pytest.raises(ValueError, match="unknown key"):
        sc.with_overrides({"poison[*].bogus": 1.0})
    with pytest.raises(ValueError, match="no poison"):
        load_scenario("gaia_like").with_overrides({"poison[*].p_supersede": 0.2})
