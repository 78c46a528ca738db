"""Old import path: ``wmtsim.analysis`` is `wmtsim.studies.analysis` (the same module)."""

import sys

from wmtsim.studies import analysis as _module

sys.modules[__name__] = _module
