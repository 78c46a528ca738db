"""Trace replay: run a JSON Lines trace of WMT events through the kernels.

A trace is one JSON object per line (format: ``docs/trace_format.md``, schema:
``wmtsim/schemas/trace.schema.json``). Replay keeps one growable tree as flat numpy arrays
(node index = creation order, so ``parent[v] < v``) and drives it with the same kernels the
batched engine uses: `scoring._event_score` (Eq. 2), `lifecycle._mark_active_path` and
`lifecycle._candidate_pool` (MODEL.md §4), `scoring._selection_feedback` (Eqs. 3–5),
`lifecycle._branch_priorities` (Eq. 6) and `lifecycle._suppress` (Eq. 7). The pure-Python
`wmtsim.reference` is the oracle that replay is tested against, never used here.

Public API: `replay` (a polars frame, one row per select step and node), `check` (the first
failed ``expect`` line, or None), `run` (both, plus counts), `write_frame` (atomic Parquet or
CSV output) and `TraceError` (a bad trace, ``str`` is ``"line N: ..."``).

Heavy imports (numba kernels, polars, jsonschema) happen on first use so that
``import wmtsim`` stays cheap.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from wmtsim.core.codes import (
    ACTION,
    ACTIVE,
    FAILURE,
    FOLDED,
    GLOBAL,
    KIND_NAMES,
    NO_OUTCOME,
    NO_PARENT,
    OBSOLETE,
    ROOT,
    STATE_NAMES,
    SUCCESS,
    SUMMARY,
    TASK,
)
from wmtsim.core.params import Params

if TYPE_CHECKING:
    import polars as pl

__all__ = [
    "OUTPUT_FORMATS",
    "REPLAY_COLUMNS",
    "Divergence",
    "Replay",
    "Streamed",
    "TraceError",
    "check",
    "read_events",
    "replay",
    "run",
    "stream",
    "write_frame",
]

DEFAULT_TOL = 1e-9
"""Default tolerance of an ``expect`` line's ``u`` (|got − expected| ≤ tol)."""

OUTPUT_FORMATS = (".parquet", ".csv")
"""File extensions `write_frame` (and ``wmtsim replay --out``) accept."""

REPLAY_COLUMNS: tuple[tuple[str, str], ...] = (
    ("step", "Int64"),
    ("line", "Int64"),
    ("node", "String"),
    ("kind", "String"),
    ("state", "String"),
    ("u", "Float64"),
    ("m", "Int64"),
    ("eligible", "Boolean"),
    ("selected", "Boolean"),
    ("priority", "Float64"),
    ("poisoned", "Boolean"),
)
"""Columns of the replay frame and their polars dtypes, in order."""

_SCHEMA_FILE = Path(__file__).resolve().parents[1] / "schemas" / "trace.schema.json"


class TraceError(ValueError):
    """A trace that cannot be replayed; ``str(err)`` is ``"line N: <what is wrong>"``."""

    def __init__(self, line: int, message: str) -> None:
        self.line = line
        self.message = message
        super().__init__(f"line {line}: {message}")

    def __reduce__(self) -> tuple[Any, ...]:  # keep pickling (e.g. across processes) working
        return (type(self), (self.line, self.message))


@dataclass(frozen=True)
class Divergence:
    """The first ``expect`` line that does not hold."""

    line: int
    node: str
    field: str
    expected: object
    got: object
    tol: float | None  # the u tolerance; None for the exact fields m and state

    def __str__(self) -> str:
        tol = "exact" if self.tol is None else f"tolerance {self.tol:g}"
        return (f"line {self.line}: node {self.node!r} field {self.field}: "
                f"expected {self.expected!r}, got {self.got!r} ({tol})")


@dataclass(frozen=True)
class Replay:
    """Everything one replay produced."""

    frame: pl.DataFrame
    params: Params
    steps: int
    expectations: int
    divergence: Divergence | None


# ---------------------------------------------------------------------------------------
# Reading and validating lines


@cache
def _schema() -> dict[str, Any]:
    with _SCHEMA_FILE.open(encoding="utf-8") as f:
        schema: dict[str, Any] = json.load(f)
    return schema


@cache
def _validator() -> Any:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(_schema())


def _op_fields(op: str) -> list[str]:
    return list(_schema()["$defs"][op]["properties"])


_JSON_TYPES = {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
               int: "an integer", float: "a number", type(None): "null"}


