"""Old import path: ``wmtsim.sweep`` is `wmtsim.studies.sweep` (the same module)."""

import sys

from wmtsim.studies import sweep as _module

sys.modules[__name__] = _module
