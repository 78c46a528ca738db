"""Sweep files, designs, the output folder (resume, refusal) and the CLI."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from conftest import sweep_frames
from test_sweep_support import GRID, write_files
from typer.testing import CliRunner

from wmtsim.interfaces.cli.main import app
from wmtsim.studies.sweeps.store import load_results
from wmtsim.studies.sweeps.sweep import SweepError, design_rows, load_sweep, plan, run_sweep

# --- bad sweep files -------------------------------------------------------------------------

BASE = {
    "scenario": '"tiny.toml"',
    "params": "[parameters.rho]\nvalues = [0.6, 0.9]\n",
    "design": '[design]\nkind = "grid"\ntrajectories = 10\n',
}


def _text(**parts: str) -> str:
    p = {**BASE, **parts}
    return f"scenario = {p['scenario']}\n{p.get('top', '')}\n{p['params']}\n{p['design']}"


@pytest.mark.parametrize(("parts", "key", "hint"), [
    ({"top": "colour = 1"}, "colour", "allowed: name"),
    ({"design": '[design]\nkind = "grid"\nwobble = 2\n'}, "design.wobble", "allowed: kind"),
    ({"design": '[design]\nkind = "factorial"\n'}, "design.kind", "grid | lhs"),
    ({"params": "[parameters.rho]\nvalue = [0.6]\n"}, "parameters.rho.value",
     "allowed: values"),
    ({"params": "[parameters.rhoo]\nvalues = [0.6]\n"}, "parameters.rhoo", "unknown key"),
    ({"params": "[parameters.rho]\nlow = 0.5\n"}, "parameters.rho.high", "required"),
    ({"params": "[parameters.rho]\nlow = 0.9\nhigh = 0.5\nlevels = 3\n"},
     "parameters.rho.high", "greater than low"),
    ({"params": "[parameters.rho]\nlow = 0.5\nhigh = 0.9\n"}, "parameters.rho.levels",
     "grid"),
    ({"params": "[parameters.rho]\nvalues = [0.6, 1.5]\n"}, "parameters", "rho"),
    ({"design": '[design]\nkind = "lhs"\n'}, "design.points", "required"),
    ({"design": '[design]\nkind = "sobol"\npoints = 12\n'}, "design.points", "power of 2"),
    ({"design": '[design]\nkind = "grid"\ntrajectories = 0\n'}, "design.trajectories",
     "an integer in [1, 10,000,000]"),
    ({"top": 'policies = ["wmt", "best"]'}, "policies[1]", "allowed: no_memory"),
    ({"scenario": '"missing.toml"'}, "scenario", "cannot load"),
    ({"params": "[parameters.seed]\nvalues = [1, 2]\n"}, "parameters.seed", "[design]"),
    ({"params": "[parameters.u_success]\nlow = 0.2\nhigh = 0.9\n"
                "[parameters.u_failure]\nlow = 0.1\nhigh = 0.5\n",
      "design": '[design]\nkind = "random"\npoints = 50\n'}, "parameters",
     "u_success"),
])
def test_bad_sweep_files_name_the_key(tmp_path: Path, parts: dict[str, str], key: str,
                                      hint: str) -> None:
    path = write_files(tmp_path, _text(**parts), name="bad.toml")
    with pytest.raises(SweepError) as e:
        load_sweep(path)
    msg = str(e.value)
    assert msg.startswith(f"{path}: {key}"), msg
    assert hint in msg, msg


def test_nested_parameter_tables_and_world_knobs(tmp_path: Path) -> None:
    text = _text(params="[parameters.world.p_success]\nvalues = [0.6, 0.9]\n"
                        "[parameters.stubs.p_leak]\nvalues = [0.1, 0.5]\n")
    sweep = load_sweep(write_files(tmp_path, text, name="nested.toml"))
    assert [p.key for p in sweep.parameters] == ["world.p_success", "stubs.p_leak"]
    assert sweep.rows == 4


# --- designs -------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["lhs", "random", "sobol"])
def test_designs_give_the_requested_points_within_bounds(tmp_path: Path, kind: str) -> None:
    text = _text(params="[parameters.rho]\nlow = 0.5\nhigh = 0.99\n"
                        "[parameters.M]\nlow = 1\nhigh = 8\ninteger = true\n"
                        "[parameters.budget]\nlow = 64\nhigh = 4096\nlog = true\n"
                        "integer = true\n"
                        "[parameters.tau_obs]\nvalues = [0.0, 0.1, 0.2]\n",
                 design=f'[design]\nkind = "{kind}"\npoints = 32\nseed = 7\n')
    sweep = load_sweep(write_files(tmp_path, text, name="d.toml"))
    rows = list(design_rows(sweep))
    assert len(rows) == (32 * 6 if kind == "sobol" else 32) == sweep.rows
    for r in rows:
        v = r.values
        assert 0.5 <= v["rho"] < 0.99
        assert isinstance(v["M"], int) and 1 <= v["M"] <= 8
        assert isinstance(v["budget"], int) and 64 <= v["budget"] <= 4096
        assert v["tau_obs"] in (0.0, 0.1, 0.2)
    if kind == "lhs":  # one point per stratum in every dimension
        strata = sorted(math.floor((r.values["rho"] - 0.5) / 0.49 * 32) for r in rows)
        assert strata == list(range(32))
    if kind == "sobol":
        a = [r for r in rows if r.block == "A"]
        b = [r for r in rows if r.block == "B"]
        ab = [r for r in rows if r.block == "AB" and r.block_param == "M"]
        assert len(a) == len(b) == len(ab) == 32
        for ra, rb, rab in zip(a, b, ab, strict=True):
            assert rab.values == {**ra.values, "M": rb.values["M"]}
    again = [r.values for r in design_rows(load_sweep(tmp_path / "d.toml"))]
    assert again == [r.values for r in rows]  # seeded


def test_grid_is_the_cartesian_product(tmp_path: Path) -> None:
    sweep = load_sweep(write_files(tmp_path))
    rows = [r.values for r in design_rows(sweep)]
    assert rows == [{"rho": r, "M": m} for r in (0.6, 0.9) for m in (1, 3, 5)]
    p = plan(sweep)
    assert len(p.points) == 12 == len({q.key for q in p.points})


# --- running, resuming, refusing -----------------------------------------------------------


def test_resume_computes_only_missing_points(tmp_path: Path) -> None:
    sweep = load_sweep(write_files(tmp_path))
    full = run_sweep(sweep, tmp_path / "full", progress=False)
    assert (full.computed, full.chunks) == (12, 6)
    part = run_sweep(sweep, tmp_path / "part", progress=False, max_chunks=2)
    assert part.computed == 4
    rest = run_sweep(sweep, tmp_path / "part", progress=False, resume=True)
    assert (rest.already, rest.computed) == (4, 8)
    again = run_sweep(sweep, tmp_path / "part", progress=False)
    assert again.computed == 0
    a, b = sweep_frames(tmp_path / "full"), sweep_frames(tmp_path / "part")
    assert a[0].equals(b[0]) and a[1].equals(b[1])
    log = (tmp_path / "part" / "computed.log").read_text().split("\n")
    keys = [line.split("\t")[2] for line in log if line]
    assert sorted(keys) == sorted(a[0]["key"])  # each point computed exactly once
    res = load_results(tmp_path / "full")
    assert res.manifest["complete"] and res.table().height == 12


def test_a_sweep_resumed_across_a_new_metric_loads(tmp_path: Path) -> None:
    """Chunks written before a metric was declared lack its columns: the folder still
    loads, the old points' values of the new metric are null."""
    import polars as pl

    from wmtsim.studies.sweeps.store import CHUNKS

    sweep = load_sweep(write_files(tmp_path))
    run_sweep(sweep, tmp_path / "part", progress=False, max_chunks=2)
    old = next((tmp_path / "part" / CHUNKS).glob("points-*.parquet"))
    frame = pl.read_parquet(old)
    dropped = [c for c in frame.columns if c.startswith("avg_prompt_tokens")]
    assert dropped
    frame.drop(dropped).write_parquet(old)  # as a chunk of the previous version
    run_sweep(sweep, tmp_path / "part", progress=False, resume=True)
    points = load_results(tmp_path / "part").points
    assert points.height == 12 and points["avg_prompt_tokens"].null_count() == 2


