"""The stub log format (docs/stub_logs.md; schema ``wmtsim/schemas/stub_log.schema.json``)
and its streaming reader.

One JSON object per line, one decision each: a ``selection`` (the candidates the selector
saw and the ids it chose), an ``answer`` at a critical step (what was in context; whether
the step was compromised and the answer correct) or a ``fold`` (which poisoned memories
leaked into the summary). Every event type is optional; unknown keys are refused.

`read_log` reads line by line (a line is at most `MAX_LINE_BYTES`), validates each event
and appends its numbers to compact typed columns (`array.array`, 8 bytes a number): memory
grows with the events kept, never with the file's text, and stops at ``max_events`` with a
clear error. Every problem is a `StubLogError` naming the file, the line, the field, the
bad value and what is allowed (the command line exits 2 on it).
"""

from __future__ import annotations

import json
import math
import os
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from wmtsim.core.input_files import open_regular
from wmtsim.core.world_spec import WorldSpec

MAX_LINE_BYTES = 1 << 20
"""The longest line read (a selection of thousands of candidates fits)."""
MAX_CANDIDATES = 10_000
"""The most candidates (or poisoned memories) one event may list."""
MAX_EVENTS = 500_000
"""`read_log`'s default cap on events (about 40 MB of columns at 8 candidates an event)."""
MAX_ID_CHARS = 200

EVENT_TYPES = ("selection", "answer", "fold")
SELECTION_KEYS = ("type", "candidates", "chosen", "budget", "top_k", "struct_tokens", "note")
CANDIDATE_KEYS = ("id", "tokens", "relevance", "same_subtask", "u", "priority", "poisoned")
ANSWER_KEYS = ("type", "evidence", "poisoned", "context_tokens", "compromised", "correct",
               "note")
ANSWER_POISON_KEYS = ("id", "persuasiveness")
FOLD_KEYS = ("type", "poisoned", "note")
FOLD_POISON_KEYS = ("id", "rider", "leaked")


class StubLogError(ValueError):
    """A problem with a stub log: ``source``, ``line`` (1-based; 0: the file), ``key`` (the
    field's path in the event), the bad ``value`` and what is ``allowed``."""

    def __init__(self, source: str, line: int, key: str, problem: str, allowed: str = ""):
        self.source, self.line, self.key = source, line, key
        self.problem, self.allowed = problem, allowed
        where = f"line {line}: " if line else ""
        text = f"{source}: {where}{key}: {problem}"
        super().__init__(text + (f"; allowed: {allowed}" if allowed else ""))


@dataclass
class Selections:
    """The selection events as one row per candidate whose fate the likelihood reads.

    ``relevance`` r, ``poisoned`` π (0/1), ``du`` = u − ½ (0 when the agent keeps no
    score), ``db`` = U_b − ½ (0 without a branch priority), ``has_u``/``has_b`` (0/1) and
    ``chosen`` y (0/1). An event whose budget or top-k cap could have bound is not in
    the rows (`censored_events` counts them, `censored` their candidates;
    docs/stub_logs.md, "Budget and cap").
    """

    relevance: array = field(default_factory=lambda: array("d"))
    poisoned: array = field(default_factory=lambda: array("d"))
    du: array = field(default_factory=lambda: array("d"))
    db: array = field(default_factory=lambda: array("d"))
    has_u: array = field(default_factory=lambda: array("b"))
    has_b: array = field(default_factory=lambda: array("b"))
    chosen: array = field(default_factory=lambda: array("b"))
    events: int = 0
    censored: int = 0
    censored_events: int = 0


@dataclass
class Answers:
    """The answer events, one row each; the persuasiveness of each poisoned memory in
    context is flat in ``persuasiveness``, event ``k``'s being
    ``persuasiveness[start[k]:start[k + 1]]`` (``start`` has one entry more than rows)."""

    evidence: array = field(default_factory=lambda: array("b"))
    context_tokens: array = field(default_factory=lambda: array("d"))
    compromised: array = field(default_factory=lambda: array("b"))
    correct: array = field(default_factory=lambda: array("b"))
    persuasiveness: array = field(default_factory=lambda: array("d"))
    start: array = field(default_factory=lambda: array("q", [0]))


