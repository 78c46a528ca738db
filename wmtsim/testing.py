"""Test helpers for users of wmtsim (importable from their own test suites).

* `assert_trace_matches`: replay a trace and assert its ``expect`` lines hold;
* the conformance kit (docs/conformance.md): the adapter protocol (`WMTImplementation`,
  `NodeValues`), `run_conformance` (the shipped corpus, then Hypothesis-generated event
  streams, shrinking any disagreement to a minimal trace), `shrink`, `random_trace` (the
  shared seeded generator) and `annotate` (golden ``expect`` lines for any trace).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from wmtsim.conformance.adapter import NodeValues, ReferenceAdapter, WMTImplementation
from wmtsim.conformance.expect import annotate
from wmtsim.conformance.generate import random_trace
from wmtsim.conformance.runner import ConformanceReport, Disagreement, run_conformance, shrink
from wmtsim.core.params import Params

__all__ = ["ConformanceReport", "Disagreement", "NodeValues", "ReferenceAdapter",
           "WMTImplementation", "annotate", "assert_trace_matches", "random_trace",
           "run_conformance", "shrink"]


def assert_trace_matches(
    path_or_events: str | os.PathLike[str] | Iterable[Mapping[str, Any] | str],
    params: Params | None = None,
) -> None:
    """Replay a trace and assert that every ``expect`` line holds.

    Raises:
        AssertionError: at the first divergence; the message names the line number, node,
            field, expected and actual values and the tolerance.
        wmtsim.engine.trace.trace.TraceError: the trace itself is malformed (``"line N: ..."``).
    """
    from wmtsim.engine.trace.trace import check

    divergence = check(path_or_events, params)
    if divergence is not None:
        tol = "exact" if divergence.tol is None else f"{divergence.tol:g}"
        raise AssertionError(
            f"trace diverges at line {divergence.line}: node {divergence.node!r}, "
            f"field {divergence.field}: expected {divergence.expected!r}, "
            f"got {divergence.got!r} (tolerance {tol})"
        )
