"""Drive an implementation with the corpus, then with Hypothesis event streams, and shrink
any disagreement with the reference to a minimal trace.

`first_disagreement` runs the implementation (`wmtsim.conformance.adapter`) and the
reference replay (`wmtsim.engine.trace.walk`, the kernels) in lockstep and compares every
node's ``u`` (within ``tol``), ``m`` and ``state`` after every event. `shrink` then removes
events, selections and parameter overrides while the trace stays valid and the two still
disagree. `run_conformance` is the whole procedure; `wmtsim.testing` re-exports it and the
pytest plugin (`pytest --wmt-impl module:Class`) runs it as one test.
"""

from __future__ import annotations

import importlib
import json
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wmtsim.conformance.adapter import Factory, as_values
from wmtsim.conformance.expect import DEFAULT_TOL

E = dict[str, Any]


@dataclass(frozen=True)
class Disagreement:
    """The first point where the implementation and the reference differ."""

    line: int  # trace line (1-based) of the event after which they differ
    node: str | None  # None when the implementation raised
    field: str  # "u", "m", "state", "exists" (a node missing or extra) or "raised"
    expected: object
    got: object
    rules: tuple[str, ...] = ()  # the rules that last set the node in the reference

    def __str__(self) -> str:
        if self.field == "raised":
            return f"after line {self.line}: the implementation raised {self.got}"
        rules = f" [rules: {', '.join(self.rules)}]" if self.rules else ""
        return (f"after line {self.line}: node {self.node!r} field {self.field}: "
                f"reference {self.expected!r}, implementation {self.got!r}{rules}")


def load_impl(spec: str) -> Factory:
    """``"package.module:Class"`` → the class (any callable taking the params dict)."""
    module, _, name = spec.partition(":")
    if not module or not name:
        raise ValueError(f"implementation {spec!r}; allowed: 'module:Class' (e.g. "
                         "'my_agent.memory:MyWMT')")
    try:
        obj: Any = importlib.import_module(module)
        for part in name.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as e:
        raise ValueError(f"implementation {spec!r} cannot be loaded: {e}") from None
    if not callable(obj):
        raise ValueError(f"implementation {spec!r} is not a class or callable")
    return obj


def _clean(event: Mapping[str, Any]) -> E:
    return {k: v for k, v in event.items() if k not in ("note", "params")}


def _compare(line: int, want: Mapping[str, tuple[float, int, str]], got_raw: Any,
             tol: float) -> Disagreement | None:
    got = {str(k): as_values(v) for k, v in dict(got_raw).items()}
    for node, (u, m, state) in want.items():
        if node not in got:
            return Disagreement(line, node, "exists", "present", "missing")
        g = got[node]
        if not (math.isfinite(g.u) and abs(g.u - u) <= tol):
            return Disagreement(line, node, "u", u, g.u)
        if g.m != m:
            return Disagreement(line, node, "m", m, g.m)
        if g.state != state:
            return Disagreement(line, node, "state", state, g.state)
    extra = [n for n in got if n not in want]
    if extra:
        return Disagreement(line, extra[0], "exists", "absent", "present")
    return None


def first_disagreement(factory: Factory, events: Iterable[Mapping[str, Any] | str],
                       tol: float = DEFAULT_TOL, rules: bool = False
                       ) -> Disagreement | None:
    """Replay ``events`` through the reference and the implementation in lockstep; the
    first difference after any event, or None. ``expect`` lines are skipped (their line
    numbers still count). Raises `wmtsim.engine.trace.TraceError` for an invalid trace."""
    from wmtsim.engine.trace import walk

    impl: Any = None
    for line, event, view in walk(list(events), rules=rules):
        if event["op"] == "expect":
            continue
        try:
            if event["op"] == "query":
                impl = factory(view.params.to_dict())
            impl.apply(_clean(event))
            got = impl.nodes()
        except Exception as e:  # the implementation's own failure is a disagreement
            return Disagreement(line, None, "raised", None, f"{type(e).__name__}: {e}")
        try:
            d = _compare(line, view.nodes(), got, tol)
        except (TypeError, ValueError, KeyError) as e:
            return Disagreement(line, None, "raised", None,
                                f"nodes() returned an unusable value: {e}")
        if d is not None:
            if rules and d.node is not None:
                d = Disagreement(d.line, d.node, d.field, d.expected, d.got,
                                 view.rules_of(d.node))
            return d
    return None


