"""Old import path: ``wmtsim.outdir`` is `wmtsim.studies.outdir` (the same module)."""

import sys

from wmtsim.studies import outdir as _module

sys.modules[__name__] = _module
