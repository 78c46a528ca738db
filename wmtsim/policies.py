"""Old import path: ``wmtsim.policies`` is `wmtsim.core.policies` (the same module)."""

import sys

from wmtsim.core import policies as _module

sys.modules[__name__] = _module
