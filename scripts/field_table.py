"""Every policy (WMT's configurations and the field's) on a scenario: each metric's mean
with a 95% bootstrap interval, and the paired difference against ``wmt`` on the same
trajectories (common random numbers). Prints a Markdown table (docs/policies.md).

    python scripts/field_table.py paper_poisoning gaia_like --n 300
    python scripts/field_table.py paper_poisoning --metrics asr,br,tsr   # README's table
"""

from __future__ import annotations

import argparse

from wmtsim.core.policies import POLICIES
from wmtsim.engine.simulation import METRIC_NAMES, mean_ci, paired_difference
from wmtsim.studies.report import run_policies
from wmtsim.studies.scenario import load_scenario

SHOWN = [m for m in METRIC_NAMES if m not in ("steps", "llm_calls")] + ["llm_calls"]


def table(name: str, n: int, seed: int | None, shown: list[str] = SHOWN) -> str:
    sc = load_scenario(name)
    res = run_policies(sc, tuple(POLICIES), n=n, seed=seed)
    ref = res["wmt"]
    lines = [f"### {name} (n = {n}, seed = {ref.seed}; Δ = policy − wmt, paired)", "",
             "| policy | " + " | ".join(shown) + " |",
             "|---|" + "---|" * len(shown)]
    for p, r in res.items():
        cells = []
        for m in shown:
            x = r.trajectories[m].to_numpy().astype(float)
            s = mean_ci(x, n_resamples=1000, seed=0)
            cell = f"{s['mean']:.3g} [{s['low']:.3g}, {s['high']:.3g}]"
            if p != "wmt":
                d = paired_difference(r, ref, m, n_resamples=1000)
                cell += f"<br>Δ {d['mean']:+.3g} [{d['low']:+.3g}, {d['high']:+.3g}]"
            cells.append(cell)
        lines.append(f"| {p} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("scenarios", nargs="+")
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--metrics", default=",".join(SHOWN),
                    help="comma-separated metrics (default: all)")
    a = ap.parse_args()
    shown = [m.strip() for m in a.metrics.split(",")]
    unknown = sorted(set(shown) - set(METRIC_NAMES))
    if unknown:
        ap.error(f"unknown metric(s) {', '.join(unknown)}; allowed: {', '.join(METRIC_NAMES)}")
    for name in a.scenarios:
        print(table(name, a.n, a.seed, shown))


if __name__ == "__main__":
    main()
