"""What every ``wmtsim`` command shares: the Typer app, the two consoles, the error
exit (`_fail`) and the table printer that fits the terminal (`_print_table`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text
from typer.core import TyperGroup

# Options shared by the commands that run on the sweep machinery (sweep, claims).
WorkersOpt = Annotated[int, typer.Option(
    "--workers", "-w", min=1, help="Local worker processes (1 = in-process).")]
SchedulerOpt = Annotated[str | None, typer.Option(
    "--scheduler", help="A dask.distributed scheduler address (needs the cluster extra: "
         "pip install 'wmtsim\\[cluster]').",
    show_default=False)]
ProgressOpt = Annotated[bool, typer.Option(help="Show a progress bar.")]
# `run --precision` and `compare --precision` (wmtsim.studies.compare.precision.grow_n).
PrecisionOpt = Annotated[float | None, typer.Option(
    "--precision", min=0.0, help="Grow n (from --n or the scenario's) until every headline "
                                 "interval (pooled ASR, BR, TSR) has at most this 95% "
                                 "half-width, up to --n-max.",
    show_default=False)]
# `claims --precision` (wmtsim.studies.compare.precision.claims_to_precision).
ClaimsPrecisionOpt = Annotated[float | None, typer.Option(
    "--precision", min=0.0, help="Grow n (from --n or the sweep file's) until the "
                                 "margin interval of every claim on a rate (ASR, PRR, "
                                 "BR, TSR, in every cell; claims on AF or other counts "
                                 "are not bounded) has at most this 95% half-width, up "
                                 "to --n-max.",
    show_default=False)]


def shipped_scenario_names() -> list[str]:
    """The names of the scenarios shipped in the package (``wmtsim/data/scenarios``), for
    the help: the folder `wmtsim.studies.scenarios.scenario.shipped_scenarios` reads, listed
    without its imports (``--help`` loads no numpy)."""
    folder = Path(__file__).resolve().parents[2] / "data" / "scenarios"
    return sorted(p.stem for p in folder.glob("*.toml"))


PRECISION_RANGE = (1e-6, 1.0)
"""What --precision accepts: a half-width of a rate or of a difference of rates. Below
1e-6 a run needs more than 10^12 trajectories (beyond any --n-max), and 1e-300 once
overflowed the growth rule; inf and NaN would be written into manifests as invalid JSON."""


def precision_problem(precision: float | None) -> str | None:
    """Why ``--precision`` cannot be used (None: it can)."""
    import math

    lo, hi = PRECISION_RANGE
    if precision is None or (math.isfinite(precision) and lo <= precision <= hi):
        return None
    return (f"--precision {precision!r}: must be > 0 and finite; allowed: a half-width "
            f"from {lo:g} to {hi:g}")


NMaxOpt = Annotated[int, typer.Option("--n-max", min=1, max=10_000_000,
                                      help="Largest n --precision may reach.")]


class _Commands(TyperGroup):
    """The app's command group: an error of numba's on-disk cache (a full disk, a corrupt
    kernel file: `wmtsim.numba_cache.CacheError`), met by any command when a kernel loads
    or compiles, exits 2 with its message (naming the file), not a traceback."""

    def invoke(self, ctx: Any) -> Any:
        from wmtsim.numba_cache import CacheError

        try:
            return super().invoke(ctx)
        except CacheError as e:
            raise _fail(str(e)) from None


app = typer.Typer(
    cls=_Commands,
    name="wmtsim",
    help=(
        "Simulate the Weighted Memory Tree (WMT) memory system for LLM agents "
        "(arXiv 2608.20631).\n\n"
        "[bold]Examples[/bold]\n\n"
        "  [cyan]wmtsim demo[/cyan]  replay the paper's worked example (Appendix A.4)\n\n"
        "  [cyan]wmtsim replay trace.jsonl --out steps.parquet[/cyan]  replay a trace\n\n"
        "  [cyan]wmtsim check trace.jsonl[/cyan]  verify a trace's expect lines\n\n"
        "  [cyan]wmtsim run paper_poisoning --n 500[/cyan]  simulate a scenario\n\n"
        "  [cyan]wmtsim compare scenarios/paper_poisoning.toml[/cyan]  Table 4 beside "
        "the paper\n\n"
        "  [cyan]wmtsim dynamics paper_poisoning --policy wmt --policy a2_no_controller"
        "[/cyan]  what becomes of each injected poison\n\n"
        "  [cyan]wmtsim attack paper_poisoning --budget 1,2[/cyan]  the most harmful "
        "attack at k injections per task\n\n"
        "  [cyan]wmtsim calibrate paper_poisoning --target paper-table4[/cyan]  fit knobs\n\n"
        "  [cyan]wmtsim sweep sweeps/rho_m_grid.toml --out results/rho_m[/cyan]  a sweep "
        "(resumable)\n\n"
        "  [cyan]wmtsim analyze results/rho_m[/cyan]  intervals, Sobol, Pareto, charts\n\n"
        "  [cyan]wmtsim screen decay_pressure[/cyan]  which knobs matter (Morris)\n\n"
        "  [cyan]wmtsim tune decay_pressure late_poison --trials 48[/cyan]  a Pareto set, "
        "validated on held-out seeds\n\n"
        "  [cyan]wmtsim attribute paper_poisoning --from linear --to wmt[/cyan]  which "
        "mechanism buys the difference\n\n"
        "  [cyan]wmtsim claims paper_poisoning --vary 'poison[*].p_supersede=0:1' --vary "
        "stubs.poison_boost=-0.2:0.3[/cyan]  where the claims hold\n\n"
        "  [cyan]wmtsim dashboard --port 8501[/cyan]  the Streamlit dashboard\n\n"
        "  [cyan]wmtsim warmup[/cyan]  compile the numba kernels ahead of first use"
    ),
    rich_markup_mode="rich",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# The help's type column, plainly: nothing after a flag (it takes no value; Typer prints
# "<bool>"), a word for the value of an option ("INTEGER", "TEXT", "PATH", "NUMBER", with
# "..." when repeatable) and its range in words ("1 to 10,000,000", "≥ 1").
_TYPE_WORDS = {"int": "INTEGER", "str": "TEXT", "path": "PATH", "float": "NUMBER"}


def _option_type(self: Any, ctx: Any) -> str | None:
    if getattr(self, "is_flag", False):
        return None
    original = (_typer_display_type if isinstance(self, typer.core.TyperOption)
                else _typer_argument_type)
    text = str(original(self, ctx) or "").strip("<>.")
    many = text.startswith("list[")
    text = text.removeprefix("list[").removesuffix("]").replace(" range", "")
    word = _TYPE_WORDS.get(text, text.upper())
    return word + (" ..." if many else "")


def _bound(x: float) -> str:
    for k in (53, 62, 63):
        if x in (2**k, 2**k - 1):
            return f"2^{k}" + (" − 1" if x == 2**k - 1 else "")
    return f"{x:,}" if isinstance(x, int) else f"{x:g}"


def _option_range(self: Any) -> str | None:
    lo, hi = getattr(self, "min", None), getattr(self, "max", None)
    if lo is not None and hi is not None:
        return f"{_bound(lo)} to {_bound(hi)}"
    if lo is not None:
        return f"≥ {_bound(lo)}"
    if hi is not None:
        return f"≤ {_bound(hi)}"
    return None


_typer_display_type = typer.core.TyperOption.display_type_rich
_typer_argument_type = typer.core.TyperArgument.display_type_rich
typer.core.TyperOption.display_type_rich = _option_type  # type: ignore[method-assign]
typer.core.TyperArgument.display_type_rich = _option_type  # type: ignore[method-assign]
typer.core.TyperOption._get_number_range_help_str = _option_range  # type: ignore[method-assign]


def _fold_long_words() -> None:
    """Make the help's texts fold a word wider than their column (a path, a
    ``--vary`` example) onto the next line instead of cutting it with "…" (rich's
    default in a table cell): at 80 columns every help text stays whole. Patched when
    help is shown, so that commands do not import typer's rich helpers (~0.3 s)."""
    from typer import rich_utils

    make = rich_utils._make_rich_text
    if getattr(make, "folds", False):
        return

    def folding(**kwargs: Any) -> Any:
        text = make(**kwargs)
        if isinstance(text, Text):
            text.overflow = "fold"
        return text

    folding.folds = True  # type: ignore[attr-defined]
    rich_utils._make_rich_text = folding


