"""Golden ``expect`` lines for any trace: the reference replay's values written back.

`annotate` replays a trace through the reference (the kernels, `wmtsim.engine.trace.trace.walk`)
and returns its lines with ``expect`` lines inserted at the chosen points: one line per node
existing there, holding the node's ``u``, ``m`` and ``state`` and the tolerance ``tol``.

Tolerances: ``m`` and ``state`` are always compared exactly; ``u`` passes when
``|got − expected| ≤ tol``. ``u`` is written with Python's shortest round-trip repr, so
``tol = 0`` demands the reference's exact bits (wmtsim's own kernels and twin agree to the
bit); the default `DEFAULT_TOL` (1e-9, the trace format's default) leaves room for an
implementation that computes ρ^k with ``pow`` or sums Eq. 6 in another order.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from wmtsim.core.params import Params
from wmtsim.engine.trace.events import _lines
from wmtsim.engine.trace.trace import TreeView, walk

DEFAULT_TOL = 1e-9
"""Tolerance written into generated ``expect`` lines unless told otherwise."""

POINTS = ("select", "every", "end")
"""Where `annotate` adds expect lines: after every select (default), after every event,
after the last line; trace line numbers may be given as well."""


def expect_lines(view: TreeView, tol: float = DEFAULT_TOL) -> list[str]:
    """One ``expect`` line (JSON) per node of ``view``, in creation order."""
    return [json.dumps({"op": "expect", "id": i, "u": u, "m": m, "state": z, "tol": tol})
            for i, (u, m, z) in view.nodes().items()]


def _source(path_or_events: str | os.PathLike[str] | Iterable[Mapping[str, Any] | str]
            ) -> list[str]:
    if isinstance(path_or_events, str | os.PathLike):
        return [line.rstrip("\r\n") for line in _lines(Path(path_or_events))]
    return [x.rstrip("\r\n") if isinstance(x, str) else json.dumps(dict(x))
            for x in path_or_events]


def annotate(path_or_events: str | os.PathLike[str] | Iterable[Mapping[str, Any] | str],
             at: Iterable[str | int] = ("select",), tol: float = DEFAULT_TOL,
             params: Params | None = None, replace: bool = False) -> list[str]:
    """The trace's lines (kept as written) with reference ``expect`` lines added.

    ``at``: any of `POINTS` and trace line numbers (after that line). ``replace``: drop the
    trace's own ``expect`` lines first. Raises `wmtsim.engine.trace.trace.TraceError` for a bad
    trace and ValueError for a bad ``at`` or ``tol``.
    """
    points = list(at)
    lines_at = {int(p) for p in points if not isinstance(p, str)}
    words = {p for p in points if isinstance(p, str)}
    if words - set(POINTS) or any(n < 1 for n in lines_at):
        raise ValueError(f"at={points!r}; allowed: {', '.join(POINTS)} or line numbers >= 1")
    if not (tol >= 0.0 and tol < float("inf")):
        raise ValueError(f"tol={tol!r}; allowed: a finite number >= 0")
    source = _source(path_or_events)
    out: list[str] = []
    view: TreeView | None = None
    done = 0  # source lines copied so far
    fired: set[int] = set()  # lines of the events met
    events = [x for x in source]
    for line, event, view in walk(events, params):
        if replace and event["op"] == "expect":
            out.extend(source[done:line - 1])
            done = line
            continue
        out.extend(source[done:line])
        done = line
        fired.add(line)
        if ("every" in words and event["op"] != "expect") or line in lines_at or (
                "select" in words and event["op"] == "select"):
            out.extend(expect_lines(view, tol))
    if lines_at - fired:  # asked for a line with no event: say so, not a silent omission
        raise ValueError(f"at={sorted(lines_at - fired)[:5]!r}: no event on that line of the "
                         f"trace ({len(source)} lines); allowed: {', '.join(POINTS)} or the "
                         "line number of an event")
    out.extend(source[done:])
    if "end" in words and view is not None:
        out.extend(expect_lines(view, tol))
    return out
