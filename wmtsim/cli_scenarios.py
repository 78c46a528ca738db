"""Old import path: ``wmtsim.cli_scenarios`` is `wmtsim.interfaces.cli_scenarios`
(the same module)."""

import sys

from wmtsim.interfaces import cli_scenarios as _module

sys.modules[__name__] = _module
