"""The adapter protocol: how the conformance kit drives an implementation of WMT.

An implementation is a class (or any callable) that takes the parameters and returns an
object with two methods; the kit feeds it trace events and reads node values back:

.. code-block:: python

    class MyWMT:
        def __init__(self, params: dict[str, Any]) -> None:  # every `Params` field
            ...
        def apply(self, event: dict[str, Any]) -> None:        # one trace line (not expect)
            ...
        def nodes(self) -> Mapping[str, NodeValues]:           # every node: (u, m, state)
            ...

Events are the lines of docs/trace_format.md as dicts, ``query`` first (its ``params``
already merged into the constructor's ``params``); ``expect`` lines and ``note`` fields are
never passed. `nodes` returns every node the trace created, summaries (``"<task>/summary"``)
included, each as a `NodeValues`, a ``(u, m, state)`` tuple or a mapping with those keys.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, Protocol, runtime_checkable

from wmtsim.core.params import Params
from wmtsim.twins.reference import MemoryTree


class NodeValues(NamedTuple):
    """A node's values after an event: retention score u, miss count m, state z."""

    u: float
    m: int
    state: str


@runtime_checkable
class WMTImplementation(Protocol):
    """Events in, node values out (see the module docstring)."""

    def apply(self, event: Mapping[str, Any]) -> None: ...

    def nodes(self) -> Mapping[str, Any]: ...


Factory = Callable[[dict[str, Any]], WMTImplementation]
"""What `wmtsim.conformance.runner.run_conformance` takes: params dict -> implementation."""


class KindError(TypeError):
    """A node value of the wrong kind: which field, the value, what is allowed."""

    def __init__(self, field: str, got: Any, allowed: str) -> None:
        super().__init__(f"{field} {got!r} ({type(got).__name__}); allowed: {allowed}")
        self.field, self.got = field, got


def as_values(value: Any) -> NodeValues:
    """A `NodeValues` from what an implementation returned (tuple or mapping), each value
    of its exact kind: u a real number, m an integer, state a string. Nothing is
    converted: a miss count of 1.99 (or True, or "1") is a TypeError naming the field,
    never truncated to 1 (an adapter returning m + 0.99 once "conformed")."""
    import numbers

    if isinstance(value, Mapping):
        u, m, state = value["u"], value["m"], value["state"]
    else:
        u, m, state = value
    if isinstance(u, bool) or not isinstance(u, numbers.Real):
        raise KindError("u", u, "a real number")
    if isinstance(m, bool) or not isinstance(m, numbers.Integral):
        raise KindError("m", m, "an integer")
    if not isinstance(state, str):
        raise KindError("state", state, "a string")
    return NodeValues(float(u), int(m), state)


class ReferenceAdapter:
    """wmtsim's readable twin (`wmtsim.twins.reference.MemoryTree`) behind the protocol:
    an example adapter, and proof that the protocol carries everything the math needs."""

    def __init__(self, params: dict[str, Any]) -> None:
        self.params = Params.from_dict(params)
        self.tree: MemoryTree | None = None

    def apply(self, event: Mapping[str, Any]) -> None:
        op = event["op"]
        if op == "query":
            self.tree = MemoryTree(self.params, root_id=event.get("id", "root"),
                                   root_tokens=event.get("tokens", 0))
            return
        t = self.tree
        assert t is not None, "the first event is the query"
        if op == "task":
            t.add_task(event["id"], event["parent"], tokens=event.get("tokens", 0))
        elif op == "action":
            t.add_action(event["id"], event["parent"], tokens=event.get("tokens", 0),
                         poisoned=event.get("poisoned", False))
        elif op == "global":
            t.add_global(event["id"], tokens=event.get("tokens", 0),
                         poisoned=event.get("poisoned", False))
        elif op == "outcome":
            t.record_outcome(event["id"], event["result"] == "success")
        elif op == "activate":
            t.activate(event["id"])
        elif op == "complete":
            t.complete(event["id"], summary_tokens=event.get("summary_tokens", 0))
        elif op == "reopen":
            t.reopen(event["id"])
        elif op == "supersede":
            t.supersede(event["id"])
        elif op == "select":
            t.select(event["selected"], event.get("candidates"))
        else:
            raise ValueError(f"unknown op {op!r}")

    def nodes(self) -> dict[str, NodeValues]:
        assert self.tree is not None
        return {i: NodeValues(n.u, n.m, n.state) for i, n in self.tree.nodes.items()}
