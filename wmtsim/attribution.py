"""Old import path: ``wmtsim.attribution`` is `wmtsim.studies.attribution` (the same module)."""

import sys

from wmtsim.studies import attribution as _module

sys.modules[__name__] = _module
