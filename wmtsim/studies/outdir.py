"""Where results go, and writing a result folder as one unit (docs/faults.md).

Output locations come only from ``--out`` or from `default_folder`: ``results/`` plus a
scenario name made into one harmless path component (`safe_component`), so a name such
as ``"../../x"``, an absolute path or a NUL never leads outside ``results/``.

`result_folder` writes a folder as one unit: the command writes into a hidden sibling
(``.NAME.partial-PID``), every file and the folder are fsynced, and the sibling is then
swapped into place with one atomic ``renameat2(RENAME_EXCHANGE)`` (or, where that call is
missing, two renames with a moment in which the folder is absent). Killed at any instant,
``NAME`` is the old complete result, the new complete result, or absent; never a mix of
two runs. A leftover ``.NAME.partial-PID`` of a dead process is deleted by the next write.

`check_out_folder` and `check_out_file` refuse unusable paths before any work is done,
with an `OutputError` naming the option, the path and what is allowed.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import hashlib
import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

from wmtsim.core.atomic import fsync_path

RESULTS = Path("results")
MAX_COMPONENT = 100  # characters of a scenario name kept in a folder name
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_NAME_MAX = 255 - 40  # a path component's bytes, leaving room for ".partial-PID" etc.
RESULT_COMMANDS = ("run", "compare", "analyze", "conformance")  # manifests of result folders


class OutputError(ValueError):
    """An output path that cannot be used; the message names the option and the path."""


def safe_component(name: str) -> str:
    """``name`` as one path component of letters, digits, ``.``, ``_`` and ``-``.

    Anything else becomes ``_``; leading dots are dropped (no ``..``, no hidden folder);
    a name longer than `MAX_COMPONENT` or one that had to change keeps a short hash of
    the original, so two different names do not share a folder by accident.
    """
    text = _UNSAFE.sub("_", name).lstrip(".")[:MAX_COMPONENT] or "scenario"
    if text != name:
        text = f"{text}-{hashlib.sha256(name.encode('utf-8', 'replace')).hexdigest()[:8]}"
    return text


def default_folder(scenario_name: str, command: str) -> Path:
    """``results/<safe scenario name>/<command>``: the default ``--out`` of a command."""
    return RESULTS / safe_component(scenario_name) / command


def _fail(option: str, path: Path | str, problem: str, allowed: str) -> OutputError:
    return OutputError(f"{option} {str(path)!r}: {problem}; allowed: {allowed}")


def _check_path_text(path: Path, option: str, allowed: str) -> None:
    text = str(path)
    if "\x00" in text:
        raise _fail(option, text.replace("\x00", "\\0"), "contains a NUL byte", allowed)
    try:
        parts = [os.fsencode(p) for p in path.parts]
    except UnicodeError:
        raise _fail(option, path, "is not encodable as a file name", allowed) from None
    for part in parts:
        if len(part) > _NAME_MAX:
            raise _fail(option, path, f"a path component is {len(part)} bytes long",
                        f"components of at most {_NAME_MAX} bytes")


def _check_parent(path: Path, option: str, allowed: str) -> None:
    """The nearest existing ancestor of ``path`` is a folder we may write in."""
    parent = path.parent
    while not parent.exists():
        if parent.is_symlink():  # a dangling link
            raise _fail(option, path, f"{str(parent)!r} is a broken symbolic link", allowed)
        parent = parent.parent
    if not parent.is_dir():
        raise _fail(option, path, f"{str(parent)!r} is a file, not a folder", allowed)
    if not os.access(parent, os.W_OK | os.X_OK):
        raise _fail(option, path, f"the folder {str(parent)!r} is not writable", allowed)


def _is_result_folder(path: Path) -> bool:
    """Empty, or holding a manifest written by `wmtsim run`, `compare` or `analyze`."""
    try:
        entries = list(path.iterdir())
    except OSError:
        return False
    if not entries:
        return True
    try:
        manifest = json.loads((path / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(manifest, dict) and manifest.get("command") in RESULT_COMMANDS


def check_out_folder(path: Path, option: str = "--out") -> Path:
    """Refuse an output folder that cannot be written (or replaced) before any work."""
    allowed = ("a new folder, an empty one, or a previous result of wmtsim run, compare "
               "or analyze (it is replaced as a whole)")
    _check_path_text(path, option, allowed)
    absolute = Path(os.path.abspath(path))
    cwd = Path.cwd()
    if path.name in ("", ".", "..") or absolute == cwd or absolute in cwd.parents:
        raise _fail(option, path, "is the working folder, one of its parents or a root",
                    allowed)
    if absolute.exists() or absolute.is_symlink():
        if not absolute.is_dir():
            raise _fail(option, path, "is a file, not a folder", allowed)
        if not _is_result_folder(absolute):
            raise _fail(option, path, "exists and is not a wmtsim result folder (no "
                        "manifest.json of run, compare or analyze)", allowed)
    _check_parent(absolute, option, allowed)
    return absolute


def check_out_file(path: Path, option: str = "--out") -> Path:
    """Refuse an output file that cannot be written before any work."""
    allowed = "a file path in a writable folder"
    _check_path_text(path, option, allowed)
    absolute = Path(os.path.abspath(path))
    if absolute.is_dir():
        raise _fail(option, path, "is a folder, not a file", allowed)
    _check_parent(absolute, option, allowed)
    return absolute


# --- writing a folder as one unit -----------------------------------------------------------


def _fsync_tree(root: Path) -> None:
    for folder, _, files in os.walk(root):
        for name in files:
            fsync_path(Path(folder) / name)
        fsync_path(Path(folder))


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap ``a`` and ``b`` (Linux renameat2); False where unsupported."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    rc = renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
        return False  # the kernel or file system cannot exchange: fall back
    raise OSError(err, os.strerror(err), str(b))


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_stale(final: Path) -> None:
    """Delete ``.NAME.partial-PID`` / ``.NAME.old-PID`` siblings of dead processes."""
    pattern = re.compile(rf"^\.{re.escape(final.name)}\.(partial|old)-(\d+)$")
    with contextlib.suppress(OSError):
        for entry in final.parent.iterdir():
            m = pattern.match(entry.name)
            if m and not _pid_alive(int(m.group(2))):
                shutil.rmtree(entry, ignore_errors=True)


def swap_into_place(new: Path, final: Path) -> None:
    """Make ``new`` (a complete, fsynced folder) be ``final``; remove the old ``final``."""
    if not final.exists():
        os.rename(new, final)
    elif _exchange(new, final):
        shutil.rmtree(new)  # now holds the old result
    else:
        old = final.with_name(f".{final.name}.old-{os.getpid()}")
        os.rename(final, old)
        os.rename(new, final)
        shutil.rmtree(old)
    fsync_path(final.parent)


@contextlib.contextmanager
def result_folder(final: Path, option: str = "--out") -> Iterator[Path]:
    """Yield an empty hidden folder to write into; on success it becomes ``final``.

    On any exception (including KeyboardInterrupt) the hidden folder is deleted and
    ``final`` is untouched.
    """
    final = check_out_folder(final, option)
    final.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale(final)
    work = final.with_name(f".{final.name}.partial-{os.getpid()}")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    try:
        yield work
        _fsync_tree(work)
        swap_into_place(work, final)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