def _json_type(value: object) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def _field_name(path: Iterable[object]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


_TYPE_WORDS = {"integer": "an integer", "number": "a number", "string": "a string",
               "boolean": "true or false", "object": "an object", "array": "an array"}


def _friendly(error: Any, event: Mapping[str, Any]) -> str:
    """Turn one jsonschema error into a message a trace author can act on."""
    v = error.validator
    name = _field_name(error.absolute_path)
    op = event.get("op")
    if name == "op" or (v == "required" and "'op'" in error.message):
        if "op" not in event:
            return "missing required field 'op'"
        ops = ", ".join(_schema()["properties"]["op"]["enum"])
        return f"unknown op {event['op']!r} (allowed: {ops})"
    if v == "additionalProperties":
        allowed = list(error.schema.get("properties", {}))
        extra = [k for k in event if k not in allowed]
        if extra == ["params"]:
            return "field 'params' is allowed only on the query line (line 1)"
        return (f"unknown field {extra[0]!r} for op {op!r} (allowed: "
                f"{', '.join(allowed)})")
    if v == "required":
        missing = error.message.split("'")[1]
        return f"op {op!r} is missing required field {missing!r}"
    if v == "anyOf" and op == "expect":
        return "expect needs at least one of 'u', 'm', 'state'"
    if v == "type":
        want = error.validator_value
        word = _TYPE_WORDS.get(want, str(want))
        return (f"field {name!r} must be {word}, got {_json_type(error.instance)} "
                f"{json.dumps(error.instance)}")
    if v == "minLength":
        return f"field {name!r} must be a non-empty string (node ids are non-empty)"
    if v == "minimum":
        return f"field {name!r} must be >= {error.validator_value}, got {error.instance!r}"
    if v == "maximum":
        return f"field {name!r} must be <= {error.validator_value}, got {error.instance!r}"
    if v == "enum":
        choices = ", ".join(repr(x) for x in error.validator_value)
        return f"field {name!r} must be one of {choices}, got {error.instance!r}"
    if v == "uniqueItems":
        items = list(error.instance)
        dup = next((x for i, x in enumerate(items) if x in items[:i]), None)
        return f"field {name!r} lists {dup!r} more than once"
    return f"field {name!r}: {error.message}" if name else error.message


_ERROR_RANK = {"required": 1, "additionalProperties": 2, "type": 3}


# --- a fast validator compiled from the same schema --------------------------------------
#
# jsonschema costs ~30 µs a line, most of a replay's time. `_fast_checks` compiles the
# schema's per-op definitions into plain Python checks that *accept* only lines the schema
# accepts; anything they do not accept goes to jsonschema, which gives the exact verdict
# and the message. A keyword the compiler does not know stops it (so a schema edit cannot
# make the two disagree silently); tests compare both on generated lines.

_Check = Any  # Callable[[object], bool]


def _resolve(node: Any) -> Any:
    while isinstance(node, dict) and "$ref" in node:
        node = _schema()["$defs"][node["$ref"].rsplit("/", 1)[1]]
    return node


def _is_int(x: object) -> bool:
    return type(x) is int


def _compile(node: Any) -> _Check:
    """A predicate for one sub-schema (strict: true only where the schema says valid)."""
    node = _resolve(node)
    if node is True:
        return lambda x: True
    known = {"type", "minLength", "minimum", "maximum", "enum", "items", "uniqueItems",
             "description", "default"}
    unknown = set(node) - known
    if unknown:
        raise NotImplementedError(f"fast trace validator: schema keyword(s) {unknown}")
    checks: list[_Check] = []
    kind = node.get("type")
    if kind == "string":
        checks.append(lambda x: type(x) is str)
    elif kind == "integer":
        checks.append(_is_int)  # 1.0 is an integer to the schema: left to jsonschema
    elif kind == "number":
        checks.append(lambda x: type(x) in (int, float))
    elif kind == "boolean":
        checks.append(lambda x: type(x) is bool)
    elif kind == "object":
        checks.append(lambda x: type(x) is dict)
    elif kind == "array":
        checks.append(lambda x: type(x) is list)
    elif kind is not None:
        raise NotImplementedError(f"fast trace validator: type {kind!r}")
    if "minLength" in node:
        n = node["minLength"]
        checks.append(lambda x: len(x) >= n)
    if "minimum" in node:
        lo = node["minimum"]
        checks.append(lambda x: x >= lo)
    if "maximum" in node:
        hi = node["maximum"]
        checks.append(lambda x: x <= hi)
    if "enum" in node:
        allowed = tuple(node["enum"])
        checks.append(lambda x: type(x) is str and x in allowed)
    if "items" in node:
        item = _compile(node["items"])
        checks.append(lambda x: all(item(y) for y in x))
    if node.get("uniqueItems"):
        checks.append(lambda x: all(type(y) is str for y in x) and len(set(x)) == len(x))
    return lambda x: all(c(x) for c in checks)


@cache
def _fast_checks() -> dict[str, tuple[frozenset[str], dict[str, _Check], list[frozenset[str]]]]:
    """Per op: required fields, a predicate per allowed field, ``anyOf`` required sets."""
    out = {}
    for op in _schema()["properties"]["op"]["enum"]:
        d = _schema()["$defs"][op]
        assert d.get("additionalProperties") is False and d.get("type") == "object"
        any_of = [frozenset(alt["required"]) for alt in d.get("anyOf", [])]
        out[op] = (frozenset(d["required"]),
                   {k: _compile(v) for k, v in d["properties"].items()}, any_of)
    return out


def _fast_valid(event: Mapping[str, Any]) -> bool:
    entry = _fast_checks().get(event.get("op"))  # type: ignore[arg-type]
    if entry is None:
        return False
    required, props, any_of = entry
    if not required <= event.keys():
        return False
    for k, v in event.items():
        check = props.get(k)
        if check is None or not check(v):
            return False
    return not any_of or any(alt <= event.keys() for alt in any_of)


def _validate(event: Mapping[str, Any], line: int) -> None:
    if _fast_valid(event):
        return
    errors = list(_validator().iter_errors(event))
    if not errors:
        return
    # op problems first, then structure (missing/unknown fields), then values.
    def rank(e: Any) -> tuple[int, int]:
        is_op = list(e.absolute_path) == ["op"] or e.schema_path[0] == "required"
        return (0 if is_op else _ERROR_RANK.get(e.validator, 9), len(e.absolute_path))

    raise TraceError(line, _friendly(min(errors, key=rank), event))


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"field {k!r} appears more than once")
        out[k] = v
    return out


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    x = float(text)
    if not math.isfinite(x):  # 1e400 parses as inf: it would pass or fail every check
        raise ValueError(f"the number {text} is out of range (beyond ±1.8e308)")
    return x


