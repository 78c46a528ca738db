"""Old import path: ``wmtsim.field`` is `wmtsim.studies.field_curves` (the same module)."""

import sys

from wmtsim.studies import field_curves as _module

sys.modules[__name__] = _module
