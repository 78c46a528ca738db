"""What `wmtsim analyze` prints: the design, whether the metric is flat across it, the
Pareto front, the most robust setting and the most influential parameter, read back from
the tables `wmtsim.studies.sweeps.analysis.analyze` wrote. Nothing is named "best" on a metric
that does not differ significantly across the grid (`wmtsim.studies.sweeps.flatness.flatness`:
the paired test on common random numbers).
"""

from __future__ import annotations

from pathlib import Path

from wmtsim.core.formatting import interval, num, plural


def _setting(row: dict[str, object], parameters: list[str]) -> str:
    """A sweep setting as ``policy, p=v, ...``."""
    values = [f"{p}={v:.3g}" if isinstance(v := row[p], float) else f"{p}={v}"
              for p in parameters]
    return ", ".join([str(row["policy"]), *values])


def analysis_summary(sweep_dir: Path, written: dict[str, Path | list[Path]], metric: str
                      ) -> list[str]:
    """What `wmtsim analyze` found: the design, the Pareto front, the most robust setting
    and the most influential parameter, read back from the tables it wrote."""
    import polars as pl

    from wmtsim.core.input_files import read_table
    from wmtsim.studies.sweeps.store import load_results

    def table(name: str) -> pl.DataFrame | None:  # the tables analyze itself just wrote
        path = written.get(name)
        return None if not isinstance(path, Path) else read_table(
            path.with_suffix(".parquet"), path.parent)

    res = load_results(sweep_dir)
    params = list(res.parameters)
    means = table("point_means")
    n = 0 if means is None else means.height
    policies = [] if means is None or not n else means["policy"].unique(
        maintain_order=True).to_list()
    lines = [f"{sweep_dir}: {res.kind} design over {plural(len(params), 'parameter')} "
             f"({', '.join(params) or 'none'}); {plural(n, 'point')} computed, "
             f"{plural(len(policies), 'configuration')} ({', '.join(policies)})"]
    flat = table("flatness")
    tests = [] if flat is None else list(flat.iter_rows(named=True))
    flat_for = {r["policy"]: r for r in tests if r["metric"] == metric}
    tsr_flat = {r["policy"]: r for r in tests if r["metric"] == "tsr"}
    from wmtsim.studies.sweeps.flatness import flatness_text

    design = res.design
    for f in tests:
        at = design.filter(pl.col("row") == f["best_row"])
        where = None if f["flat"] or not at.height else ", ".join(
            _setting(at.row(0, named=True), params).split(", ")[1:]) or None
        lines.append("  " + flatness_text(f, where))
    front = table("pareto")
    if front is not None and front.height:
        best = front.sort("tsr", descending=True).row(0, named=True)
        distinct = f"{plural(front.height, 'distinct point')}"
        shared = int(front["settings"].sum()) if "settings" in front.columns else front.height
        lines.append(f"  Pareto front (tsr up, prompt tokens down, every configuration): "
                     f"{distinct} ({plural(shared, 'setting')})"
                     + ("" if tsr_flat.get(best["policy"], {}).get("flat", False) else
                        f"; highest tsr {interval(best['tsr'], best['tsr_low'], best['tsr_high'])}"
                        f" at {num(best['prompt_tokens'])} prompt tokens "
                        f"({_setting(best, params)})"))
    robust = table("robust")
    if robust is not None and robust.height:
        top = robust.row(0, named=True)
        if flat_for.get(top["policy"], {}).get("flat", False):
            lines.append(f"  most robust setting: none named ({metric} does not differ "
                         "significantly across the grid)")
        else:
            lines.append(f"  most robust setting (best worst case of {metric} over "
                         f"{plural(int(top['cases']), 'case')}): {_setting(top, params)}: "
                         f"worst {num(top['worst'])}, mean {num(top['mean'])}")
    sobol = table("sobol")
    if sobol is not None and sobol.height:
        ranked = (sobol.group_by("policy", "parameter", maintain_order=True)
                  .agg(pl.col("ST", "ST_low", "ST_high").mean())
                  .sort("ST", descending=True, nulls_last=True))
        for policy in policies:
            rows = ranked.filter(pl.col("policy") == policy)
            if rows.height:
                r = rows.row(0, named=True)
                how = (sobol.filter(pl.col("policy") == policy)["method"][0]
                       if "method" in sobol.columns else "")
                if r["ST"] is None or how.startswith("flat"):  # no index, and why
                    lines.append(f"  Sobol ({metric}, {policy}): {how}")
                    continue
                lines.append(f"  Sobol ({metric}, {policy}): largest total index "
                             f"{r['parameter']} ST = "
                             f"{interval(r['ST'], r['ST_low'], r['ST_high'])}"
                             + (f" ({how})" if how else ""))
    return lines
