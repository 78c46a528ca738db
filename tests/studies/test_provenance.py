"""Provenance: every output folder's manifest records seed, n,
resamples, alpha, correction and the command line, and ``--precision`` records how n was
grown. The promise test of every writer (tests/interfaces/test_output_promises.py) checks
the keys on each command's manifest; here: the writers it does not run (compare --parity,
--precision), the values, and that no manifest writer in the package skips provenance."""

from __future__ import annotations

import ast
import json
from pathlib import Path

from typer.testing import CliRunner

from wmtsim.core.provenance import KEYS
from wmtsim.interfaces.cli.main import app

PACKAGE = Path(__file__).resolve().parents[2] / "wmtsim"


def _manifest(argv: list[str]) -> dict:  # type: ignore[type-arg]
    res = CliRunner().invoke(app, argv)
    assert res.exit_code == 0, res.output
    out = Path(argv[argv.index("--out") + 1])
    return json.loads((out / "manifest.json").read_text())


def test_every_manifest_writer_passes_provenance() -> None:
    """Each call of write_manifest / the sweep's manifest passes `provenance(...)` (as
    ``extra=`` or spread into its fields), so a new writer cannot forget it."""
    calls = []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in ("write_manifest", "output_manifest")):
                text = ast.unparse(node)
                # claims spreads provenance into meta, which its write_manifest spreads
                ok = "provenance(" in text or "**meta" in text
                calls.append((f"{path.relative_to(PACKAGE)}:{node.lineno}", ok))
    assert len(calls) >= 13, calls
    assert [c for c, ok in calls if not ok] == []


def test_run_precision_grows_n_and_records_it(tmp_path: Path) -> None:
    m = _manifest(["run", "paper_poisoning", "-p", "wmt", "--n", "20", "--precision",
                   "0.08", "--out", str(tmp_path / "run")])
    assert set(KEYS) <= set(m)
    rec = m["precision"]
    runs = [r["n"] for r in rec["runs"]]
    assert runs[0] == 20 and runs == sorted(runs) and len(runs) >= 2  # n = 20 is too few
    assert m["n"] == runs[-1] and rec["reached"] == (rec["runs"][-1]
                                                     ["widest_half_width"] <= 0.08)
    assert rec["widest_cell"]["mcse"] > 0
    assert m["alpha"] == 0.05 and m["resamples"] >= 2000 and m["seed"] is not None


def test_compare_precision_and_parity_manifests(tmp_path: Path) -> None:
    m = _manifest(["compare", "paper_poisoning", "-p", "wmt", "-p", "linear", "--n", "10",
                   "--precision", "0.5", "--out", str(tmp_path / "c")])
    assert set(KEYS) <= set(m) and m["precision"]["runs"][0]["n"] == 10
    assert m["correction"] == "holm" and m["n"] == m["precision"]["runs"][-1]["n"]
    p = _manifest(["compare", "paper_poisoning", "-p", "wmt", "-p", "linear", "--n", "5",
                   "--parity", "--out", str(tmp_path / "p")])
    assert set(KEYS) <= set(p) and p["n"] == 5


def test_sweep_manifest_names_the_seed_it_used(tmp_path: Path) -> None:
    """A sweep without a [design] seed runs each scenario's own: the manifest says which
    (it used to record "seed": null)."""
    from wmtsim.studies.sweeps.sweep import load_sweep, run_sweep

    (tmp_path / "w.toml").write_text(
        'scenario = "paper_poisoning"\npolicies = ["wmt"]\n[parameters.rho]\n'
        'values = [0.8, 0.9]\n[design]\nkind = "grid"\ntrajectories = 3\n')
    run_sweep(load_sweep(tmp_path / "w.toml"), tmp_path / "s", progress=False)
    m = json.loads((tmp_path / "s" / "manifest.json").read_text())
    assert set(KEYS) <= set(m)
    assert m["seed"] == {"paper_poisoning": 0}, m["seed"]
    assert m["n"] == 3


def test_claims_precision_grows_n_until_the_margins_are_narrow(tmp_path: Path) -> None:
    """``claims --precision H``: n grows until every margin interval of
    a claim on a rate has a half-width ≤ H (or --n-max), and the manifest records the
    target, every n tried and the widest interval's Monte Carlo standard error."""
    import polars as pl

    out = tmp_path / "c"
    m = _manifest(["claims", "paper_poisoning", "--vary", "stubs.selector_noise=0:0.3",
                   "--vary", "stubs.poison_boost=-0.1:0.2", "--levels", "2", "--n", "10",
                   "--precision", "0.2", "--n-max", "400", "--no-charts",
                   "--no-progress", "--out", str(out)])
    assert set(KEYS) <= set(m)
    rec = m["precision"]
    runs = [r["n"] for r in rec["runs"]]
    assert runs[0] == 10 and runs == sorted(runs) and len(runs) >= 2  # 10 is too few
    assert m["n"] == runs[-1] and rec["target_half_width"] == 0.2
    assert rec["reached"] == (rec["runs"][-1]["widest_half_width"] <= 0.2)
    w = rec["widest_cell"]
    assert w["mcse"] > 0 and w["half_width"] == rec["runs"][-1]["widest_half_width"]
    assert w["claim"].split()[-1] in ("ASR", "PRR", "BR", "TSR")  # rates only, not AF
    table = pl.read_parquet(out / "claims.parquet")
    assert (table["n"] == runs[-1]).all()  # the map is the last run's, not a mix
    rates = table.filter(pl.col("metric").is_in(["asr", "prr", "br", "tsr"]))
    half = ((rates["margin_high"] - rates["margin_low"]) / 2).max()
    assert half == rec["runs"][-1]["widest_half_width"]
    # A sparse effect on an unbounded metric (AF) has no interval (NaN: the exact test
    # alone decides); every other margin lies inside its interval.
    has = table.filter(pl.col("margin_low").is_not_nan())
    assert table.filter(pl.col("margin_low").is_nan())["metric"].is_in(["af"]).all()
    assert (has["margin_low"] <= has["margin"]).all()
    assert (has["margin"] <= has["margin_high"]).all()
    claims_json = json.loads((out / "claims.json").read_text())
    assert claims_json["precision"] == rec and claims_json["n"] == runs[-1]
    bad = CliRunner().invoke(app, ["claims", "paper_poisoning", "--vary", "rho=0.5:0.9",
                                   "--vary", "M=1:3", "--precision", "0.1", "--resume",
                                   "--out", str(tmp_path / "bad"), "--no-progress"])
    assert bad.exit_code == 2 and "--resume" in bad.output
    zero = CliRunner().invoke(app, ["claims", "paper_poisoning", "--vary", "rho=0.5:0.9",
                                    "--vary", "M=1:3", "--precision", "0", "--out",
                                    str(tmp_path / "bad"), "--no-progress"])
    assert zero.exit_code == 2 and "must be > 0" in zero.output
    assert not (tmp_path / "bad").exists()