@dataclass
class Folds:
    """The fold events as one row per poisoned memory the summariser read."""

    rider: array = field(default_factory=lambda: array("b"))
    leaked: array = field(default_factory=lambda: array("b"))
    events: int = 0


@dataclass
class StubLog:
    """A read log: its columns per event type and how many lines and events it had."""

    source: str
    selections: Selections
    answers: Answers
    folds: Folds
    lines: int = 0
    events: int = 0


@dataclass(frozen=True)
class Relevance:
    """The latent relevance a candidate logged with ``same_subtask`` instead of
    ``relevance`` gets: wmtsim's world's (`WorldSpec.relevance` for its own subtask,
    × `WorldSpec.cross_relevance` for another's; docs/world.md)."""

    own: float
    other: float

    @classmethod
    def of_world(cls, world: WorldSpec | None = None) -> Relevance:
        w = world or WorldSpec()
        return cls(own=float(w.relevance), other=float(w.relevance * w.cross_relevance))


class _Line:
    """The checks of one event, each naming the line and the key."""

    def __init__(self, source: str, line: int):
        self.source, self.line = source, line

    def error(self, key: str, problem: str, allowed: str = "") -> StubLogError:
        return StubLogError(self.source, self.line, key, problem, allowed)

    def keys(self, obj: Any, allowed: tuple[str, ...], path: str) -> dict[str, Any]:
        if not isinstance(obj, dict):
            raise self.error(path or "(event)", f"{_show(obj)} is not an object",
                             "a JSON object")
        for key in obj:
            if key not in allowed:
                raise self.error(f"{path}.{key}" if path else key, "unknown key",
                                 ", ".join(allowed))
        return obj

    def boolean(self, obj: dict[str, Any], key: str, path: str,
                default: bool | None = None) -> bool:
        if key not in obj:
            if default is None:
                raise self.error(_join(path, key), "is required", "true or false")
            return default
        v = obj[key]
        if not isinstance(v, bool):
            raise self.error(_join(path, key), f"{_show(v)} is invalid", "true or false")
        return v

    def number(self, obj: dict[str, Any], key: str, path: str, lo: float, hi: float,
               default: float | None = None, integer: bool = False) -> float:
        if key not in obj:
            if default is None:
                raise self.error(_join(path, key), "is required", _range(lo, hi, integer))
            return default
        v = obj[key]
        ok = (isinstance(v, int) if integer else isinstance(v, (int, float)))
        if isinstance(v, bool) or not ok or not math.isfinite(v) or not lo <= v <= hi:
            raise self.error(_join(path, key), f"{_show(v)} is invalid",
                             _range(lo, hi, integer))
        return float(v)

    def ident(self, obj: dict[str, Any], key: str, path: str) -> str:
        v = obj.get(key)
        if not isinstance(v, str) or not 0 < len(v) <= MAX_ID_CHARS:
            raise self.error(_join(path, key), "is required" if key not in obj else
                             f"{_show(v)} is invalid", f"a string of 1 to {MAX_ID_CHARS} "
                             "characters")
        return v

    def items(self, obj: dict[str, Any], key: str, path: str, required: bool) -> list[Any]:
        if key not in obj:
            if required:
                raise self.error(_join(path, key), "is required", "an array")
            return []
        v = obj[key]
        if not isinstance(v, list) or len(v) > MAX_CANDIDATES:
            raise self.error(_join(path, key), f"{_show(v)} is invalid",
                             f"an array of at most {MAX_CANDIDATES} items")
        return v

    def note(self, obj: dict[str, Any]) -> None:
        if "note" in obj and not isinstance(obj["note"], str):
            raise self.error("note", f"{_show(obj['note'])} is invalid", "a string")


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _range(lo: float, hi: float, integer: bool) -> str:
    kind = "an integer" if integer else "a finite number"
    return f"{kind} in [{lo:g}, {hi:g}]"


def _show(v: Any) -> str:
    text = json.dumps(v, allow_nan=True) if not isinstance(v, float) else repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _no_constant(name: str) -> float:
    # JSON has no NaN or Infinity; Python's json module would accept them.
    raise ValueError(f"{name} is not a JSON number")


