"""Where numba keeps compiled kernels: a cache folder keyed by wmtsim's own source.

numba (``cache=True``) invalidates a cached kernel when the kernel's own file changes,
but not when a kernel it calls in *another* module changes — a documented numba
limitation. wmtsim's kernels call across modules (engine → lifecycle → scoring), so an
edit to `wmtsim.core.scoring` could leave a stale engine in the cache. To rule that out,
wmtsim points numba at ``$XDG_CACHE_HOME/wmtsim/numba-<fingerprint>`` (default
``~/.cache/wmtsim/...``), where the fingerprint hashes every source file of the package
and the numba version: any change starts a fresh cache. A ``NUMBA_CACHE_DIR`` set by the
user is left alone.

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


def cache_dir() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    try:
        from importlib.metadata import version

        numba_version = version("numba")
    except Exception:  # numba metadata missing: the fingerprint still covers our code
        numba_version = "unknown"
    return base / "wmtsim" / f"numba-{source_fingerprint(extra=numba_version)}"


def configure() -> None:
    """Point numba's cache at `cache_dir()` unless the user chose a folder.

    Hashing the kernel sources reads and parses every module (~0.3 s), so ``import
    wmtsim`` does not call this: it calls `configure_before_numba`, and the hash is taken
    only by a process that imports numba (``wmtsim --help`` never does).
    """
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
