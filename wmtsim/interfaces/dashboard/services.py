"""The dashboard's service layer: the only modules that call the wmtsim library.

This module gathers the per-page services under one name (pages use ``services.X``):
`services_runs` (shared, and the Compare page), `services_dynamics`, `services_trace`,
`services_sweep`, `services_why`, `services_attack` and `services_population`.

Every public function takes hashable arguments (scenario name or TOML text, policy, n,
seed, parameter overrides as ``((name, value), ...)`` tuples) and is cached with
`st.cache_data`, so a rerun of a page never recomputes what it has already shown. Pages
and chart components only render what these functions return.

Simulations run with ``threads=1``: Streamlit runs each session's script on its own
thread, and numba's thread count is set per call by `wmtsim.engine.simulation.simulate` (its global
threading layer is never touched here).

Parts of the library that may be missing (scenarios, the paper comparison, sweeps) raise
`Unavailable`, whose message the pages show as "not available: <reason>".
"""

from __future__ import annotations

from wmtsim.interfaces.dashboard.services_attack import (  # noqa: F401 (the Attack page)
    AttackView,
    attack_budget_chart,
    attack_effects,
    attack_mtime,
    attack_transfer_chart,
    attack_view,
    find_attacks,
)
from wmtsim.interfaces.dashboard.services_dynamics import (  # noqa: F401 (the old module's names)
    DETAIL_LIMIT,
    MEMORY_KINDS,
    WINDOW,
    WINDOW_MEMORIES,
    StepWindow,
    TrajectoryView,
    _view,
    memory_count,
    n_steps,
    running_rates,
    score_bands,
    step_window,
    trajectory_view,
    tree_layout,
)
from wmtsim.interfaces.dashboard.services_population import (  # noqa: F401 (the page)
    SEARCH_LIMIT,
    fate_chart,
    population_tables,
    steps_chart,
    trajectory_showing,
)
from wmtsim.interfaces.dashboard.services_runs import (  # noqa: F401 (the old module's names)
    _TABLE4,
    REPO,
    RESULTS_ENV,
    TABLE4_CONFIGS,
    THREADS,
    ParamItems,
    Unavailable,
    _load,
    _root,
    _scenario_module,
    _setup,
    _table4,
    compare,
    count_metrics,
    default_params,
    metric_info,
    paper_benign,
    paper_values,
    policy_labels,
    results_dir,
    run_summary,
    scenario_catalog,
    scenario_info,
    short_path,
)
from wmtsim.interfaces.dashboard.services_sweep import (  # noqa: F401 (the old module's names)
    HEATMAP_BINS,
    SweepView,
    _analysis,
    _sweep_point,
    find_sweeps,
    flatness,
    flatness_text,
    grid_means,
    is_continuous,
    load_sweep_folder,
    pareto,
    point_trajectories,
    sensitivity,
    sensitivity_chart,
    sweep_mtime,
    sweep_trajectory,
)
from wmtsim.interfaces.dashboard.services_trace import (  # noqa: F401 (the old module's names)
    TraceView,
    _expect_lines,
    _is_expect,
    demo_trace_bytes,
    replay_trace,
    trace_tree,
)
from wmtsim.interfaces.dashboard.services_why import (  # noqa: F401 (the old module's names)
    CLAIMS_COLUMNS,
    AttributionView,
    ClaimsView,
    attribution,
    claims_chart,
    claims_family,
    claims_mtime,
    claims_summary,
    claims_view,
    find_claims,
    waterfall_chart,
    wmt_configurations,
)
