"""The one place that sets numba's options for wmtsim's kernels.

Every kernel is decorated with `jit` (or ``jit(parallel=True)`` for the three batch
drivers that spread trajectories over threads with ``prange``) instead of calling numba's
``njit`` with its own options, so the options are written once:

* nopython mode (``njit``): a kernel never falls back to Python objects;
* ``cache=True``: compiled kernels are kept on disk, in the folder `wmtsim.numba_cache`
  chooses (keyed by the kernel sources, so a kernel never reuses a stale callee);
* ``parallel=True`` only where asked for.

``fastmath`` is never set: the kernels must agree bit for bit with the readable twins.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from numba import njit

CACHE = True
"""Keep compiled kernels on disk (numba's ``cache=True``)."""


def jit(func: Callable[..., Any] | None = None, *, parallel: bool = False,
        inline: bool = False) -> Any:
    """Compile ``func`` with numba in nopython mode and wmtsim's options.

    Use as ``@jit``, ``@jit(parallel=True)`` or ``@jit(inline=True)`` (numba inlines the
    kernel into its callers at compile time: for a hook called at every step with the
    trajectory's records, whose call would copy them); returns numba's dispatcher.
    """
    options: dict[str, Any] = {"parallel": True, "cache": CACHE} if parallel else {"cache": CACHE}
    if inline:
        options["inline"] = "always"
    if func is None:
        return njit(**options)
    return njit(**options)(func)
