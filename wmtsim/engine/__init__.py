"""The engine: world generation, the forest, the step loop and the field's policies.

numba kernels over the knobs of `wmtsim.core`; `wmtsim.engine.simulation.simulate` is
their Python API. ``from wmtsim.engine import run`` (the step loop) keeps the import path of
the engine from before it was split into modules.
"""

from wmtsim.engine.loop import run

__all__ = ["run"]
