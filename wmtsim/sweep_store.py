"""Old import path: ``wmtsim.sweep_store`` is `wmtsim.studies.sweep_store` (the same module)."""

import sys

from wmtsim.studies import sweep_store as _module

sys.modules[__name__] = _module