def _folding_help(format_help: Callable[..., None]) -> Callable[..., None]:
    def format_with_folds(self: Any, ctx: Any, formatter: Any) -> None:
        _fold_long_words()
        format_help(self, ctx, formatter)

    return format_with_folds


typer.core.TyperCommand.format_help = _folding_help(  # type: ignore[method-assign]
    typer.core.TyperCommand.format_help)
typer.core.TyperGroup.format_help = _folding_help(  # type: ignore[method-assign]
    typer.core.TyperGroup.format_help)


def unwrap_help(app: typer.Typer) -> None:
    """Join the hard-wrapped lines of every command's docstring into paragraphs, so the
    help reflows to the terminal instead of leaving orphan words at the docstring's
    line breaks; indented lines (the examples) and blank-line paragraphs stay as they
    are. Called once, after every command is registered."""
    import inspect

    def reflow(doc: str) -> str:
        paragraphs = []
        for block in inspect.cleandoc(doc).split("\n\n"):
            lines = block.splitlines()
            if any(line.startswith((" ", "*", "-", "|")) for line in lines):
                paragraphs.append(block)
            else:
                paragraphs.append(" ".join(line.strip() for line in lines))
        return "\n\n".join(paragraphs)

    apps = [app, *(group.typer_instance for group in app.registered_groups
                   if group.typer_instance is not None)]
    for each in apps:
        for command in each.registered_commands:
            if command.help:
                command.help = reflow(command.help)
            elif command.callback is not None and command.callback.__doc__:
                command.help = reflow(command.callback.__doc__)


