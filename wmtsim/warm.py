"""Old import path: ``wmtsim.warm`` is `wmtsim.engine.warm` (the same module)."""

import sys

from wmtsim.engine import warm as _module

sys.modules[__name__] = _module
