"""Where numba keeps compiled kernels: a cache folder keyed by wmtsim's own source.

numba (``cache=True``) invalidates a cached kernel when the kernel's own file changes,
but not when a kernel it calls in *another* module changes — a documented numba
limitation. wmtsim's kernels call across modules (engine → lifecycle → scoring), so an
edit to `wmtsim.core.scoring` could leave a stale engine in the cache. To rule that out,
wmtsim points numba at ``$XDG_CACHE_HOME/wmtsim/numba-<fingerprint>`` (default
``~/.cache/wmtsim/...``), where the fingerprint hashes every source file of the package
and the numba version: any change starts a fresh cache. A ``NUMBA_CACHE_DIR`` set by the
user is left alone. The fingerprint is remembered by the files' sizes and modification
times (``.../wmtsim/stamps/``), so a warm start does not parse the sources again.

Only the sources that can reach compiled code count: the modules that define kernels
(``njit``, through `wmtsim.core.jit`) and, transitively, the package modules they import
(their constants are frozen into the machine code). Editing the CLI or the dashboard keeps
the cache.
"""

from __future__ import annotations

import ast
import hashlib
import os
import sys
from pathlib import Path
from typing import Any

PACKAGE_DIR = Path(__file__).resolve().parent


def _module_name(path: Path, root: Path) -> str:
    """``wmtsim.engine.world`` for ``root/engine/world.py`` (``root`` is the package)."""
    parts = [root.name, *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported_modules(tree: ast.AST, module: str, is_package: bool) -> set[str]:
    """Every module an ``import`` or ``from ... import`` names, at any depth (lazy imports
    inside functions count), resolved to absolute dotted names; ``from a import b`` yields
    both ``a`` and ``a.b`` (``b`` may be a submodule)."""
    here = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = here
            for _ in range(max(node.level - 1, 0)):
                base = base.rpartition(".")[0]
            if node.level:
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
    return found


def _defines_kernels(source: str) -> bool:
    """Whether a module's source compiles numba kernels (directly or through `jit`)."""
    return "njit" in source or "wmtsim.core.jit import" in source


def kernel_sources(root: Path = PACKAGE_DIR) -> list[Path]:
    """The modules defining numba kernels, plus the package modules they reach by import.

    Every ``.py`` file under ``root`` (all subpackages) is a candidate; a module defines
    kernels when its source mentions ``njit`` or imports `wmtsim.core.jit` (the one place
    that sets numba's options). Imports are resolved with the real rules
    (absolute, relative, lazy), so a callee moved to another subpackage still counts, and a
    module no kernel reaches (the CLI, the dashboard, the studies) does not.
    """
    files = {_module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    todo = [name for name, p in files.items()
            if _defines_kernels(p.read_text(encoding="utf-8")) and p.name != "numba_cache.py"]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        path = files[name]
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        todo.extend(dep for dep in _imported_modules(tree, name, path.name == "__init__.py")
                    if dep in files and dep not in seen)
    return sorted(files[name] for name in seen)


def source_fingerprint(root: Path = PACKAGE_DIR, extra: str = "") -> str:
    """A short hash of the kernel sources under ``root`` (names and contents)."""
    h = hashlib.sha256(extra.encode())
    for path in kernel_sources(root):
        h.update(path.relative_to(root).as_posix().encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def _stamp(root: Path, extra: str) -> str:
    """A hash of every ``.py`` file's name, size and modification time under ``root``:
    what numba itself checks to trust a cached kernel (its index keeps the source's
    ``st_mtime`` and ``st_size``), read with one ``stat`` per file, no parsing."""
    h = hashlib.sha256(extra.encode())
    for path in sorted(root.rglob("*.py")):
        st = path.stat()
        h.update(f"{path.relative_to(root).as_posix()}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    return h.hexdigest()[:32]


def _remembered_fingerprint(base: Path, extra: str, root: Path = PACKAGE_DIR) -> str:
    """`source_fingerprint`, remembered under ``base/stamps`` by the sources' `_stamp`.

    Parsing every module to find the kernel sources costs ~0.3 s, a fifth of a warm run;
    as long as no file's size or modification time changed, the answer is the same. An
    unreadable or unwritable folder only costs the hash again."""
    memo = base / "stamps" / _stamp(root, extra)
    try:
        found = memo.read_text(encoding="ascii").strip()
        if len(found) == 16:
            return found
    except (OSError, UnicodeDecodeError):
        pass
    fingerprint = source_fingerprint(root, extra)
    aside = memo.with_name(f"{memo.name}.{os.getpid()}.tmp")
    try:
        memo.parent.mkdir(parents=True, exist_ok=True)
        aside.write_text(fingerprint, encoding="ascii")
        os.replace(aside, memo)  # whole or absent, for a process reading it meanwhile
    except OSError:
        try:
            aside.unlink(missing_ok=True)  # a full disk leaves no half-written memo
        except OSError:
            pass
    return fingerprint


def cache_dir() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "wmtsim"
    try:
        from importlib.metadata import version

        numba_version = version("numba")
    except Exception:  # numba metadata missing: the fingerprint still covers our code
        numba_version = "unknown"
    return base / f"numba-{_remembered_fingerprint(base, numba_version)}"


def configure() -> None:
    """Point numba's cache at `cache_dir()` unless the user chose a folder, and `guard` the
    cache's errors (in every process that imports numba, sweep workers included).

    Hashing the kernel sources reads and parses every module (~0.3 s), so ``import
    wmtsim`` does not call this: it calls `configure_before_numba`, and the hash is taken
    only by a process that imports numba (``wmtsim --help`` never does).
    """
    _guard_on_import()
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    path = cache_dir()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return  # read-only home: numba falls back to its own default locations
    os.environ["NUMBA_CACHE_DIR"] = str(path)
    if "numba" in sys.modules:  # imported before wmtsim: numba read its config already
        from numba.core import config

        setattr(config, "CACHE_DIR", str(path))  # noqa: B010 (untyped module)


# --- failures ----------------------------------------------------------------------------------


class CacheError(Exception):
    """numba could not read or write a file of its on-disk cache (a full or unwritable
    disk, a corrupt or truncated file); the message names the file and the folder.

    Not an `OSError` or `ValueError`, so that no handler of bad input mistakes it for a
    problem with the user's file (a full cache disk once read as "cannot read the
    trace"); the CLI turns it into exit 2 (`wmtsim.interfaces.cli.common`)."""


def _message(file: str, exc: BaseException) -> str:
    folder = os.environ.get("NUMBA_CACHE_DIR") or str(Path(file).parent.parent)
    if isinstance(exc, OSError):
        reason = f"cannot write {file!r}: {exc.strerror or exc}"
    else:
        reason = f"{file!r} is corrupt ({type(exc).__name__}: {str(exc)[:200]})"
    return (f"numba's kernel cache {folder!r}: {reason}; allowed: a cache folder with free "
            f"space that wmtsim can write (delete {folder!r} to rebuild it, or set "
            "NUMBA_CACHE_DIR to another folder)")


def _guarded(method: Any, where: Any) -> Any:
    """``method`` of numba's cache, with any failure raised as `CacheError` naming the
    file ``where(self, *args)``. A data file that vanished stays a cache miss (numba's
    own handling of ``FileNotFoundError``)."""

    def call(self: Any, *args: Any) -> Any:
        try:
            return method(self, *args)
        except (CacheError, FileNotFoundError):
            raise
        except Exception as e:
            raise CacheError(_message(str(where(self, *args)), e)) from e

    call.__wrapped__ = method  # type: ignore[attr-defined]
    return call


def guard() -> None:
    """Make numba's cache report its I/O errors and corrupt files as `CacheError`
    (idempotent; called where wmtsim sets numba's options, `wmtsim.core.jit`).

    numba writes a cache file aside and renames it (``_open_for_write``), so a failed
    save leaves no partial file, and a kernel is loaded or compiled before a command
    writes its result: nothing is half-written."""
    from numba.core import caching

    files = caching.IndexDataCacheFile
    if getattr(files, "_wmtsim_guarded", False):
        return
    index = lambda self, *a: self._index_path  # noqa: E731
    data = lambda self, name, *a: self._data_path(name)  # noqa: E731
    for name, where in (("_load_index", index), ("_save_index", index),
                        ("_load_data", data), ("_save_data", data)):
        setattr(files, name, _guarded(getattr(files, name), where))
    # The cache folder itself (numba checks it is writable before each save).
    folder = lambda self, *a: self._impl.locator.get_cache_path()  # noqa: E731
    setattr(caching.Cache, "save_overload", _guarded(caching.Cache.save_overload, folder))  # noqa: B010
    setattr(files, "_wmtsim_guarded", True)  # noqa: B010


class _GuardFinder:
    """A meta-path finder that runs `guard` right after ``numba.core.caching`` loads, so
    that importing wmtsim does not import numba (commands without kernels stay fast)."""

    target = "numba.core.caching"

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != self.target:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None and spec.loader is not None:
                break
        else:
            return None
        loader = spec.loader
        run = loader.exec_module

        def exec_module(module: Any) -> None:
            run(module)
            sys.meta_path[:] = [f for f in sys.meta_path if f is not self]
            guard()

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def _guard_on_import() -> None:
    if "numba.core.caching" in sys.modules:
        guard()
    elif not any(isinstance(f, _GuardFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _GuardFinder())


class _BeforeNumba:
    """A meta-path finder that runs `configure` just before numba is first imported.

    It finds nothing itself (returns None), so the import goes on as usual, with
    ``NUMBA_CACHE_DIR`` set by then.
    """

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name == "numba":
            self.remove()
            configure()
        return None

    def remove(self) -> None:
        if self in sys.meta_path:
            sys.meta_path.remove(self)


def configure_before_numba() -> None:
    """`configure` now if numba is already imported, else right before it is."""
    if "numba" in sys.modules:
        configure()
    elif not any(isinstance(f, _BeforeNumba) for f in sys.meta_path):
        sys.meta_path.insert(0, _BeforeNumba())
