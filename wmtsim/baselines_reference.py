"""Old import path: ``wmtsim.baselines_reference`` is `wmtsim.twins.field_reference`
(the same module)."""

import sys

from wmtsim.twins import field_reference as _module

sys.modules[__name__] = _module
