"""Old import path: ``wmtsim.reference`` is `wmtsim.twins.reference` (the same module)."""

import sys

from wmtsim.twins import reference as _module

sys.modules[__name__] = _module
