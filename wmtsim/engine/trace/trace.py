"""Trace replay: run a JSON Lines trace of WMT events through the kernels.

A trace is one JSON object per line (format: ``docs/trace_format.md``, schema:
``wmtsim/schemas/trace.schema.json``). Replay keeps one growable tree as flat numpy arrays
(node index = creation order, so ``parent[v] < v``) and drives it with the same kernels the
batched engine uses: `scoring._event_score` (Eq. 2), `lifecycle._mark_active_path` and
`lifecycle._candidate_pool` (docs/model.md §4), `scoring._selection_feedback` (Eqs. 3–5),
`lifecycle._branch_priorities` (Eq. 6) and `lifecycle._suppress` (Eq. 7). The pure-Python
`wmtsim.twins.reference` is the oracle that replay is tested against, never used here.

Public API: `replay` (a polars frame, one row per select step and node), `check` (the first
failed ``expect`` line, or None), `run` (both, plus counts), `write_frame` (atomic Parquet or
CSV output) and `TraceError` (a bad trace, ``str`` is ``"line N: ..."``). This module is
the trace's one public import path (`__all__`): it also gathers `TraceError` and
`read_events` (defined in `events`: reading and validation) and `REPLAY_COLUMNS` and
`Divergence` (defined in `replay`: the tree).

Heavy imports (numba kernels, polars, jsonschema) happen on first use so that
``import wmtsim`` stays cheap.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wmtsim.core.output import atomic_write, atomic_write_parquet, commit, temp_path
from wmtsim.core.params import Params
from wmtsim.engine.trace.events import TraceError, read_events
from wmtsim.engine.trace.replay import REPLAY_COLUMNS, Divergence, _Replayer, _Step

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
    "walk",
    "write_frame",
]

OUTPUT_FORMATS = (".parquet", ".csv")
"""File extensions `write_frame` (and ``wmtsim replay --out``) accept."""


@dataclass(frozen=True)
class Replay:
    """Everything one replay produced."""

    frame: pl.DataFrame
    params: Params
    steps: int
    expectations: int
    divergence: Divergence | None
    divergences: tuple[Divergence, ...] = ()  # every failing field of every expect line
    coverage: dict[str, int] | None = field(default=None)  # rule -> times fired (rules=True)


# ---------------------------------------------------------------------------------------
# Replay (reading lines: `events`; the tree and the replayer: `replay`)


def _recorder(rules: bool) -> Any:
    if not rules:
        return None
    from wmtsim.engine.trace.rules import RuleRecorder

    return RuleRecorder()


def _coverage(recorder: Any) -> dict[str, int] | None:
    if recorder is None:
        return None
    from wmtsim.engine.trace.rules import RULE_NAMES

    return {name: recorder.counts.get(name, 0) for name in RULE_NAMES}


def run(path_or_events: str | os.PathLike[str] | Iterable[Mapping[str, Any] | str],
        params: Params | None = None, rules: bool = False) -> Replay:
    """Replay a trace and return the frame, the parameters used and the expectation result.

    ``params`` is the base; a ``params`` object on the query line overrides its fields.
    With ``rules``, the replay also records which named rule of the math fired how often
    (`Replay.coverage`, every rule of `wmtsim.engine.trace.rules.RULES`, 0 when never) and
    tags each divergence with the rules that last set the node's values.
    Raises `TraceError` for a bad trace (the whole trace is read before returning).
    """
    steps: list[_Step] = []
    recorder = _recorder(rules)
    r = _Replayer(params if params is not None else Params(), on_step=steps.append,
                  rules=recorder)
    for line, event in read_events(path_or_events):
        r.apply(line, event)
    return Replay(frame=r.frame(steps), params=r.params, steps=r.step,
                  expectations=r.expectations, divergence=r.divergence,
                  divergences=tuple(r.divergences), coverage=_coverage(recorder))


class TreeView:
    """The replayed tree between two events (what `walk` yields)."""

    def __init__(self, replayer: _Replayer) -> None:
        self._r = replayer

    @property
    def params(self) -> Params:
        return self._r.params

    @property
    def divergences(self) -> list[Divergence]:
        return self._r.divergences

    def nodes(self) -> dict[str, tuple[float, int, str]]:
        """Every node's ``(u, m, state)`` now, in creation order."""
        from wmtsim.core.codes import STATE_NAMES

        t = self._r.tree
        return {t.ids[v]: (float(t.u[v]), int(t.m[v]), STATE_NAMES[int(t.state[v])])
                for v in range(t.n)}

    def rules_of(self, node: str) -> tuple[str, ...]:
        """The named rules that last set ``node``'s values (``walk(rules=True)`` only)."""
        rec = self._r.rules
        v = self._r.tree.index.get(node)
        return () if rec is None or v is None else rec.last.get(v, ())

    def coverage(self) -> dict[str, int] | None:
        return _coverage(self._r.rules)


