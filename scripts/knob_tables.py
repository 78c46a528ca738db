"""The knob tables of docs/model.md and docs/world.md, written from the dataclasses.

    python scripts/knob_tables.py            # rewrite the generated blocks in place
    python scripts/knob_tables.py --check    # exit 1 if a block is not what the code says

Every knob is declared once, with its default, range and doc (`wmtsim.core.knobs.knob`);
these tables are that declaration rendered, so a new knob or a changed default shows up
in the docs by rerunning this script (tests/test_docs_links.py checks the blocks are
current). Blocks: ``params`` (docs/model.md), ``world``, ``poison``, ``stubs``
(docs/world.md).
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from dataclasses import MISSING, fields
from pathlib import Path

from wmtsim.core.knobs import Knob
from wmtsim.core.params import Params
from wmtsim.core.stubs import Stubs
from wmtsim.core.validation import MAX_INT
from wmtsim.core.world_spec import PoisonSpec, WorldSpec

ROOT = Path(__file__).resolve().parents[1]
BLOCKS = {  # (file, block name) -> (dataclass, the section a scenario writes it in)
    ("docs/model.md", "params"): (Params, "[params]"),
    ("docs/world.md", "world"): (WorldSpec, "[world]"),
    ("docs/world.md", "poison"): (PoisonSpec, "[[poison]]"),
    ("docs/world.md", "stubs"): (Stubs, "[stubs]"),
}


def _bound(x: float) -> str:
    if x == MAX_INT:
        return "2^53"
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e15:
        x = int(x)
    return f"{x:,}" if isinstance(x, int) else f"{x:g}"


def allowed(spec: Knob) -> str:
    """The knob's range in words, as its error message states it."""
    if spec.allowed:
        return spec.allowed
    if spec.kind == "bool":
        return "true or false"
    if spec.kind == "choice":
        return " \\| ".join(f"`{c}`" for c in spec.choices)
    lo = "(" if spec.lo_open else "["
    hi = ")" if spec.hi_open else "]"
    lo_text = "−∞" if not math.isfinite(spec.lo) else _bound(spec.lo)
    hi_text = "∞" if not math.isfinite(spec.hi) else _bound(spec.hi)
    what = {"int": "integer", "int_range": "(min, max), integers", "real": "real"}[spec.kind]
    return f"{what} in {lo}{lo_text}, {hi_text}{hi}"


def _default(value: object) -> str:
    if value is MISSING:
        return "required"
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    if isinstance(value, tuple):
        return f"`[{value[0]}, {value[1]}]`"
    if isinstance(value, str):
        return f"`\"{value}\"`"
    return f"`{value}`"


def table(cls: type, section: str) -> str:
    """One row per knob of ``cls``: name, default, allowed values, meaning."""
    lines = [f"| `{section}` key | default | allowed | meaning |", "|---|---|---|---|"]
    for f in fields(cls):
        spec = f.metadata.get("knob")
        if not isinstance(spec, Knob):
            continue
        doc = " ".join(spec.doc.split()).replace("|", "\\|")
        lines.append(f"| `{f.name}` | {_default(f.default)} | {allowed(spec)} | {doc} |")
    return "\n".join(lines) + "\n"


def render(text: str, name: str, body: str) -> str:
    """``text`` with the ``generated:name`` block replaced by ``body``."""
    pattern = re.compile(rf"(<!-- generated:{re.escape(name)} -->\n).*?(<!-- /generated:"
                         rf"{re.escape(name)} -->)", re.S)
    if not pattern.search(text):
        raise SystemExit(f"no <!-- generated:{name} --> block")
    return pattern.sub(lambda m: m.group(1) + body + m.group(2), text)


def rendered(root: Path = ROOT) -> dict[str, str]:
    """Each page's text with its knob blocks as the code declares them."""
    pages: dict[str, str] = {}
    for (page, name), (cls, section) in BLOCKS.items():
        text = pages.get(page) or (root / page).read_text(encoding="utf-8")
        pages[page] = render(text, name, table(cls, section))
    return pages


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python scripts/knob_tables.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="only check the blocks are current")
    args = ap.parse_args(argv)
    stale = []
    for page, text in rendered().items():
        path = ROOT / page
        if path.read_text(encoding="utf-8") != text:
            stale.append(page)
            if not args.check:
                path.write_text(text, encoding="utf-8")
    if args.check and stale:
        print(f"stale knob tables in {', '.join(stale)}: run python scripts/knob_tables.py")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
