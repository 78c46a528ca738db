"""What a killed writer leaves behind, and its cleanup (docs/faults.md): the hidden
siblings of a result (`.NAME.partial-PID`, `.NAME.old-PID`, `.NAME.restart-PID`) and the
temporary files of an atomic write (`.NAME.PID.TID.tmp`) of processes no longer alive.
`wmtsim.core.output` calls these before it writes."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable
from pathlib import Path

WORK_MARK = ".wmtsim-work"
"""An empty file in every hidden folder wmtsim creates beside a result (removed before
the folder becomes the result): a user's folder that merely has the name of a leftover
(``.out.old-999999/``) is never deleted (`stale_siblings`)."""


def _ours(entry: Path) -> bool:
    """Is ``entry`` a folder wmtsim left: its `WORK_MARK`, or a whole result (the old
    result a swap was replacing, the new one about to be swapped in: a ``manifest.json``
    naming a command)?"""
    import json

    from wmtsim.core.input_files import read_regular

    if entry.is_symlink() or not entry.is_dir():
        return False
    if (entry / WORK_MARK).is_file():
        return True
    try:
        data = json.loads(read_regular(entry / "manifest.json", inside=True))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and isinstance(data.get("command"), str)


def pid_alive(pid: int) -> bool:
    """Is process ``pid`` alive (one of another user counts as alive)?"""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stale_siblings(final: Path) -> list[Path]:
    """``.NAME.partial-PID`` / ``.NAME.old-PID`` / ``.NAME.restart-PID`` (an ``attack
    --restart``'s new trial log) siblings of dead processes that wmtsim wrote (`_ours`):
    the name alone proves nothing, a user may have a folder called so."""
    pattern = re.compile(rf"^\.{re.escape(final.name)}\.(partial|old|restart)-(\d+)$")
    with contextlib.suppress(OSError):
        return [e for e in final.parent.iterdir()
                if (m := pattern.match(e.name)) and not pid_alive(int(m.group(2)))
                and _ours(e)]
    return []


def recover_kept(final: Path, keep: tuple[str, ...],
                 check: Callable[[Path], object] | None = None) -> None:
    """Move entries ``keep`` (e.g. a claims map's resumable sweep) back into ``final``
    from a dead process's hidden folder, where a kill between moving them and the swap
    left them; call before the work that would recompute them. ``check`` is called on
    every entry to move before anything moves: when it raises (a tune journal of another
    study), the command is refused with nothing moved."""
    found = [(stale, name) for stale in stale_siblings(final) for name in keep
             if (stale / name).exists() and not (final / name).exists()]
    if check is not None:
        for stale, name in found:
            check(stale / name)
    for stale in stale_siblings(final):
        for name in keep:
            if (stale / name).exists() and not (final / name).exists():
                final.mkdir(parents=True, exist_ok=True)
                os.rename(stale / name, final / name)


def remove_dead_temps(path: Path) -> None:
    """Remove the temporary siblings of ``path`` (`.NAME.PID.TID.tmp`) whose writer is no
    longer alive; this process's own are left alone."""
    pattern = re.compile(rf"^\.{re.escape(path.name)}\.(\d+)\.\d+\.tmp$")
    with contextlib.suppress(OSError):
        for entry in path.parent.iterdir():
            m = pattern.match(entry.name)
            if m and int(m.group(1)) != os.getpid() and not pid_alive(int(m.group(1))):
                entry.unlink(missing_ok=True)
