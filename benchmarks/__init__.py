"""wmtsim benchmarks: speed, scaling, start-up and memory (`make bench`).

Run ``python -m benchmarks.run`` (``--quick`` for a smoke test, ``--only NAME`` for one
section). Results go to ``benchmarks/results/latest.json`` with the machine they ran on;
``docs/benchmarks.md`` explains each measurement. Every comparison is a ratio of two
timings taken in the same run, because the machines these run on are shared and noisy.
"""
