"""Old import path: ``wmtsim.formatting`` is `wmtsim.core.formatting` (the same module)."""

import sys

from wmtsim.core import formatting as _module

sys.modules[__name__] = _module
