"""The attack search's resumable store (`wmtsim.studies.attack.search.search`): one JSON line
per finished trial, appended and fsynced in batches, every record checked when it is read
back (a tampered log exits 2 naming the file and the line; docs/faults.md)."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import optuna


class TrialLog:
    """The search's resumable store: one JSON line per finished trial (study name, number,
    coordinates, harm, attributes) appended to ``path``, written and fsynced in batches
    (every `BATCH` trials and when the search stops, however it stops), so a killed
    search loses at most a batch. A search with the same settings (the study name says
    so) starts from the trials logged; a line cut short by a kill is ignored.

    Why not Optuna's RDB storage: measured on the 2-core machine, SQLite through
    SQLAlchemy costs 0.2 to 1.5 s per trial (a commit per parameter; fsync), as much as
    the simulation of the trial itself; this log costs one fsync per batch.
    """

    BATCH = 10
    MAX_LINE_BYTES = 1 << 20  # a trial's line is about 1 KB
    MAX_BYTES = 1 << 30

    def __init__(self, path: Path, study: str) -> None:
        self.path, self.study = Path(path), study
        self.pending: list[str] = []
        self.lines: list[int] = []  # the log's line of each trial `load` returned

    def load(self) -> list[dict[str, Any]]:
        """The logged trials of this study, in order, numbered 0, 1, ... without a gap
        (`lines` says where each is). Every complete record is checked
        (`check_row`): a tampered one is a `TrialLogError` naming the file and the line;
        a line that is not JSON is one a kill cut short, skipped."""
        from wmtsim.core.input_files import open_regular

        out: list[dict[str, Any]] = []
        self.lines = []
        if not (self.path.exists() or self.path.is_symlink()):
            return out
        allowed = "the trial log `wmtsim attack` wrote here, or --restart"
        try:
            with open_regular(self.path, inside=True) as f:
                if os.fstat(f.fileno()).st_size > self.MAX_BYTES:
                    raise TrialLogError(f"{self.path}: larger than {self.MAX_BYTES:,} "
                                        f"bytes; allowed: {allowed}")
                for number, raw in enumerate(
                        iter(lambda: f.readline(self.MAX_LINE_BYTES + 1), b""), start=1):
                    if len(raw) > self.MAX_LINE_BYTES:
                        raise TrialLogError(f"{self.path}: line {number}: longer than "
                                            f"{self.MAX_LINE_BYTES:,} bytes; allowed: "
                                            f"{allowed}")
                    row, problem = _parse_row(raw)
                    if row is None and problem is None:
                        continue  # blank, or a line cut short by a kill
                    problem = problem or check_row(row)
                    if problem is not None:
                        raise TrialLogError(f"{self.path}: line {number}: {problem}; "
                                            f"allowed: {allowed}")
                    if row["study"] == self.study and row["number"] == len(out):
                        out.append(row)
                        self.lines.append(number)
        except OSError as e:
            raise TrialLogError(f"{self.path}: cannot read the trial log: "
                                f"{e.strerror or e}; allowed: {allowed}") from None
        return out

    @staticmethod
    def row(study: str, number: int, trial: optuna.trial.FrozenTrial) -> dict[str, Any]:
        """One trial's log line, as a dict."""
        return {"study": study, "number": number, "params": trial.params,
                "value": trial.value, "user_attrs": trial.user_attrs}

    def append(self, number: int, trial: optuna.trial.FrozenTrial) -> None:
        self.append_row(self.row(self.study, number, trial))

    def append_row(self, row: dict[str, Any]) -> None:
        """Log a trial's line (`row`), fsynced with its batch."""
        self.pending.append(json.dumps(row, sort_keys=True))
        if len(self.pending) >= self.BATCH:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a+b") as f:
            # After a line cut short by a kill, start a new line: appended to the cut
            # line, the batch would be unreadable and every later trial skipped.
            cut = False
            if f.seek(0, os.SEEK_END) > 0:
                f.seek(-1, os.SEEK_END)
                cut = f.read(1) != b"\n"
            f.write((("\n" if cut else "") + "\n".join(self.pending) + "\n").encode())
            f.flush()
            os.fsync(f.fileno())
        self.pending = []


