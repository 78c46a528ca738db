"""The engine: synthetic trajectories of agents with memory, thousands at once.

World generation, the forest, the step loop and the field's policies.

numba kernels over the knobs of `wmtsim.core`; `wmtsim.engine.simulation.simulate` is
their Python API; ``from wmtsim.engine import run`` is the step loop itself
(`wmtsim.engine.loop.run`).

Door: `wmtsim.engine.simulation` (`simulate`).
CLI: `wmtsim warmup`.
Dashboard: Poisoning dynamics.
"""

from wmtsim.engine.loop import run

__all__ = ["run"]
