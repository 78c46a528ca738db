"""Old import path: ``wmtsim.claims`` is `wmtsim.studies.claims` (the same module)."""

import sys

from wmtsim.studies import claims as _module

sys.modules[__name__] = _module
