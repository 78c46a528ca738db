"""Old import path: ``wmtsim.scoring`` is `wmtsim.core.scoring` (the same module)."""

import sys

from wmtsim.core import scoring as _module

sys.modules[__name__] = _module
