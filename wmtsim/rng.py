"""Old import path: ``wmtsim.rng`` is `wmtsim.core.rng` (the same module)."""

import sys

from wmtsim.core import rng as _module

sys.modules[__name__] = _module
