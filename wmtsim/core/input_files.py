"""The one door in: how every command opens a file it reads (docs/faults.md).

`open_regular` opens without blocking and refuses anything but a regular file: a FIFO
(opening one for reading waits for a writer, so ``wmtsim check FIFO`` hung), a device
(``/dev/zero`` never ends) or a socket. ``inside`` names the result folder a file of a
result (a tune journal, an attack's trial log) must stay in: a symbolic link there is
refused, since following it would read, and later append to, a file outside the result.
The refusal is an `OSError` whose ``strerror`` says what the file is and what is allowed,
so every caller's existing "cannot read PATH: REASON" message names it.

``root`` goes further, for a file a command finds inside a result by name (a sweep's
Parquet chunks and ``design.parquet``): the path must lie under ``root`` and no folder
between ``root`` and the file may be a link either (each is opened relative to the one
before, without following links, so nothing can be swapped in between). ``limit`` refuses
a file larger than that many bytes from its size alone, before a byte is read: a sparse
2 GiB file is refused at once instead of filling memory. A Parquet file is read by
handing the opened file object to polars, never its path (the path could be a FIFO or a
link again by the time polars opened it).
"""

from __future__ import annotations

import errno
import os
import stat
from typing import Any, BinaryIO


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a regular file"


_LINK = ("is a symbolic link; allowed: the result's own regular file (links out of a "
         "result refused: a link could lead anywhere)")


def _too_large(limit: int) -> str:
    return f"is larger than {limit:,} bytes; allowed: a file of at most {limit:,} bytes"


def _open_under(root: str | os.PathLike[str], path: str | os.PathLike[str],
                flags: int) -> int:
    """A descriptor of ``path`` opened folder by folder from ``root`` without following a
    link anywhere below ``root`` (``root`` itself may be one: ``--out`` through a link is
    followed, docs/faults.md)."""
    base = os.path.abspath(root)
    full = os.path.abspath(path)
    if os.path.commonpath([base, full]) != base or full == base:
        raise OSError(errno.EINVAL, f"is not a file inside {base}; allowed: a file of the "
                      "result (links out of a result refused)", str(path))
    parts = os.path.relpath(full, base).split(os.sep)
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for k, part in enumerate(parts[:-1]):
            try:
                inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
                                | os.O_CLOEXEC, dir_fd=fd)
            except OSError as e:
                # O_NOFOLLOW with O_DIRECTORY says ENOTDIR for a link: tell it apart
                if os.path.islink(os.path.join(base, *parts[:k + 1])):
                    raise OSError(errno.ELOOP, f"is under {part}/, which {_LINK}",
                                  str(path)) from None
                raise OSError(e.errno, e.strerror, str(path)) from None
            os.close(fd)
            fd = inner
        try:
            return os.open(parts[-1], flags | os.O_NOFOLLOW, dir_fd=fd)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise OSError(errno.ELOOP, _LINK, str(path)) from None
            raise OSError(e.errno, e.strerror, str(path)) from None
    finally:
        os.close(fd)


def open_regular(path: str | os.PathLike[str], inside: bool = False,
                 limit: int | None = None,
                 root: str | os.PathLike[str] | None = None) -> BinaryIO:
    """``path`` opened for binary reading, or an `OSError` when it is not a regular file
    (or, with ``inside``, when it is a symbolic link: a file of a result must be the
    result's own; with ``root``, when it or a folder on its way from ``root`` is a link,
    or it lies outside ``root``; with ``limit``, when it is larger than ``limit`` bytes)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (os.O_NOFOLLOW if inside else 0)
    if root is not None:
        fd = _open_under(root, path, flags)
    else:
        try:
            fd = os.open(path, flags)
        except OSError as e:
            if inside and e.errno == errno.ELOOP:
                raise OSError(errno.ELOOP, _LINK, str(path)) from None
            raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, f"is {_kind(info.st_mode)}, not a regular file; "
                          "allowed: a regular file", str(path))
        if limit is not None and info.st_size > limit:
            raise OSError(errno.EFBIG, _too_large(limit), str(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


MAX_READ_BYTES = 64 << 20
"""The most `read_regular` reads (manifests and indexes are kilobytes)."""


def read_regular(path: str | os.PathLike[str], inside: bool = False,
                 limit: int = MAX_READ_BYTES,
                 root: str | os.PathLike[str] | None = None) -> bytes:
    """The bytes of the regular file ``path`` (`open_regular`); an `OSError` when it is
    larger than ``limit`` (told by its size before reading, and by the bytes read when it
    grows while being read)."""
    with open_regular(path, inside, limit, root) as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise OSError(errno.EFBIG, _too_large(limit), str(path))
    return data


MAX_TABLE_BYTES = 1 << 30
"""The largest Parquet file of a result `read_table` reads (a sweep's chunk is megabytes;
polars reads a file object whole, so this bounds the memory one read can take)."""


def read_table(path: str | os.PathLike[str], root: str | os.PathLike[str],
               columns: list[str] | None = None, limit: int = MAX_TABLE_BYTES) -> Any:
    """The Parquet file ``path`` of the result ``root`` as a polars DataFrame (``columns``
    only), read through `open_regular` (regular, no link below ``root``, at most
    ``limit`` bytes): the opened file, never the path, is handed to polars."""
    import polars as pl

    with open_regular(path, limit=limit, root=root) as f:
        return pl.read_parquet(f, columns=columns)


def check_regular(path: str | os.PathLike[str], inside: bool = False) -> None:
    """Refuse ``path`` as `open_regular` would, without reading it."""
    open_regular(path, inside).close()

