"""Running a sweep: one chunk on any worker (`run_task`), the executors (in process, a
process pool, dask) and the driver `run_sweep`, which stores into a sweep folder.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from wmtsim.core.world_spec import WorldSpec
from wmtsim.studies.sweeps.design import (
    ChunkResult,
    Point,
    Task,
    plan,
)
from wmtsim.studies.sweeps.spec import METRIC_NAMES, Sweep, SweepError

# A chunk aims at about this many simulated trajectories (a few seconds of engine time).
CHUNK_TRAJECTORIES = 100_000


def run_task(task: Task, point_done: Callable[[], None] | None = None) -> ChunkResult:
    """Simulate a chunk's points; each distinct (world, seed) is generated once;
    ``point_done`` is called as each point is finished (the in-process bar moves per
    point, not per chunk: a sweep is often one chunk).

    This is `wmtsim.engine.simulation.simulate` without the provenance frame (which costs as much
    as the engine on small batches): the same `simulation.run_engine` call and the same
    `metrics_from_counters`, so results are identical to ``simulate(...).trajectories``.
    """
    from wmtsim.core.metrics import metrics_from_counters
    from wmtsim.core.world_spec import World
    from wmtsim.engine.simulation import run_engine
    from wmtsim.engine.world import generate

    t0 = time.perf_counter()
    k = len(task.points)
    m = len(METRIC_NAMES)
    means = np.empty((k, m))
    sds = np.empty((k, m))
    counts = np.empty((k, m), dtype=np.int64)
    values = np.empty((k, task.n, m))
    trajectories = np.empty((k, task.n), dtype=np.int64)
    world: World | None = None
    world_of: tuple[WorldSpec, int] | None = None
    for i, p in enumerate(task.points):
        if world_of != (p.world, p.seed):
            world = generate(p.world, seed=p.seed, n=task.n)
            world_of = (p.world, p.seed)
        assert world is not None
        raw, _, _ = run_engine(world, p.policy, p.params, p.stubs, p.baselines, task.threads)
        metrics = metrics_from_counters(raw)
        trajectories[i] = world.trajectories
        for j, name in enumerate(METRIC_NAMES):
            x = np.asarray(metrics[name], dtype=np.float64)
            values[i, :, j] = x
            finite = x[np.isfinite(x)]
            counts[i, j] = finite.size
            means[i, j] = finite.mean() if finite.size else np.nan
            sds[i, j] = finite.std(ddof=1) if finite.size > 1 else np.nan
        if point_done is not None:
            point_done()
    return ChunkResult(task.index, [p.key for p in task.points], means, sds, counts,
                       trajectories, values, time.perf_counter() - t0)


def chunk_size(sweep: Sweep) -> int:
    if sweep.chunk is not None:
        return sweep.chunk
    return max(1, CHUNK_TRAJECTORIES // sweep.trajectories)


def make_tasks(points: Sequence[Point], size: int, n: int, threads: int | None,
               first_index: int = 0) -> Iterator[Task]:
    for c, start in enumerate(range(0, len(points), size)):
        yield Task(first_index + c, tuple(points[start:start + size]), n, threads)


# --- executors -----------------------------------------------------------------------------


def _in_process(tasks: Iterable[Task],
                point_done: Callable[[], None] | None = None) -> Iterator[ChunkResult]:
    for task in tasks:
        yield run_task(task, point_done)


def _process_pool(tasks: Iterable[Any], workers: int,
                  fn: Callable[[Any], Any] = run_task) -> Iterator[Any]:
    import multiprocessing as mp

    # spawn, not fork: numba's threading layers are not fork-safe once started.
    with ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn"),
                             initializer=_die_with_parent, initargs=(os.getpid(),)) as ex:
        yield from _bounded(tasks, ex.submit, 2 * workers, fn)


def _die_with_parent(parent: int) -> None:
    """In a pool worker: be killed when the sweep process dies (even by SIGKILL), so no
    worker outlives it computing chunks nobody will write (Linux ``PR_SET_PDEATHSIG``)."""
    import ctypes
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):  # not Linux: the pool's own EOF handling remains
        return
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def _bounded(tasks: Iterable[Any], submit: Callable[..., Future[Any]],
             limit: int, fn: Callable[[Any], Any] = run_task) -> Iterator[Any]:
    """Keep at most ``limit`` chunks in flight so memory does not grow with the sweep."""
    it = iter(tasks)
    pending: set[Future[Any]] = set()
    for task in itertools.islice(it, limit):
        pending.add(submit(fn, task))
    while pending:
        done, pending = wait(pending, return_when=FIRST_COMPLETED)
        for fut in done:
            yield fut.result()
            nxt = next(it, None)
            if nxt is not None:
                pending.add(submit(fn, nxt))


CONNECT_TIMEOUT = 10.0  # seconds to reach a --scheduler before giving up (exit 2)


def check_scheduler(address: str) -> None:
    """Refuse a ``--scheduler`` address that cannot be parsed, before any work."""
    try:
        from distributed.comm.addressing import parse_address, parse_host_port
    except ImportError:  # pragma: no cover - depends on the environment
        raise SweepError("--scheduler needs dask.distributed: pip install 'wmtsim[cluster]'"
                         ) from None
    allowed = "an address such as tcp://host:8786 (or host:8786)"
    try:
        scheme, loc = parse_address(address)
        if scheme in ("tcp", "tls"):
            host, port = parse_host_port(loc)
            if not host or not 0 < int(port) < 65536:
                raise ValueError(address)
    except (ValueError, TypeError):
        raise SweepError(f"--scheduler {address[:200]!r}: not a scheduler address; allowed: "
                         f"{allowed}") from None


def _probe(address: str, timeout: float) -> None:
    """Open a comm to ``address`` and ask the scheduler who it is, all within ``timeout``
    seconds. Why: dask's `Client` bounds the TCP connect by its timeout but not the
    answer, so a server that accepts and never answers held `screen` for minutes."""
    import asyncio

    from distributed.comm import connect

    async def ask() -> None:
        comm = await connect(address, timeout=timeout)
        try:
            await comm.write({"op": "identity", "reply": True})
            await comm.read()
        finally:
            comm.abort()

    asyncio.run(asyncio.wait_for(ask(), timeout))


def _connect(address: str) -> Any:
    """A dask Client of ``address``, or a `SweepError` after `CONNECT_TIMEOUT` seconds
    (called before the output folder is touched). Any failure of dask's (an ``inproc://``
    address of no scheduler here, a refused or silent port) is the same exit-2 error."""
    check_scheduler(address)
    from distributed import Client

    try:
        _probe(address, CONNECT_TIMEOUT)
        return Client(address, set_as_default=False, timeout=CONNECT_TIMEOUT)
    except Exception as e:  # dask raises OSError, TimeoutError, KeyError, RuntimeError...
        reason = str(e).splitlines()[0] if str(e) else "no answer"
        raise SweepError(f"--scheduler {address!r}: cannot connect within "
                         f"{CONNECT_TIMEOUT:g} s ({type(e).__name__}: {reason}); allowed: "
                         "the address of a running dask scheduler") from None


def reach_scheduler(address: str) -> None:
    """Connect to ``address`` and disconnect: a `SweepError` after `CONNECT_TIMEOUT`
    seconds, for a command that must know before it creates its output (tune)."""
    _connect(address).close()


def _dask(tasks: Iterable[Any], client: Any, fn: Callable[[Any], Any] = run_task
          ) -> Iterator[Any]:
    from distributed import as_completed

    with client:
        limit = 2 * max(1, sum(client.nthreads().values()))
        it = iter(tasks)
        futures = [client.submit(fn, t, pure=False) for t in itertools.islice(it, limit)]
        queue = as_completed(futures, loop=client.loop)
        for fut in queue:
            result = fut.result()
            fut.release()
            yield result
            nxt = next(it, None)
            if nxt is not None:
                queue.add(client.submit(fn, nxt, pure=False))


def execute(points: Sequence[Point], n: int, *, workers: int = 1,
            scheduler: str | None = None, threads: int | None = None,
            chunk: int | None = None) -> Iterator[ChunkResult]:
    """Run ``points`` (``n`` trajectories each) on the sweep's executors, in chunks of
    ``chunk`` points (default: about `CHUNK_TRAJECTORIES` trajectories): in-process, on
    ``workers`` local processes, or on the dask scheduler at ``scheduler``. For commands
    that keep their results in memory (screen, tune); results do not depend on the
    executor."""
    size = chunk or max(1, CHUNK_TRAJECTORIES // n)
    distributed = scheduler is not None or workers > 1
    tasks = make_tasks(list(points), size, n, 1 if distributed else threads)
    yield from map_tasks(run_task, tasks, workers=workers, scheduler=scheduler)


def map_tasks(fn: Callable[[Any], Any], items: Iterable[Any], *, workers: int = 1,
              scheduler: str | None = None) -> Iterator[Any]:
    """``fn(item)`` for every item on the sweep's executors, results as they finish:
    in-process (in order), on ``workers`` local processes, or on the dask scheduler at
    ``scheduler``; at most twice the workers' count in flight. ``fn`` must be a module-level
    function and the items picklable (``attack`` runs its searches so)."""
    if scheduler is not None:
        yield from _dask(items, _connect(scheduler), fn)
    elif workers > 1:
        yield from _process_pool(items, workers, fn)
    else:
        for item in items:
            yield fn(item)


# --- the sweep driver ----------------------------------------------------------------------


@dataclass
class SweepReport:
    """What a `run_sweep` call did."""

    out: Path
    sweep_id: str
    total: int
    already: int
    computed: int
    chunks: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.computed / self.seconds if self.seconds > 0 else float("nan")


def run_sweep(sweep: Sweep, out: str | os.PathLike[str], *, workers: int = 1,
              scheduler: str | None = None, resume: bool = False, progress: bool = True,
              chunk: int | None = None, threads: int | None = None,
              max_chunks: int | None = None) -> SweepReport:
    """Run the points of ``sweep`` that ``out`` does not hold yet.

    ``workers`` > 1 uses a local process pool; ``scheduler`` (an address) a
    ``dask.distributed`` cluster. Results do not depend on either. Re-running into a folder
    of the same sweep computes only what is missing; ``resume=True`` insists that ``out``
    already holds this sweep. ``threads`` is numba's thread count in-process (pool and
    cluster workers always use 1). ``max_chunks`` stops after that many chunks (tests, benchmarks).
    """
    from wmtsim.studies.sweeps.store import Store

    t0 = time.perf_counter()
    pl_ = plan(sweep)
    client = _connect(scheduler) if scheduler is not None else None
    try:
        store = Store.open(Path(out), pl_, sweep, resume=resume)
    except BaseException:
        if client is not None:
            client.close()
        raise
    try:
        done = store.done_keys()
        todo = [p for p in pl_.points if p.key not in done]
        size = chunk or chunk_size(sweep)
        distributed = scheduler is not None or workers > 1
        tasks: Iterable[Task] = make_tasks(todo, size, sweep.trajectories,
                                           1 if distributed else threads,
                                           store.next_chunk_index())
        if max_chunks is not None:
            tasks = itertools.islice(tasks, max_chunks)
        computed = 0
        chunks = 0
        with _progress(progress, len(pl_.points), len(pl_.points) - len(todo)) as advance:
            if client is not None:
                results = _dask(tasks, client)
            elif workers > 1:
                results = _process_pool(tasks, workers)
            else:  # the bar moves as each point is finished
                results = _in_process(tasks, lambda: advance(1))
            for res in results:
                store.write_chunk(res)
                computed += len(res.keys)
                chunks += 1
                if client is not None or workers > 1:  # a chunk at a time from workers
                    advance(len(res.keys))
        if computed + len(pl_.points) - len(todo) == len(pl_.points):
            store.mark_complete()
    finally:
        store.close()
        if client is not None:
            client.close()
    return SweepReport(Path(out), pl_.sweep_id, len(pl_.points), len(pl_.points) - len(todo),
                       computed, chunks, time.perf_counter() - t0)


class _progress:
    """A rich progress bar (points done, rate, time elapsed and left), or nothing."""

    def __init__(self, enabled: bool, total: int, done: int) -> None:
        self.enabled, self.total, self.done = enabled, total, done

    def __enter__(self) -> Callable[[int], None]:
        from rich.console import Console

        console = Console(stderr=True)
        return self.start(console)

    def start(self, console: Any) -> Callable[[int], None]:
        """The bar on ``console``; returns the function that advances it."""
        self.enabled = self.enabled and console.is_terminal  # quiet in a pipe or a log
        if not self.enabled:
            return lambda k: None
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.bar = Progress(
            TextColumn("[bold]sweep[/bold]"), BarColumn(), MofNCompleteColumn(),
            TextColumn("points"), TextColumn("{task.fields[rate]}"), TextColumn("elapsed"),
            TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn(), console=console)
        self.bar.__enter__()
        self.task = self.bar.add_task("sweep", total=self.total, completed=self.done,
                                      rate="")
        self.t0 = time.perf_counter()
        self.count = 0

        def advance(k: int) -> None:
            self.count += k
            rate = self.count / max(time.perf_counter() - self.t0, 1e-9)
            self.bar.update(self.task, advance=k, rate=f"{rate:.1f} points/s")

        return advance

    def __exit__(self, *exc: object) -> None:
        if self.enabled:
            self.bar.__exit__(None, None, None)
