"""Old import path: ``wmtsim.simulator`` is `wmtsim.twins.simulator` (the same module)."""

import sys

from wmtsim.twins import simulator as _module

sys.modules[__name__] = _module
