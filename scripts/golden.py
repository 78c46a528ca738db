"""A golden set of results, to prove a refactoring changes no bit.

    python scripts/golden.py record DIR    # before the change
    python scripts/golden.py compare DIR   # after: exits 1 at the first differing array

The set: every shipped scenario × every registered policy at a small n (the per-trajectory
counters and metrics, a few recorded steps, the final forest arrays), a small sweep
folder's points, `compare`'s intervals, paired differences and claim checks, and trace
replays (the paper's A.4 trace and random traces, whose events are stored in DIR so that
the comparison does not depend on the test suite's layout).
Equality is exact: same dtype, same shape, same bits (NaN equal to NaN).

`compare` fails on an array that differs or that the recorded set has and this run lacks;
an array only this run has (a new column, e.g. a metric added to the trajectories) is
listed as "added (not in the recorded set)" and does not fail: the refactoring added it,
and every recorded array is still checked bit for bit.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import polars as pl

N = 50
SEED = 7
# Columns that legitimately differ from run to run (wall-clock times, paths).
VOLATILE = {"seconds", "elapsed", "wall_seconds", "time", "started", "finished"}


def _frame_arrays(prefix: str, frame: pl.DataFrame) -> dict[str, np.ndarray]:
    out = {}
    for name in frame.columns:
        if name in VOLATILE:
            continue
        col = frame[name]
        if col.dtype == pl.String or col.dtype == pl.Categorical or col.dtype == pl.Enum:
            out[f"{prefix}/{name}"] = np.array([str(x) for x in col.to_list()])
        elif col.dtype.is_nested():
            out[f"{prefix}/{name}"] = np.array([json.dumps(x) for x in col.to_list()])
        else:
            out[f"{prefix}/{name}"] = col.to_numpy()
    return out


def collect(folder: Path) -> dict[str, np.ndarray]:
    """Compute every golden array (``folder`` holds or receives the random traces)."""
    from wmtsim.conformance.generate import random_trace
    from wmtsim.core.policies import POLICIES
    from wmtsim.engine.simulation import simulate
    from wmtsim.engine.trace.trace import run
    from wmtsim.studies.scenarios.scenario import load_scenario, shipped_scenarios
    from wmtsim.studies.sweeps.store import load_results
    from wmtsim.studies.sweeps.sweep import run_sweep, sweep_from_dict

    out: dict[str, np.ndarray] = {}
    for name in sorted(shipped_scenarios()):
        sc = load_scenario(name)
        for policy in sorted(POLICIES):
            r = simulate(sc.world, policy, n=N, seed=SEED, params=sc.params, stubs=sc.stubs,
                         baselines=sc.baselines, record_steps=2, threads=1)
            key = f"{name}/{policy}"
            out.update(_frame_arrays(f"{key}/traj", r.trajectories))
            out.update(_frame_arrays(f"{key}/steps", r.steps))
            for f in dataclasses.fields(r.forest):
                value = getattr(r.forest, f.name)
                if isinstance(value, np.ndarray):
                    out[f"{key}/forest/{f.name}"] = value

    sweep = sweep_from_dict({
        "name": "golden", "description": "golden sweep", "scenario": "paper_poisoning",
        "policies": ["wmt", "a1_unweighted"],
        "parameters": {"rho": {"values": [0.6, 0.9]}, "M": {"values": [1, 3]}},
        "design": {"kind": "grid", "trajectories": 40, "seed": 3},
    })
    with tempfile.TemporaryDirectory() as tmp:
        run_sweep(sweep, Path(tmp) / "sweep", progress=False, threads=1)
        res = load_results(Path(tmp) / "sweep")
        # In design order, without the content-hash keys: a knob added at its default
        # changes every key (the hash covers every field) but no result.
        out.update(_frame_arrays("sweep/design", res.design.drop("key")))
        out.update(_frame_arrays("sweep/points",
                                 res.points.drop("key").sort(["row", "policy"])))

    # The statistics on top: compare's intervals, paired differences and claim checks.
    from wmtsim.studies.compare.report import compare
    comp = compare(load_scenario("paper_poisoning"), n=200, seed=SEED, threads=1,
                   n_resamples=400)
    out.update(_frame_arrays("compare/summary", comp.summary))
    out.update(_frame_arrays("compare/paired", comp.paired))
    out["compare/checks"] = np.array([json.dumps(c, sort_keys=True, default=str)
                                      for c in comp.checks])

    root = Path(__file__).resolve().parent.parent
    traces = {"paper_a4": root / "scenarios" / "traces" / "paper_a4.jsonl"}
    for seed in (1, 2, 3):
        path = folder / f"random_{seed}.jsonl"
        if not path.exists():  # only when recording: `compare` reads the stored events
            events = random_trace(seed, 60, params={})
            path.write_text("".join(json.dumps(e) + "\n" for e in events))
        traces[f"random_{seed}"] = path
    for name, path in traces.items():
        rep = run(path)
        out.update(_frame_arrays(f"trace/{name}", rep.frame))
        out[f"trace/{name}/steps"] = np.array([rep.steps, rep.expectations])
        out[f"trace/{name}/divergence"] = np.array([str(rep.divergence)])
    return out


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind == "f":
        return bool(np.array_equal(a.view(np.uint8), b.view(np.uint8))) if a.size else True
    return bool(np.array_equal(a, b))


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("record", "compare"):
        print(__doc__)
        return 2
    folder = Path(argv[1])
    folder.mkdir(parents=True, exist_ok=True)
    arrays = collect(folder)
    if argv[0] == "record":
        np.savez(folder / "golden.npz", **arrays)  # type: ignore[arg-type]
        print(f"recorded {len(arrays)} arrays in {folder / 'golden.npz'}")
        return 0
    with np.load(folder / "golden.npz", allow_pickle=False) as saved:
        expected = {k: saved[k] for k in saved.files}
    missing = sorted(set(expected) - set(arrays))
    added = sorted(set(arrays) - set(expected))
    bad = [k for k in sorted(expected) if k in arrays and not _same(expected[k], arrays[k])]
    for k in added:
        print(f"added (not in the recorded set): {k}")
    for k in missing:
        print(f"missing (recorded, not computed): {k}")
    for k in bad:
        print(f"differs: {k}")
    if missing or bad:
        return 1
    extra = f", {len(added)} added" if added else ""
    print(f"identical: {len(expected)} recorded arrays, every bit{extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
