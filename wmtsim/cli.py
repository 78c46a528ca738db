"""Old import path: ``wmtsim.cli`` is `wmtsim.interfaces.cli` (the same module)."""

import sys

from wmtsim.interfaces import cli as _module

if __name__ == "__main__":  # python -m wmtsim.cli
    _module.app()
else:
    sys.modules[__name__] = _module
