"""Old import path: ``wmtsim.validation`` is `wmtsim.core.validation` (the same module)."""

import sys

from wmtsim.core import validation as _module

sys.modules[__name__] = _module
