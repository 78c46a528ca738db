"""Coverage of `wmtsim fit-stubs`' 95% profile-likelihood intervals in recovery.

    python -m benchmarks.stub_fit_coverage                   # 300 logs of 2,000 events
    python -m benchmarks.stub_fit_coverage --logs 100 --events 5000

Each log is drawn by `wmtsim.studies.stub_fit.simulate` from wmtsim's stubs at `TRUTH`
(the defaults, with p_leak and p_misled moved inside their ranges: at an end of its range a
parameter's interval reaches that end by construction), with its own seed, and fitted
back; a parameter's coverage is the share of logs whose interval holds the truth, with its
binomial Monte Carlo standard error. A parameter the log did not identify counts as a
miss. Writes benchmarks/results/stub_fit_coverage.json; docs/stub_logs.md reports the
numbers. Not a test: minutes (tests/studies/test_stub_fit_recovery.py has the slow-tier
check on fewer logs).
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
import time
from pathlib import Path
from typing import Any

from wmtsim.core.stubs import Stubs
from wmtsim.studies.stub_fit.fit import FITTED, fit_log
from wmtsim.studies.stub_fit.log import read_log
from wmtsim.studies.stub_fit.simulate import write_log

TRUTH = Stubs(p_leak=0.3, p_misled=0.7)
GOAL = 0.93
OUT = Path(__file__).resolve().parent / "results" / "stub_fit_coverage.json"


def coverage(logs: int, events: int, first_seed: int = 1000) -> dict[str, Any]:
    """Per parameter: hits, logs, coverage and its standard error."""
    truth = TRUTH.to_dict()
    hits = dict.fromkeys(FITTED, 0)
    seconds = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "log.jsonl")
        for k in range(logs):
            write_log(path, TRUTH, events, seed=first_seed + k)
            t0 = time.perf_counter()
            fit = fit_log(read_log(path))
            seconds += time.perf_counter() - t0
            for e in fit.estimates:
                if e.identified and e.low <= truth[e.name] <= e.high:
                    hits[e.name] += 1
    rows = {}
    for name in FITTED:
        c = hits[name] / logs
        rows[name] = {"hits": hits[name], "logs": logs, "coverage": c,
                      "se": math.sqrt(c * (1 - c) / logs), "truth": truth[name]}
    pooled = sum(hits.values()) / (logs * len(FITTED))
    return {"events": events, "logs": logs, "first_seed": first_seed, "parameters": rows,
            "pooled": pooled, "fit_seconds_mean": seconds / logs, "goal": GOAL}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.stub_fit_coverage",
                                 description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--logs", type=int, default=300)
    ap.add_argument("--events", type=int, default=2000)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    result = coverage(args.logs, args.events)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"{args.logs} logs of {args.events} events; mean fit "
          f"{result['fit_seconds_mean']:.2f} s")
    print(f"{'parameter':24s} {'truth':>8s} {'coverage':>9s} {'± se':>7s}  goal {GOAL}")
    for name, r in result["parameters"].items():
        flag = "met" if r["coverage"] >= GOAL else "MISSED"
        print(f"{name:24s} {r['truth']:8g} {r['coverage']:9.3f} {r['se']:7.3f}  {flag}")
    print(f"{'pooled':24s} {'':8s} {result['pooled']:9.3f}")


if __name__ == "__main__":
    main()
