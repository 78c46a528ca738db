"""Writing a tuning run (`wmtsim tune`): the trials, the Pareto set, its chart, a params
TOML per chosen point and the held-out validation, into a result folder."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from wmtsim.core.leftovers import WORK_MARK
from wmtsim.studies.tune.tune import STORAGE, Tuning, params_toml, setting_of

if TYPE_CHECKING:
    import polars as pl


def write_tuning(tuning: Tuning, picked: pl.DataFrame, validation: pl.DataFrame | None,
                 folder: Path, charts: bool, seed: int, holdout: int) -> list[Path]:
    """Write every table and file of ``tuning`` into ``folder`` with its manifest."""
    from wmtsim.core.inference import ALPHA, resamples_for
    from wmtsim.core.output import (
        atomic_write_parquet,
        atomic_write_text,
        write_manifest,
    )
    from wmtsim.core.provenance import provenance
    from wmtsim.studies.tune.validate import CORRECTION

    fit = tuning.fit
    written: list[Path] = []
    for name, frame in (("trials", tuning.trials), ("pareto", tuning.pareto),
                        ("validation", validation)):
        if frame is not None:
            written.append(atomic_write_parquet(frame, folder / f"{name}.parquet"))
            written.append(atomic_write_text(folder / f"{name}.csv", frame.write_csv()))
    (folder / "points").mkdir()
    for row in picked.iter_rows(named=True):
        header = (f"wmtsim tune: trial {row['trial']} of the Pareto set on "
                  f"{', '.join(s.name for s in fit.scenarios)} ("
                  + ", ".join(f"{o.label} = {row[o.label]:.4g}" for o in fit.objectives)
                  + ")\nPaste into a scenario file, or pass each value with --set.")
        written.append(atomic_write_text(folder / "points" / f"trial-{row['trial']:05d}.toml",
                                         params_toml(setting_of(row, fit), fit, header)))
    if charts and tuning.trials.height:
        from wmtsim.studies.sweeps.analysis import write_chart

        written += write_chart(pareto_chart(tuning), folder / "pareto")
    write_manifest(folder, "tune", {
        "scenarios": [s.name for s in fit.scenarios], "policy": fit.policy,
        "objectives": [o.label for o in fit.objectives],
        "robust": "worst" if fit.robust is None else f"q{fit.robust}",
        "knobs": [r.key for r in fit.ranges], "fit_seeds": list(fit.seeds), "n": fit.n,
        "holdout_seeds": [seed + 10_000 + j for j in range(holdout)],
        "sampler": "optuna NSGAIISampler", "sampler_seed": seed,
        "storage": STORAGE, "trials": tuning.trials.height,
        "resumed_from": tuning.extra.get("resumed_from", 0),
        "equals_uninterrupted": tuning.extra.get("equals_uninterrupted", True),
        # every run that touched the study (docs/design.md: resumable)
        "batch": (tuning.extra.get("runs") or [{}])[-1].get("batch"),
        "runs": tuning.extra.get("runs", []),
        "baseline": tuning.baseline, "fingerprint": fit.fingerprint(),
        # the study's storage is moved in beside these files when the result is swapped in
        "files": sorted([*(p.name for p in folder.iterdir() if p.name != WORK_MARK),
                         STORAGE])},
        extra=provenance({"fit": list(fit.seeds),
                          "held_out": [seed + 10_000 + j for j in range(holdout)],
                          "sampler": seed}, fit.n,
                         resamples_for(ALPHA) if validation is not None else None,
                         ALPHA if validation is not None else None,
                         CORRECTION if validation is not None else None))
    return written


def pareto_chart(tuning: Tuning) -> Any:
    """Every trial on the first two objectives, the Pareto set highlighted and the
    shipped setting marked (one objective: value per trial)."""
    import altair as alt
    import polars as pl

    objs = [o.label for o in tuning.fit.objectives]
    front = set(tuning.pareto["trial"].to_list())
    data = tuning.trials.with_columns(
        pl.col("trial").is_in(sorted(front)).alias("pareto")).to_pandas()
    x, y = (objs[0], objs[1]) if len(objs) > 1 else ("trial", objs[0])
    # field= (not shorthand): the objective labels contain a colon ("tsr:max")
    points = alt.Chart(data).mark_circle(size=50).encode(
        x=alt.X(field=x, type="quantitative", scale=alt.Scale(zero=False)),
        y=alt.Y(field=y, type="quantitative", scale=alt.Scale(zero=False)),
        color=alt.Color("pareto:N", title="Pareto set"),
        tooltip=[alt.Tooltip(field=c, type="quantitative") for c in ("trial", *objs)])
    if x == "trial":
        return points.properties(width=420, height=300)
    base = pl.DataFrame({x: [tuning.baseline[x]], y: [tuning.baseline[y]],
                         "label": ["shipped setting"]}).to_pandas()
    mark = alt.Chart(base).mark_point(shape="cross", size=200, color="black").encode(
        x=alt.X(field=x, type="quantitative"), y=alt.Y(field=y, type="quantitative"),
        tooltip=["label:N"])
    return (points + mark).properties(width=420, height=300,
                                      title="tune: trials, Pareto set, shipped setting (+)")