class TrialLogError(ValueError):
    """A trial log that cannot be used; the message names the file and the line."""


def _parse_row(raw: bytes) -> tuple[Any, str | None]:
    """A line's JSON value; (None, None) for a blank line or one cut short (not JSON). A
    line nested too deeply is no cut: refused."""
    if not raw.strip():
        return None, None
    try:
        return json.loads(raw), None
    except RecursionError:
        return None, "nested too deeply"
    except ValueError:
        return None, None


_ROW_KEYS = {"study", "number", "params", "value", "user_attrs"}


def check_row(row: Any) -> str | None:
    """What is wrong with a trial log record (None: nothing): its keys, their types, a
    finite harm, flat coordinates and attributes."""
    def scalar(v: Any) -> bool:
        return v is None or isinstance(v, str | bool) or (
            isinstance(v, int | float) and math.isfinite(v))

    if not isinstance(row, dict) or set(row) != _ROW_KEYS:
        keys = sorted(row)[:8] if isinstance(row, dict) else type(row).__name__
        return f"the keys {keys}; allowed: exactly {sorted(_ROW_KEYS)}"
    if not isinstance(row["study"], str):
        return "study: allowed: a string"
    if isinstance(row["number"], bool) or not isinstance(row["number"], int) or \
            row["number"] < 0:
        return f"number {str(row['number'])[:40]}: allowed: an integer >= 0"
    value = row["value"]
    if isinstance(value, bool) or not isinstance(value, int | float) or \
            not math.isfinite(value):
        return f"value {str(value)[:40]}: allowed: a finite number (the trial's harm)"
    for key in ("params", "user_attrs"):
        if not isinstance(row[key], dict) or not all(
                isinstance(k, str) and scalar(v) for k, v in row[key].items()):
            return f"{key}: allowed: an object of strings, booleans and finite numbers"
    return None


def _logged_trial(row: dict[str, Any], dists: dict[str, Any], log: Path | None,
                  line: int | None) -> Any:
    """A logged trial as Optuna's, or a `TrialLogError` naming the line when its
    coordinates are not points of this search (a tampered log)."""
    import optuna

    try:
        return optuna.trial.create_trial(params=row["params"], distributions=dists,
                                         value=row["value"], user_attrs=row["user_attrs"])
    except (ValueError, TypeError) as e:
        where = f"{log}: line {line}" if log is not None else "a logged trial"
        raise TrialLogError(f"{where}: params: not a point of this search "
                            f"({str(e)[:120]}); allowed: the trial log `wmtsim attack` "
                            "wrote, or --restart") from None


class LogLocked(ValueError):
    """Another `wmtsim attack` holds the search log's folder (exit 2)."""


@contextlib.contextmanager
def log_lock(folder: Path) -> Iterator[None]:
    """Hold an exclusive lock on the search log's folder (created if new) for the block,
    as `wmtsim.studies.tune.journal.study_lock` does on tune's journal: the folder moves
    with the result at each swap, so a second `attack` on the same --out meets the lock
    and is refused at once (two at once once left a manifest naming ``search`` with no
    ``search/``, or one log with every trial number twice)."""
    created = [p for p in (folder.parent, folder) if not p.exists()]
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise
            raise LogLocked(f"{folder}: another `wmtsim attack` is running this search now "
                            "(it holds the search log's lock); allowed: wait for it to "
                            "finish, or another --out folder") from None
        yield
    except BaseException:
        for p in reversed(created):  # a refused run leaves no empty folder of ours
            with contextlib.suppress(OSError):
                p.rmdir()
        raise
    finally:
        os.close(fd)  # releases the lock
