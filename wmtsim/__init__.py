"""wmtsim — simulation and policy analysis for the Weighted Memory Tree (arXiv 2608.20631)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from .params import Params
from .trace import replay

try:
    __version__ = version("wmtsim")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.0.0+unknown"

__all__ = ["Params", "__version__", "replay"]
