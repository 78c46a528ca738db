"""Replicate seeds for the shipped findings: ``python -m why_study.replicates`` (part of
``make study``, the ``why_study`` generator of scripts/docs.py).

The findings of docs/findings.md rest on one seed (0). Here every attribution of
`why_study.run.ATTRIBUTIONS` is rerun on seeds 0..S−1 (other trajectories, the same n) and
every claims map of `why_study.run.CLAIMS_MAPS` on sweep seeds 0..S−1, and the block
``replicates`` of docs/findings.md reports what changes between them:

* per attribution, how many (metric, mechanism) contributions are significant (Holm over
  the table, two-sided 5%) on every seed, on none, and which vary (with their values per
  seed);
* per claims map and claim, the number of cells with each verdict on each seed, and how
  many cells change verdict between seeds.

Seed 0 is the seed of the findings themselves, so the first column is what they report.
"""

from __future__ import annotations

import argparse
import shutil
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl

from why_study.run import ATTRIBUTIONS, CLAIMS_MAPS, FINDINGS, REPO, replace_block
from wmtsim.core.inference import ALPHA, VERDICTS

SHORT = {"holds (significant)": "holds", "holds (not significant)": "holds n.s.",
         "tie": "tie", "fails (significant)": "fails"}


def _fmt(x: float) -> str:
    return f"{x:+,.0f}" if abs(x) >= 100 else f"{x:+.3g}"


def attribution_replicates(seeds: list[int], n: int) -> tuple[str, float]:
    """The attribution half of the block, and its seconds."""
    from wmtsim.studies.attribution.attribution import attribute
    from wmtsim.studies.scenarios.scenario import load_scenario

    t0 = time.perf_counter()
    lines = []
    for scenario, p, q, metrics in ATTRIBUTIONS:
        tables = [attribute(load_scenario(scenario), p, q, metrics=metrics, n=n, seed=s).table
                  for s in seeds]
        key = ("metric", "mechanism")
        rows: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for t in tables:
            for r in t.iter_rows(named=True):
                rows.setdefault((r["metric"], r["mechanism"]), []).append(r)
        always = [k for k, rs in rows.items() if all(r["p_holm"] <= ALPHA for r in rs)]
        never = [k for k, rs in rows.items() if all(r["p_holm"] > ALPHA for r in rs)]
        vary = [k for k in rows if k not in always and k not in never]
        flips = [k for k, rs in rows.items() if k in always
                 and len({r["contribution"] > 0 for r in rs}) > 1]
        lines.append(f"**{scenario}: {p} → {q}** ({len(rows)} (metric, mechanism) "
                     f"contributions, n = {n} per seed): significant on every seed "
                     f"{len(always)}, on none {len(never)}, on some {len(vary)}"
                     + (f"; sign changes {len(flips)}" if flips else "") + ".")
        if vary:
            lines += ["", f"| {' | '.join(key)} | " + " | ".join(f"seed {s}" for s in seeds)
                      + " |", "|---|---|" + "---|" * len(seeds)]
            for k in vary:
                cells = [_fmt(r["contribution"]) + (" *" if r["p_holm"] <= ALPHA else "")
                         for r in rows[k]]
                lines.append(f"| {k[0]} | {k[1]} | " + " | ".join(cells) + " |")
        lines.append("")
    lines.append("\\* significant (Holm over the attribution's table, two-sided 5%).")
    return "\n".join(lines), time.perf_counter() - t0


def claims_replicates(seeds: list[int], workers: int) -> tuple[str, float]:
    """The claims-map half of the block, and its seconds."""
    from wmtsim.studies.compare.claims import claims_map, table4_claims
    from wmtsim.studies.sweeps.sweep import load_sweep

    t0 = time.perf_counter()
    lines = []
    for name in CLAIMS_MAPS:
        sweep = load_sweep(REPO / "why_study" / f"{name}.toml")
        tables = []
        for s in seeds:
            out = REPO / "results" / "studies" / f"{name}_seed{s}"
            shutil.rmtree(out, ignore_errors=True)
            cm = claims_map(replace(sweep, seed=s), out, table4_claims(), workers=workers)
            tables.append(cm.table.select("claim", "row", "status")
                          .rename({"status": f"s{s}"}))
        joined = tables[0]
        for t in tables[1:]:
            joined = joined.join(t, on=["claim", "row"], how="inner")
        cols = [f"s{s}" for s in seeds]
        lines += [f"**{name}** ({joined['row'].n_unique()} cells, n = "
                  f"{sweep.trajectories} per cell; cells per verdict, "
                  + ", ".join(f"seed {s}" for s in seeds) + " separated by /):", "",
                  "| claim | " + " | ".join(SHORT[v] for v in VERDICTS)
                  + " | cells that change verdict |", "|---|" + "---|" * (len(VERDICTS) + 1)]
        for claim in joined["claim"].unique(maintain_order=True).to_list():
            t = joined.filter(pl.col("claim") == claim)
            counts = [" / ".join(str(int((t[c] == v).sum())) for c in cols) for v in VERDICTS]
            changed = t.filter(pl.concat_list(cols).list.n_unique() > 1).height
            lines.append(f"| {claim} | " + " | ".join(counts) + f" | {changed} |")
        lines.append("")
    return "\n".join(lines), time.perf_counter() - t0


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m why_study.replicates", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=5, help="seeds 0..S-1 (default 5)")
    ap.add_argument("--n", type=int, default=2000, help="trajectories per attribution")
    ap.add_argument("--workers", type=int, default=1, help="sweep worker processes")
    args = ap.parse_args(argv)
    seeds = list(range(args.seeds))
    att, t_att = attribution_replicates(seeds, args.n)
    cla, t_cla = claims_replicates(seeds, args.workers)
    body = (f"Generated by `python -m why_study.replicates --seeds {args.seeds} --n {args.n}` "
            f"(attributions {t_att:.0f} s, claims maps {t_cla:.0f} s). Seed 0 is the "
            f"findings' own.\n\n{att}\n\n{cla}")
    text = replace_block(FINDINGS.read_text(encoding="utf-8"), "replicates", body)
    FINDINGS.write_text(text, encoding="utf-8")
    print(f"wrote the replicates block of {Path(FINDINGS).relative_to(REPO)}")


if __name__ == "__main__":
    main()
