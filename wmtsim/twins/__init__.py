"""The readable twins: slow, plain-Python versions of the kernels (no numba).

`reference.MemoryTree` (the WMT rules), `simulator.simulate_reference` (the whole engine)
and `field_reference.BaselineMemory` (the field's policies) agree with the numba engine
bit for bit; tests/twins prove it. Nothing here imports numba or `wmtsim.engine`.
"""
