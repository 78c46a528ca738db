"""The wmtsim dashboard: a multipage Streamlit app (``wmtsim dashboard``).

Layers: ``app.py`` only declares the pages; the page scripts in ``views/`` lay out the
controls; `widgets` holds the controls and panels several pages share; `charts` turns
frames into Altair charts; `export` writes a chart or table for download. The service
layer, one module per page (`services_dynamics`, `services_population`, `services_trace`,
`services_sweep`, `services_why`, `services_atlas`, `services_attack`) and `services_runs`
(shared by every page, and the Compare page's), holds the only modules that call the
wmtsim library. A page imports each service from the module that defines it.

Every public service function takes hashable arguments (scenario name or TOML text,
policy, n, seed, parameter overrides as ``((name, value), ...)`` tuples) and is cached with
`st.cache_data`, so a rerun of a page never recomputes what it has already shown. Pages
and chart components only render what these functions return.

Simulations run with ``threads=1`` (`services_runs.THREADS`): Streamlit runs each
session's script on its own thread, and numba's thread count is set per call by
`wmtsim.engine.simulation.simulate` (its global threading layer is never touched here).

Parts of the library that may be missing (scenarios, the paper comparison, sweeps) raise
`services_runs.Unavailable`, whose message the pages show as "not available: <reason>".

Door: `wmtsim.interfaces.dashboard.app` (the Streamlit entry; `dashboards/app.py` at the
repository's top level links to it).
CLI: `wmtsim dashboard`.
"""