def test_a_different_sweep_is_refused(tmp_path: Path) -> None:
    run_sweep(load_sweep(write_files(tmp_path)), tmp_path / "out", progress=False,
              max_chunks=1)
    other = load_sweep(write_files(tmp_path, GRID.replace("0.6, 0.9", "0.6, 0.8"),
                                   name="other.toml"))
    with pytest.raises(SweepError, match="different sweep"):
        run_sweep(other, tmp_path / "out", progress=False)
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "notes.txt").write_text("mine")
    with pytest.raises(SweepError, match="not a sweep folder"):
        run_sweep(other, tmp_path / "junk", progress=False)
    with pytest.raises(SweepError, match="nothing to resume"):
        run_sweep(other, tmp_path / "fresh", progress=False, resume=True)


def test_local_pool_matches_in_process(tmp_path: Path) -> None:
    sweep = load_sweep(write_files(tmp_path))
    run_sweep(sweep, tmp_path / "one", progress=False, threads=2)
    run_sweep(sweep, tmp_path / "pool", progress=False, workers=2)
    a, b = sweep_frames(tmp_path / "one"), sweep_frames(tmp_path / "pool")
    assert a[0].equals(b[0]) and a[1].equals(b[1])


def test_cli_sweep_and_errors(tmp_path: Path) -> None:
    path = write_files(tmp_path)
    runner = CliRunner()
    r = runner.invoke(app, ["sweep", str(path), "--out", str(tmp_path / "o"),
                            "--no-progress"])
    assert r.exit_code == 0, r.output
    assert "12 points, 0 already done, 12 computed" in r.output
    bad = write_files(tmp_path, _text(top="colour = 1"), name="bad.toml")
    r = runner.invoke(app, ["sweep", str(bad), "--out", str(tmp_path / "b")])
    assert r.exit_code == 2
    assert "bad.toml: colour: unknown key" in r.output