def _bad_unicode(obj: Any) -> str | None:
    """The first string (key or value) of ``obj`` holding a lone surrogate, if any."""
    stack = [obj]
    while stack:
        x = stack.pop()
        if isinstance(x, str):
            try:
                x.encode("utf-8")
            except UnicodeEncodeError:
                return x
        elif isinstance(x, dict):
            stack.extend(x.keys())
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)
    return None


def _parse(text: str, line: int) -> dict[str, Any]:
    try:
        obj = json.loads(text, object_pairs_hook=_no_duplicate_keys,
                         parse_constant=_reject_constant, parse_float=_finite_float)
    except json.JSONDecodeError as e:
        raise TraceError(line, f"malformed JSON: {e.msg} (column {e.colno})") from None
    except RecursionError:
        raise TraceError(line, "malformed JSON: nested too deeply") from None
    except ValueError as e:
        raise TraceError(line, f"malformed JSON: {e}") from None
    if not isinstance(obj, dict):
        raise TraceError(line, f"expected a JSON object, got {_json_type(obj)}")
    if "\\u" in text and (bad := _bad_unicode(obj)) is not None:
        raise TraceError(line, f"invalid Unicode: {bad!r} holds a lone surrogate escape")
    return obj


def read_events(path_or_events: str | os.PathLike[str] | Iterable[Mapping[str, Any] | str]
                ) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line number, event)`` for each non-blank line, validated against the schema.

    ``path_or_events`` is a path to a ``.jsonl`` file, or an iterable of dicts or JSON
    strings (numbered from 1). Blank lines are skipped but keep their number. Raises
    `TraceError` for malformed JSON or a line that breaks the schema, and for an empty trace.
    """
    if isinstance(path_or_events, str | os.PathLike):
        source: Iterable[Mapping[str, Any] | str] = _lines(Path(path_or_events))
    else:
        source = path_or_events
    empty = True
    for line, item in enumerate(source, start=1):
        if isinstance(item, str):
            if not item.strip():
                continue
            event = _parse(item, line)
        elif isinstance(item, Mapping):
            event = dict(item)
        else:
            raise TraceError(line, f"expected a JSON object or string, got "
                                   f"{type(item).__name__}")
        _validate(event, line)
        empty = False
        yield line, event
    if empty:
        raise TraceError(1, "the trace is empty; its first line must be a query")


def _lines(path: Path) -> Iterator[str]:
    """The file's lines, decoded one by one so that a bad byte names its line."""
    with path.open("rb") as f:
        for number, raw in enumerate(f, start=1):
            if number == 1:
                if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
                    raise TraceError(1, "the file is UTF-16 text; save the trace as UTF-8")
                # A byte-order mark left by a Windows editor is not part of the JSON.
                raw = raw.removeprefix(b"\xef\xbb\xbf")
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise TraceError(number, f"not UTF-8 text (byte {raw[e.start]:#04x} at "
                                         f"column {e.start + 1}); traces are UTF-8 JSON "
                                         "Lines") from None


