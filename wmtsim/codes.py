"""Old import path: ``wmtsim.codes`` is `wmtsim.core.codes` (the same module)."""

import sys

from wmtsim.core import codes as _module

sys.modules[__name__] = _module
