"""`wmtsim tune`'s overhead per evaluated point against the same points as a plain sweep.

Runs a tuning study (NSGA-II, ``--trials`` trials in generations of ``--batch``, each on
one scenario and seed) in-process, then the very settings it evaluated as one plain sweep
(`run_sweep` of a sweep whose design rows are the trials' settings, into a fresh folder),
and reports seconds per point for both, tune's share spent simulating, and the overhead
(goal: tune per point within 10% of the sweep per point). No timed tests: this prints.

    python benchmarks/bench_tune.py                      # decay_pressure, 32 trials, n = 200
    python benchmarks/bench_tune.py --trials 64 --n 400
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenario", default="decay_pressure")
    ap.add_argument("--trials", type=int, default=32)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--n", type=int, default=200)
    args = ap.parse_args()

    from wmtsim.studies.scenarios.scenario import load_scenario
    from wmtsim.studies.sweeps.design import DesignRow, Plan, plan
    from wmtsim.studies.sweeps.knob_ranges import WMT_RANGES
    from wmtsim.studies.sweeps.spec import ParameterSpec, Sweep
    from wmtsim.studies.sweeps.sweep import run_sweep
    from wmtsim.studies.tune.tune import Fit, parse_objective, setting_of, tune

    sc = load_scenario(args.scenario)
    fit = Fit((sc,), (0,), args.n, tuple(parse_objective(o) for o in
                                        ("tsr:max", "asr:min", "prompt_tokens:min")))
    with tempfile.TemporaryDirectory() as tmp:
        warm = tune(fit, Path(tmp) / "warm.sqlite3", trials=2, batch=2)  # load the JIT
        t0 = time.perf_counter()
        tuning = tune(fit, Path(tmp) / "s.sqlite3", trials=args.trials, batch=args.batch)
        tune_s = time.perf_counter() - t0
        rows = [fit.resolve(setting_of(r, fit), sc) for r in tuning.trials.iter_rows(named=True)]
        keys = [r.key for r in WMT_RANGES]
        sweep = Sweep(name="bench_tune", description="", path=None, scenarios=(sc,),
                      policies=("wmt",),
                      parameters=tuple(ParameterSpec(k, values=(0,)) for k in keys),
                      kind="random", points=len(rows), trajectories=args.n, seed=0,
                      replicates=1)
        import wmtsim.studies.sweeps.design as design

        original = design.design_rows
        design.design_rows = lambda s: (DesignRow(i, row) for i, row in enumerate(rows))
        try:
            t1 = time.perf_counter()
            report = run_sweep(sweep, Path(tmp) / "sweep", progress=False)
            sweep_s = time.perf_counter() - t1
        finally:
            design.design_rows = original
        assert isinstance(plan, object) and Plan is not None and warm is not None
    points = tuning.computed + 1  # the trials and the shipped setting (the baseline)
    result = {
        "scenario": sc.name, "trials": tuning.computed, "batch": args.batch, "n": args.n,
        "tune_seconds": round(tune_s, 2), "tune_simulating_seconds": round(tuning.sim_seconds, 2),
        "tune_seconds_per_point": round(tune_s / points, 4),
        "sweep_points": report.computed, "sweep_seconds": round(sweep_s, 2),
        "sweep_seconds_per_point": round(sweep_s / max(report.computed, 1), 4),
    }
    result["overhead_vs_sweep"] = round(result["tune_seconds_per_point"]
                                        / result["sweep_seconds_per_point"] - 1, 3)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