# ---------------------------------------------------------------------------------------
# The flat tree


class _FlatTree:
    """One memory tree as growable parallel arrays (node index = creation order)."""

    def __init__(self, capacity: int = 16) -> None:
        self.n = 0
        self.parent = np.full(capacity, NO_PARENT, dtype=np.int64)
        self.kind = np.zeros(capacity, dtype=np.int64)
        self.state = np.zeros(capacity, dtype=np.int64)
        self.u = np.zeros(capacity, dtype=np.float64)
        self.m = np.zeros(capacity, dtype=np.int64)
        self.outcome = np.zeros(capacity, dtype=np.int64)
        self.tokens = np.zeros(capacity, dtype=np.int64)
        self.poisoned = np.zeros(capacity, dtype=np.bool_)
        # Work arrays for the kernels.
        self.on_path = np.zeros(capacity, dtype=np.bool_)
        self.eligible = np.zeros(capacity, dtype=np.bool_)
        self.selected = np.zeros(capacity, dtype=np.bool_)
        self.priority = np.zeros(capacity, dtype=np.float64)
        self.ids: list[str] = []
        self.index: dict[str, int] = {}
        self.defined_on: list[int] = []  # trace line that created each node
        self.summary_of: dict[int, int] = {}  # task index -> its summary node index

    _ARRAYS = ("parent", "kind", "state", "u", "m", "outcome", "tokens", "poisoned",
               "on_path", "eligible", "selected", "priority")

    def _grow(self) -> None:
        cap = 2 * self.parent.shape[0]
        for name in self._ARRAYS:
            old = getattr(self, name)
            new = np.zeros(cap, dtype=old.dtype)
            if name == "parent":
                new[:] = NO_PARENT
            new[: old.shape[0]] = old
            setattr(self, name, new)

    def add(self, node_id: str, kind: int, parent: int, u: float, tokens: int,
            poisoned: bool, line: int) -> int:
        if self.n == self.parent.shape[0]:
            self._grow()
        v = self.n
        self.parent[v] = parent
        self.kind[v] = kind
        self.state[v] = ACTIVE
        self.u[v] = u
        self.m[v] = 0
        self.outcome[v] = NO_OUTCOME
        self.tokens[v] = tokens
        self.poisoned[v] = poisoned
        self.ids.append(node_id)
        self.index[node_id] = v
        self.defined_on.append(line)
        self.n += 1
        return v


# ---------------------------------------------------------------------------------------
# Replay


