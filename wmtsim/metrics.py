"""Old import path: ``wmtsim.metrics`` is `wmtsim.core.metrics` (the same module)."""

import sys

from wmtsim.core import metrics as _module

sys.modules[__name__] = _module
