"""Old import path: ``wmtsim.report`` is `wmtsim.studies.report` (the same module)."""

import sys

from wmtsim.studies import report as _module

sys.modules[__name__] = _module