class _Replayer:
    """Applies validated events, in order, to a `_FlatTree`."""

    def __init__(self, params: Params, on_step: Callable[[_Step], None] | None = None
                 ) -> None:
        self.params = params
        self.p = params.pack()
        self.tree = _FlatTree()
        self.active = 0
        self.step = 0
        self.query_line = 0
        self.expectations = 0
        self.divergence: Divergence | None = None
        self.on_step = on_step
        self.last: _Step | None = None

    # -- helpers --------------------------------------------------------------------

    def _node(self, node_id: str, line: int, role: str = "id") -> int:
        v = self.tree.index.get(node_id)
        if v is None:
            what = "id" if role == "id" else f"{role} id"
            raise TraceError(line, f"unknown {what} {node_id!r}")
        return v

    def _kind_name(self, v: int) -> str:
        """The node's kind with its article: "a task", "an action"."""
        name = KIND_NAMES[int(self.tree.kind[v])]
        return f"an {name}" if name[0] in "aeiou" else f"a {name}"

    def _task_or_root(self, node_id: str, line: int, role: str) -> int:
        v = self._node(node_id, line, "parent" if role == "parent" else "id")
        if self.tree.kind[v] not in (ROOT, TASK):
            raise TraceError(line, f"{role} {node_id!r} is {self._kind_name(v)}, "
                                   "not a task or the root")
        return v

    def _task(self, node_id: str, line: int, op: str) -> int:
        v = self._node(node_id, line)
        if self.tree.kind[v] != TASK:
            raise TraceError(line, f"{op} needs a task; {node_id!r} is "
                                   f"{self._kind_name(v)}")
        return v

    def _new(self, node_id: str, line: int, kind: int, parent: int, u: float,
             event: Mapping[str, Any], tokens_field: str = "tokens") -> int:
        if node_id in self.tree.index:
            first = self.tree.defined_on[self.tree.index[node_id]]
            raise TraceError(line, f"duplicate id {node_id!r} (already defined on line "
                                   f"{first})")
        return self.tree.add(node_id, kind, parent, u, int(event.get(tokens_field, 0)),
                             bool(event.get("poisoned", False)), line)

    def _on_path(self) -> np.ndarray:
        from wmtsim.core.lifecycle import _mark_active_path

        t = self.tree
        _mark_active_path(t.parent, self.active, t.n, t.on_path)
        return t.on_path

    def _pool(self) -> np.ndarray:
        from wmtsim.core.lifecycle import _candidate_pool

        t = self.tree
        on_path = self._on_path()
        _candidate_pool(t.parent, t.kind, t.state, on_path, t.n, t.eligible)
        return t.eligible

    def _why_not_in_pool(self, v: int) -> str:
        t = self.tree
        if t.kind[v] == ROOT:
            return "it is the root (always in the prompt)"
        if t.on_path[v]:
            return "it is on the active path (always in the prompt)"
        a = v
        while a != NO_PARENT:
            if t.state[a] == OBSOLETE:
                return ("it is obsolete" if a == v
                        else f"it is inside the obsolete branch {t.ids[a]!r}")
            a = int(t.parent[a])
        if t.kind[v] == TASK and t.state[v] == FOLDED:
            return "it is folded (its summary stands for it)"
        return "it is hidden inside a folded branch"

    # -- ops ------------------------------------------------------------------------

    def apply(self, line: int, ev: dict[str, Any]) -> None:
        op = ev["op"]
        if self.query_line == 0 and op != "query":
            raise TraceError(line, f"the first line must be a query, got op {op!r}")
        getattr(self, f"_op_{op}")(line, ev)

    def _op_query(self, line: int, ev: dict[str, Any]) -> None:
        if self.query_line:
            raise TraceError(line, "a trace has exactly one query (already on line "
                                   f"{self.query_line})")
        if "params" in ev:
            try:
                self.params = self.params.with_(**ev["params"])
            except (TypeError, ValueError) as e:
                raise TraceError(line, f"params: {e}") from None
            self.p = self.params.pack()
        self.query_line = line
        self._new(ev.get("id", "root"), line, ROOT, NO_PARENT, self.params.u_init_root, ev)
        self.active = 0

    def _op_task(self, line: int, ev: dict[str, Any]) -> None:
        parent = self._task_or_root(ev["parent"], line, "parent")
        self._new(ev["id"], line, TASK, parent, self.params.u_init_task, ev)

    def _op_action(self, line: int, ev: dict[str, Any]) -> None:
        parent = self._task_or_root(ev["parent"], line, "parent")
        self._new(ev["id"], line, ACTION, parent, self.params.u_init_action, ev)

    def _op_global(self, line: int, ev: dict[str, Any]) -> None:
        self._new(ev["id"], line, GLOBAL, NO_PARENT, self.params.u_init_global, ev)

    def _op_activate(self, line: int, ev: dict[str, Any]) -> None:
        self.active = self._task_or_root(ev["id"], line, "activate target")

    def _op_outcome(self, line: int, ev: dict[str, Any]) -> None:
        from wmtsim.core.scoring import _event_resets_m, _event_score

        v = self._node(ev["id"], line)
        if self.tree.kind[v] != ACTION:
            raise TraceError(line, f"outcome on {ev['id']!r}, which is "
                                   f"{self._kind_name(v)}; outcomes belong to actions")
        success = ev["result"] == "success"
        t = self.tree
        t.outcome[v] = SUCCESS if success else FAILURE
        t.u[v] = _event_score(success, self.p)  # Eq. 2: replaces u
        if _event_resets_m(self.p):
            t.m[v] = 0

    def _op_complete(self, line: int, ev: dict[str, Any]) -> None:
        v = self._task(ev["id"], line, "complete")
        t = self.tree
        if t.state[v] in (FOLDED, OBSOLETE):
            raise TraceError(line, f"cannot complete task {ev['id']!r}: it is "
                                   f"{STATE_NAMES[int(t.state[v])]}")
        on_path = bool(self._on_path()[v])
        t.state[v] = FOLDED
        s = t.summary_of.get(v)
        if s is None:
            s = self._new(f"{ev['id']}/summary", line, SUMMARY, v, self.params.u_init_summary,
                          ev, tokens_field="summary_tokens")
            t.summary_of[v] = s
        else:  # re-fold after reopen: same node, summarised anew
            t.u[s] = self.params.u_init_summary
            t.m[s] = 0
            t.tokens[s] = int(ev.get("summary_tokens", 0))
        if on_path:
            self.active = int(t.parent[v])

    def _op_reopen(self, line: int, ev: dict[str, Any]) -> None:
        v = self._task(ev["id"], line, "reopen")
        state = int(self.tree.state[v])
        if state != FOLDED:
            raise TraceError(line, f"cannot reopen task {ev['id']!r}: it is "
                                   f"{STATE_NAMES[state]}, not folded")
        self.tree.state[v] = ACTIVE

    def _op_supersede(self, line: int, ev: dict[str, Any]) -> None:
        v = self._node(ev["id"], line)
        if self.tree.kind[v] == ROOT:
            raise TraceError(line, f"cannot supersede the root {ev['id']!r}")
        self.tree.state[v] = OBSOLETE

    def _op_select(self, line: int, ev: dict[str, Any]) -> None:
        from wmtsim.core.lifecycle import _branch_priorities, _suppress
        from wmtsim.core.scoring import _selection_feedback

        t = self.tree
        n = t.n
        on_path = self._on_path()
        if "candidates" in ev:
            eligible = t.eligible
            eligible[:n] = False
            for c in ev["candidates"]:
                eligible[self._node(c, line, "candidate")] = True
        else:
            eligible = self._pool()
        selected = t.selected
        selected[:n] = False
        for s in ev["selected"]:
            v = self._node(s, line, "selected")
            if not eligible[v]:
                if "candidates" in ev:
                    raise TraceError(line, f"selected {s!r} is not among the candidates")
                raise TraceError(line, f"selected {s!r} is not in the candidate pool: "
                                       f"{self._why_not_in_pool(v)}")
            selected[v] = True
        is_global = t.kind == GLOBAL
        _selection_feedback(t.u, t.m, eligible, selected, is_global, self.p, n)  # Eqs. 3-5
        _branch_priorities(t.parent, t.kind, t.state, t.u, t.outcome, n, self.p,
                           t.priority)  # Eq. 6
        priority = t.priority[:n].copy()
        _suppress(t.kind, t.state, on_path, t.priority, n, self.p)  # Eq. 7
        self.step += 1
        self.last = _Step(self.step, line, n, t.state[:n].copy(), t.u[:n].copy(),
                          t.m[:n].copy(), eligible[:n].copy(), selected[:n].copy(), priority)
        if self.on_step is not None:
            self.on_step(self.last)

    def _op_expect(self, line: int, ev: dict[str, Any]) -> None:
        v = self._node(ev["id"], line)
        t = self.tree
        self.expectations += 1
        if self.divergence is not None:
            return
        tol = float(ev.get("tol", DEFAULT_TOL))
        got_u = float(t.u[v])
        if "u" in ev and not abs(got_u - float(ev["u"])) <= tol:
            self.divergence = Divergence(line, ev["id"], "u", ev["u"], got_u, tol)
        elif "m" in ev and int(t.m[v]) != ev["m"]:
            self.divergence = Divergence(line, ev["id"], "m", ev["m"], int(t.m[v]), None)
        elif "state" in ev and STATE_NAMES[int(t.state[v])] != ev["state"]:
            self.divergence = Divergence(line, ev["id"], "state", ev["state"],
                                         STATE_NAMES[int(t.state[v])], None)

    # -- output ---------------------------------------------------------------------

    def frame(self, steps: Sequence[_Step]) -> pl.DataFrame:
        """The replay frame of ``steps`` (node ids, kinds and poison flags never change
        once a node exists, so they are read from the tree)."""
        import polars as pl

        schema = {name: getattr(pl, dtype) for name, dtype in REPLAY_COLUMNS}
        if not steps:
            return pl.DataFrame(schema=schema)
        t = self.tree
        ids = np.array(t.ids, dtype=object)
        kinds = np.array(KIND_NAMES, dtype=object)[t.kind[: t.n]]
        states = np.array(STATE_NAMES, dtype=object)
        sizes = [z.n for z in steps]
        cols: dict[str, Any] = {
            "step": np.repeat([z.step for z in steps], sizes),
            "line": np.repeat([z.line for z in steps], sizes),
            "node": np.concatenate([ids[: z.n] for z in steps]).tolist(),
            "kind": np.concatenate([kinds[: z.n] for z in steps]).tolist(),
            "state": states[np.concatenate([z.state for z in steps])].tolist(),
            "poisoned": np.concatenate([t.poisoned[: z.n] for z in steps]),
        }
        for name in ("u", "m", "eligible", "selected", "priority"):
            cols[name] = np.concatenate([getattr(z, name) for z in steps])
        df = pl.DataFrame({name: cols[name] for name, _ in REPLAY_COLUMNS}, schema=schema)
        return df.with_columns(pl.col("priority").fill_nan(None))


