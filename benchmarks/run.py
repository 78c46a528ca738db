"""Run the benchmarks, print a table, write JSON: ``python -m benchmarks.run``.

Options: ``--quick`` (tiny sizes, no cold compile: a smoke test, written to
``benchmarks/results/quick.json``), ``--no-cold`` (full sizes, but the start-up section
skips its two cold compiles, minutes on a loaded machine), ``--only NAME`` (repeatable
or comma-separated; the other sections already in the output file are kept), ``--out
PATH``, ``--list``, ``--markdown`` (print the table of an existing results file as Markdown).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from .cases import SECTIONS, sizes
from .machine import REPO, machine_info

RESULTS = REPO / "benchmarks" / "results"
STATUS_STYLE = {"met": "green", "missed": "bold red", "error": "bold red"}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help="tiny sizes and no cold compile (a smoke test, seconds not minutes)")
    ap.add_argument("--no-cold", action="store_true",
                    help="skip the start-up section's cold compiles (fresh numba caches)")
    ap.add_argument("--only", action="append", default=[], metavar="NAME",
                    help=f"run only these sections: {', '.join(SECTIONS)}")
    ap.add_argument("--out", type=Path, default=None,
                    help="JSON output (default: benchmarks/results/latest.json, "
                         "quick.json with --quick)")
    ap.add_argument("--list", action="store_true", help="list the sections and exit")
    ap.add_argument("--markdown", action="store_true",
                    help="print the results already in --out as a Markdown table; run nothing")
    args = ap.parse_args(argv)
    names = [n.strip() for item in args.only for n in item.split(",") if n.strip()]
    unknown = [n for n in names if n not in SECTIONS]
    if unknown:
        ap.error(f"unknown section(s) {', '.join(unknown)}; allowed: {', '.join(SECTIONS)}")
    args.only = names
    if args.out is None:
        args.out = RESULTS / ("quick.json" if args.quick else "latest.json")
    return args


def run_sections(names: list[str], quick: bool, console: Console, cold: bool = True
                 ) -> dict[str, Any]:
    sz = sizes(quick) if cold else sizes(quick, cold_start=False)
    results: dict[str, Any] = {}
    for name in names:
        console.print(f"[dim]running {name} ...[/dim]")
        t0 = time.perf_counter()
        try:
            data = SECTIONS[name](sz)
        except Exception as e:  # one broken section must not lose the others
            data = {"error": f"{type(e).__name__}: {e}",
                    "traceback": traceback.format_exc(),
                    "rows": [[name, f"error: {type(e).__name__}: {e}", "", "error"]]}
        data["quick"] = quick
        data["measured_at"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        data["wall_seconds"] = round(time.perf_counter() - t0, 2)
        results[name] = data
    return results


def table(doc: dict[str, Any]) -> Table:
    m = doc["machine"]
    t = Table(title=f"wmtsim benchmarks — {m['cpu']}, {m['cores_usable']} cores, "
                    f"Python {m['python']}, numba {m['numba']}, {m['date']}",
              title_justify="left")
    for col in ("section", "measurement", "value", "goal", "status"):
        t.add_column(col, justify="right" if col == "value" else "left")
    for name, data in doc["sections"].items():
        for k, (measurement, value, goal, status) in enumerate(data.get("rows", [])):
            t.add_row(name if k == 0 else "", measurement, value, goal, status,
                      style=STATUS_STYLE.get(status))
        t.add_section()
    return t


def machine_line(m: dict[str, Any]) -> str:
    load = ", ".join(f"{x:g}" for x in m.get("load_average_at_start", []))
    return (f"{m['cpu']}, {m['cores_usable']} usable cores (numba threads: "
            f"{m['numba_threads']}), {m['platform']}, Python {m['python']}, numba "
            f"{m['numba']}, numpy {m['numpy']}, wmtsim {m['wmtsim']} at {m['git_commit']}"
            f"{' (dirty)' if m.get('git_dirty') else ''}; {m['date']}; load average at "
            f"start {load}")


def markdown(doc: dict[str, Any]) -> str:
    """The same table as Markdown (for docs/benchmarks.md)."""
    lines = ["| section | measurement | value | goal | status |", "|---|---|--:|---|---|"]
    for name, data in doc["sections"].items():
        for k, (measurement, value, goal, status) in enumerate(data.get("rows", [])):
            cells = [name if k == 0 else "", measurement, value, goal, status]
            lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    console = Console(width=max(Console().width, 140))
    if args.list:
        for name, fn in SECTIONS.items():
            console.print(f"{name}: {((fn.__doc__ or '').strip().splitlines() or [''])[0]}",
                          markup=False)
        return 0
    if args.markdown:
        saved = json.loads(args.out.read_text())
        print(machine_line(saved["machine"]) + "\n\n" + markdown(saved))
        return 0
    names = args.only or list(SECTIONS)
    doc: dict[str, Any] = {"machine": machine_info(), "quick": args.quick, "sections": {}}
    if args.only and args.out.exists():  # keep the sections not rerun
        try:
            doc["sections"] = json.loads(args.out.read_text()).get("sections", {})
        except (OSError, ValueError):
            pass
    doc["sections"].update(run_sections(names, args.quick, console, cold=not args.no_cold))
    doc["sections"] = {k: doc["sections"][k] for k in SECTIONS if k in doc["sections"]}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=2, default=float) + "\n")
    tmp.replace(args.out)
    console.print(table(doc))
    console.print(f"wrote {args.out}", markup=False, highlight=False)
    errors = [k for k, v in doc["sections"].items() if "error" in v]
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
