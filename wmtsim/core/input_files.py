"""The one door in: how every command opens a file it reads (docs/faults.md).

`open_regular` opens without blocking and refuses anything but a regular file: a FIFO
(opening one for reading waits for a writer, so ``wmtsim check FIFO`` hung), a device
(``/dev/zero`` never ends) or a socket. ``inside`` names the result folder a file of a
result (a tune journal, an attack's trial log) must stay in: a symbolic link there is
refused, since following it would read, and later append to, a file outside the result.
The refusal is an `OSError` whose ``strerror`` says what the file is and what is allowed,
so every caller's existing "cannot read PATH: REASON" message names it.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import BinaryIO


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


def open_regular(path: str | os.PathLike[str], inside: bool = False) -> BinaryIO:
    """``path`` opened for binary reading, or an `OSError` when it is not a regular file
    (or, with ``inside``, when it is a symbolic link: a file of a result must be the
    result's own)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (os.O_NOFOLLOW if inside else 0)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        if inside and e.errno == errno.ELOOP:
            raise OSError(errno.ELOOP, "is a symbolic link; allowed: the result's own "
                          "regular file (a link could lead out of the result)",
                          str(path)) from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, f"is {_kind(mode)}, not a regular file; allowed: "
                          "a regular file", str(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


MAX_READ_BYTES = 64 << 20
"""The most `read_regular` reads (manifests and indexes are kilobytes)."""


def read_regular(path: str | os.PathLike[str], inside: bool = False,
                 limit: int = MAX_READ_BYTES) -> bytes:
    """The bytes of the regular file ``path`` (`open_regular`); an `OSError` when it is
    larger than ``limit``."""
    with open_regular(path, inside) as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"is larger than {limit:,} bytes; allowed: a file of at "
                      f"most {limit:,} bytes", str(path))
    return data


def check_regular(path: str | os.PathLike[str], inside: bool = False) -> None:
    """Refuse ``path`` as `open_regular` would, without reading it."""
    open_regular(path, inside).close()

