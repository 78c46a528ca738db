"""Where numba keeps compiled kernels: a cache folder keyed by wmtsim's own source.

numba (``cache=True``) invalidates a cached kernel when the kernel's own file changes,
but not when a kernel it calls in *another* module changes — a documented numba
limitation. wmtsim's kernels call across modules (engine → lifecycle → scoring), so an
edit to `wmtsim.scoring` could leave a stale engine in the cache. To rule that out,
wmtsim points numba at ``$XDG_CACHE_HOME/wmtsim/numba-<fingerprint>`` (default
``~/.cache/wmtsim/...``), where the fingerprint hashes every source file of the package
and the numba version: any change starts a fresh cache. A ``NUMBA_CACHE_DIR`` set by the
user is left alone.

Only the sources that can reach compiled code count: the modules that define kernels
(``njit``) and, transitively, the package modules they import (their constants are
frozen into the machine code). Editing the CLI or the dashboard keeps the cache.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent


_RELATIVE_IMPORT = re.compile(r"^\s*from \.(\w+) import", re.MULTILINE)


def kernel_sources(root: Path = PACKAGE_DIR) -> list[Path]:
    """The modules defining numba kernels, plus the package modules they import."""
    texts = {p: p.read_text(encoding="utf-8") for p in sorted(root.glob("*.py"))}
    todo = [p for p, text in texts.items() if "njit" in text]
    seen: set[Path] = set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for name in _RELATIVE_IMPORT.findall(texts[path]):
            dep = root / f"{name}.py"
            if dep in texts:
                todo.append(dep)
    return sorted(seen)


def source_fingerprint(root: Path = PACKAGE_DIR, extra: str = "") -> str:
    """A short hash of the kernel sources under ``root`` (names and contents)."""
    h = hashlib.sha256(extra.encode())
    for path in kernel_sources(root):
        h.update(path.name.encode())
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
    """Point numba's cache at `cache_dir()` unless the user chose a folder."""
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