RIGHT_OF_LABEL = 41  # right of a bar's label, bar aside: "9,999/9,999 elapsed … left …"


def bar_columns(width: int | None = None) -> list[Any]:
    """A progress bar's columns: what it does, the bar, done/total, then the time elapsed
    and, once a rate is measured, the time left, each labelled ("elapsed 0:00:08 left
    0:00:21"; rich's own columns print two bare times), on one line of ``width`` columns
    (default: the terminal's)."""
    from datetime import timedelta

    from rich import progress as rp
    from rich.table import Column

    class Left(rp.ProgressColumn):
        def render(self, task: rp.Task) -> Text:
            left = task.time_remaining
            if task.total is None or left is None or task.finished:
                return Text("")
            return Text(f"left {timedelta(seconds=round(left))}", style="progress.remaining")

    # One line at any width: the label gives way (cut with "…"), never the rest.
    width = err_console.width if width is None else width
    bar = min(max(width - RIGHT_OF_LABEL - 41, 12), 40)  # a label of 40 before a wide bar
    label = Column(no_wrap=True, overflow="ellipsis",
                   max_width=max(width - RIGHT_OF_LABEL - bar - 1, 10))
    return [rp.TextColumn("{task.description}", table_column=label),
            rp.BarColumn(bar_width=bar), rp.MofNCompleteColumn(), rp.TextColumn("elapsed"),
            rp.TimeElapsedColumn(), Left()]


out_console = Console(soft_wrap=True)
err_console = Console(stderr=True, soft_wrap=True)


def _fail(message: str, code: int = 2) -> typer.Exit:
    err_console.print(f"error: {message}", markup=False, highlight=False)
    return typer.Exit(code)


def _terminal_width() -> int | None:
    """The terminal's width (``COLUMNS`` when set), or None when stdout is not a terminal
    (a pipe or a file gets whole tables)."""
    import os
    import shutil
    import sys

    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return None


def _widths(table: Table) -> tuple[int, int]:
    """The narrowest width ``table`` wraps to without breaking a word, and its width
    without wrapping."""
    from rich.measure import Measurement

    m = Measurement.get(out_console, out_console.options.update_width(1000), table)
    return m.minimum, m.maximum


# The columns every part of a split table repeats: the reference configuration, the
# result the comparison exists to show (beside the row labels).
PINNED = ("Full WMT",)


