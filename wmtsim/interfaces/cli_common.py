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
from typer.core import TyperGroup

from wmtsim.core.formatting import plural

# Options shared by the commands that run on the sweep machinery (sweep, claims).
WorkersOpt = Annotated[int, typer.Option(
    "--workers", "-w", min=1, help="Local worker processes (1 = in-process).")]
SchedulerOpt = Annotated[str | None, typer.Option(
    "--scheduler", help="A dask.distributed scheduler address (needs the cluster extra: "
         "pip install 'wmtsim\\[cluster]').",
    show_default=False)]
ProgressOpt = Annotated[bool, typer.Option(help="Show a progress bar.")]


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


def _fit(table: Table, width: int) -> tuple[Table, list[str]]:
    """``table`` without the trailing columns that do not fit in ``width`` even wrapped
    (the first two columns always stay), and the names of the columns left out."""
    import copy

    fitted = copy.deepcopy(table)
    dropped: list[str] = []
    while len(fitted.columns) > 2 and _widths(fitted)[0] > width:
        dropped.insert(0, str(fitted.columns.pop().header).replace("\n", " "))
    return fitted, dropped


def _print_table(table: Table, full: str | None = None) -> None:
    """Print a table that fits the terminal: whole when it fits (or stdout is not a
    terminal), else with its cells wrapped, and without its last columns if even that is
    too wide, with a note naming them and ``full``, where the whole table is."""
    natural = _widths(table)[1]
    width = _terminal_width()
    if width is None or natural <= width:
        Console(width=min(natural, 1000)).print(table)
        return
    fitted, dropped = _fit(table, width)
    Console(width=width).print(fitted)
    if dropped:
        where = f"; the full table is in {full}" if full else "; widen the terminal to see them"
        out_console.print(f"({plural(len(dropped), 'column')} left out to fit {width} "
                          f"characters: {', '.join(dropped)}{where})", markup=False,
                          highlight=False)




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


@contextmanager
def _writing(folder: Path, command: str, keep: tuple[str, ...] = ()) -> Iterator[Path]:
    """`wmtsim.core.output.result_folder`, with a failed write (a full disk, from any
    library) as exit 2 naming the folder; nothing is left half-written."""
    from wmtsim.core.output import OutputError, result_folder

    try:
        with result_folder(folder, command, keep=keep) as work:
            yield work
    except OutputError as e:
        raise _fail(str(e)) from None


def _is_replay_file(path: Path) -> bool:
    """A replay written before (its columns are the replay's): the one kind of existing
    file ``replay --out`` and ``demo --out`` replace."""
    from wmtsim.engine.trace import REPLAY_COLUMNS

    names = [n for n, _ in REPLAY_COLUMNS]
    try:
        if path.suffix.lower() == ".csv":
            with open(path, "rb") as f:
                return f.readline(4096).rstrip(b"\r\n").decode("utf-8", "replace") == ",".join(
                    names)
        import pyarrow.parquet as pq

        return list(pq.read_schema(path).names) == names
    except Exception:  # unreadable, not Parquet: not ours
        return False


def _check_out(out: Path | None) -> Path | None:
    """``--out`` of replay and demo, checked before any work (`check_out_file`): a new
    file, or a replay written before; a symbolic link is followed."""
    from wmtsim.core.output import OutputError, check_out_file
    from wmtsim.engine.trace import OUTPUT_FORMATS

    if out is None:
        return None
    if out.suffix.lower() not in OUTPUT_FORMATS:
        raise _fail(f"--out {str(out)!r}: unsupported extension {out.suffix or '(none)'!r}; "
                    f"allowed: {', '.join(OUTPUT_FORMATS)}")
    try:
        return check_out_file(out, ours=_is_replay_file, what="a replay written before")
    except OutputError as e:
        raise _fail(str(e)) from None
