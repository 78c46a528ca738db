"""A conformance judge outside the judged process (docs/conformance.md).

The implementation runs in a child process (`wmtsim.conformance.serve`) that only
answers calls over a pipe; this process holds the corpus, runs the reference, decodes
every answer itself (plain JSON values: never an object of the implementation, whose
``__eq__`` could say anything), compares, shrinks and alone decides the verdict. No file
the child can write is read. Each call has ``timeout`` seconds and the whole check
``limit`` seconds, both enforced here by killing the child's process group (the child is
started in its own session, so a grandchild it started goes with it); a call that ran
out, or a child that ended (``os._exit``, a crash, a signal, a closed pipe), is a
disagreement, never "conforms". The CLI (`wmtsim conformance run`) and the pytest plugin
use `run_isolated`.

An earlier design ran the whole check in the child and read a verdict file it wrote: an
implementation could write that file itself, replace the comparison, return a state whose
``__eq__`` was always true, or disarm the per-call alarm, and "conform".
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from wmtsim.conformance.runner import (
    CALL_TIMEOUT,
    CallTimeout,
    ConformanceReport,
    ProcessEnded,
    Raised,
    run_conformance,
)

CHECK_LIMIT = 3600.0
"""Seconds a whole isolated check may take (corpus, generated streams, shrinking)."""
LOAD_TIMEOUT = 120.0
"""Seconds the child may take to import the implementation and say it is ready."""
MAX_ANSWER_BYTES = 64 << 20  # a node table of a long trace is kilobytes


class LoadError(ValueError):
    """The implementation cannot be loaded, or the request is bad (exit 2)."""


class Child:
    """The implementation's process: started on demand, asked one call at a time, killed
    (with its process group) when a call runs out, when the check is over or past its
    limit."""

    def __init__(self, spec: str, timeout: float | None, limit: float, home: str) -> None:
        self.spec, self.timeout, self.home = spec, timeout, home
        self.deadline = time.monotonic() + limit
        self.limit = limit
        self.proc: subprocess.Popen[bytes] | None = None
        self.calls = self.answers = -1
        self.buffer = b""
        self.over = False  # the overall limit passed: every later call ends at once

    def start(self) -> None:
        calls_r, calls_w = os.pipe()
        answers_r, answers_w = os.pipe()
        request = {"spec": self.spec, "path": [os.getcwd(), *sys.path],
                   "calls": calls_r, "answers": answers_w}
        # Nothing written outside --save: no __pycache__ beside the implementation's
        # module, an adapter's own Hypothesis use in a temporary folder.
        env = {**os.environ, "HYPOTHESIS_STORAGE_DIRECTORY": self.home,
               "PYTHONDONTWRITEBYTECODE": "1"}
        try:
            # Its prints go to our standard error: nothing here waits for its stdout to
            # close (a grandchild holding it once held the verdict back).
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "wmtsim.conformance.serve", json.dumps(request)],
                stdin=subprocess.DEVNULL, stdout=2,
                pass_fds=(calls_r, answers_w), env=env, start_new_session=True)
        finally:
            os.close(calls_r)
            os.close(answers_w)
        self.calls, self.answers, self.buffer = calls_w, answers_r, b""
        first = self._answer(LOAD_TIMEOUT)
        if "error" in first:
            self.stop()
            raise LoadError(str(first["error"]))

    def call(self, message: dict[str, Any]) -> Any:
        """The answer to one call; raises `CallTimeout` or `ProcessEnded` (the child is
        then gone: the next trace starts another) or `Raised` (the implementation
        raised)."""
        if self.proc is None:
            self.start()
        try:
            os.write(self.calls, json.dumps(message).encode() + b"\n")
        except OSError:  # BrokenPipeError: it closed its end or ended
            raise self._ended() from None
        answer = self._answer(self.timeout)
        if "raised" in answer:
            raise Raised(str(answer["raised"]))
        if set(answer) != {"ok"}:
            raise self._ended(f"answered {str(answer)[:200]}, not a call's answer")
        return answer["ok"]

    def _answer(self, timeout: float | None) -> dict[str, Any]:
        start = time.monotonic()
        while b"\n" not in self.buffer:
            now = time.monotonic()
            wait = self.deadline - now
            if timeout is not None:
                wait = min(wait, timeout - (now - start))
            if wait <= 0:
                if now >= self.deadline:
                    self.over = True
                    self.stop()
                    raise ProcessEnded(f"the check did not finish within its limit of "
                                       f"{self.limit:g} s (the implementation's process "
                                       "was killed)")
                self.stop()
                raise CallTimeout(f"no answer within {timeout:g} s (the implementation's "
                                  "process was killed)")
            ready, _, _ = select.select([self.answers], [], [], wait)
            if not ready:
                continue
            chunk = os.read(self.answers, 1 << 16)
            if not chunk:
                raise self._ended()
            self.buffer += chunk
            if len(self.buffer) > MAX_ANSWER_BYTES:
                raise self._ended(f"answered more than {MAX_ANSWER_BYTES:,} bytes")
        line, _, self.buffer = self.buffer.partition(b"\n")
        try:
            answer = json.loads(line)
        except (ValueError, RecursionError):
            raise self._ended("answered something that is not a JSON line") from None
        if not isinstance(answer, dict):
            raise self._ended("answered something that is not a JSON object")
        return answer

    def _ended(self, why: str | None = None) -> ProcessEnded:
        assert self.proc is not None
        proc = self.proc
        self.stop()
        if why is None:
            status = proc.returncode
            how = (f"killed by signal {-status}" if status is not None and status < 0 else
                   f"exit status {status}")
            why = (f"ended its process or closed the pipe to the judge ({how}): os._exit, "
                   "a crash or a signal")
        return ProcessEnded(f"the implementation {why}; the check did not finish")

    def stop(self) -> None:
        """Kill the child's process group (it and whatever it started), reap it."""
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()
        for fd in (self.calls, self.answers):
            os.close(fd)
        self.proc = None

    def factory(self, params: dict[str, Any]) -> RemoteImplementation:
        """The implementation constructed in the child (a `Factory` for the runner)."""
        if self.over:
            raise ProcessEnded(f"the check did not finish within its limit of "
                               f"{self.limit:g} s")
        if self.proc is None:
            self.start()
        self.call({"call": "new", "params": params})
        return RemoteImplementation(self)


