"""Old import path: ``wmtsim.forest`` is `wmtsim.engine.forest` (the same module)."""

import sys

from wmtsim.engine import forest as _module

sys.modules[__name__] = _module
