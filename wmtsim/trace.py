"""Old import path: ``wmtsim.trace`` is `wmtsim.engine.trace` (the same module)."""

import sys

from wmtsim.engine import trace as _module

sys.modules[__name__] = _module
