"""Old import path: ``wmtsim.world`` is `wmtsim.engine.world` (the same module)."""

import sys

from wmtsim.engine import world as _module

sys.modules[__name__] = _module
