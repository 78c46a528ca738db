"""What a killed writer leaves behind, and its cleanup (docs/faults.md): the hidden
siblings of a result (`.NAME.partial-PID`, `.NAME.old-PID`, `.NAME.restart-PID`) and the
temporary files of an atomic write (`.NAME.PID.TID.tmp`) of processes no longer alive.
`wmtsim.core.output` calls these before it writes."""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path


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
    --restart``'s new trial log) siblings of dead processes."""
    pattern = re.compile(rf"^\.{re.escape(final.name)}\.(partial|old|restart)-(\d+)$")
    with contextlib.suppress(OSError):
        return [e for e in final.parent.iterdir()
                if (m := pattern.match(e.name)) and not pid_alive(int(m.group(2)))]
    return []


def recover_kept(final: Path, keep: tuple[str, ...]) -> None:
    """Move entries ``keep`` (e.g. a claims map's resumable sweep) back into ``final``
    from a dead process's hidden folder, where a kill between moving them and the swap
    left them; call before the work that would recompute them."""
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
