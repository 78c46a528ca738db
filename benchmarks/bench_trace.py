"""Trace replay at scale: ``python -m benchmarks.bench_trace [--lines N] [--nodes K]``.

Writes a synthetic trace of ``N`` lines (default 1,000,000): a query, ``K`` actions
(default 1,000) under a few tasks, then outcome / select / expect lines cycling over the
actions, so the tree stays at ``K`` nodes while the trace grows. Each measurement runs in a
fresh process (`_child`) and reports wall time and peak resident memory:

* ``check``: `wmtsim check` (keeps no frame);
* ``replay``: `wmtsim replay` without ``--out`` (keeps only the last step);
* ``replay_out``: `wmtsim replay --out FILE.parquet` on a ``--out-lines`` prefix of the
  trace (default 100,000 lines: its output has one row per node and select step, about
  K / 3 rows per line), written in batches.

Prints one JSON object. A measurement, not a test: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def write_trace(path: Path, lines: int, nodes: int) -> None:
    tasks = 1  # every action under the active task: all stay candidates (no Eq. 7)
    out = ['{"op": "query", "id": "q"}']
    for t in range(tasks):
        out.append(f'{{"op": "task", "id": "t{t}", "parent": "q"}}')
    out.append('{"op": "activate", "id": "t0"}')
    for a in range(nodes):
        out.append(f'{{"op": "action", "id": "a{a}", "parent": "t{a % tasks}", '
                   f'"tokens": 20, "poisoned": {"true" if a % 7 == 0 else "false"}}}')
    k = 0
    with path.open("w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")
        written = len(out)
        while written < lines:
            a = k % nodes
            result = "success" if k % 3 else "failure"
            f.write(f'{{"op": "outcome", "id": "a{a}", "result": "{result}"}}\n'
                    f'{{"op": "select", "selected": ["a{a}", "a{(a + 1) % nodes}"]}}\n'
                    f'{{"op": "expect", "id": "a{a}", "m": 0}}\n')
            written += 3
            k += 1


def _child(argv: list[str]) -> dict[str, float]:
    """Run ``wmtsim ARGV`` in a fresh process; wall seconds and its peak RSS (MiB)."""
    code = ("import resource, sys, time\n"
            "from typer.testing import CliRunner\n"
            "from wmtsim.interfaces.cli.main import app\n"
            "t0 = time.perf_counter()\n"
            f"r = CliRunner().invoke(app, {argv!r})\n"
            "dt = time.perf_counter() - t0\n"
            "assert r.exit_code == 0, r.output[-2000:]\n"
            "rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024\n"
            "print(dt, rss)\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    seconds, rss = res.stdout.split()[-2:]
    return {"seconds": round(float(seconds), 2), "peak_rss_mib": round(float(rss), 1)}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--nodes", type=int, default=1_000)
    ap.add_argument("--out-lines", type=int, default=100_000)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "big.jsonl"
        small = Path(tmp) / "small.jsonl"
        t0 = time.perf_counter()
        write_trace(trace, args.lines, args.nodes)
        write_trace(small, args.out_lines, args.nodes)
        made = time.perf_counter() - t0
        report = {"lines": args.lines, "nodes": args.nodes,
                  "trace_mib": round(trace.stat().st_size / 2**20, 1),
                  "write_seconds": round(made, 1),
                  "check": _child(["check", str(trace)]),
                  "replay": _child(["replay", str(trace)]),
                  "replay_out": {"lines": args.out_lines,
                                 **_child(["replay", str(small), "--out",
                                           str(Path(tmp) / "steps.parquet")])},
                  "parent_peak_rss_mib": round(
                      resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}
        print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
