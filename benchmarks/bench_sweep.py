"""Sweep throughput and memory: points/s and peak RSS for 100 vs 1,000 points.

Each size runs in its own subprocess (``resource.getrusage`` peak RSS of that process
only) on a ρ × M grid over ``paper_poisoning``. ``--full`` also times the 1,000-point ×
1,000-trajectory ρ × M sweep (100 ρ values × 10 M values, policy wmt).

    python benchmarks/bench_sweep.py            # 100 vs 1,000 points, 100 trajectories
    python benchmarks/bench_sweep.py --full     # + the 1,000 × 1,000 sweep (minutes)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, resource, sys, time
from wmtsim.studies.sweeps.sweep import load_sweep, run_sweep
sweep = load_sweep(sys.argv[1])
workers = int(sys.argv[3])
run_sweep(sweep, sys.argv[2] + "-warm", progress=False, max_chunks=1)  # load the JIT cache
t0 = time.perf_counter()
report = run_sweep(sweep, sys.argv[2], progress=False, workers=workers)
seconds = time.perf_counter() - t0
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"points": report.computed, "seconds": seconds,
                  "points_per_s": report.computed / seconds, "peak_rss_mb": rss / 1024,
                  "peak_child_rss_mb": kids / 1024}))
"""


def sweep_text(n_rho: int, n_m: int, trajectories: int) -> str:
    rhos = [round(0.5 + 0.49 * i / max(n_rho - 1, 1), 6) for i in range(n_rho)]
    return (f'name = "bench_{n_rho}x{n_m}"\nscenario = "paper_poisoning"\n'
            f'policies = ["wmt"]\n[parameters.rho]\nvalues = {rhos}\n'
            f"[parameters.M]\nvalues = {list(range(1, n_m + 1))}\n"
            f'[design]\nkind = "grid"\ntrajectories = {trajectories}\nseed = 0\n')


def run(n_rho: int, n_m: int, trajectories: int, workers: int, tmp: Path) -> dict[str, float]:
    path = tmp / f"bench_{n_rho}x{n_m}_{trajectories}.toml"
    path.write_text(sweep_text(n_rho, n_m, trajectories))
    out = tmp / path.stem
    done = subprocess.run([sys.executable, "-c", CHILD, str(path), str(out), str(workers)],
                          check=True, capture_output=True, text=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trajectories", type=int, default=100)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--full", action="store_true",
                    help="also time 1,000 points x 1,000 trajectories")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        small = run(10, 10, args.trajectories, args.workers, tmp)
        large = run(100, 10, args.trajectories, args.workers, tmp)
        for label, r in (("100 points", small), ("1,000 points", large)):
            print(f"{label:>13}: {r['points_per_s']:7.1f} points/s  "
                  f"peak RSS {r['peak_rss_mb']:6.1f} MB  ({r['seconds']:.1f} s, "
                  f"{args.trajectories} trajectories/point)")
        ratio = large["peak_rss_mb"] / small["peak_rss_mb"]
        print(f"peak RSS 1,000 / 100 points: {ratio:.3f} "
              f"({'within' if abs(ratio - 1) <= 0.2 else 'NOT within'} 20%)")
        if args.full:
            full = run(100, 10, 1000, args.workers, tmp)
            print(f"1,000 points x 1,000 trajectories (rho x M, paper_poisoning, wmt): "
                  f"{full['seconds']:.1f} s, {full['points_per_s']:.1f} points/s, "
                  f"peak RSS {full['peak_rss_mb']:.1f} MB, workers={args.workers}")


if __name__ == "__main__":
    main()