def _selection(c: _Line, ev: dict[str, Any], out: Selections, rel: Relevance) -> None:
    c.keys(ev, SELECTION_KEYS, "")
    c.note(ev)
    raw = c.items(ev, "candidates", "", required=True)
    if not raw:
        raise c.error("candidates", "[] is invalid", "at least one candidate")
    budget = c.number(ev, "budget", "", 0.0, 1e15, default=math.inf)
    top_k = int(c.number(ev, "top_k", "", 0, 1e9, default=0, integer=True))
    struct = c.number(ev, "struct_tokens", "", 0.0, 1e9, default=0.0)
    cands: dict[str, tuple[float, float, float, float, int, int, float]] = {}
    for k, cand in enumerate(raw):
        path = f"candidates[{k}]"
        c.keys(cand, CANDIDATE_KEYS, path)
        cid = c.ident(cand, "id", path)
        if cid in cands:
            raise c.error(f"{path}.id", f"{_show(cid)} is listed twice",
                          "ids unique within the event")
        has_rel, has_same = "relevance" in cand, "same_subtask" in cand
        if has_rel == has_same:
            raise c.error(path, "needs exactly one of relevance, same_subtask",
                          "relevance (a number in [0, 1]) or same_subtask (true or false)")
        r = (c.number(cand, "relevance", path, 0.0, 1.0) if has_rel else
             (rel.own if c.boolean(cand, "same_subtask", path) else rel.other))
        tokens = c.number(cand, "tokens", path, 0.0, 1e12, default=0.0)
        u = c.number(cand, "u", path, 0.0, 1.0, default=0.5)
        prio = c.number(cand, "priority", path, 0.0, 1.0, default=0.5)
        poisoned = c.boolean(cand, "poisoned", path, default=False)
        cands[cid] = (r, float(poisoned), u - 0.5, prio - 0.5, int("u" in cand),
                      int("priority" in cand), tokens + struct)
    chosen_raw = c.items(ev, "chosen", "", required=True)
    chosen: set[str] = set()
    for k, cid in enumerate(chosen_raw):
        if not isinstance(cid, str) or cid not in cands:
            raise c.error(f"chosen[{k}]", f"{_show(cid)} was not offered",
                          "an id of this event's candidates")
        if cid in chosen:
            raise c.error(f"chosen[{k}]", f"{_show(cid)} is chosen twice", "ids chosen once")
        chosen.add(cid)
    used = sum(cands[cid][6] for cid in chosen)
    if used > budget:
        raise c.error("chosen", f"the chosen candidates cost {used:g} tokens, over the "
                      f"budget {budget:g}", "a choice within the budget")
    if top_k and len(chosen) > top_k:
        raise c.error("chosen", f"{len(chosen)} candidates chosen, over top_k {top_k}",
                      "at most top_k")
    # The choice rule (L2) alone decides the event only when the budget and the cap
    # cannot bind whatever was judged relevant: every candidate fits together, and there
    # are no more than top_k. Otherwise a relevant candidate may have been skipped for
    # the ranking of the noisy utilities, and the event is censored as a whole. Deciding
    # it per candidate from what was chosen (dropping those that would not have fitted
    # beside the chosen) selects on the outcome: on simulated logs with B = 400 it pulled
    # select_threshold from 0.45 to 0.426, its interval [0.421, 0.430] missing the truth.
    total = sum(c[6] for c in cands.values())
    if total > budget or (top_k and len(cands) > top_k):
        out.censored += len(cands)
        out.censored_events += 1
        return
    out.events += 1
    for cid, (r, pois, du, db, hu, hb, _cost) in cands.items():
        out.relevance.append(r)
        out.poisoned.append(pois)
        out.du.append(du)
        out.db.append(db)
        out.has_u.append(hu)
        out.has_b.append(hb)
        out.chosen.append(int(cid in chosen))


