"""The engine: world generation, the forest, the step loop and the field's policies.

numba kernels over the knobs of `wmtsim.core`; `wmtsim.engine.simulation.simulate` is
their Python API; ``from wmtsim.engine import run`` is the step loop itself
(`wmtsim.engine.loop.run`).
"""

from wmtsim.engine.loop import run

__all__ = ["run"]
