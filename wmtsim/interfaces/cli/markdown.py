"""A Markdown report (a command's report.md) printed for the terminal: headings and
paragraphs wrapped, each pipe table a rich table that fits (`_print_table`)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from wmtsim.interfaces.cli.common import _print_table, _terminal_width

INTERVAL = r"[-+−]?[\d.,]+(?:e[-+]?\d+)? \[[^\]]*\]"
"""An interval as `wmtsim.core.formatting.interval` writes it: ``0.163 [0.110, 0.212]``."""


def _print_markdown(text: str, full: str | None = None) -> None:
    """A Markdown report (headings, paragraphs, pipe tables) for the terminal: headings
    and paragraphs wrapped to its width, each table a rich table that fits it
    (`_print_table`: wrapped, or split by columns; an interval never broken across
    lines). ``full`` names the file with the report as Markdown."""
    import re

    width = _terminal_width()
    console = Console(width=width or 1000, soft_wrap=width is None)
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("|"):
            rows = []
            while i < len(lines) and lines[i].startswith("|"):
                if not re.fullmatch(r"[-:| ]+", lines[i]):  # not the rule under the header
                    rows.append([c.strip() for c in lines[i].strip().strip("|").split(" | ")])
                i += 1
            table = Table(title_justify="left")
            for k, header in enumerate(rows[0]):
                # Held whole: an interval, and the row labels (a configuration's name).
                held = [len(m) for r in rows[1:] if k < len(r)
                        for m in (re.findall(INTERVAL, r[k]) if k else r[k].split())]
                table.add_column(header, min_width=max(held) if held else None)
            for r in rows[1:]:
                table.add_row(*r)
            _print_table(table, full=full)
            continue
        if line.startswith("#"):
            console.print(line.lstrip("#").strip(), style="bold", markup=False,
                          highlight=False)
        else:
            console.print(line, markup=False, highlight=False)
        i += 1
