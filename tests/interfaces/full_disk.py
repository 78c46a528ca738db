"""Run wmtsim commands on a full disk (docs/faults.md): ``python full_disk.py CASES.json``
inside ``unshare -rm`` (a private mount namespace: no root needed). For each case it
mounts a fresh 4 KB tmpfs (filled up first when ``fill``; read-only when
``readonly``), runs the command in-process in that folder and prints one JSON line: the
exit code, stderr, an uncaught exception and every path left on the tmpfs."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path


def main() -> None:
    from typer.testing import CliRunner

    from wmtsim.interfaces.cli.main import app

    cases = json.loads(Path(sys.argv[1]).read_text())
    for case in cases:
        disk = Path(case["disk"])
        disk.mkdir(parents=True)
        options = "size=4k" + (",ro" if case.get("readonly") else "")
        subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(disk)],
                       check=True)
        if case["fill"]:
            with contextlib.suppress(OSError), open(disk / ".fill", "wb", buffering=0) as f:
                while True:
                    f.write(b"\0" * 1024)
        os.chdir(disk)
        res = CliRunner().invoke(app, case["argv"])
        exc = res.exception if not isinstance(res.exception, SystemExit) else None
        left = sorted(str(p.relative_to(disk)) for p in disk.rglob("*") if p.name != ".fill")
        print(json.dumps({"name": case["name"], "code": res.exit_code,
                          "stderr": res.stderr or "", "exception": repr(exc) if exc else None,
                          "left": left}), flush=True)
        os.chdir("/")


if __name__ == "__main__":
    main()