def walk(path_or_events: str | os.PathLike[str] | Iterable[Mapping[str, Any] | str],
         params: Params | None = None, rules: bool = False
         ) -> Iterator[tuple[int, dict[str, Any], TreeView]]:
    """Replay a trace event by event: yields ``(line, event, view)`` after each event has
    been applied (``view.nodes()`` reads the tree at that point). Raises `TraceError`."""
    r = _Replayer(params if params is not None else Params(), rules=_recorder(rules))
    view = TreeView(r)
    for line, event in read_events(path_or_events):
        r.apply(line, event)
        yield line, event, view


@dataclass(frozen=True)
class Streamed:
    """What `stream` produced: counts, the expectation result and the last step's rows."""

    last: pl.DataFrame  # the rows of the last select step (empty without one)
    rows: int  # rows of the whole replay (written to ``out`` when given)
    params: Params
    steps: int
    expectations: int
    divergence: Divergence | None
    divergences: tuple[Divergence, ...] = ()
    coverage: dict[str, int] | None = field(default=None)


BATCH_ROWS = 250_000
"""Rows `stream` gathers before writing a batch to ``out``."""


def stream(path_or_events: str | os.PathLike[str] | Iterable[Mapping[str, Any] | str],
           params: Params | None = None, out: str | os.PathLike[str] | None = None,
           batch_rows: int = BATCH_ROWS, rules: bool = False,
           manifest: Mapping[str, Any] | None = None) -> Streamed:
    """Replay a trace keeping memory bounded by the tree, not the trace.

    Without ``out`` no frame is kept (what `check` needs); with ``out`` (``.parquet`` or
    ``.csv``) the frame is written in batches of about ``batch_rows`` rows to a temporary
    file beside ``out``, which replaces ``out`` only when the whole trace has replayed. A
    bad trace raises `TraceError` and leaves ``out`` untouched. ``rules``: as for `run`.
    ``manifest``: the result's manifest, written beside ``out`` (`wmtsim.core.output.commit`).
    """
    writer = _BatchWriter(Path(out), batch_rows, manifest) if out is not None else None
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

    recorder = _recorder(rules)
    r = _Replayer(params if params is not None else Params(), on_step=keep, rules=recorder)
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
                    expectations=r.expectations, divergence=r.divergence,
                    divergences=tuple(r.divergences), coverage=_coverage(recorder))


class _BatchWriter:
    """Appends frames to a temporary Parquet or CSV file; `commit` renames it into place."""

    def __init__(self, path: Path, batch_rows: int,
                 manifest: Mapping[str, Any] | None = None) -> None:
        suffix = path.suffix.lower()
        if suffix not in OUTPUT_FORMATS:
            raise ValueError(f"cannot write {str(path)!r}: unsupported extension "
                             f"{path.suffix or '(none)'!r}; allowed: "
                             f"{', '.join(OUTPUT_FORMATS)}")
        self.path, self.csv, self.manifest = path, suffix == ".csv", manifest
        self.file: Any = None  # opened on the first write: a bad trace creates nothing
        self.created: list[Path] = []  # folders made for ``path``, removed on abort
        self.parquet: Any = None
        self.header = True
        self.done = False

    def _open(self) -> None:
        missing = [p for p in self.path.parents if not p.exists()]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.created = missing
        self.tmp = temp_path(self.path)
        self.file = open(self.tmp, "wb")

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
        self.file.close()
        commit(self.tmp, self.path, self.manifest)
        self.done = True

    def abort(self) -> None:
        if self.done or self.file is None:
            return
        if self.parquet is not None:
            with contextlib.suppress(Exception):
                self.parquet.close()
        with contextlib.suppress(OSError):  # a full disk fails the final flush too
            self.file.close()
        with contextlib.suppress(OSError):
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


def write_frame(frame: pl.DataFrame, out: str | os.PathLike[str],
                manifest: Mapping[str, Any] | None = None) -> Path:
    """Write ``frame`` to ``.parquet`` or ``.csv`` (by extension), atomically.

    The data goes to a temporary file in the target directory, which is then renamed over
    ``out`` (`wmtsim.core.output`), so a reader never sees a half-written file; with
    ``manifest``, its sidecar manifest is written first (`wmtsim.core.output.commit`).
    """
    path = Path(out)
    suffix = path.suffix.lower()
    if suffix not in OUTPUT_FORMATS:
        raise ValueError(f"cannot write {str(path)!r}: unsupported extension "
                         f"{path.suffix or '(none)'!r}; allowed: {', '.join(OUTPUT_FORMATS)}")
    path.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".parquet":
        return atomic_write_parquet(frame, path, manifest)
    return atomic_write(path, frame.write_csv, manifest)
