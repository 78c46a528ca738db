"""The output layer's fault behaviour (issue 27; issue 30, point 4; docs/faults.md).

A write that fails halfway must leave the previous result whole and no partial file: a
writer that wrote in place, instead of aside and then renamed, fails these tests (the
kill-at-rename tests cannot tell the two apart). The fsync order is pinned by recording
`os.fsync` and `os.replace`. A full disk is simulated by a writer raising ENOSPC or
polars' ``ComputeError``, and, where an unprivileged mount namespace is allowed, made
real with a small tmpfs.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from wmtsim.core import output
from wmtsim.interfaces.cli.main import app


def test_a_write_failing_halfway_leaves_the_old_file_whole(tmp_path: Path) -> None:
    target = tmp_path / "r.bin"
    target.write_bytes(b"old complete result")

    def half(tmp: Path) -> None:
        with open(tmp, "wb") as f:
            f.write(b"new, half")
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(output.OutputError, match="No space left on device"):
        output.atomic_write(target, half)
    assert target.read_bytes() == b"old complete result"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.bin"]


def test_a_folder_failing_halfway_leaves_the_old_result_whole(tmp_path: Path) -> None:
    final = tmp_path / "res"
    with output.result_folder(final, "run") as work:
        output.atomic_write_bytes(work / "a.txt", b"old a")
        output.write_manifest(work, "run", {"n": 1})
    before = {p.name: p.read_bytes() for p in final.iterdir()}
    with pytest.raises(output.OutputError, match="cannot write"), \
            output.result_folder(final, "run") as work:
        output.atomic_write_bytes(work / "a.txt", b"new a")
        raise pl.exceptions.ComputeError("failed to write: No space left on device (os "
                                         "error 28)")
    assert {p.name: p.read_bytes() for p in final.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["res"]


def test_fsync_order_temp_file_rename_folder(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    events: list[tuple[str, str]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    def replace(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> None:
        events.append(("replace", str(b)))
        real_replace(a, b)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    target = tmp_path / "x.txt"
    output.atomic_write_text(target, "hello")
    assert [e[0] for e in events] == ["fsync", "replace", "fsync"]
    assert Path(events[0][1]).name.startswith(".x.txt.") and events[0][1].endswith(".tmp")
    assert events[1][1] == str(target)
    assert events[2][1] == str(tmp_path)


def test_run_on_a_full_disk_exits_2_naming_the_path_and_leaves_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """polars reports ENOSPC as a ComputeError, not an OSError: still exit 2."""
    monkeypatch.chdir(tmp_path)

    def full(self: pl.DataFrame, file: object, *a: object, **k: object) -> None:
        Path(str(file)).write_bytes(b"PAR1 half")
        raise pl.exceptions.ComputeError("No space left on device (os error 28)")

    monkeypatch.setattr(pl.DataFrame, "write_parquet", full)
    res = CliRunner().invoke(app, ["run", "paper_poisoning", "-p", "wmt", "--n", "3",
                                   "--out", "out"])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert res.exit_code == 2, res.output
    text = " ".join(res.stderr.split())
    assert "No space left on device" in text and "out" in text, text
    assert list(tmp_path.iterdir()) == []


def _tmpfs_available() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-rm", "sh", "-c",
                            "mount -t tmpfs -o size=64k tmpfs /mnt 2>/dev/null || "
                            "mount -t tmpfs -o size=64k tmpfs \"$TMPDIR\""],
                           capture_output=True, env={**os.environ, "TMPDIR": "/tmp"})
    return probe.returncode == 0


@pytest.mark.skipif(not _tmpfs_available(),
                    reason="needs unshare -rm (an unprivileged mount namespace)")
@pytest.mark.parametrize("argv", [
    ["run", "paper_poisoning", "-p", "wmt", "--n", "3000", "--out", "out"],
    ["replay", "{trace}", "--out", "out.csv"],
    ["replay", "{trace}", "--out", "out.parquet"],
])
def test_a_real_full_disk(tmp_path: Path, argv: list[str]) -> None:
    """A 32 KB tmpfs in a private mount namespace (no root needed): exit 2, the path named,
    nothing left on the tmpfs."""
    trace = tmp_path / "long.jsonl"
    trace.write_text('{"op": "query", "id": "q"}\n{"op": "task", "id": "t", "parent": "q"}\n'
                     '{"op": "activate", "id": "t"}\n'
                     + "".join(f'{{"op": "action", "id": "a{i}", "parent": "t"}}\n'
                               for i in range(40))
                     + '{"op": "select", "selected": ["a0"]}\n' * 3000)
    disk = tmp_path / "disk"
    disk.mkdir()
    cmd = " ".join(json.dumps(a.replace("{trace}", str(trace))) for a in argv)
    script = (f"mount -t tmpfs -o size=32k tmpfs {disk} && cd {disk} && "
              f"{sys.executable} -m wmtsim.interfaces.cli.main {cmd}; code=$?; "
              f"ls -A {disk}; exit $code")
    res = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True,
                         text=True, timeout=600)
    assert res.returncode == 2, (res.stdout[-2000:], res.stderr[-2000:])
    assert "No space left on device" in res.stderr and "out" in res.stderr, res.stderr
    assert "Traceback" not in res.stderr
    assert res.stdout.strip().splitlines()[-1:] != ["out"], "a partial result is left"
    assert ".tmp" not in res.stdout and "partial" not in res.stdout, res.stdout


def test_a_one_file_results_sidecar_names_it_and_ends_with_a_newline(tmp_path: Path) -> None:
    """`atomic_write_bytes` with a manifest: the sidecar ``r.bin.manifest.json`` is JSON
    ending with one newline (a text file), with the file's name, its size (3 bytes) and the
    sha256 of b"abc" — FIPS 180-2's first test vector, ba7816bf…15ad."""
    target = tmp_path / "r.bin"
    output.atomic_write_bytes(target, b"abc", manifest={"command": "run"})
    assert target.read_bytes() == b"abc"
    text = (tmp_path / "r.bin.manifest.json").read_text(encoding="utf-8")
    assert text.endswith("}\n") and not text.endswith("\n\n")
    data = json.loads(text)
    assert data == {"command": "run", "file": "r.bin", "bytes": 3, "sha256":
                    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.bin", "r.bin.manifest.json"]


def test_a_writer_bug_is_raised_as_itself_and_leaves_no_temp_file(tmp_path: Path) -> None:
    """A failure that is not a failed write (a ValueError: a bug) is not an `OutputError`:
    it is re-raised unchanged; an `OutputError` the writer raises is re-raised as itself
    (not chained to itself). Either way the temporary file is gone and the old file whole."""
    target = tmp_path / "r.bin"
    target.write_bytes(b"old")

    def buggy(tmp: Path) -> None:
        tmp.write_bytes(b"half")
        raise ValueError("a bug in the writer")

    with pytest.raises(ValueError, match="a bug in the writer") as bug:
        output.atomic_write(target, buggy)
    assert bug.value.__cause__ is None

    def refused(tmp: Path) -> None:
        tmp.write_bytes(b"half")
        raise output.OutputError("refused")

    with pytest.raises(output.OutputError, match="refused") as err:
        output.atomic_write(target, refused)
    assert err.value.__cause__ is None
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.bin"]
