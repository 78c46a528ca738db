"""Drive an implementation with the corpus, then with Hypothesis event streams, and shrink
any disagreement with the reference to a minimal trace.

`first_disagreement` runs the implementation (`wmtsim.conformance.adapter`) and the
reference replay (`wmtsim.engine.trace.trace.walk`, the kernels) in lockstep and compares every
node's ``u`` (within ``tol``), ``m`` and ``state`` after every event. `shrink` then removes
events, selections and parameter overrides while the trace stays valid and the two still
disagree. `run_conformance` is the whole procedure; `wmtsim.testing` re-exports it and the
pytest plugin (`pytest --wmt-impl module:Class`) runs it as one test.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import math
import re
import signal
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wmtsim.conformance.adapter import Factory, KindError, as_values
from wmtsim.conformance.expect import DEFAULT_TOL

E = dict[str, Any]


@dataclass(frozen=True)
class Disagreement:
    """The first point where the implementation and the reference differ."""

    line: int  # trace line (1-based) of the event after which they differ
    node: str | None  # None when the implementation raised
    # "u", "m", "state", "exists" (a node missing or extra), "raised", "timeout" (no
    # answer within the call's timeout), "ended" (the implementation's process ended)
    field: str
    expected: object
    got: object
    rules: tuple[str, ...] = ()  # the rules that last set the node in the reference

    def __str__(self) -> str:
        if self.field == "ended":  # the process ended (`wmtsim.conformance.isolated`)
            return f"after line {self.line}: {self.got}" if self.line else str(self.got)
        if self.field == "timeout":
            return f"after line {self.line}: the implementation gave {self.got}"
        if self.field == "raised":
            return f"after line {self.line}: the implementation raised {self.got}"
        rules = f" [rules: {', '.join(self.rules)}]" if self.rules else ""
        return (f"after line {self.line}: node {self.node!r} field {self.field}: "
                f"reference {self.expected!r}, implementation {self.got!r}{rules}")


_SPEC = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")


def check_spec(spec: str) -> None:
    """Refuse an implementation spec that is not ``module:Class`` (ValueError)."""
    if not _SPEC.match(spec):
        raise ValueError(f"implementation {spec[:200]!r}; allowed: 'module:Class' with a "
                         "dotted module name importable from here (e.g. "
                         "'my_agent.memory:MyWMT'; not a file path such as './x.py:C')")


def load_impl(spec: str) -> Factory:
    """``"package.module:Class"`` → the class (any callable taking the params dict).

    Whatever importing the module does (a syntax error, ``sys.exit`` at import, any
    exception) is a ValueError naming the spec, never the end of the check."""
    check_spec(spec)
    module, _, name = spec.partition(":")
    try:
        obj: Any = _import(module)
        for part in name.split("."):
            obj = getattr(obj, part)
    except BaseException as e:  # an import may raise, or exit, anyhow
        raise ValueError(f"implementation {spec!r} cannot be loaded: "
                         f"{type(e).__name__}: {str(e)[:300]}") from None
    if not callable(obj):
        raise ValueError(f"implementation {spec!r} is not a class or callable")
    return obj


def _import(module: str) -> Any:
    """``importlib.import_module``; a module of the repository's examples/ package
    (``examples.naive_wmt``) that is not importable from here (outside the checkout) is
    imported from its shipped copy (wmtsim/data/examples, `wmtsim.core.shipped`)."""
    import sys

    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name != "examples" or not module.startswith("examples."):
            raise
    from importlib.machinery import ModuleSpec
    from importlib.util import module_from_spec

    from wmtsim.core.shipped import EXAMPLES, data_folder

    package = module_from_spec(ModuleSpec("examples", None, is_package=True))
    package.__path__ = [str(data_folder(EXAMPLES))]
    sys.modules["examples"] = package
    return importlib.import_module(module)


CALL_TIMEOUT = 10.0
"""Seconds one call of the implementation (constructor, apply, nodes) may take."""


class CallTimeout(BaseException):
    """A call of the implementation ran past its timeout (a BaseException, so that an
    adapter's ``except Exception`` cannot swallow it)."""


class ProcessEnded(BaseException):
    """The implementation's process ended, or the check ran past its overall limit
    (`wmtsim.conformance.isolated`): nothing more can be asked."""


class Raised(Exception):
    """What the implementation raised in its own process, as "Type: message"
    (`wmtsim.conformance.isolated`)."""


FINAL = ("timeout", "ended")
"""Disagreements that are not shrunk: replaying would wait out the timeout, or end the
process, once more per candidate (a hanging adapter once took 92 s to report)."""


@contextlib.contextmanager
def _deadline(seconds: float | None) -> Iterator[None]:
    """Raise `CallTimeout` in the block after ``seconds`` (SIGALRM: only in the main
    thread of a POSIX process; elsewhere the block runs unbounded)."""
    if seconds is None or not seconds > 0 or not hasattr(signal, "setitimer") or \
            threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        raise CallTimeout(f"no answer within {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _clean(event: Mapping[str, Any]) -> E:
    return {k: v for k, v in event.items() if k not in ("note", "params")}


def _compare(line: int, want: Mapping[str, tuple[float, int, str]], got_raw: Any,
             tol: float) -> Disagreement | None:
    got = {str(k): v for k, v in dict(got_raw).items()}
    for node, (u, m, state) in want.items():
        if node not in got:
            return Disagreement(line, node, "exists", "present", "missing")
        try:
            g = as_values(got[node])
        except KindError as e:  # compared by kind too: a miss count of 1.99 is not 1
            return Disagreement(line, node, e.field, {"u": u, "m": m, "state": state}[
                e.field], e.got)
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
                       tol: float = DEFAULT_TOL, rules: bool = False,
                       timeout: float | None = CALL_TIMEOUT) -> Disagreement | None:
    """Replay ``events`` through the reference and the implementation in lockstep; the
    first difference after any event, or None. ``expect`` lines are skipped (their line
    numbers still count). Anything the implementation does instead of answering (raise,
    ``sys.exit``, ``KeyboardInterrupt``, run past ``timeout`` seconds per call) is a
    disagreement, not the end of the check. Raises `wmtsim.engine.trace.trace.TraceError` for
    an invalid trace."""
    from wmtsim.engine.trace.trace import walk

    impl: Any = None
    for line, event, view in walk(list(events), rules=rules):
        if event["op"] == "expect":
            continue
        try:
            with _deadline(timeout):
                if event["op"] == "query":
                    impl = factory(view.params.to_dict())
                impl.apply(_clean(event))
                got = impl.nodes()
        except ProcessEnded as e:
            return Disagreement(line, None, "ended", None, str(e))
        except CallTimeout as e:
            return Disagreement(line, None, "timeout", None, str(e))
        except Raised as e:
            return Disagreement(line, None, "raised", None, str(e))
        except BaseException as e:  # SystemExit, KeyboardInterrupt
            return Disagreement(line, None, "raised", None, f"{type(e).__name__}: {e}")
        try:
            with _deadline(timeout):  # reading what nodes() returned runs its code too
                d = _compare(line, view.nodes(), got, tol)
        except BaseException as e:
            return Disagreement(line, None, "raised", None, "nodes() returned an unusable "
                                f"value: {type(e).__name__}: {e}")
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


def _disagrees(factory: Factory, events: list[E], tol: float,
               timeout: float | None = CALL_TIMEOUT) -> Disagreement | None:
    from wmtsim.engine.trace.trace import TraceError

    try:
        return first_disagreement(factory, events, tol, timeout=timeout)
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
           tol: float = DEFAULT_TOL, budget: int = 5000,
           timeout: float | None = CALL_TIMEOUT) -> tuple[list[E], Disagreement]:
    """A locally minimal trace on which ``factory`` still disagrees with the reference.

    Greedy: cut the trace after the first disagreement, then accept any candidate of
    `_simpler` that is a valid trace and still disagrees, until none is left (or
    ``budget`` candidates were tried). Raises ValueError when there is no disagreement.
    An implementation that answers differently on a second run keeps the last trace on
    which it disagreed."""
    events = _events(lines)
    d = _disagrees(factory, events, tol, timeout)
    if d is None:
        raise ValueError("the implementation agrees with the reference on this trace")
    events = events[:d.line]
    tried = 0
    changed = True
    while changed and tried < budget:
        changed = False
        for candidate in _simpler(events):
            tried += 1
            found = _disagrees(factory, candidate, tol, timeout)
            if found is not None:
                events, d, changed = candidate[:found.line], found, True
                break
            if tried >= budget:
                break
    final = first_disagreement(factory, events, tol, rules=True, timeout=timeout)
    return events, d if final is None else final


