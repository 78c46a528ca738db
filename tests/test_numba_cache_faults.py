"""numba's on-disk cache failing: a corrupt kernel file, a full cache
disk. Each exits 2 with a message naming the file and the cache folder, no traceback,
and is not blamed on the user's input (a full cache disk once read as "cannot read the
trace"). Real files and a real full tmpfs, in fresh processes (docs/faults.md)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from wmtsim.numba_cache import cache_dir

PACKAGE = Path(__file__).resolve().parents[1] / "wmtsim"
TRACE = Path(__file__).resolve().parents[1] / "scenarios" / "traces" / "paper_a4.jsonl"
CHECK = [sys.executable, "-m", "wmtsim.interfaces.cli.main", "check", str(TRACE)]


# wmtsim sets NUMBA_CACHE_DIR itself (to a folder under .../wmtsim/) only once numba is
# imported, so an unset variable is the normal case, not a reason to skip.
CHOSEN = ("the user chose NUMBA_CACHE_DIR: the test rebuilds wmtsim's own cache layout "
          "under XDG_CACHE_HOME, which a chosen folder bypasses")
USER_CACHE = "wmtsim" not in Path(os.environ.get("NUMBA_CACHE_DIR") or cache_dir()).parts


def _indexes(dest: Path, corrupt: bool) -> Path:
    """The real cache's index files under ``dest``/wmtsim (garbage if ``corrupt``): every
    kernel is found, its data file is missing (a miss: it is compiled and saved)."""
    src = Path(os.environ.get("NUMBA_CACHE_DIR") or cache_dir())
    folder = dest / "wmtsim" / src.name
    # Only this checkout's: numba keys a source folder's cache by its name and the sha1
    # of its full path, and a cache shared by several checkouts holds theirs too (dozens
    # of folders that no longer fit on the 8 MB disk of the full-disk test).
    ours = {f"{d.name}_{hashlib.sha1(str(d).encode()).hexdigest()}"
            for d in PACKAGE.rglob("*") if d.is_dir()} | {
        f"{PACKAGE.name}_{hashlib.sha1(str(PACKAGE).encode()).hexdigest()}"}
    for p in src.rglob("*.nbi"):
        if p.relative_to(src).parts[0] not in ours:
            continue
        q = folder / p.relative_to(src)
        q.parent.mkdir(parents=True, exist_ok=True)
        if corrupt:
            q.write_bytes(b"garbage")
        else:
            shutil.copy2(p, q)
    return folder


def _env(cache_home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    return {**env, "XDG_CACHE_HOME": str(cache_home)}


@pytest.mark.skipif(USER_CACHE, reason=CHOSEN)
def test_a_corrupt_cache_file_exits_2_naming_it(tmp_path: Path) -> None:
    folder = _indexes(tmp_path / "cache", corrupt=True)
    res = subprocess.run(CHECK, capture_output=True, text=True, env=_env(tmp_path / "cache"),
                         timeout=600, cwd=tmp_path)
    assert res.returncode == 2, res.stderr[-2000:]
    text = " ".join(res.stderr.split())
    assert "Traceback" not in text
    assert f"numba's kernel cache '{folder}'" in text and ".nbi' is corrupt" in text, text
    assert "NUMBA_CACHE_DIR" in text and "paper_a4" not in text, text


def _unshare() -> bool:
    return shutil.which("unshare") is not None and subprocess.run(
        ["unshare", "-rm", "true"], capture_output=True).returncode == 0


@pytest.mark.skipif(not _unshare(), reason="needs unshare -rm (an unprivileged mount namespace)")
@pytest.mark.skipif(USER_CACHE, reason=CHOSEN)
def test_a_full_cache_disk_exits_2_naming_the_file(tmp_path: Path) -> None:
    """The cache on a full tmpfs (its index files plus 8 MB, then filled up): a kernel
    must be compiled and cannot be saved. (The shared cache holds the index files of
    every checkout of these sources, so its size is measured, not assumed.)"""
    disk = tmp_path / "disk"
    disk.mkdir()
    stage = tmp_path / "stage"
    _indexes(stage, corrupt=False)
    staged = sum(p.stat().st_size + 4096 for p in stage.rglob("*"))  # a page per entry
    size = (staged >> 20) + 8
    script = (f"mount -t tmpfs -o size={size}m tmpfs {disk} && cp -a {stage}/. {disk}/ && "
              f"(dd if=/dev/zero of={disk}/fill bs=4k 2>/dev/null; true) && "
              f"{' '.join(CHECK)}; code=$?; find {disk} -name '*.tmp*'; exit $code")
    res = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True,
                         text=True, env=_env(disk), timeout=600, cwd=tmp_path)
    assert res.returncode == 2, (res.stdout[-2000:], res.stderr[-2000:])
    text = " ".join(res.stderr.split())
    assert "Traceback" not in text
    assert "numba's kernel cache" in text and "No space left on device" in text, text
    assert "cannot read" not in text, "blamed on the trace"
    assert ".tmp" not in res.stdout, res.stdout  # numba left no temporary file
