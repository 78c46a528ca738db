"""Reading a JSON Lines trace: parsing, strict JSON rules, and validation against
`wmtsim/schemas/trace.schema.json` (a compiled fast path, with jsonschema's errors turned
into friendly `TraceError` messages on failure).

Replay of the validated events is `wmtsim.engine.trace.replay`; the public API is
`wmtsim.engine.trace.trace`.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

if TYPE_CHECKING:
    pass


_SCHEMA_FILE = Path(__file__).resolve().parents[2] / "schemas" / "trace.schema.json"


class TraceError(ValueError):
    """A trace that cannot be replayed; ``str(err)`` is ``"line N: <what is wrong>"``."""

    def __init__(self, line: int, message: str) -> None:
        self.line = line
        self.message = message
        super().__init__(f"line {line}: {message}")

    def __reduce__(self) -> tuple[Any, ...]:  # keep pickling (e.g. across processes) working
        return (type(self), (self.line, self.message))


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
        # The column in the line itself: the decoder counts the line's own line break,
        # so an error at its end would read "column 1" (of a line after it).
        column = min(e.pos, len(text.rstrip("\r\n"))) + 1
        raise TraceError(line, f"malformed JSON: {e.msg} (column {column})") from None
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

    ``path_or_events`` is a path to a ``.jsonl`` file (or a shipped trace's name,
    ``paper_a4``, or repository path: `wmtsim.core.shipped`), or an iterable of dicts or JSON
    strings (numbered from 1). Blank lines are skipped but keep their number. Raises
    `TraceError` for malformed JSON or a line that breaks the schema, and for an empty trace.
    """
    if isinstance(path_or_events, str | os.PathLike):
        from wmtsim.core.shipped import TRACES, resolve  # a shipped trace by name too

        source: Iterable[Mapping[str, Any] | str] = _lines(resolve(path_or_events, TRACES))
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


MAX_LINE_BYTES = 1 << 22  # 4 MiB: a trace line longer than this is refused, not buffered


def _lines(path: Path) -> Iterator[str]:
    """The file's lines (`decode_lines`)."""
    from wmtsim.core.input_files import open_regular

    with open_regular(path) as f:
        yield from decode_lines(f)


def decode_lines(f: BinaryIO) -> Iterator[str]:
    """The lines of a trace read as bytes (a file, or an upload in the dashboard),
    decoded one by one so that a bad byte names its line and its column (the byte's
    position in the line); each read is capped at `MAX_LINE_BYTES`, so a file without
    line breaks (``/dev/zero``) fails at once instead of filling memory. Lines end at
    ``\\n`` only, as JSON Lines say (a U+2028 inside a string is part of its line)."""
    for number, raw in enumerate(iter(lambda: f.readline(MAX_LINE_BYTES + 1), b""),
                                 start=1):
        if len(raw) > MAX_LINE_BYTES:
            raise TraceError(number, f"the line is longer than {MAX_LINE_BYTES:,} bytes "
                                     "(a trace line is one JSON event); allowed: lines "
                                     f"of at most {MAX_LINE_BYTES:,} bytes")
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