def _header(table: Table, k: int) -> str:
    return str(table.columns[k].header).replace("\n", " ")


def _groups(table: Table) -> list[list[int]]:
    """The columns in groups that stay together: a ``paper`` column belongs to the
    configuration before it, so a value is never split from the paper's."""
    groups: list[list[int]] = []
    for k in range(len(table.columns)):
        if groups and k > 0 and _header(table, k) == "paper" and len(groups) > 1:
            groups[-1].append(k)
        else:
            groups.append([k])
    return groups


def _subset(table: Table, keep: list[int], title: str | Text | None, last: bool) -> Table:
    import copy

    part = copy.deepcopy(table)
    part.columns = [part.columns[k] for k in keep]
    part.title = title
    if not last:
        part.caption = None
    return part


def _parts(table: Table, width: int, pinned: tuple[str, ...] = PINNED) -> list[Table]:
    """``table`` split by columns into parts that each fit ``width`` (wrapped), every part
    keeping the row labels and the pinned configuration's columns: nothing is dropped."""
    groups = _groups(table)
    fixed = [groups[0]] + [g for g in groups[1:] if any(p in _header(table, g[0])
                                                         for p in pinned)]
    rest = [g for g in groups if g not in fixed]
    chunks: list[list[list[int]]] = []
    for group in rest:
        trial = (chunks[-1] if chunks else []) + [group]
        cols = sorted(k for g in fixed + trial for k in g)
        if chunks and _widths(_subset(table, cols, None, True))[0] <= width:
            chunks[-1] = trial
        else:
            chunks.append([group])
    if not chunks:
        chunks = [[]]
    n = len(table.columns)
    out = []
    for i, chunk in enumerate(chunks):
        cols = sorted(k for g in fixed + chunk for k in g)
        shown = ", ".join(_header(table, k) for g in chunk for k in g[:1])
        title: str | Text | None = table.title if i == 0 else None
        if len(chunks) > 1:
            note = f"part {i + 1} of {len(chunks)}: {shown or 'the pinned columns'}"
            title = f"{title}\n({note})" if title else f"({note})"
        out.append(_subset(table, cols, title, i == len(chunks) - 1))
    assert sorted({k for t in chunks for g in t for k in g} | {k for g in fixed for k in g}
                  ) == list(range(n))
    return out


def _held(table: Table) -> Table:
    """A copy of ``table`` whose columns with a ``min_width`` (an interval that must not
    break) are held at it, so that narrowing wraps the other columns (the row labels, a
    note): rich narrows a table by shrinking its widest columns first and only then
    finds their minimum, and the table overflows the terminal."""
    import copy

    held = copy.deepcopy(table)
    for column in held.columns:
        if column.min_width is not None:
            column.width = column.min_width
    return held


def _print_table(table: Table, full: str | None = None,
                 pinned: tuple[str, ...] = PINNED) -> None:
    """Print a table that fits the terminal: whole when it fits (or stdout is not a
    terminal), else with its cells wrapped, and, if even that is too wide, split by
    columns into parts that each repeat the row labels and the ``pinned`` configuration
    (Full WMT): no column is ever left out. ``full`` names the file with the whole table."""
    natural = _widths(table)[1]
    width = _terminal_width()
    if width is None or natural <= width:
        Console(width=min(natural, 1000)).print(table)
        return
    if _widths(table)[0] <= width:
        Console(width=width).print(_held(table))
        return
    parts = _parts(table, width, pinned)
    for part in parts:
        Console(width=width).print(_held(part))
    if full and len(parts) > 1:
        Console(width=width, soft_wrap=False).print(
            f"(split in {len(parts)} parts to fit {width} columns; the whole table is in "
            f"{full})", markup=False, highlight=False)




# --- writing results: every command goes through wmtsim.core.output ---------------------------


def _out_folder(out: Path | None, name: str, command: str, keep: tuple[str, ...] = (),
                kept: Callable[[Path], bool] | None = None) -> Path:
    """``--out``, or ``results/<safe name>/<command>``; checked before any work (a
    symbolic link followed; ``keep``, ``kept``: `check_out_folder`'s)."""
    from wmtsim.core.output import OutputError, check_out_folder, default_folder

    folder = out if out is not None else default_folder(name, command)
    try:
        return check_out_folder(folder, command, keep=keep, kept=kept)
    except OutputError as e:
        raise _fail(str(e)) from None


