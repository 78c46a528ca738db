"""A sweep's output folder: chunked Parquet, a manifest, crash-safe writes (docs/sweeps.md).

Layout of ``DIR``::

    manifest.json            sweep id, name, parameters, chunk list (rewritten atomically)
    design.parquet           one row per (design row, scenario, replicate, policy) -> key
    chunks/points-NNNNNN.parquet        per-point aggregates: mean, sd, n of every metric
    chunks/trajectories-NNNNNN.parquet  per-trajectory metrics (for bootstrap intervals)
    computed.log             "session<TAB>chunk<TAB>key" for every point written

Every file is written to a temporary name, fsynced and renamed (`os.replace`), so a
sweep killed at any moment leaves only whole files. A chunk counts once its points file
exists (it is written after its trajectories file); the manifest is a cache of that and is
rebuilt from the files when a sweep reopens the folder. A folder written by a different
sweep (another design, scenario content, policy list or wmtsim version) is refused.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from wmtsim.core.input_files import read_regular, read_table
from wmtsim.core.output import atomic_write_parquet, atomic_write_text, follow_link
from wmtsim.core.output import manifest as output_manifest
from wmtsim.core.provenance import provenance
from wmtsim.studies.sweeps.design import ChunkResult, Plan
from wmtsim.studies.sweeps.spec import METRIC_NAMES, Sweep, SweepError

if TYPE_CHECKING:
    pass

FORMAT = 1
MANIFEST = "manifest.json"
DESIGN = "design.parquet"
LOG = "computed.log"
CHUNKS = "chunks"
_POINTS_RE = re.compile(r"^points-(\d{6,})\.parquet$")
_FIXED = ("row", "block", "base", "block_param", "scenario", "replicate", "seed", "policy",
          "key")


def _write_parquet(frame: pl.DataFrame, path: Path) -> None:
    """A sweep's Parquet files: zstd, no column statistics, written atomically."""
    atomic_write_parquet(frame, path, compression="zstd", statistics=False)


def design_frame(plan: Plan) -> pl.DataFrame:
    """The design table: one row per (design row, scenario, replicate, policy)."""
    names = [s.key for s in plan.sweep.parameters]
    cols: dict[str, Any] = {k: [d[k] for d in plan.design] for k in _FIXED}
    for name in names:
        cols[name] = pl.Series(name, [d[name] for d in plan.design], strict=False)
    return pl.DataFrame(cols)


def _is_sweep_manifest(path: Path) -> bool:
    try:
        manifest = json.loads(read_regular(path))
    except (OSError, ValueError):
        return True  # unreadable: `Store._open` says so, naming the file
    return isinstance(manifest, dict) and "chunks" in manifest and "sweep_id" in manifest