def _answer(c: _Line, ev: dict[str, Any], out: Answers) -> None:
    c.keys(ev, ANSWER_KEYS, "")
    c.note(ev)
    evidence = c.boolean(ev, "evidence", "")
    tokens = c.number(ev, "context_tokens", "", 0.0, 1e12)
    compromised = c.boolean(ev, "compromised", "")
    correct = c.boolean(ev, "correct", "")
    poison = c.items(ev, "poisoned", "", required=False)
    values = []
    for k, p in enumerate(poison):
        path = f"poisoned[{k}]"
        c.keys(p, ANSWER_POISON_KEYS, path)
        if "id" in p:
            c.ident(p, "id", path)
        values.append(c.number(p, "persuasiveness", path, 0.0, 1.0, default=1.0))
    if compromised and not any(values):
        raise c.error("compromised", "true with no persuasive poisoned memory in context",
                      "false when 'poisoned' is empty or all of persuasiveness 0 (only "
                      "poison in context compromises a step)")
    out.evidence.append(int(evidence))
    out.context_tokens.append(tokens)
    out.compromised.append(int(compromised))
    out.correct.append(int(correct))
    out.persuasiveness.extend(values)
    out.start.append(len(out.persuasiveness))


def _fold(c: _Line, ev: dict[str, Any], out: Folds) -> None:
    c.keys(ev, FOLD_KEYS, "")
    c.note(ev)
    poison = c.items(ev, "poisoned", "", required=True)
    rows = []
    for k, p in enumerate(poison):
        path = f"poisoned[{k}]"
        c.keys(p, FOLD_POISON_KEYS, path)
        c.ident(p, "id", path)
        rows.append((c.boolean(p, "rider", path, default=False),
                     c.boolean(p, "leaked", path)))
    out.events += 1
    for rider, leaked in rows:
        out.rider.append(int(rider))
        out.leaked.append(int(leaked))


def read_log(path: str | os.PathLike[str], *, max_events: int = MAX_EVENTS,
             relevance: Relevance | None = None,
             progress: Callable[[int], None] | None = None) -> StubLog:
    """Read and check the stub log at ``path`` (`open_regular`: a regular file only),
    streaming: a `StubLog` of typed columns, or a `StubLogError` at the first problem.

    ``relevance``: the relevance of a candidate logged by ``same_subtask`` (default: the
    default world's). ``progress(bytes_read)`` is called every 4096 lines.
    """
    source = str(path)
    rel = relevance or Relevance.of_world()
    log = StubLog(source, Selections(), Answers(), Folds())
    try:
        f = open_regular(path)
    except OSError as e:
        raise StubLogError(source, 0, "(file)", f"cannot read: {e.strerror or e}",
                           "a regular JSON Lines file") from None
    done = 0
    with f:
        while True:
            raw = f.readline(MAX_LINE_BYTES + 1)
            if not raw:
                break
            log.lines += 1
            done += len(raw)
            c = _Line(source, log.lines)
            if len(raw) > MAX_LINE_BYTES:
                raise c.error("(line)", f"longer than {MAX_LINE_BYTES:,} bytes",
                              f"one event of at most {MAX_LINE_BYTES:,} bytes a line")
            if progress is not None and log.lines % 4096 == 0:
                progress(done)
            try:
                text = raw.decode("utf-8-sig" if log.lines == 1 else "utf-8")
            except UnicodeDecodeError as e:
                raise c.error("(line)", f"not UTF-8 ({e.reason} at byte {e.start})",
                              "UTF-8 text") from None
            if not text.strip():
                continue  # blank lines count, so line numbers match an editor's
            try:
                ev = json.loads(text, parse_constant=_no_constant)
            except (ValueError, RecursionError) as e:
                cut = "" if raw.endswith(b"\n") else " (a cut last line?)"
                raise c.error("(line)", f"not a JSON object{cut}: {str(e)[:80]}",
                              "one JSON object a line") from None
            if not isinstance(ev, dict):
                raise c.error("(event)", f"{_show(ev)} is not an object", "a JSON object")
            kind = ev.get("type")
            if kind not in EVENT_TYPES:
                raise c.error("type", "is required" if "type" not in ev else
                              f"{_show(kind)} is invalid", " | ".join(EVENT_TYPES))
            if log.events >= max_events:
                raise c.error("(line)", f"more than {max_events:,} events",
                              f"at most {max_events:,} events (--max-events); fit a "
                              "sample of the log or raise the cap")
            if kind == "selection":
                _selection(c, ev, log.selections, rel)
            elif kind == "answer":
                _answer(c, ev, log.answers)
            else:
                _fold(c, ev, log.folds)
            log.events += 1
    if progress is not None:
        progress(done)
    return log
