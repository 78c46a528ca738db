"""wmtsim — simulation and policy analysis for the Weighted Memory Tree (arXiv 2608.20631).

The light names (`Params`, `WorldSpec`, `PoisonSpec`, `Stubs`) import eagerly; the ones that
pull in numba kernels (`simulate`, `replay`, ...) load on first use so that
``import wmtsim`` stays fast.
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

numba_cache.configure()  # before any kernel module imports numba

from wmtsim.core.params import Params  # noqa: E402
from wmtsim.core.stubs import Stubs  # noqa: E402

_LAZY = {
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