def _events(lines: Iterable[Mapping[str, Any] | str]) -> list[E]:
    out = []
    for x in lines:
        if isinstance(x, str):
            if not x.strip():
                continue
            x = json.loads(x)
        if x["op"] != "expect":
            out.append(_clean(x) | ({"params": x["params"]} if "params" in x else {}))
    return out


def _disagrees(factory: Factory, events: list[E], tol: float) -> Disagreement | None:
    from wmtsim.engine.trace import TraceError

    try:
        return first_disagreement(factory, events, tol)
    except TraceError:
        return None  # the candidate is not a valid trace


def _simpler(events: list[E]) -> Iterable[list[E]]:
    """Candidates one step simpler than ``events``: one event fewer (last first), one id
    fewer in a select, one parameter override fewer, no explicit pool."""
    for i in range(len(events) - 1, 0, -1):
        yield events[:i] + events[i + 1:]
    for i, ev in enumerate(events):
        if ev["op"] == "select":
            for key in ("selected", "candidates"):
                for j in range(len(ev.get(key, []))):
                    yield [*events[:i], {**ev, key: ev[key][:j] + ev[key][j + 1:]},
                           *events[i + 1:]]
            if "candidates" in ev:
                yield [*events[:i], {k: v for k, v in ev.items() if k != "candidates"},
                       *events[i + 1:]]
    for key in list(events[0].get("params", {})):
        params = {k: v for k, v in events[0]["params"].items() if k != key}
        yield [{**events[0], "params": params}, *events[1:]]


def shrink(factory: Factory, lines: Iterable[Mapping[str, Any] | str],
           tol: float = DEFAULT_TOL, budget: int = 5000) -> tuple[list[E], Disagreement]:
    """A locally minimal trace on which ``factory`` still disagrees with the reference.

    Greedy: cut the trace after the first disagreement, then accept any candidate of
    `_simpler` that is a valid trace and still disagrees, until none is left (or
    ``budget`` candidates were tried). Raises ValueError when there is no disagreement."""
    events = _events(lines)
    d = _disagrees(factory, events, tol)
    if d is None:
        raise ValueError("the implementation agrees with the reference on this trace")
    events = events[:d.line]
    tried = 0
    changed = True
    while changed and tried < budget:
        changed = False
        for candidate in _simpler(events):
            tried += 1
            found = _disagrees(factory, candidate, tol)
            if found is not None:
                events, d, changed = candidate[:found.line], found, True
                break
            if tried >= budget:
                break
    final = first_disagreement(factory, events, tol, rules=True)
    assert final is not None
    return events, final


def minimal_lines(events: list[E], d: Disagreement, tol: float = DEFAULT_TOL) -> list[str]:
    """The JSON Lines of a shrunk trace, ending with the reference's ``expect`` line for
    the node that differs (a `wmtsim check` of it passes; the implementation fails it)."""
    from wmtsim.engine.trace import walk

    lines = [json.dumps(e) for e in events]
    if d.node is not None:
        nodes: dict[str, tuple[float, int, str]] = {}
        for _, _, view in walk(lines):
            nodes = view.nodes()
        if d.node in nodes:
            u, m, state = nodes[d.node]
            lines.append(json.dumps({"op": "expect", "id": d.node, "u": u, "m": m,
                                     "state": state, "tol": tol}))
    return lines


@dataclass(frozen=True)
class Failure:
    """A disagreement found by `run_conformance`, shrunk."""

    found_in: str  # a corpus file name, or "hypothesis"
    disagreement: Disagreement
    lines: list[str]  # the minimal trace (JSON Lines)
    saved: Path | None


@dataclass(frozen=True)
class ConformanceReport:
    """What `run_conformance` did: traces and examples run, and the failure if any."""

    corpus_traces: int
    examples: int
    failure: Failure | None

    @property
    def passed(self) -> bool:
        return self.failure is None


