"""The one atomic writer: a file appears complete under its name, or not at all.

Every file wmtsim writes (reports, sweep chunks and manifests, trace replays, claims,
attribution tables) goes to a temporary sibling (``.NAME.PID.THREAD.tmp``), is fsynced,
renamed over the target with `os.replace` and the folder is fsynced, so a reader or a
killed process never sees a half-written file (docs/faults.md). `atomic_write` takes a
function that writes the temporary path; `temp_path` and `commit` serve a writer that
streams into an open file (`wmtsim.engine.trace`'s batch writer). Folders written as one
unit are `wmtsim.studies.outdir`'s.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any


def fsync_path(path: Path) -> None:
    """fsync a file or a folder (so a rename inside it is durable)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def temp_path(path: Path) -> Path:
    """The temporary sibling of ``path``, unique per process and thread."""
    return path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")


def commit(tmp: Path, path: Path) -> Path:
    """fsync the complete ``tmp``, rename it over ``path`` and fsync the folder."""
    fsync_path(tmp)
    os.replace(tmp, path)
    fsync_path(path.parent)
    return path


def atomic_write(path: Path, write: Callable[[Path], object]) -> Path:
    """Write ``path`` via ``write(tmp)`` and `commit`: all or nothing; returns ``path``.

    The temporary file is removed if ``write`` (or the rename) fails."""
    path = Path(path)
    tmp = temp_path(path)
    try:
        write(tmp)
        return commit(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def atomic_write_bytes(path: Path, data: bytes) -> Path:
    """`atomic_write` of ``data``."""
    return atomic_write(path, lambda tmp: tmp.write_bytes(data))


def atomic_write_text(path: Path, text: str) -> Path:
    """`atomic_write` of ``text`` as UTF-8."""
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def atomic_write_parquet(frame: Any, path: Path, **options: Any) -> Path:
    """`atomic_write` of a polars frame as Parquet (``options``: `write_parquet`'s)."""
    return atomic_write(path, lambda tmp: frame.write_parquet(tmp, **options))