def minimal_lines(events: list[E], d: Disagreement, tol: float = DEFAULT_TOL) -> list[str]:
    """The JSON Lines of a shrunk trace, ending with the reference's ``expect`` line for
    the node that differs (a `wmtsim check` of it passes; the implementation fails it)."""
    from wmtsim.engine.trace.trace import walk

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


def _hypothesis_search(factory: Factory, examples: int, seed: int, tol: float,
                       timeout: float | None = CALL_TIMEOUT
                       ) -> tuple[list[E], Disagreement] | None:
    """Hypothesis-generated move lists (`wmtsim.conformance.generate`), shrunk by
    Hypothesis to a failing one; its events and disagreement, or None when every example
    agrees.
    Hypothesis's home (``.hypothesis/``) is a temporary folder: the check writes nothing
    into the working folder."""
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
    failing: list[tuple[list[E], Disagreement]] = []

    class _Found(Exception):
        pass

    class _Stop(BaseException):  # Hypothesis does not shrink past a BaseException
        pass

    @hypothesis_seed(seed)
    @settings(max_examples=examples, database=None, deadline=None, derandomize=False,
              verbosity=Verbosity.quiet, suppress_health_check=list(HealthCheck))
    @given(st.tuples(st.sampled_from(PARAM_VARIANTS), moves))
    def search(x: tuple[dict[str, Any], list[Any]]) -> None:
        events = TraceBuilder(x[0]).build(x[1])
        found = _disagrees(factory, events, tol, timeout)
        if found is not None:
            failing.append((events, found))  # the last call is Hypothesis's shrunk example
            raise _Stop if found.field in FINAL else _Found

    import tempfile

    from hypothesis import configuration

    home = getattr(configuration, "__hypothesis_home_directory", None)
    try:
        with tempfile.TemporaryDirectory(prefix="wmtsim-hypothesis-") as tmp:
            configuration.set_hypothesis_home_dir(tmp)
            search()
    except (_Found, _Stop):
        return failing[-1]
    except Exception:  # Hypothesis's Flaky: an implementation that answers differently
        if failing:
            return failing[-1]
        raise
    finally:
        configuration.set_hypothesis_home_dir(home)
    return None


