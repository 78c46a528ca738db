"""Old import path: ``wmtsim.cli_why`` is `wmtsim.interfaces.cli_why` (the same module)."""

import sys

from wmtsim.interfaces import cli_why as _module

sys.modules[__name__] = _module
