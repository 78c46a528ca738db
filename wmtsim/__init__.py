"""wmtsim — simulation and policy analysis for the Weighted Memory Tree (arXiv 2608.20631).

Every public name loads on first use (`Params`, `Stubs`, `WorldSpec`, `PoisonSpec` pull in
numpy, `simulate`, `replay`, ... numba kernels), so ``import wmtsim`` and ``wmtsim --help``
stay fast.
"""

from __future__ import annotations

from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from typing import Any

try:
    __version__ = version("wmtsim")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.0.0+unknown"

from . import numba_cache

numba_cache.configure_before_numba()  # the cache folder, set before numba is imported

_LAZY = {
    "Params": "wmtsim.core.params",
    "Stubs": "wmtsim.core.stubs",
    "replay": "wmtsim.engine.trace",
    "simulate": "wmtsim.engine.simulation",
    "SimResult": "wmtsim.engine.simulation",
    "paired_difference": "wmtsim.engine.simulation",
    "WorldSpec": "wmtsim.core.world_spec",
    "PoisonSpec": "wmtsim.core.world_spec",
    "POLICIES": "wmtsim.core.policies",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'wmtsim' has no attribute {name!r}")


__all__ = ["POLICIES", "Params", "PoisonSpec", "SimResult", "Stubs", "WorldSpec",
           "__version__", "paired_difference", "replay", "simulate"]