class Store:
    """An open output folder (holds an exclusive lock until `close`)."""

    def __init__(self, root: Path, plan: Plan, lock_fd: int) -> None:
        self.root = root
        self.plan = plan
        self._lock_fd = lock_fd
        self.chunk_dir = root / CHUNKS
        self.session = f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
        self.design = design_frame(plan)
        self._param_names = [s.key for s in plan.sweep.parameters]
        self._param_dtypes = {n: self.design.schema[n] for n in self._param_names}
        self._row_values: dict[str, dict[str, Any]] = {}
        for d in plan.design:
            self._row_values.setdefault(d["key"], d)
        self.chunks: list[dict[str, Any]] = []
        self._keys: set[str] = set()
        self._complete = False

    # --- opening ----------------------------------------------------------------------

    @classmethod
    def open(cls, root: Path, plan: Plan, sweep: Sweep, *, resume: bool = False) -> Store:
        """Open (or create) ``root`` for ``plan``; refuse a folder of another sweep. A
        symbolic link as ``root`` is followed (docs/faults.md)."""
        if "\x00" not in str(root):
            root = follow_link(root)
        manifest_path = root / MANIFEST
        if resume and not manifest_path.exists():
            raise SweepError(f"{root}: nothing to resume (no {MANIFEST}); run without "
                             "--resume to start the sweep")
        if "\x00" in str(root):
            raise SweepError(f"--out {str(root)!r}: contains a NUL byte; allowed: a folder path")
        if root.exists() and not root.is_dir():
            raise SweepError(f"{root}: --out must be a folder, not a file")
        if manifest_path.is_file() and not _is_sweep_manifest(manifest_path):
            raise SweepError(f"{root} is not a sweep folder (its {MANIFEST} is not a sweep's: "
                             "another command's result); choose an empty or new --out folder")
        if root.is_dir() and not manifest_path.exists():  # refuse before touching it
            foreign = [p.name for p in root.iterdir()
                       if p.name not in (".lock", CHUNKS, DESIGN) and not p.name.endswith(".tmp")]
            if foreign:
                raise SweepError(f"{root} is not empty and is not a sweep folder (no "
                                 f"{MANIFEST}; found {', '.join(sorted(foreign)[:3])}); "
                                 "choose an empty or new --out folder")
        try:
            root.mkdir(parents=True, exist_ok=True)
            lock_fd = os.open(root / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise SweepError(f"--out {str(root)!r}: cannot create the sweep folder: "
                             f"{e.strerror or e}; allowed: a folder path in a writable "
                             "folder") from None
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(lock_fd)
            raise SweepError(f"{root}: another sweep is writing to this folder") from None
        store = cls(root, plan, lock_fd)
        try:
            store._open(sweep)
        except BaseException:
            store.close()
            raise
        return store

    def _open(self, sweep: Sweep) -> None:
        manifest_path = self.root / MANIFEST
        for stale in list(self.root.glob(".*.tmp")) + list(self.chunk_dir.glob(".*.tmp")):
            stale.unlink()
        if manifest_path.exists():
            try:
                old = json.loads(read_regular(manifest_path))
            except (OSError, ValueError) as e:
                raise SweepError(f"{self.root}: unreadable {MANIFEST}: {e}") from None
            if old.get("sweep_id") != self.plan.sweep_id:
                raise SweepError(
                    f"{self.root} holds results of a different sweep "
                    f"({old.get('name')!r}, id {old.get('sweep_id')}, wmtsim "
                    f"{old.get('wmtsim_version')}); this sweep ({sweep.name!r}) has id "
                    f"{self.plan.sweep_id}. Results are never mixed: choose another --out "
                    "folder (or delete this one).")
        else:
            others = [p.name for p in self.root.iterdir()
                      if p.name != ".lock" and not self._own_leftover(p)]
            if others:
                raise SweepError(f"{self.root} is not empty and is not a sweep folder (no "
                                 f"{MANIFEST}; found {', '.join(sorted(others)[:3])}); "
                                 "choose an empty or new --out folder")
            # The manifest comes first: from here on the folder says which sweep it holds,
            # so a kill at any later moment leaves a folder that this sweep resumes.
            self._write_manifest()
        self.chunk_dir.mkdir(exist_ok=True)
        if not (self.root / DESIGN).exists():
            _write_parquet(self.design, self.root / DESIGN)
        self._scan_chunks()
        self._write_manifest()

    def _own_leftover(self, path: Path) -> bool:
        """What a kill before the first manifest can leave (folders written by wmtsim
        before the manifest came first): an empty chunks folder, this sweep's design."""
        if path.name == CHUNKS and path.is_dir():
            return not any(p for p in path.iterdir() if not p.name.endswith(".tmp"))
        if path.name == DESIGN:
            try:
                keys = read_table(path, self.root, ["key"])["key"].to_list()
            except Exception:  # unreadable (a FIFO, a link, garbage): not ours to overwrite
                return False
            return keys == self.design["key"].to_list()
        return False

    def _scan_chunks(self) -> None:
        """Adopt every whole chunk on disk (listed or written just before a kill)."""
        plan_keys = self._row_values
        for path in sorted(self.chunk_dir.glob("points-*.parquet")):
            m = _POINTS_RE.match(path.name)
            traj = self.chunk_dir / path.name.replace("points-", "trajectories-")
            if m is None or not traj.exists():
                path.unlink()
                continue
            keys = read_chunk(path, self.root, ["key"])["key"].to_list()
            if not set(keys) <= plan_keys.keys():  # cannot happen under the same sweep id
                raise SweepError(f"{path}: holds points that are not in this sweep")
            self.chunks.append({"index": int(m.group(1)), "points": path.name,
                                "trajectories": traj.name, "n_points": len(keys)})
            self._keys.update(keys)
        listed = {c["trajectories"] for c in self.chunks}
        for path in self.chunk_dir.glob("trajectories-*.parquet"):
            if path.name not in listed:  # killed between the two writes of a chunk
                path.unlink()

    # --- state ------------------------------------------------------------------------

    def done_keys(self) -> set[str]:
        return set(self._keys)

    def next_chunk_index(self) -> int:
        return 1 + max((c["index"] for c in self.chunks), default=-1)

    def _write_manifest(self) -> None:
        sweep = self.plan.sweep
        manifest = output_manifest("sweep", {
            "format": FORMAT,
            "sweep_id": self.plan.sweep_id,
            "name": sweep.name,
            "description": sweep.description,
            "sweep_file": str(sweep.path) if sweep.path else None,
            "scenarios": [s.name for s in sweep.scenarios],
            "policies": list(sweep.policies),
            "parameters": [p.to_dict() for p in sweep.parameters],
            "design": {"kind": sweep.kind, "points": sweep.points, "rows": sweep.rows,
                       "trajectories": sweep.trajectories, "seed": sweep.seed,
                       "replicates": sweep.replicates, "scramblings": sweep.scramblings},
            "metrics": list(METRIC_NAMES),
            "n_points": len(self.plan.points),
            "n_done": len(self._keys),
            "complete": self._complete or len(self._keys) == len(self.plan.points),
            "chunks": sorted(self.chunks, key=lambda c: c["index"]),
        }, extra=provenance(
            # the seed of every scenario's replicate 0 (a null [design] seed means each
            # scenario's own), the trajectories per point; a sweep has no intervals
            sweep.seed if sweep.seed is not None else {
                s.name: sweep.scenario_seed(s) for s in sweep.scenarios},
            sweep.trajectories, None, None, None))
        atomic_write_text(self.root / MANIFEST, json.dumps(manifest, indent=1) + "\n")

    # --- writing ----------------------------------------------------------------------

    def write_chunk(self, res: ChunkResult) -> None:
        """Write a chunk (trajectories, then points), log its keys, update the manifest."""
        name = f"{res.index:06d}"
        k, n, _ = res.values.shape
        traj = {"key": np.repeat(np.array(res.keys, dtype=object), n),
                "trajectory": res.trajectories.reshape(-1)}
        for j, metric in enumerate(METRIC_NAMES):
            traj[metric] = res.values[:, :, j].reshape(-1)
        traj_path = self.chunk_dir / f"trajectories-{name}.parquet"
        _write_parquet(pl.DataFrame(traj), traj_path)
        rows = [self._row_values[key] for key in res.keys]
        cols: dict[str, Any] = {"key": res.keys}
        for c in ("row", "scenario", "replicate", "seed", "policy"):
            cols[c] = [r[c] for r in rows]
        cols["n"] = np.full(k, n, dtype=np.int64)
        for pname in self._param_names:
            cols[pname] = pl.Series(pname, [r[pname] for r in rows], strict=False).cast(
                self._param_dtypes[pname])
        for j, metric in enumerate(METRIC_NAMES):
            cols[metric] = res.means[:, j]
            cols[f"{metric}_sd"] = res.sds[:, j]
            cols[f"{metric}_n"] = res.counts[:, j]
        points_path = self.chunk_dir / f"points-{name}.parquet"
        _write_parquet(pl.DataFrame(cols), points_path)
        with open(self.root / LOG, "a", encoding="utf-8") as log:
            log.write("".join(f"{self.session}\t{res.index}\t{key}\n" for key in res.keys))
            log.flush()
            os.fsync(log.fileno())
        self.chunks.append({"index": res.index, "points": points_path.name,
                            "trajectories": traj_path.name, "n_points": k,
                            "seconds": round(res.seconds, 3)})
        self._keys.update(res.keys)
        self._write_manifest()

    def mark_complete(self) -> None:
        self._complete = True
        self._write_manifest()

    def close(self) -> None:
        if self._lock_fd >= 0:
            with contextlib.suppress(OSError):
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = -1


# --- reading -------------------------------------------------------------------------------


@dataclass
class SweepResults:
    """A sweep folder read back: manifest, design, per-point aggregates and a lazy scan of
    the per-trajectory metrics (never loaded whole unless asked)."""

    root: Path
    manifest: dict[str, Any]
    design: pl.DataFrame
    points: pl.DataFrame

    @property
    def parameters(self) -> list[str]:
        return [p["key"] for p in self.manifest["parameters"]]

    @property
    def kind(self) -> str:
        return str(self.manifest["design"]["kind"])

    def table(self) -> pl.DataFrame:
        """The design joined with the per-point aggregates (one row per design entry;
        points not computed yet are left out)."""
        metrics = [c for c in self.points.columns
                   if c not in ("row", "scenario", "replicate", "seed", "policy", *self.parameters)]
        return self.design.join(self.points.select(metrics), on="key", how="inner")

    def trajectories(self, columns: list[str] | None = None,
                     where: pl.Expr | None = None) -> pl.LazyFrame:
        """The per-trajectory metrics (``columns`` only, the rows ``where`` holds), every
        chunk read through the door (`read_chunk`) one at a time, so only what was asked
        for is held."""
        files = [self.root / CHUNKS / c["trajectories"] for c in self.manifest["chunks"]]
        if not files:
            empty = pl.LazyFrame(schema={"key": pl.Utf8, "trajectory": pl.Int64,
                                         **{m: pl.Float64 for m in METRIC_NAMES}})
            return empty if columns is None else empty.select(columns)
        parts = [read_chunk(f, self.root, columns) for f in files]
        if where is not None:
            parts = [part.filter(where) for part in parts]
        return pl.concat(parts, how="diagonal_relaxed").lazy()


def read_chunk(path: Path, root: Path, columns: list[str] | None = None) -> pl.DataFrame:
    """A Parquet file of the sweep folder ``root``, read through the one door
    (`wmtsim.core.input_files.read_table`: a regular file of the folder, no link out of
    it, size-capped); a missing, truncated, garbage, FIFO or linked file is a `SweepError`
    naming it (not a traceback or a hang, and not blamed on ``--out``)."""
    try:
        return read_table(path, root, columns)
    except (OSError, pl.exceptions.PolarsError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e).split("\n")[0]
        raise SweepError(f"{path}: cannot read this sweep file ({reason}); the sweep folder "
                         "is damaged: re-run `wmtsim sweep` into a new --out") from None


def _check_chunk_names(root: Path, chunks: object) -> None:
    """The manifest's chunk list names files of ``chunks/`` as `Store.write_chunk` names
    them; any other name (``../../x.parquet``, a path elsewhere) is refused, so the
    manifest cannot send a reader out of the folder."""
    where = root / MANIFEST
    if not isinstance(chunks, list):
        raise SweepError(f"{where}: chunks {chunks!r}; allowed: a list of chunks")
    for k, c in enumerate(chunks):
        for kind in ("points", "trajectories"):
            name = c.get(kind) if isinstance(c, dict) else None
            m = re.fullmatch(rf"{kind}-(\d{{6,}})\.parquet", name) if isinstance(
                name, str) else None
            if m is None:
                raise SweepError(f"{where}: chunks[{k}].{kind} {name!r}; allowed: a file "
                                 f"name {kind}-NNNNNN.parquet of {CHUNKS}/")


def load_results(root: str | os.PathLike[str]) -> SweepResults:
    """Read a sweep folder written by `wmtsim.studies.sweeps.sweep.run_sweep`."""
    r = Path(root)
    try:
        manifest = json.loads(read_regular(r / MANIFEST))
    except FileNotFoundError:
        raise SweepError(f"{r}: not a sweep folder (no {MANIFEST})") from None
    except OSError as e:  # a FIFO, a device, no permission
        raise SweepError(f"{r / MANIFEST}: cannot read: {e.strerror or e}") from None
    except ValueError as e:
        raise SweepError(f"{r}: unreadable {MANIFEST}: {e}") from None
    if not isinstance(manifest, dict) or "chunks" not in manifest:
        raise SweepError(f"{r}: {MANIFEST} is not a sweep manifest")
    if not (r / DESIGN).exists():
        raise SweepError(f"{r}: the sweep was interrupted before its design was written "
                         f"(no {DESIGN}); resume it with `wmtsim sweep SWEEP --out {r}`")
    design = read_chunk(r / DESIGN, r)
    _check_chunk_names(r, manifest["chunks"])
    files = [r / CHUNKS / c["points"] for c in manifest["chunks"]]
    if files:
        # diagonal: a chunk written before a metric was declared lacks its columns (null
        # there), so a sweep resumed across that change still loads.
        points = pl.concat([read_chunk(f, r) for f in files], how="diagonal_relaxed")
        points = points.sort("key")
    else:
        points = pl.DataFrame(schema={"key": pl.Utf8})
    return SweepResults(r, manifest, design, points)
