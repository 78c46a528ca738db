"""The numba cache folder is keyed by wmtsim's kernel sources, so cross-module edits never
reuse a stale kernel (numba only watches a kernel's own file)."""

from __future__ import annotations

import os
from pathlib import Path

import wmtsim  # noqa: F401  (configures the cache on import)
from wmtsim.numba_cache import cache_dir, kernel_sources, source_fingerprint


def _package(tmp_path: Path) -> Path:
    (tmp_path / "consts.py").write_text("K = 1\n")
    (tmp_path / "kernel.py").write_text("from numba import njit\nfrom .consts import K\n")
    (tmp_path / "cli.py").write_text("print('no kernels here')\n")
    return tmp_path


def test_kernel_sources_follow_imports(tmp_path: Path) -> None:
    root = _package(tmp_path)
    assert [p.name for p in kernel_sources(root)] == ["consts.py", "kernel.py"]


def test_fingerprint_changes_with_a_dependency_of_a_kernel(tmp_path: Path) -> None:
    root = _package(tmp_path)
    before = source_fingerprint(root)
    assert source_fingerprint(root) == before
    (root / "cli.py").write_text("print('edited')\n")
    assert source_fingerprint(root) == before  # not reachable from a kernel
    (root / "consts.py").write_text("K = 2\n")
    assert source_fingerprint(root) != before


def test_the_real_kernel_modules_are_covered() -> None:
    names = {p.name for p in kernel_sources()}
    assert {"scoring.py", "lifecycle.py", "engine.py", "world.py", "params.py",
            "rng.py", "codes.py", "stubs.py", "metrics.py", "policies.py"} <= names
    assert "cli.py" not in names


def test_numba_uses_the_keyed_folder_unless_the_user_chose_one() -> None:
    from numba.core import config

    chosen = os.environ["NUMBA_CACHE_DIR"]
    assert config.CACHE_DIR == chosen
    if "wmtsim" in Path(chosen).parts:
        assert Path(chosen) == cache_dir()
