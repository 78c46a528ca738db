"""Old import path: ``wmtsim.baselines`` is `wmtsim.engine.field` (the same module)."""

import sys

from wmtsim.engine import field as _module

sys.modules[__name__] = _module
