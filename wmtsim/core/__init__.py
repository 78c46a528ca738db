"""The math and the knobs: codes, parameters, stubs, metrics, policies, random draws.

The bottom layer. Plain-data modules (`params`, `stubs`, `world_spec`, `field_knobs`,
`policies`, `metrics`, `draws`, ...) import no numba; the math kernels (`rng`, `scoring`,
`lifecycle`) do. Nothing here imports from the layers above (docs/architecture.md).
"""
