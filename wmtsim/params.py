"""Old import path: ``wmtsim.params`` is `wmtsim.core.params` (the same module)."""

import sys

from wmtsim.core import params as _module

sys.modules[__name__] = _module
