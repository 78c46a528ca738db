"""The one output layer: every file and folder wmtsim writes goes through here (docs/faults.md).

Paths. Output locations come only from ``--out`` or from `default_folder`: ``results/``
plus a scenario name made into one harmless path component (`safe_component`), so a name
such as ``"../../x"``, an absolute path or a NUL never leads outside ``results/``.
`check_out_folder` and `check_out_file` refuse an unusable path before any work, with an
`OutputError` naming the option, the path and what is allowed. An existing ``--out`` is
replaced only when it is a previous result of the same command (a folder: its
``manifest.json`` names the command; a file: its sidecar manifest does) or an empty
folder; a user's files and other folders are refused. A symbolic link as a folder
``--out`` is followed: the folder it points to is replaced and the link stays a link. A
one-file result refuses a link as its path (its sidecar manifest would land beside the
target, not beside the name given, and the file behind the link, often not wmtsim's to
rewrite, would be replaced).

Files (`atomic_write`): written to a temporary sibling (``.NAME.PID.THREAD.tmp``), fsynced,
renamed over the target with `os.replace`, then the folder is fsynced; a reader or a killed
process never sees a half-written file. `temp_path` and `commit` serve a writer that
streams into an open file (`wmtsim.engine.trace.trace`'s batch writer). A one-file result
(``replay --out``, ``demo``, ``schema --out``, ``expect``) has a sidecar manifest
``NAME.manifest.json`` (`sidecar`; with the file's size and sha256), renamed in just before
the file: a kill leaves the old pair, the new pair, or the new sidecar beside the old file
(the sha256 tells), never a result without a manifest (the next run would refuse it).

Folders (`result_folder`): the command writes into a hidden sibling
(``.NAME.partial-PID``) and a `write_manifest`; every file and the folder are fsynced and
the sibling is swapped into place with one atomic ``renameat2(RENAME_EXCHANGE)`` (or, where
that call is missing, two renames with a moment in which the folder is absent). Killed at
any instant, ``NAME`` is the old complete result, the new complete result, or absent; never
a mix. A leftover ``.NAME.partial-PID`` of a dead process is deleted by the next write.

Failures. Libraries report a full disk in their own ways (polars: ``ComputeError: ... No
space left on device``; pyarrow: ``ArrowIOError``); `write_failure` turns any of them, and
every `OSError`, into an `OutputError` naming the path, after the temporary file or folder
is removed: nothing partial is left.
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
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from wmtsim.core.leftovers import WORK_MARK, remove_dead_temps, stale_siblings

RESULTS = Path("results")
MAX_COMPONENT = 100  # characters of a scenario name kept in a folder name
MAX_PATH = 4000  # bytes of a whole output path (Linux PATH_MAX is 4096)
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_NAME_MAX = 255 - 40  # a path component's bytes, leaving room for ".partial-PID" etc.
MANIFEST = "manifest.json"
SIDECAR = ".manifest.json"  # a one-file result NAME's manifest is NAME.manifest.json


class OutputError(ValueError):
    """An output path that cannot be used or written; the message names the path."""


# --- paths -------------------------------------------------------------------------------------


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
        whole = len(os.fsencode(os.path.abspath(path)))
    except UnicodeError:
        raise _fail(option, path, "is not encodable as a file name", allowed) from None
    for part in parts:
        if len(part) > _NAME_MAX:
            raise _fail(option, path, f"a path component is {len(part)} bytes long",
                        f"components of at most {_NAME_MAX} bytes")
    if whole > MAX_PATH:
        raise _fail(option, f"{text[:60]}...", f"the path is {whole} bytes long",
                    f"paths of at most {MAX_PATH} bytes")


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


def _follow(path: Path, option: str, allowed: str) -> Path:
    """``path`` made absolute; a symbolic link (the last component) resolved to its
    target, so that the target is replaced and the link stays a link."""
    absolute = Path(os.path.abspath(path))
    if absolute.is_symlink():
        target = Path(os.path.realpath(absolute))
        if not target.exists() and not target.parent.is_dir():
            raise _fail(option, path, f"is a symbolic link to {str(target)!r}, whose folder "
                        "does not exist", allowed)
        return target
    return absolute


def follow_link(path: Path, option: str = "--out") -> Path:
    """``path`` absolute, a symbolic link as its last component followed (for a writer that
    does not swap, such as a sweep's resumable folder); the link stays a link."""
    return _follow(path, option, "a path in a writable folder")


def manifest_command(folder: Path) -> str | None:
    """The ``command`` of ``folder``'s manifest, or None (no readable wmtsim manifest)."""
    return _command_in(folder / MANIFEST)


def sidecar(path: Path) -> Path:
    """The manifest of the one-file result ``path``: ``NAME.manifest.json`` beside it."""
    return path.with_name(path.name + SIDECAR)


def _command_in(manifest_file: Path) -> str | None:
    """The ``command`` a manifest file names, or None (not a readable wmtsim manifest)."""
    try:
        from wmtsim.core.input_files import open_regular

        with open_regular(manifest_file) as f:
            manifest = json.loads(f.read(1 << 20))
    except (OSError, ValueError):
        return None
    command = manifest.get("command") if isinstance(manifest, dict) else None
    return command if isinstance(command, str) else None


def check_out_folder(path: Path, command: str, option: str = "--out",
                     keep: tuple[str, ...] = (),
                     kept: Callable[[Path], bool] | None = None) -> Path:
    """Refuse an output folder that cannot be written (or replaced) before any work.

    Accepted: a new folder, an empty one, a previous result of ``command`` (its manifest
    says so), or a folder holding only the entries ``keep`` (work of an interrupted run of
    ``command``, e.g. the claims map's ``sweep``) when ``kept(folder)`` says they are
    that work (a user's folder that happens to hold an entry of that name is refused).
    Returns the absolute path to write (a symbolic link followed)."""
    allowed = (f"a new folder, an empty one, or a previous result of `wmtsim {command}` "
               "(it is replaced as a whole)")
    _check_path_text(path, option, allowed)
    absolute = _follow(path, option, allowed)
    cwd = Path.cwd()
    if path.name in ("", ".", "..") or absolute == cwd or absolute in cwd.parents:
        raise _fail(option, path, "is the working folder, one of its parents or a root",
                    allowed)
    if absolute.exists():
        if not absolute.is_dir():
            raise _fail(option, path, "is a file, not a folder", allowed)
        try:
            entries = {p.name for p in absolute.iterdir()}
        except OSError as e:
            raise _fail(option, path, f"cannot be read ({e.strerror})", allowed) from None
        found = manifest_command(absolute) if entries else command
        if entries and entries <= set(keep) and found != command and kept is not None \
                and not kept(absolute):
            raise _fail(option, path, f"holds {', '.join(sorted(entries))}, which is not "
                        f"the work of an interrupted `wmtsim {command}`", allowed)
        if entries and not entries <= set(keep):
            if found != command:
                what = (f"a result of `wmtsim {found}`" if found else
                        f"not a wmtsim result folder (no {MANIFEST} of {command})")
                raise _fail(option, path, f"exists and is {what}", allowed)
    _check_parent(absolute, option, allowed)
    return absolute


def check_out_file(path: Path, command: str, option: str = "--out",
                   legacy: Callable[[Path], bool] | None = None,
                   sidecar_manifest: bool = True) -> Path:
    """Refuse an output file that cannot be written before any work.

    An existing file is replaced only when it is a previous result of ``command``: its
    `sidecar` manifest names ``command`` (or, with no sidecar, ``legacy(path)`` says it is
    a file wmtsim wrote before results had sidecars). A user's file, or a sidecar path
    holding anything but such a manifest, is refused. ``sidecar_manifest`` False: a file
    without a sidecar (the package's own schema) is replaced when ``legacy`` says so.
    A symbolic link as ``path`` (dangling or not) is refused, unlike a folder's: the pair
    a one-file result is (the file and its sidecar) would be split, the sidecar landing
    beside the link's target, and the file the link leads to replaced behind the user's
    back. Returns the absolute path to write."""
    allowed = (f"a new file in a writable folder, or a previous result of `wmtsim {command}` "
               f"(a file with its NAME{SIDECAR} beside it; it is replaced)")
    _check_path_text(path, option, allowed)
    absolute = Path(os.path.abspath(path))
    if absolute.is_symlink():
        raise _fail(option, path, f"is a symbolic link (to {os.readlink(absolute)!r}), and "
                    "a one-file result is never written through one", "a path that is not "
                    "a symbolic link: a new file, or a previous result of "
                    f"`wmtsim {command}` with its NAME{SIDECAR} beside it")
    if absolute.is_dir():
        raise _fail(option, path, "is a folder, not a file", allowed)
    owner = None
    if sidecar_manifest:
        if len(os.fsencode(absolute.name + SIDECAR)) > _NAME_MAX:
            raise _fail(option, path, "the file name is too long for its manifest "
                        f"{absolute.name[:40]}...{SIDECAR}",
                        f"file names of at most {_NAME_MAX - len(SIDECAR)} bytes")
        side = sidecar(absolute)
        owner = _command_in(side) if side.is_file() else None
        if (side.exists() or side.is_symlink()) and owner != command:
            what = f"a manifest of `wmtsim {owner}`" if owner else "not a wmtsim manifest"
            raise _fail(option, path, f"its manifest path {str(side)!r} exists and is {what}",
                        allowed)
    if absolute.exists() and owner is None and not (legacy is not None and legacy(absolute)):
        raise _fail(option, path, f"exists and is not a result of `wmtsim {command}` (no "
                    f"{absolute.name}{SIDECAR} beside it names it)", allowed)
    _check_parent(absolute, option, allowed)
    return absolute


# --- failures ----------------------------------------------------------------------------------


def _library_errors() -> tuple[type[BaseException], ...]:
    """The exception types with which polars and pyarrow report a failed write."""
    types: list[type[BaseException]] = [OSError]
    with contextlib.suppress(ImportError):
        import polars.exceptions as ple

        types += [ple.ComputeError, ple.PolarsError]
    if "pyarrow" in sys.modules:  # imported only by those who use it
        import pyarrow as pa

        types.append(pa.ArrowException)
    return tuple(types)


def write_failure(path: Path | str, exc: BaseException) -> OutputError | None:
    """An `OutputError` naming ``path`` when ``exc`` is a failed write (OSError, a full
    disk reported by polars or pyarrow, ...); None for anything else (a bug: let it
    raise)."""
    if isinstance(exc, OutputError):
        return exc
    if not isinstance(exc, _library_errors()):
        return None
    if isinstance(exc, OSError):
        reason = exc.strerror or str(exc)
    else:
        text = str(exc).strip().splitlines()
        reason = text[0] if text else type(exc).__name__
        if "No space left" not in reason and _disk_full(Path(path)):
            # polars may report ENOSPC as "Invalid thrift: transport error"
            reason += " (No space left on device: the disk holding it is full)"
    return OutputError(f"cannot write {str(path)!r}: {reason}; nothing was written")


def _disk_full(path: Path) -> bool:
    """Whether the file system holding ``path`` has (almost) no free space left."""
    folder = path
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        st = os.statvfs(folder)
    except OSError:
        return False
    return st.f_bavail * st.f_frsize < 64 * 1024


# --- files -------------------------------------------------------------------------------------


def fsync_path(path: Path) -> None:
    """fsync a file or a folder (so a rename inside it is durable)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def temp_path(path: Path) -> Path:
    """The temporary sibling of ``path``, unique per process and thread. The temporary
    siblings a killed process left are removed first (`leftovers.remove_dead_temps`): a
    kill leaves no file behind for longer than until the next write of ``path``."""
    remove_dead_temps(path)
    return path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")


def commit(tmp: Path, path: Path, manifest: Mapping[str, Any] | None = None) -> Path:
    """fsync the complete ``tmp``, rename it over ``path`` and fsync the folder. With
    ``manifest`` (a one-file result's, `manifest`), its `sidecar` is written first, with
    the file's name, size and sha256."""
    fsync_path(tmp)
    if manifest is not None:
        data = dict(manifest)
        data.update(file=path.name, bytes=tmp.stat().st_size, sha256=sha256_of(tmp))
        atomic_write_bytes(sidecar(path), (json.dumps(data, indent=2) + "\n").encode())
    os.replace(tmp, path)
    fsync_path(path.parent)
    return path


def sha256_of(path: Path) -> str:
    """The hex sha256 of the file ``path``."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def atomic_write(path: Path, write: Callable[[Path], object],
                 manifest: Mapping[str, Any] | None = None) -> Path:
    """Write ``path`` via ``write(tmp)`` and `commit` (with ``manifest``, the sidecar of a
    one-file result): all or nothing; returns ``path``.

    The temporary file is removed if ``write`` (or the rename) fails; a failed write
    (`write_failure`) raises `OutputError` naming ``path``."""
    path = Path(path)
    tmp = temp_path(path)
    try:
        write(tmp)
        return commit(tmp, path, manifest)
    except Exception as e:
        failure = write_failure(path, e)
        if failure is None or failure is e:
            raise
        raise failure from e
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)


def atomic_write_bytes(path: Path, data: bytes,
                       manifest: Mapping[str, Any] | None = None) -> Path:
    """`atomic_write` of ``data``."""
    return atomic_write(path, lambda tmp: tmp.write_bytes(data), manifest)


def atomic_write_text(path: Path, text: str,
                      manifest: Mapping[str, Any] | None = None) -> Path:
    """`atomic_write` of ``text`` as UTF-8."""
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"), manifest)


def atomic_write_parquet(frame: Any, path: Path, manifest: Mapping[str, Any] | None = None,
                         **options: Any) -> Path:
    """`atomic_write` of a polars frame as Parquet (``options``: `write_parquet`'s)."""
    return atomic_write(path, lambda tmp: frame.write_parquet(tmp, **options), manifest)


# --- manifests ---------------------------------------------------------------------------------


def command_line() -> list[str]:
    """The command line of this process (``wmtsim`` and its arguments)."""
    return ["wmtsim", *sys.argv[1:]] if sys.argv else []


def manifest(command: str, fields: Mapping[str, Any],
             extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A result's manifest: ``command``, the command line, the wmtsim version, then
    ``fields`` and ``extra`` (provenance any command adds: seed, n, resamples, ...)."""
    from wmtsim import __version__

    out: dict[str, Any] = {"command": command, "command_line": command_line(),
                           "wmtsim_version": __version__}
    out.update(fields)
    out.update(extra or {})
    return out


def write_manifest(folder: Path, command: str, fields: Mapping[str, Any],
                   extra: Mapping[str, Any] | None = None) -> Path:
    """Write `manifest` to ``folder/manifest.json`` (with the files beside it listed)."""
    data = manifest(command, fields, extra)
    data.setdefault("files", sorted(p.name for p in folder.iterdir()
                                    if p.name not in (MANIFEST, WORK_MARK)))
    return atomic_write_bytes(folder / MANIFEST, (json.dumps(data, indent=2) + "\n").encode())


# --- folders -----------------------------------------------------------------------------------


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
def result_folder(final: Path, command: str, option: str = "--out",
                  keep: tuple[str, ...] = ()) -> Iterator[Path]:
    """Yield an empty hidden folder to write ``command``'s result into; on success it
    becomes ``final`` as a whole, with the entries ``keep`` of the old ``final`` moved
    into it first. The body must `write_manifest`.

    On any exception (including KeyboardInterrupt) the hidden folder is deleted and
    ``final`` is untouched; a failed write raises `OutputError` naming ``final``.
    """
    final = check_out_folder(final, command, option, keep)
    work = final.with_name(f".{final.name}.partial-{os.getpid()}")
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        for stale in stale_siblings(final):
            shutil.rmtree(stale, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir()
        (work / WORK_MARK).touch()  # so that a kill leaves a folder known to be ours
        yield work
        if not (work / MANIFEST).is_file():
            raise RuntimeError(f"wmtsim {command} wrote no {MANIFEST}")  # a bug, not input
        for name in keep:
            if (final / name).exists():
                os.rename(final / name, work / name)
        (work / WORK_MARK).unlink()  # the manifest says whose it is from here on
        _fsync_tree(work)
        swap_into_place(work, final)
    except BaseException as e:
        for name in keep:  # put back what was moved, if the swap did not happen
            if (work / name).exists() and final.is_dir() and not (final / name).exists():
                with contextlib.suppress(OSError):
                    os.rename(work / name, final / name)
        shutil.rmtree(work, ignore_errors=True)
        failure = write_failure(final, e) if isinstance(e, Exception) else None
        if failure is None or failure is e:
            raise
        raise failure from e
