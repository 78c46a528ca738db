"""Old import path: ``wmtsim.scenario`` is `wmtsim.studies.scenario` (the same module)."""

import sys

from wmtsim.studies import scenario as _module

sys.modules[__name__] = _module
