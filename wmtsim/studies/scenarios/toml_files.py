"""The TOML of study files: read (a regular file, capped in size, parsed with messages
that name the key) and edited in place keeping comments (`wmtsim calibrate --write`).

Scenario files (`wmtsim.studies.scenarios.scenario`) and sweep files (`wmtsim.studies.sweeps.file`)
are read through `read_capped` and `parse_toml`, each raising its own error type.
"""

from __future__ import annotations

import errno
import re
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import tomli_w

MAX_FILE_BYTES = 16 << 20
"""The largest scenario or sweep file read (16 MiB; the shipped ones are under 10 KB)."""


def read_capped(path: Path, error: Callable[[str], Exception]) -> bytes:
    """The bytes of the regular file ``path``, at most `MAX_FILE_BYTES` of them read: a
    device, a pipe or a larger file raises ``error(message)`` (``/dev/zero`` as a sweep
    file once filled the memory)."""
    from wmtsim.core.input_files import open_regular

    raw: bytes | None = None  # None: refused from its size, before any read
    try:
        # open_regular: a FIFO would block the open itself, before any fstat could tell
        with open_regular(path, limit=MAX_FILE_BYTES) as f:
            raw = f.read(MAX_FILE_BYTES + 1)
    except OSError as e:
        if e.errno == errno.EINVAL:  # open_regular's refusal of a FIFO, device or socket
            raise error("is not a regular file; allowed: a TOML file") from None
        if e.errno != errno.EFBIG:
            raise error(f"cannot read: {e.strerror or e}") from None
    if raw is None or len(raw) > MAX_FILE_BYTES:
        raise error(f"is larger than {MAX_FILE_BYTES >> 20} MiB; allowed: a TOML file of at "
                    f"most {MAX_FILE_BYTES >> 20} MiB")
    return raw


def parse_toml(text: str, error: Callable[[str], Exception]) -> dict[str, Any]:
    """`tomllib.loads`, every failure raised as ``error(message)``; the message of a key
    defined twice names the key and its line (tomllib names only the line)."""
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise error("invalid TOML: nested too deeply") from None
    except tomllib.TOMLDecodeError as e:
        message = f"invalid TOML: {e}"
        m = re.search(r"\(at line (\d+)", str(e))
        if m and "overwrite" in str(e).lower():
            lines = text.splitlines()
            number = int(m.group(1))
            here = lines[number - 1] if 0 < number <= len(lines) else ""
            key = here.split("=", 1)[0].strip().strip("[]").strip()
            if key:
                message = f"invalid TOML: {key!r} is defined twice (line {number})"
        raise error(message) from None



def update_toml_text(text: str, changes: Mapping[str, object]) -> str:
    """Set ``section.key`` values in TOML text, keeping comments and layout.

    Existing ``key = value`` lines of the section are rewritten (a trailing comment is
    kept); missing keys are added at the end of the section (which is created if needed).
    """
    lines = text.splitlines()
    for dotted, value in changes.items():
        section, key = dotted.split(".", 1) if "." in dotted else ("", dotted)
        rendered = tomli_w.dumps({"x": value})[len("x = "):].strip()
        current = ""
        start = end = None
        done = False
        tables: dict[str, int] = {}  # [[name]] seen so far: the k-th is section name[k]
        for i, line in enumerate(lines):
            s = line.strip()
            if s.startswith("["):
                if current == section and start is not None and end is None:
                    end = i
                current = s.strip("[]").strip()
                if s.startswith("[["):
                    k = tables.get(current, 0)
                    tables[current] = k + 1
                    current = f"{current}[{k}]"
                if current == section:
                    start = i
                continue
            m = re.match(r"^(\s*)([A-Za-z_][\w]*)\s*=\s*(.*)$", line)
            if m and current == section and m.group(2) == key:
                comment = ""
                tail = m.group(3)
                cm = re.search(r"\s+(#.*)$", tail)
                if cm and tail.count('"') % 2 == 0:
                    comment = "  " + cm.group(1)
                lines[i] = f"{m.group(1)}{key} = {rendered}{comment}"
                done = True
                break
        if done:
            continue
        if section == "":
            first = next((i for i, ln in enumerate(lines) if ln.strip().startswith("[")),
                         len(lines))
            lines.insert(first, f"{key} = {rendered}")
        elif start is None:
            lines += ["", f"[{section}]", f"{key} = {rendered}"]
        else:
            at = end if end is not None else len(lines)
            while at > start + 1 and not lines[at - 1].strip():
                at -= 1
            lines.insert(at, f"{key} = {rendered}")
    return "\n".join(lines) + "\n"