SAVE_COMMAND = "conformance-run"
"""The command a saved minimal trace's sidecar manifest names."""


def save_path(save: Path, name: str) -> Path:
    """Where the minimal failing trace of ``name`` goes, checked before any work: a new
    file, or one this command saved before (its sidecar manifest says so)."""
    from wmtsim.core.output import check_out_file

    return check_out_file(Path(save) / f"minimal_{name}.jsonl", SAVE_COMMAND,
                          option="--save")


def _save(path: Path, lines: list[str], fields: dict[str, Any]) -> Path:
    from wmtsim.core.output import atomic_write_text, manifest
    from wmtsim.core.provenance import provenance

    path.parent.mkdir(parents=True, exist_ok=True)
    return atomic_write_text(path, "".join(line + "\n" for line in lines), manifest(
        SAVE_COMMAND, fields, extra=provenance(fields["seed"], fields["examples"], None,
                                               None, None)))


def run_conformance(impl: Factory | str, *, corpus: Path | bool | None = None,
                    examples: int = 200, seed: int = 0, tol: float = DEFAULT_TOL,
                    save: Path | None = Path(".wmt-conformance"),
                    echo: Callable[[str], None] | None = print,
                    timeout: float | None = CALL_TIMEOUT) -> ConformanceReport:
    """Check an implementation against the reference.

    1. every trace of the corpus (``corpus``: a folder, None for the shipped one, False to
       skip), in lockstep after every event;
    2. ``examples`` Hypothesis-generated event streams (seeded with ``seed``; 0 skips).

    The first disagreement is shrunk (`shrink`) to a minimal trace, printed through
    ``echo`` as JSON Lines and saved in ``save`` as ``minimal_<impl>.jsonl``. Each call
    of the implementation may take ``timeout`` seconds. In this process an adapter's
    ``os._exit`` still ends everything, and the implementation can change the comparison
    itself: `wmtsim.conformance.isolated` runs the implementation in a child process and
    judges here, as the CLI and the pytest plugin do.
    """
    from wmtsim.conformance.corpus import corpus_files
    from wmtsim.core.input_files import open_regular

    factory = load_impl(impl) if isinstance(impl, str) else impl
    name = getattr(factory, "__name__", type(factory).__name__)
    target = save_path(save, name) if save is not None else None
    files = [] if corpus is False else corpus_files(None if corpus in (None, True)
                                                    else Path(corpus))  # type: ignore[arg-type]
    failing: tuple[str, list[Any], Disagreement] | None = None
    for path in files:
        with open_regular(path) as f:
            lines = f.read().decode("utf-8").splitlines()
        first = first_disagreement(factory, lines, tol, timeout=timeout)
        if first is not None:
            failing = (path.name, lines, first)
            break
    ran = 0
    if failing is None and examples > 0:
        ran = examples
        found = _hypothesis_search(factory, examples, seed, tol, timeout)
        if found is not None:
            failing = ("hypothesis", *found)
    if failing is None:
        if echo:
            echo(f"{name}: conforms ({len(files)} corpus traces, {ran} generated streams)")
        return ConformanceReport(len(files), ran, None)
    try:
        if failing[2].field in FINAL:
            raise ValueError("not shrunk")
        events, d = shrink(factory, failing[1], tol, timeout=timeout)
    except ValueError:  # it agreed on a second run: the trace as first found
        events, d = _events(failing[1])[:failing[2].line], failing[2]
    lines = minimal_lines(events, d, tol)
    saved = None if target is None else _save(target, lines, {
        "impl": name, "found_by": failing[0], "examples": examples, "seed": seed, "tol": tol})
    if echo:
        echo(f"{name}: disagrees with the reference ({failing[0]}), {d}")
        echo(f"minimal trace ({len(lines)} lines){f', saved to {saved}' if saved else ''}:")
        echo("\n".join(lines))
    return ConformanceReport(len(files), ran, Failure(failing[0], d, lines, saved))