CsvOpt = Annotated[bool, typer.Option(
    "--csv", help="Also write every table as CSV (beside its .parquet), e.g. the step "
                  "records of --record-steps as steps.csv.")]


def csv_copies(folder: Path) -> list[Path]:
    """A ``.csv`` beside every ``.parquet`` table in ``folder``: the same rows and
    columns; list and struct cells as JSON text (CSV has no nested values)."""
    import json

    import polars as pl

    written = []
    for table in sorted(folder.glob("*.parquet")):
        frame = pl.read_parquet(table)
        nested = [c for c, t in frame.schema.items()
                  if isinstance(t, pl.List | pl.Array | pl.Struct)]
        frame = frame.with_columns(
            pl.Series(c, [None if v is None else json.dumps(v) for v in frame[c].to_list()],
                      dtype=pl.String) for c in nested)
        out = table.with_suffix(".csv")
        frame.write_csv(out)
        written.append(out)
    return written


@contextmanager
def _writing(folder: Path, command: str, keep: tuple[str, ...] = (),
             csv: bool = False) -> Iterator[Path]:
    """`wmtsim.core.output.result_folder`, with a failed write (a full disk, from any
    library) as exit 2 naming the folder; nothing is left half-written. With ``csv``,
    every Parquet table the command wrote gets a CSV copy (`csv_copies`) inside the same
    atomic folder."""
    from wmtsim.core.output import OutputError, result_folder

    try:
        with result_folder(folder, command, keep=keep) as work:
            yield work
            if csv:
                csv_copies(work)  # a failed write is the folder's, as for any file
    except OutputError as e:
        raise _fail(str(e)) from None


def _is_replay_file(path: Path) -> bool:
    """A replay an older wmtsim wrote before one-file results had a sidecar manifest (its
    columns are the replay's): replaced by ``replay --out`` and ``demo --out`` like one
    with a manifest (`wmtsim.core.output.check_out_file`'s ``legacy``)."""
    from wmtsim.core.input_files import MAX_TABLE_BYTES, open_regular
    from wmtsim.engine.trace.trace import REPLAY_COLUMNS

    names = [n for n, _ in REPLAY_COLUMNS]
    try:
        # open_regular for both: a FIFO at --out once hung replay here (pyarrow opened it
        # by its path and waited for a writer); a device or a huge file is not ours either
        with open_regular(path, limit=MAX_TABLE_BYTES) as f:
            if path.suffix.lower() == ".csv":
                return f.readline(4096).rstrip(b"\r\n").decode("utf-8", "replace") == \
                    ",".join(names)
            import pyarrow.parquet as pq

            return list(pq.read_schema(f).names) == names
    except Exception:  # unreadable, not Parquet: not ours
        return False


def _check_out(out: Path | None, command: str) -> Path | None:
    """``--out`` of replay and demo, checked before any work (`check_out_file`): a new
    file, or a replay ``command`` wrote before; a symbolic link is refused."""
    from wmtsim.core.output import OutputError, check_out_file
    from wmtsim.engine.trace.trace import OUTPUT_FORMATS

    if out is None:
        return None
    if out.suffix.lower() not in OUTPUT_FORMATS:
        raise _fail(f"--out {str(out)!r}: unsupported extension {out.suffix or '(none)'!r}; "
                    f"allowed: {', '.join(OUTPUT_FORMATS)}")
    try:
        return check_out_file(out, command, legacy=_is_replay_file)
    except OutputError as e:
        raise _fail(str(e)) from None


def file_manifest(command: str, fields: dict[str, Any]) -> dict[str, Any]:
    """The sidecar manifest of a one-file result of ``command`` (`wmtsim.core.output.commit`
    adds the file's size and sha256): the command line, the version, ``fields`` and the
    provenance keys (no seeds, trajectories or bootstrap: a replay is deterministic)."""
    from wmtsim.core.output import manifest
    from wmtsim.core.provenance import provenance

    return manifest(command, fields, extra=provenance(None, None, None, None, None))