@dataclass(frozen=True)
class _Step:
    """One select step's per-node values (for the replay frame)."""

    step: int
    line: int
    n: int
    state: np.ndarray
    u: np.ndarray
    m: np.ndarray
    eligible: np.ndarray
    selected: np.ndarray
    priority: np.ndarray


def run(path_or_events: str | os.PathLike[str] | Iterable[Mapping[str, Any] | str],
        params: Params | None = None) -> Replay:
    """Replay a trace and return the frame, the parameters used and the expectation result.

    ``params`` is the base; a ``params`` object on the query line overrides its fields.
    Raises `TraceError` for a bad trace (the whole trace is read before returning).
    """
    steps: list[_Step] = []
    r = _Replayer(params if params is not None else Params(), on_step=steps.append)
    for line, event in read_events(path_or_events):
        r.apply(line, event)
    return Replay(frame=r.frame(steps), params=r.params, steps=r.step,
                  expectations=r.expectations, divergence=r.divergence)


@dataclass(frozen=True)
class Streamed:
    """What `stream` produced: counts, the expectation result and the last step's rows."""

    last: pl.DataFrame  # the rows of the last select step (empty without one)
    rows: int  # rows of the whole replay (written to ``out`` when given)
    params: Params
    steps: int
    expectations: int
    divergence: Divergence | None


