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
    from wmtsim.numba_cache import PACKAGE_DIR

    names = {p.relative_to(PACKAGE_DIR).as_posix() for p in kernel_sources()}
    assert {"core/scoring.py", "core/lifecycle.py", "engine/loop.py", "engine/world.py",
            "engine/field/dispatch.py", "engine/forest.py", "core/params.py", "core/rng.py",
            "core/draws.py", "core/codes.py", "core/metrics.py", "core/packing.py",
            "core/policies.py", "core/world_spec.py", "core/jit.py", "engine/agent.py",
            "engine/selector.py", "engine/field/common.py", "engine/field/admission.py",
            "engine/field/forgetting.py", "engine/world_script.py", "engine/records.py"
            } <= names
    # No kernel imports `core/stubs.py` any more (they read ``st.p_leak`` from the packed
    # record): a change to `Stubs`' fields changes the record's type, hence the kernels'
    # signatures, and numba compiles afresh.
    assert not any(n.startswith(("interfaces/", "studies/", "twins/")) for n in names)


def test_numba_uses_the_keyed_folder_unless_the_user_chose_one() -> None:
    from numba.core import config

    chosen = os.environ["NUMBA_CACHE_DIR"]
    assert config.CACHE_DIR == chosen
    if "wmtsim" in Path(chosen).parts:
        assert Path(chosen) == cache_dir()


def test_fingerprint_follows_callees_across_subpackages(tmp_path: Path) -> None:
    """A copy of the real package: editing a kernel's callee in another subpackage gives a
    new fingerprint; editing a module no kernel reaches (the CLI) keeps it."""
    import shutil

    from wmtsim.numba_cache import PACKAGE_DIR

    root = tmp_path / "wmtsim"
    shutil.copytree(PACKAGE_DIR, root, ignore=shutil.ignore_patterns("__pycache__"))
    before = source_fingerprint(root)
    cli = root / "interfaces" / "cli" / "main.py"
    cli.write_text(cli.read_text() + "\n# edited\n")
    assert source_fingerprint(root) == before
    scoring = root / "core" / "scoring.py"  # called by engine/loop.py through core/lifecycle
    scoring.write_text(scoring.read_text() + "\n# edited\n")
    assert source_fingerprint(root) != before


def test_the_remembered_fingerprint_is_the_fingerprint_and_follows_edits(tmp_path: Path) -> None:
    """The memo by size and modification time gives `source_fingerprint`'s answer, and an
    edit (a new stamp) computes it afresh; a memo folder that cannot be written only
    costs the hash."""
    from wmtsim.numba_cache import _remembered_fingerprint

    (tmp_path / "pkg").mkdir()
    root = _package(tmp_path / "pkg")
    base = tmp_path / "cache"
    first = _remembered_fingerprint(base, "v1", root)
    assert first == source_fingerprint(root, "v1")
    assert len(list((base / "stamps").iterdir())) == 1
    assert _remembered_fingerprint(base, "v1", root) == first  # read back
    assert _remembered_fingerprint(base, "v2", root) == source_fingerprint(root, "v2")
    consts = root / "consts.py"
    consts.write_text("K = 22\n")  # another size, so another stamp whatever the clock
    assert _remembered_fingerprint(base, "v1", root) == source_fingerprint(root, "v1") != first
    blocked = tmp_path / "file"
    blocked.write_text("")  # a file where the folder should be: nothing can be written
    assert _remembered_fingerprint(blocked, "v1", root) == source_fingerprint(root, "v1")
