"""Old import path: ``wmtsim.stubs`` is `wmtsim.core.stubs` (the same module)."""

import sys

from wmtsim.core import stubs as _module

sys.modules[__name__] = _module
