"""The judged side of an isolated conformance check: the implementation in a child
process that only answers calls (docs/conformance.md).

``python -m wmtsim.conformance.serve REQUEST`` loads the implementation and answers, on
the two pipe descriptors the request names, one JSON line per call: ``new`` (construct
it with the params), ``apply`` (one event), ``nodes`` (its node values). The answer is
``{"ok": ...}`` or ``{"raised": "Type: message"}``; node values go out as plain JSON
(numbers, strings, booleans), each as the implementation gave it (a miss count of 1.0
goes out as 1.0, an object that is none of these as its repr), so the judge
(`wmtsim.conformance.isolated`) decides on values it decoded itself. Nothing here decides
anything: the implementation can change this process at will, and it only changes
what this process answers.
"""

from __future__ import annotations

import json
import numbers
import os
import sys
from collections.abc import Mapping
from typing import Any


def plain(x: Any) -> Any:
    """``x`` as a plain JSON value of its own kind (never converted to another kind)."""
    if isinstance(x, bool):
        return bool(x)
    if isinstance(x, numbers.Integral):
        return int(x)
    if isinstance(x, numbers.Real):
        return float(x)
    if isinstance(x, str):
        return str.__str__(x)  # the characters, whatever a subclass's __str__ or __eq__
    return {"unusable": repr(x)[:200]}


def node_values(got: Any) -> dict[str, list[Any]]:
    """What ``nodes()`` returned, as ``{id: [u, m, state]}`` of plain values."""
    out: dict[str, list[Any]] = {}
    for key, value in dict(got).items():
        if isinstance(value, Mapping):
            u, m, state = value["u"], value["m"], value["state"]
        else:
            u, m, state = value
        out[str(key)] = [plain(u), plain(m), plain(state)]
    return out


def serve(request: dict[str, Any]) -> None:
    from wmtsim.conformance.runner import load_impl

    sys.path[:0] = [p for p in request["path"] if p not in sys.path]
    calls = os.fdopen(request["calls"], "rb")
    answers = os.fdopen(request["answers"], "wb", buffering=0)

    def answer(data: dict[str, Any]) -> None:
        answers.write(json.dumps(data).encode() + b"\n")

    try:
        factory = load_impl(request["spec"])
    except ValueError as e:
        answer({"error": str(e)})
        return
    answer({"ready": True})
    impl: Any = None
    for raw in calls:
        call = json.loads(raw)
        try:
            if call["call"] == "new":
                impl = factory(call["params"])
                answer({"ok": None})
            elif call["call"] == "apply":
                impl.apply(call["event"])
                answer({"ok": None})
            else:
                got = impl.nodes()
                try:
                    answer({"ok": node_values(got)})
                except BaseException as e:
                    answer({"raised": "nodes() returned an unusable value: "
                                      f"{type(e).__name__}: {str(e)[:300]}"})
        except BaseException as e:  # SystemExit, KeyboardInterrupt: answered, not obeyed
            answer({"raised": f"{type(e).__name__}: {str(e)[:300]}"})


if __name__ == "__main__":
    serve(json.loads(sys.argv[1]))
