"""Old import path: ``wmtsim.simulation`` is `wmtsim.engine.simulation` (the same module)."""

import sys

from wmtsim.engine import simulation as _module

sys.modules[__name__] = _module