def _hypothesis_search(factory: Factory, examples: int, seed: int, tol: float
                       ) -> list[E] | None:
    """Hypothesis-generated move lists (`wmtsim.conformance.generate`), shrunk by
    Hypothesis to a failing one; its events, or None when every example agrees."""
    try:
        from hypothesis import HealthCheck, Verbosity, given, settings
        from hypothesis import seed as hypothesis_seed
        from hypothesis import strategies as st
    except ImportError:
        raise RuntimeError("the Hypothesis phase needs the 'hypothesis' package "
                           "(pip install 'wmtsim[conformance]')") from None
    from wmtsim.conformance.generate import OPS, PARAM_VARIANTS, TraceBuilder

    # Selects drive Eqs. 3-7, so they are drawn about as often as every other op together
    # (Hypothesis shrinks towards the first entries: creating nodes, then selecting).
    ops = ("action", "select", "task", "select", "global", "select", *OPS)
    moves = st.lists(st.tuples(st.sampled_from(ops), st.integers(0, 63),
                               st.lists(st.booleans(), max_size=16)), max_size=60)
    failing: list[list[E]] = []

    class _Found(Exception):
        pass

    @hypothesis_seed(seed)
    @settings(max_examples=examples, database=None, deadline=None, derandomize=False,
              verbosity=Verbosity.quiet, suppress_health_check=list(HealthCheck))
    @given(st.tuples(st.sampled_from(PARAM_VARIANTS), moves))
    def search(x: tuple[dict[str, Any], list[Any]]) -> None:
        events = TraceBuilder(x[0]).build(x[1])
        if _disagrees(factory, events, tol) is not None:
            failing.append(events)  # the last call is Hypothesis's shrunk example
            raise _Found

    try:
        search()
    except _Found:
        return failing[-1]
    return None


SAVE_COMMAND = "conformance-run"
"""The command a saved minimal trace's sidecar manifest names."""


def _save_path(save: Path, name: str) -> Path:
    """Where the minimal failing trace of ``name`` goes, checked before any work: a new
    file, or one this command saved before (its sidecar manifest says so)."""
    from wmtsim.core.output import check_out_file

    return check_out_file(Path(save) / f"minimal_{name}.jsonl", SAVE_COMMAND,
                          option="--save")


def _save(path: Path, lines: list[str], fields: dict[str, Any]) -> Path:
    from wmtsim.core.output import atomic_write_text, manifest
    from wmtsim.studies.provenance import provenance

    path.parent.mkdir(parents=True, exist_ok=True)
    return atomic_write_text(path, "".join(line + "\n" for line in lines), manifest(
        SAVE_COMMAND, fields, extra=provenance(fields["seed"], fields["examples"], None,
                                               None, None)))


def run_conformance(impl: Factory | str, *, corpus: Path | bool | None = None,
                    examples: int = 200, seed: int = 0, tol: float = DEFAULT_TOL,
                    save: Path | None = Path(".wmt-conformance"),
                    echo: Callable[[str], None] | None = print) -> ConformanceReport:
    """Check an implementation against the reference.

    1. every trace of the corpus (``corpus``: a folder, None for the shipped one, False to
       skip), in lockstep after every event;
    2. ``examples`` Hypothesis-generated event streams (seeded with ``seed``; 0 skips).

    The first disagreement is shrunk (`shrink`) to a minimal trace, printed through
    ``echo`` as JSON Lines and saved in ``save`` as ``minimal_<impl>.jsonl``.
    """
    from wmtsim.conformance.corpus import corpus_files

    factory = load_impl(impl) if isinstance(impl, str) else impl
    name = getattr(factory, "__name__", type(factory).__name__)
    target = _save_path(save, name) if save is not None else None
    files = [] if corpus is False else corpus_files(None if corpus in (None, True)
                                                    else Path(corpus))  # type: ignore[arg-type]
    failing: tuple[str, list[Any]] | None = None
    for path in files:
        lines = path.read_text(encoding="utf-8").splitlines()
        if first_disagreement(factory, lines, tol) is not None:
            failing = (path.name, lines)
            break
    ran = 0
    if failing is None and examples > 0:
        ran = examples
        found = _hypothesis_search(factory, examples, seed, tol)
        if found is not None:
            failing = ("hypothesis", found)
    if failing is None:
        if echo:
            echo(f"{name}: conforms ({len(files)} corpus traces, {ran} generated streams)")
        return ConformanceReport(len(files), ran, None)
    events, d = shrink(factory, failing[1], tol)
    lines = minimal_lines(events, d, tol)
    saved = None if target is None else _save(target, lines, {
        "impl": name, "found_by": failing[0], "examples": examples, "seed": seed, "tol": tol})
    if echo:
        echo(f"{name}: disagrees with the reference ({failing[0]}), {d}")
        echo(f"minimal trace ({len(lines)} lines){f', saved to {saved}' if saved else ''}:")
        echo("\n".join(lines))
    return ConformanceReport(len(files), ran, Failure(failing[0], d, lines, saved))
