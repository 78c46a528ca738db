"""A conformance check in a child process: what the implementation does cannot fake the
verdict (docs/conformance.md).

`run_conformance` in the caller's process catches an adapter's exceptions, ``sys.exit``
and ``KeyboardInterrupt``, but an ``os._exit(0)``, a crash or a signal would end the
process with whatever status the adapter chose, and a CI job would read 0 as "conforms".
`run_isolated` runs the check in a child (``python -m wmtsim.conformance.isolated``) that
writes its verdict to a file only after every corpus trace and generated stream was
compared; a child that ends without one is a failure. The CLI (`wmtsim conformance run`)
and the pytest plugin use it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from wmtsim.conformance.runner import (
    CALL_TIMEOUT,
    ConformanceReport,
    Disagreement,
    Failure,
    run_conformance,
)

VERDICT = "verdict.json"


class LoadError(ValueError):
    """The implementation cannot be loaded, or the request is bad (exit 2)."""


def run_isolated(spec: str, *, examples: int = 200, seed: int = 0, tol: float = 1e-9,
                 save: Path | None = Path(".wmt-conformance"),
                 timeout: float | None = CALL_TIMEOUT,
                 echo: Callable[[str], None] | None = print) -> ConformanceReport:
    """`run_conformance` of the implementation ``spec`` (``module:Class``) in a child
    process; its lines go through ``echo``. A child that ends without a verdict (the
    adapter called ``os._exit``, crashed, was killed) is a failure, never "conforms"."""
    request = {"spec": spec, "examples": examples, "seed": seed, "tol": tol,
               "save": None if save is None else os.path.abspath(save), "timeout": timeout,
               "path": [os.getcwd(), *sys.path]}
    with tempfile.TemporaryDirectory(prefix="wmtsim-conformance-") as tmp:
        verdict = Path(tmp) / VERDICT
        # Nothing written outside --save: no .hypothesis/ here, no __pycache__ beside the
        # implementation's module.
        env = {**os.environ, "HYPOTHESIS_STORAGE_DIRECTORY": tmp,
               "PYTHONDONTWRITEBYTECODE": "1"}
        with subprocess.Popen(
                [sys.executable, "-m", "wmtsim.conformance.isolated", json.dumps(request),
                 str(verdict)], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
                env=env) as child:
            assert child.stdout is not None
            for raw in child.stdout:
                if echo is not None:
                    echo(raw.decode("utf-8", "replace").rstrip("\n"))
            status = child.wait()
        try:
            data = json.loads(verdict.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = None
    if data is None:
        how = (f"killed by signal {-status}" if status < 0 else f"exit status {status}")
        d = Disagreement(0, None, "ended", None, f"the implementation ended the checking "
                         f"process ({how}) before every trace was compared (os._exit, a "
                         "crash or a signal); the check did not finish")
        if echo is not None:
            echo(f"{spec}: does not conform: {d}")
        return ConformanceReport(0, 0, Failure("process", d, [], None))
    if "error" in data:
        raise LoadError(data["error"])
    return _report(data)


def _report(data: dict[str, Any]) -> ConformanceReport:
    f = data["failure"]
    failure = None
    if f is not None:
        d = Disagreement(**{**f["disagreement"], "rules": tuple(f["disagreement"]["rules"])})
        failure = Failure(f["found_in"], d, f["lines"],
                          None if f["saved"] is None else Path(f["saved"]))
    return ConformanceReport(data["corpus_traces"], data["examples"], failure)


def _as_json(report: ConformanceReport) -> dict[str, Any]:
    f = report.failure
    failure = None
    if f is not None:
        d = f.disagreement
        failure = {"found_in": f.found_in, "lines": f.lines,
                   "saved": None if f.saved is None else str(f.saved),
                   "disagreement": {"line": d.line, "node": d.node, "field": d.field,
                                    "expected": d.expected, "got": d.got,
                                    "rules": list(d.rules)}}
    return {"corpus_traces": report.corpus_traces, "examples": report.examples,
            "failure": failure}


def _write(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, default=repr), encoding="utf-8")
    os.replace(tmp, path)  # the parent reads a whole verdict or none


def _child(request: dict[str, Any], verdict: Path) -> None:
    from wmtsim.conformance.runner import load_impl

    sys.path[:0] = [p for p in request["path"] if p not in sys.path]
    try:
        factory = load_impl(request["spec"])
        report = run_conformance(
            factory, examples=request["examples"], seed=request["seed"], tol=request["tol"],
            save=None if request["save"] is None else Path(request["save"]),
            timeout=request["timeout"], echo=lambda line: print(line, flush=True))
    except (ValueError, RuntimeError, OSError) as e:
        from wmtsim.core.output import write_failure

        failure = write_failure(request["save"] or "", e) if isinstance(e, OSError) else e
        _write(verdict, {"error": str(failure or e)})
        return
    _write(verdict, _as_json(report))


if __name__ == "__main__":
    _child(json.loads(sys.argv[1]), Path(sys.argv[2]))
