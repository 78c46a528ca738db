"""Old import path: ``wmtsim.lifecycle`` is `wmtsim.core.lifecycle` (the same module)."""

import sys

from wmtsim.core import lifecycle as _module

sys.modules[__name__] = _module
