"""wmtsim — simulation and policy analysis for the Weighted Memory Tree (arXiv 2608.20631).

Every public name loads on first use (`Params`, `Stubs`, `WorldSpec`, `PoisonSpec` pull in
numpy, `simulate`, `replay`, ... numba kernels), so ``import wmtsim`` and ``wmtsim --help``
stay fast.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from . import numba_cache

numba_cache.configure_before_numba()  # the cache folder, set before numba is imported

_LAZY = {
    "Params": "wmtsim.core.params",
    "Stubs": "wmtsim.core.stubs",
    "replay": "wmtsim.engine.trace.trace",
    "simulate": "wmtsim.engine.simulation",
    "SimResult": "wmtsim.engine.simulation",
    "paired_difference": "wmtsim.core.inference",
    "WorldSpec": "wmtsim.core.world_spec",
    "PoisonSpec": "wmtsim.core.world_spec",
    "POLICIES": "wmtsim.core.policies",
}


def _version() -> str:
    # importlib.metadata costs ~45 ms to import (email, zipfile, ...): only a run's
    # manifest needs the version, not ``wmtsim --help``.
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("wmtsim")
    except PackageNotFoundError:  # running from a source tree without installation
        return "0.0.0+unknown"


def __getattr__(name: str) -> Any:
    if name == "__version__":
        globals()["__version__"] = found = _version()  # looked up once
        return found
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'wmtsim' has no attribute {name!r}")


__all__ = ["POLICIES", "Params", "PoisonSpec", "SimResult", "Stubs", "WorldSpec",
           "__version__", "paired_difference", "replay", "simulate"]
