"""Kernels take records, not lists of arrays (issue 29): no numba kernel of the engine or
of the core it calls takes more than `MAX_ARGUMENTS` arguments.

What travels together goes in one of the named records of `wmtsim.engine.records` (or
`wmtsim.core.lifecycle.LifecycleScratch`, `ForestRows`, `WorldRows`), read by name. The
count is read from each compiled kernel's Python signature (``py_func``), so a kernel
added anywhere under those packages is checked without being listed here.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import ModuleType

from numba import njit
from numba.core.dispatcher import Dispatcher

import wmtsim.core
import wmtsim.engine

MAX_ARGUMENTS = 10
PACKAGES = (wmtsim.core, wmtsim.engine)


def _modules(package: ModuleType) -> list[ModuleType]:
    return [importlib.import_module(f"{package.__name__}.{info.name}")
            for info in pkgutil.iter_modules(package.__path__)]


def kernels() -> dict[str, Dispatcher]:
    """Every numba kernel defined in `PACKAGES`, by ``module.name`` (where it is defined,
    not where it is imported)."""
    out: dict[str, Dispatcher] = {}
    for package in PACKAGES:
        for module in _modules(package):
            for name, obj in vars(module).items():
                if isinstance(obj, Dispatcher) and obj.py_func.__module__ == module.__name__:
                    out[f"{module.__name__}.{name}"] = obj
    return out


def too_many(found: dict[str, Dispatcher], limit: int = MAX_ARGUMENTS) -> dict[str, int]:
    """The kernels of ``found`` with more than ``limit`` arguments, with their counts."""
    counts = {k: len(inspect.signature(d.py_func).parameters) for k, d in found.items()}
    return {k: c for k, c in sorted(counts.items()) if c > limit}


def test_no_kernel_takes_more_than_ten_arguments() -> None:
    found = kernels()
    # The engine's step loop and the lifecycle kernels it calls are all here.
    assert {"wmtsim.engine.loop._run_batch", "wmtsim.engine.agent._prompt_step",
            "wmtsim.core.lifecycle._branch_priorities_into"} <= set(found)
    assert len(found) >= 80, len(found)
    assert too_many(found) == {}


def test_the_count_sees_a_long_signature() -> None:
    def wide(a, b, c, d, e, f, g, h, i, j, k):  # type: ignore[no-untyped-def]
        return a

    kernel = njit(wide)
    assert too_many({"wide": kernel}) == {"wide": 11}
    assert too_many({"wide": kernel}, limit=11) == {}