BATCH_ROWS = 250_000
"""Rows `stream` gathers before writing a batch to ``out``."""


def stream(path_or_events: str | os.PathLike[str] | Iterable[Mapping[str, Any] | str],
           params: Params | None = None, out: str | os.PathLike[str] | None = None,
           batch_rows: int = BATCH_ROWS) -> Streamed:
    """Replay a trace keeping memory bounded by the tree, not the trace.

    Without ``out`` no frame is kept (what `check` needs); with ``out`` (``.parquet`` or
    ``.csv``) the frame is written in batches of about ``batch_rows`` rows to a temporary
    file beside ``out``, which replaces ``out`` only when the whole trace has replayed. A
    bad trace raises `TraceError` and leaves ``out`` untouched.
    """
    writer = _BatchWriter(Path(out), batch_rows) if out is not None else None
    pending: list[_Step] = []
    rows = 0

    def keep(step: _Step) -> None:
        nonlocal rows
        rows += step.n
        if writer is not None:
            pending.append(step)
            if sum(z.n for z in pending) >= batch_rows:
                writer.write(r.frame(pending))
                pending.clear()

    r = _Replayer(params if params is not None else Params(), on_step=keep)
    try:
        for line, event in read_events(path_or_events):
            r.apply(line, event)
        if writer is not None:
            writer.write(r.frame(pending))
            writer.commit()
    finally:
        if writer is not None:
            writer.abort()
    last = r.frame([r.last] if r.last is not None else [])
    return Streamed(last=last, rows=rows, params=r.params, steps=r.step,
                    expectations=r.expectations, divergence=r.divergence)


