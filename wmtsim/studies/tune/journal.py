"""The tune study's journal (``optuna.journal``): read record by record, cut lines
dropped, one writer at a time (docs/faults.md).

The journal is Optuna's append-only log of JSON lines, one fsynced append per generation.
wmtsim's tune writes three operations only: create the study (op 0), set its fingerprint
(op 2) and add a finished trial (op 4, with its parameters, objective values and
attributes). `read_journal` checks every line against that before Optuna reads a byte
of it, so a tampered line is an exit-2 `JournalError` naming the file, the line and the
key, never a traceback inside Optuna (which once met ``{"op_code": 4}`` with a
KeyError). A last line without its line break is the append a kill or a full disk cut
short: it is dropped (`drop_cut`) before the next append, which Optuna would otherwise
glue onto it ("Expecting ':' delimiter", then every later run refused the file).

`study_lock` holds an exclusive lock on the journal for a whole run: a second `tune` on
the same folder is refused at once instead of interleaving its trials with the first's.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from wmtsim.core.input_files import open_regular

STORAGE = "optuna.journal"
STUDY = "wmtsim-tune"
MAX_LINE_BYTES = 1 << 20  # a trial line is about 1 KB; a longer one is not ours
MAX_JOURNAL_BYTES = 1 << 30  # 100,000 trials (the --trials bound) need about 100 MB
MAX_DEPTH = 4  # our records nest three deep (a trial's distributions are JSON strings)
CREATE_STUDY, SET_STUDY_USER_ATTR, CREATE_TRIAL = 0, 2, 4
COMPLETE, FAIL = 1, 3  # optuna.trial.TrialState (2 is PRUNED, which tune never writes)
DIRECTIONS = (1, 2)  # optuna.study.StudyDirection MINIMIZE, MAXIMIZE


class JournalError(ValueError):
    """A journal that cannot be used; the message names the file, the line and the key."""


@dataclass
class Journal:
    """What a valid journal holds: the study's directions and fingerprint, its finished
    trials (Optuna's op-4 records, in order) and where a cut last line starts (or None)."""

    directions: list[int] | None = None
    fingerprint: str | None = None
    trials: list[dict[str, Any]] = field(default_factory=list)
    cut_at: int | None = None
    lines: dict[str, int] = field(default_factory=dict)  # a trial's record -> its line


def _depth(x: Any, limit: int) -> int:
    if limit < 0:
        return 0
    if isinstance(x, dict):
        return 1 + max((_depth(v, limit - 1) for v in x.values()), default=0)
    if isinstance(x, list):
        return 1 + max((_depth(v, limit - 1) for v in x), default=0)
    return 0


def _number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _finite(x: Any) -> bool:
    return _number(x) and math.isfinite(x)


def _check_time(text: Any) -> bool:
    if text is None:
        return True
    try:
        datetime.fromisoformat(text)
    except (TypeError, ValueError):
        return False
    return True


def _check_values(op: dict[str, Any], objectives: int) -> str | None:
    """What is wrong with a finished trial's ``value`` and ``values`` (None: nothing).

    Exactly what Optuna's journal writes (`JournalStorage.create_new_trial` with a
    template trial): a single-objective trial's number in ``value`` with ``values`` null,
    a multi-objective trial's numbers in ``values`` with ``value`` null, and a failed
    trial (no values) both null. An earlier check demanded ``values`` always and refused
    every single-objective journal tune itself had written."""
    value, values = op.get("value"), op.get("values")
    if op["state"] == FAIL:
        if value is not None or values is not None:
            return (f"value {str(value)[:40]}, values {str(values)[:80]}; allowed: null and "
                    "null (a failed trial has no values)")
        return None
    if objectives == 1:
        if not _finite(value) or values is not None:
            return (f"value {str(value)[:40]}, values {str(values)[:80]}; allowed: a finite "
                    "number and null (a single-objective trial, as Optuna writes it)")
        return None
    if value is not None or not isinstance(values, list) or \
            not all(_finite(v) for v in values) or len(values) != objectives:
        return (f"value {str(value)[:40]}, values {str(values)[:80]}; allowed: null and "
                f"one finite number per objective ({objectives})")
    return None


def _check_trial(op: dict[str, Any], directions: list[int] | None) -> str | None:
    """What is wrong with a finished trial's record (None: nothing)."""
    from optuna.distributions import json_to_distribution

    if op.get("state") not in (COMPLETE, FAIL) or isinstance(op.get("state"), bool):
        return (f"state {str(op.get('state'))[:40]!r}; allowed: {COMPLETE} (a finished trial) "
                f"or {FAIL} (one whose objective was undefined)")
    problem = _check_values(op, len(directions or []))
    if problem is not None:
        return problem
    dists, params = op.get("distributions"), op.get("params")
    if not isinstance(dists, dict) or not isinstance(params, dict) or \
            set(dists) != set(params):
        return "distributions and params: allowed: two objects with the same knobs"
    for key, text in dists.items():
        try:
            dist = json_to_distribution(text)
            ok = _finite(params[key]) and dist._contains(params[key])
        except Exception:  # Optuna's parser raises ValueError, KeyError, TypeError...
            return f"distributions[{key!r}]: not an Optuna distribution"
        if not ok:
            return f"params[{key!r}] {params[key]!r}: not a value of its distribution"
    for name in ("user_attrs", "system_attrs", "intermediate_values"):
        if not isinstance(op.get(name), dict):
            return f"{name}: allowed: an object"
    for key, v in op["user_attrs"].items():
        if not (_number(v) and not math.isinf(v)):  # NaN: a mean with no defined value
            return f"user_attrs[{key!r}] {v!r}: allowed: a number (NaN when undefined)"
    for key, v in op["system_attrs"].items():
        if not (_finite(v) or isinstance(v, str) or
                (isinstance(v, list) and all(_finite(x) for x in v))):
            return f"system_attrs[{key!r}]: allowed: a number, a string or numbers"
    if op["intermediate_values"]:
        return "intermediate_values: allowed: {} (tune reports none)"
    if not (_check_time(op.get("datetime_start")) and
            _check_time(op.get("datetime_complete"))):
        return "datetime_start/datetime_complete: allowed: ISO times or null"
    return None


def _apply(op: Any, journal: Journal, number: int) -> str | None:
    """Add the record of line ``number`` to ``journal``; what is wrong with it, or None."""
    if not isinstance(op, dict):
        return "not a JSON object"
    code = op.get("op_code")
    if isinstance(code, bool) or code not in (CREATE_STUDY, SET_STUDY_USER_ATTR, CREATE_TRIAL):
        return (f"op_code {repr(code)[:40]}; allowed: 0 (create the study), 2 (its "
                "fingerprint), 4 (a finished trial): the operations wmtsim's tune writes")
    if not isinstance(op.get("worker_id"), str):
        return "worker_id: allowed: a string"
    if _depth(op, MAX_DEPTH + 1) > MAX_DEPTH:
        return f"nested deeper than {MAX_DEPTH}"
    if code == CREATE_STUDY:
        directions = op.get("directions")
        if op.get("study_name") != STUDY:
            return (f"study_name {str(op.get('study_name'))[:80]!r}; allowed: {STUDY!r} "
                    "(a journal of another Optuna study)")
        if not isinstance(directions, list) or not directions or \
                any(isinstance(d, bool) or d not in DIRECTIONS for d in directions):
            return "directions: allowed: a list of 1 (minimise) and 2 (maximise)"
        if journal.directions is None:  # an earlier wmtsim wrote it again at each resume
            journal.directions = directions
        return None
    if journal.directions is None:
        return "a record before the study is created (op_code 0)"
    if op.get("study_id") != 0 or isinstance(op.get("study_id"), bool):
        return f"study_id {str(op.get('study_id'))[:40]!r}; allowed: 0 (the one study)"
    if code == SET_STUDY_USER_ATTR:
        attr = op.get("user_attr")
        if not isinstance(attr, dict) or set(attr) != {"fingerprint"} or \
                not isinstance(attr["fingerprint"], str):
            return "user_attr: allowed: {\"fingerprint\": \"...\"}"
        journal.fingerprint = attr["fingerprint"]
        return None
    problem = _check_trial(op, journal.directions)
    if problem is not None:
        return problem
    # Two finished trials never have the same record (their start and end times differ
    # at least); the same line twice is a copy, which Optuna would count as one more trial.
    key = json.dumps(op, sort_keys=True)
    if key in journal.lines:
        return (f"the same trial as line {journal.lines[key]} (a copied line); allowed: "
                "each finished trial once")
    journal.lines[key] = number
    journal.trials.append(op)
    return None


def read_journal(path: Path) -> Journal:
    """The journal at ``path`` checked line by line (module docstring); an empty
    `Journal` when there is none. Raises `JournalError` naming the file and the line."""
    journal = Journal()
    if not (path.exists() or path.is_symlink()):
        return journal
    allowed = (f"the {path.name} an earlier `wmtsim tune` wrote here, or another --out "
               "folder")
    try:
        with open_regular(path, inside=True) as f:
            size = os.fstat(f.fileno()).st_size
            if size > MAX_JOURNAL_BYTES:
                raise JournalError(f"{path}: cannot use the tuning study: the file is "
                                   f"{size:,} bytes, more than {MAX_JOURNAL_BYTES:,}; "
                                   f"allowed: {allowed}")
            offset = 0
            for number, raw in enumerate(iter(lambda: f.readline(MAX_LINE_BYTES + 1), b""),
                                         start=1):
                if not raw.endswith(b"\n") and len(raw) <= MAX_LINE_BYTES:
                    journal.cut_at = offset  # the last line, cut short: dropped
                    break
                op, problem = _parse(raw)
                if problem is None:
                    problem = _apply(op, journal, number)
                if problem is not None:
                    raise JournalError(f"{path}: line {number}: {problem}; cannot use the "
                                       f"tuning study; allowed: {allowed}")
                offset += len(raw)
    except OSError as e:
        raise JournalError(f"{path}: cannot read the tuning study: {e.strerror or e}; "
                           f"allowed: {allowed}") from None
    return journal


def _parse(raw: bytes) -> tuple[Any, str | None]:
    """The JSON record of a line, or what makes it not one."""
    if len(raw) > MAX_LINE_BYTES:
        return None, f"longer than {MAX_LINE_BYTES:,} bytes"
    if not raw.strip():  # Optuna writes none; Optuna's reader stops at one
        return None, "a blank line; allowed: one JSON record per line"
    try:
        return json.loads(raw), None
    except RecursionError:
        return None, "nested too deeply"
    except ValueError as e:
        return None, f"not a JSON record ({str(e)[:80]})"


def drop_cut(path: Path, journal: Journal) -> None:
    """Cut the journal back to its last complete line (the caller holds `study_lock`)."""
    if journal.cut_at is None:
        return
    with open(path, "r+b") as f:
        f.truncate(journal.cut_at)
        os.fsync(f.fileno())
    journal.cut_at = None


_HELD: dict[Path, int] = {}  # journal -> this process's locked descriptor


@contextlib.contextmanager
def study_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on the journal (created empty if new) for the block;
    `JournalError` at once when another process holds it. Re-entrant in one process (a
    second lock on another descriptor of the same file would wait on ourselves)."""
    path = Path(os.path.abspath(path))
    if path in _HELD:
        yield
        return
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as e:
        raise JournalError(f"{path}: cannot use the tuning study: {e.strerror or e}; "
                           "allowed: a regular file in a writable folder") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        os.close(fd)
        if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise
        raise JournalError(f"{path}: another `wmtsim tune` is running this study now (it "
                           "holds the journal's lock); allowed: wait for it to finish, or "
                           "another --out folder") from None
    _HELD[path] = fd
    try:
        yield
    finally:
        del _HELD[path]
        os.close(fd)  # releases the lock


class HeldLock:
    """Optuna's journal backend takes a lock around each append; `study_lock` already
    holds one for the whole run, so this one does nothing (a second flock on another
    descriptor of the file would wait forever on our own)."""

    def acquire(self) -> bool:
        return True

    def release(self) -> None:
        return None
