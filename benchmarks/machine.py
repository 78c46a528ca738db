"""Timing helpers and a description of the machine a run happened on."""

from __future__ import annotations

import datetime as dt
import os
import platform
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True,
                             timeout=10, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


def machine_info() -> dict[str, Any]:
    """CPU, cores, versions, date and code version: what a reader needs to compare runs."""
    import numba
    import numpy as np

    import wmtsim

    status = _git("status", "--porcelain", "--untracked-files=no")
    return {
        "cpu": cpu_model(),
        "cores_logical": os.cpu_count(),
        "cores_usable": usable_cores(),
        "numba_threads": int(numba.config.NUMBA_NUM_THREADS),  # type: ignore[attr-defined]
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "numba": numba.__version__,
        "numpy": np.__version__,
        "wmtsim": wmtsim.__version__,
        "git_commit": _git("rev-parse", "--short", "HEAD"),
        "git_dirty": bool(status) if status is not None else None,
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }


def best_time(fn: Callable[[], object], repeat: int = 3, min_time: float = 0.0,
              max_time: float = 30.0) -> tuple[float, list[float]]:
    """Best wall time of ``fn()`` over ``repeat`` calls (more while under ``min_time``).

    The minimum is the least noisy estimate on a shared machine: other processes only
    ever add time. Stops early once ``max_time`` has been spent.
    """
    times: list[float] = []
    spent = 0.0
    while len(times) < repeat or spent < min_time:
        t0 = time.perf_counter()
        fn()
        t = time.perf_counter() - t0
        times.append(t)
        spent += t
        if spent > max_time:
            break
    return min(times), times


def run_process(cmd: list[str], env: dict[str, str] | None = None, timeout: float = 900.0
                ) -> tuple[float, subprocess.CompletedProcess[str], float]:
    """Wall time and CPU time (user + system) of a whole child process.

    CPU time is the load-insensitive view: on a busy machine wall time also counts the
    time the child spent waiting for a core.
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, done, cpu
