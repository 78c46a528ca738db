"""Run ``wmtsim ARGS`` and SIGKILL the process at its K-th rename (docs/faults.md).

``python tests/studies/kill_at_rename.py K before|after|fsync ARGS...``: every ``os.rename`` /
``os.replace`` and the atomic exchange of `wmtsim.core.output` are counted; at the K-th the
process kills itself with SIGKILL just before or just after the rename takes effect (or,
with ``fsync``, just before its K-th ``os.fsync``: the moment a file is complete but not yet
renamed, where a writer that wrote in place would already have changed the result), so
no ``finally`` block or cleanup runs: what is on disk is what a real kill leaves. When
the command makes fewer than K renames it finishes normally and exits 0.
"""

from __future__ import annotations

import os
import signal
import sys


def main() -> None:
    target, when, argv = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    count = [0]

    def wrap(fn):  # type: ignore[no-untyped-def]
        def renamed(*args, **kwargs):  # type: ignore[no-untyped-def]
            count[0] += 1
            if count[0] == target and when == "before":
                os.kill(os.getpid(), signal.SIGKILL)
            result = fn(*args, **kwargs)
            if count[0] == target and when == "after":
                os.kill(os.getpid(), signal.SIGKILL)
            return result
        return renamed

    from wmtsim.core import output as outdir
    if when == "fsync":
        os.fsync = wrap(os.fsync)
        when = "before"
    else:
        os.rename = wrap(os.rename)
        os.replace = wrap(os.replace)
        outdir._exchange = wrap(outdir._exchange)
    from wmtsim.interfaces.cli.main import app

    app(argv, standalone_mode=True)


if __name__ == "__main__":
    main()
