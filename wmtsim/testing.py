"""Test helpers for users of wmtsim (importable from their own test suites)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from wmtsim.core.params import Params

__all__ = ["assert_trace_matches"]


def assert_trace_matches(
    path_or_events: str | os.PathLike[str] | Iterable[Mapping[str, Any] | str],
    params: Params | None = None,
) -> None:
    """Replay a trace and assert that every ``expect`` line holds.

    Raises:
        AssertionError: at the first divergence; the message names the line number, node,
            field, expected and actual values and the tolerance.
        wmtsim.engine.trace.TraceError: the trace itself is malformed (``"line N: ..."``).
    """
    from wmtsim.engine.trace import check

    divergence = check(path_or_events, params)
    if divergence is not None:
        tol = "exact" if divergence.tol is None else f"{divergence.tol:g}"
        raise AssertionError(
            f"trace diverges at line {divergence.line}: node {divergence.node!r}, "
            f"field {divergence.field}: expected {divergence.expected!r}, "
            f"got {divergence.got!r} (tolerance {tol})"
        )