class RemoteImplementation:
    """The runner's view of the implementation in the child: ``apply`` and ``nodes``
    are calls over the pipe; ``nodes`` returns plain values decoded here."""

    def __init__(self, child: Child) -> None:
        self.child = child

    def apply(self, event: Mapping[str, Any]) -> None:
        self.child.call({"call": "apply", "event": dict(event)})

    def nodes(self) -> dict[str, Any]:
        got = self.child.call({"call": "nodes"})
        if not isinstance(got, dict) or not all(isinstance(v, list) for v in got.values()):
            raise Raised("nodes() returned an unusable value")
        return got


def run_isolated(spec: str, *, examples: int = 200, seed: int = 0, tol: float = 1e-9,
                 save: Path | None = Path(".wmt-conformance"),
                 timeout: float | None = CALL_TIMEOUT, limit: float = CHECK_LIMIT,
                 echo: Callable[[str], None] | None = print) -> ConformanceReport:
    """`run_conformance` of the implementation ``spec`` (``module:Class``), judged here
    while the implementation runs in a child process (module docstring). Raises
    `LoadError` when it cannot be loaded."""
    name = spec.rpartition(":")[2].rpartition(".")[2]
    save = None if save is None else Path(os.path.abspath(save))  # named in full in errors
    with tempfile.TemporaryDirectory(prefix="wmtsim-conformance-") as home:
        child = Child(spec, timeout, limit, home)
        try:
            try:
                child.start()  # a load error before any work (exit 2)
            except (CallTimeout, ProcessEnded) as e:
                raise LoadError(f"implementation {spec!r} cannot be loaded: {e}") from None

            def factory(params: dict[str, Any]) -> RemoteImplementation:
                return child.factory(params)

            factory.__name__ = name  # the minimal trace's file is named after the class
            return run_conformance(factory, examples=examples, seed=seed, tol=tol,
                                   save=save, echo=echo, timeout=None)
        except OSError as e:  # the minimal trace cannot be saved (a file where --save goes)
            from wmtsim.core.output import write_failure

            raise LoadError(str(write_failure(save or "", e) or e)) from None
        finally:
            child.stop()
