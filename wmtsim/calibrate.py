"""Old import path: ``wmtsim.calibrate`` is `wmtsim.studies.calibrate` (the same module)."""

import sys

from wmtsim.studies import calibrate as _module

sys.modules[__name__] = _module