class _BatchWriter:
    """Appends frames to a temporary Parquet or CSV file; `commit` renames it into place."""

    def __init__(self, path: Path, batch_rows: int) -> None:
        suffix = path.suffix.lower()
        if suffix not in OUTPUT_FORMATS:
            raise ValueError(f"cannot write {str(path)!r}: unsupported extension "
                             f"{path.suffix or '(none)'!r}; allowed: "
                             f"{', '.join(OUTPUT_FORMATS)}")
        self.path, self.csv = path, suffix == ".csv"
        self.file: Any = None  # opened on the first write: a bad trace creates nothing
        self.created: list[Path] = []  # folders made for ``path``, removed on abort
        self.parquet: Any = None
        self.header = True
        self.done = False

    def _open(self) -> None:
        missing = [p for p in self.path.parents if not p.exists()]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.created = missing
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp",
                                   dir=self.path.parent)
        self.tmp = Path(tmp)
        self.file = os.fdopen(fd, "wb")

    def write(self, frame: pl.DataFrame) -> None:
        if self.file is None:
            self._open()
        if self.csv:
            frame.write_csv(self.file, include_header=self.header)
            self.header = False
            return
        import pyarrow.parquet as pq

        table = frame.to_arrow()
        if self.parquet is None:
            self.parquet = pq.ParquetWriter(self.file, table.schema)
        self.parquet.write_table(table)

    def commit(self) -> None:
        if self.file is None:
            self._open()
        if self.parquet is not None:
            self.parquet.close()
        elif not self.csv:  # no rows at all: an empty file with the schema
            import polars as pl

            pl.DataFrame(schema={n: getattr(pl, d) for n, d in REPLAY_COLUMNS}
                         ).write_parquet(self.file)
        self.file.flush()
        os.fsync(self.file.fileno())
        self.file.close()
        os.replace(self.tmp, self.path)
        self.done = True

    def abort(self) -> None:
        if self.done or self.file is None:
            return
        if self.parquet is not None:
            with contextlib.suppress(Exception):
                self.parquet.close()
        self.file.close()
        self.tmp.unlink(missing_ok=True)
        for folder in self.created:  # innermost first
            with contextlib.suppress(OSError):
                folder.rmdir()


def replay(path_or_events: str | os.PathLike[str] | Iterable[Mapping[str, Any] | str],
           params: Params | None = None) -> pl.DataFrame:
    """Replay a trace; one row per (select step, node existing at that step).

    Columns (`REPLAY_COLUMNS`): ``step`` (1, 2, …), ``line`` (of the select), ``node``,
    ``kind``, ``state`` (after Eq. 7), ``u`` and ``m`` (after Eqs. 3–5), ``eligible`` (ε),
    ``selected`` (s), ``priority`` (Eq. 6 of the node's own branch for a task, computed
    before suppression; null otherwise) and ``poisoned``. Expect lines are evaluated but do
    not raise; use `check` or `wmtsim.testing.assert_trace_matches` for that.

    Raises:
        TraceError: the trace is malformed or inconsistent (``str`` is ``"line N: ..."``).
    """
    return run(path_or_events, params).frame


def check(path_or_events: str | os.PathLike[str] | Iterable[Mapping[str, Any] | str],
          params: Params | None = None) -> Divergence | None:
    """Replay a trace and return the first ``expect`` that does not hold, or None.

    Streams (`stream`): memory is bounded by the tree, however long the trace."""
    return stream(path_or_events, params).divergence


def write_frame(frame: pl.DataFrame, out: str | os.PathLike[str]) -> Path:
    """Write ``frame`` to ``.parquet`` or ``.csv`` (by extension), atomically.

    The data goes to a temporary file in the target directory, which is then renamed over
    ``out`` (`os.replace`), so a reader never sees a half-written file.
    """
    path = Path(out)
    suffix = path.suffix.lower()
    if suffix not in OUTPUT_FORMATS:
        raise ValueError(f"cannot write {str(path)!r}: unsupported extension "
                         f"{path.suffix or '(none)'!r}; allowed: {', '.join(OUTPUT_FORMATS)}")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        if suffix == ".parquet":
            frame.write_parquet(tmp)
        else:
            frame.write_csv(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
