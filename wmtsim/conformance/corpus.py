"""The conformance corpus: short named traces that, together, fire every rule of
`wmtsim.engine.trace.rules.RULES`, plus seeded random traces.

Each case is a list of events without ``expect`` lines; `build_corpus` adds the reference's
``expect`` lines (`wmtsim.conformance.expect.annotate`), replays each trace with rule
recording on, and tags the trace with the rules the replay fired (in the query line's
``note`` and in ``manifest.json``). The tags are the replay's, never written by hand, and
generation fails if a registered rule is left unexercised. The shipped copy lives in
``wmtsim/data/conformance/`` (`SHIPPED`); a test checks that it equals what
`build_corpus` produces.

Boundary cases use dyadic numbers (0.5, 0.25, ...), so that "exactly at τ_obs" is exact in
any floating-point evaluation order, not only in the reference's.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wmtsim.conformance.expect import DEFAULT_TOL, annotate
from wmtsim.conformance.generate import generate

SHIPPED = Path(__file__).resolve().parents[1] / "data" / "conformance"
"""The corpus shipped with wmtsim (`wmtsim conformance generate` writes the same files)."""

RANDOM_SEEDS = tuple(range(1, 13))
"""Seeds of the random traces in the corpus (`wmtsim.conformance.generate.generate`)."""

FORMAT = 1

E = dict[str, Any]


def _q(**params: Any) -> E:
    return {"op": "query", "id": "q", **({"params": params} if params else {})}


def _task(i: str, parent: str = "q") -> E:
    return {"op": "task", "id": i, "parent": parent}


def _action(i: str, parent: str = "q", poisoned: bool = False) -> E:
    return {"op": "action", "id": i, "parent": parent, **({"poisoned": True} if poisoned
                                                          else {})}


def _op(op: str, i: str, **more: Any) -> E:
    return {"op": op, "id": i, **more}


def _sel(*ids: str, candidates: list[str] | None = None) -> E:
    ev: E = {"op": "select", "selected": list(ids)}
    if candidates is not None:
        ev["candidates"] = candidates
    return ev


def eq2_outcomes() -> list[E]:
    """Eq. 2: success, failure, a revised outcome; an event keeps m (default)."""
    return [_q(), _task("t"), _action("a", "t"), _action("b", "t", poisoned=True),
            _op("outcome", "a", result="success"), _op("outcome", "b", result="failure"),
            _sel("t"), _op("outcome", "a", result="failure"),
            _op("outcome", "b", result="success"), _sel("a", "b", "t")]


def event_resets_m() -> list[E]:
    """The other reading of Eq. 15: an outcome event also resets m."""
    return [_q(event_resets_m=True), _action("a"), _sel(), _sel(),
            _op("outcome", "a", result="success"), _sel()]


def decay_cap() -> list[E]:
    """Eqs. 3–5 and 15 with ρ = 0.5, M = 3: misses below, at and past the cap, then a
    selection resets m; a global memory decays by ρ_G."""
    return [_q(rho=0.5, M=3), _action("a"), {"op": "global", "id": "g"},
            _sel(), _sel(), _sel(), _sel(), _sel(), _sel("a", "g"), _sel("g")]


def large_k() -> list[E]:
    """ρ^k for large k: M = 25, 26 consecutive misses (k reaches 25, then stays)."""
    return [_q(rho=0.99, M=25), _action("a"), *[_sel() for _ in range(26)]]


def global_variant() -> list[E]:
    """Globals with a stored miss count of 0 and ρ_G = 0.5."""
    return [_q(rho_g=0.5, global_miss_count=0), {"op": "global", "id": "g"},
            {"op": "global", "id": "h", "poisoned": True}, _sel("h"), _sel(), _sel("g")]


def folds() -> list[E]:
    """Fold, folds inside folds, reopen, re-fold; the summary's pool membership; the
    active task moving to the parent of a completed task."""
    return [_q(), _task("t1"), _action("a1", "t1"), _op("activate", "t1"), _sel(),
            _task("outer"), _task("inner", "outer"), _action("x", "inner"),
            _op("complete", "t1", summary_tokens=5), _sel("t1/summary"),
            _op("complete", "inner", summary_tokens=3), _sel(),
            _op("complete", "outer", summary_tokens=4), _sel("outer/summary"),
            _op("reopen", "outer"), _sel("inner/summary"), _op("reopen", "inner"),
            _sel("x"), _op("complete", "inner", summary_tokens=2), _sel(),
            _op("complete", "outer"), _sel()]


def supersede() -> list[E]:
    """Supersede a memory, a branch, a folded branch and a summary; Eq. 6 counts nodes
    under an obsolete ancestor; Eq. 7 skips obsolete branches."""
    return [_q(), _task("t"), _task("u", "t"), _action("a", "u"),
            _op("outcome", "a", result="failure"), _action("b", "t"), _task("f"),
            _action("c", "f"), _op("complete", "f"), _sel("b"), _op("supersede", "b"),
            _sel(), _op("supersede", "u"), _sel(), _op("supersede", "f"),
            {"op": "global", "id": "g"}, _op("supersede", "g"), _task("s"),
            _op("complete", "s"), _op("supersede", "s/summary"), _sel()]


def threshold() -> list[E]:
    """Eq. 7 at the boundary: U_b = 0.5·max + 0.5·mean is exactly τ_obs = 0.5 for a lone
    task at u = 0.5 (kept), above it with a success (kept), below it after a miss
    (suppressed)."""
    return [_q(u_init_task=0.5, alpha=0.5, beta=0.5, gamma=0.0, delta=0.0, tau_obs=0.5,
               rho=0.5), _task("t"), _task("w"), _action("a", "w"),
            _op("outcome", "a", result="success"), _sel(candidates=[]),
            _sel("w", candidates=["t", "w"])]


def active_path() -> list[E]:
    """Eq. 7 spares the active path: τ_obs = 0.95 suppresses every branch but the
    active one."""
    return [_q(tau_obs=0.95), _task("t"), _action("a", "t"), _op("activate", "t"),
            _task("v"), _sel("a")]


def empty_selects() -> list[E]:
    """A select with no candidates at all, and one that names its own pool."""
    return [_q(), _sel(), _action("a"), _action("b"), _sel("a", candidates=["a"]),
            _sel(candidates=["a", "b"])]


CASES: tuple[Callable[[], list[E]], ...] = (
    eq2_outcomes, event_resets_m, decay_cap, large_k, global_variant, folds, supersede,
    threshold, active_path, empty_selects)
"""The hand-written cases, in corpus order."""


@dataclass(frozen=True)
class CorpusTrace:
    """One trace of the corpus: its file name, what it is for, its lines, its rules."""

    file: str
    description: str
    lines: list[str]
    rules: tuple[str, ...]


def _tagged(name: str, description: str, lines: list[str]) -> CorpusTrace:
    from wmtsim.engine.trace.trace import run

    coverage = run(lines, rules=True).coverage or {}
    rules = tuple(r for r, count in coverage.items() if count)
    first = json.loads(lines[0])
    first["note"] = f"conformance: {description} Rules: {', '.join(rules)}."
    return CorpusTrace(f"{name}.jsonl", description, [json.dumps(first), *lines[1:]], rules)


def build_corpus() -> list[CorpusTrace]:
    """The whole corpus, deterministically (the hand-written cases, then the random ones).

    Raises RuntimeError if the corpus leaves a registered rule unexercised."""
    from wmtsim.engine.trace.rules import RULE_NAMES

    out = []
    for k, case in enumerate(CASES, start=1):
        events = [json.dumps(e) for e in case()]
        doc = " ".join((case.__doc__ or "").split())
        out.append(_tagged(f"{k:02d}_{case.__name__}", doc,
                           annotate(events, at=("every",), tol=DEFAULT_TOL)))
    for seed in RANDOM_SEEDS:
        events = [json.dumps(e) for e in generate(seed, expect_steps=False).events]
        out.append(_tagged(f"random_{seed:02d}", f"Seeded random trace (seed {seed}).",
                           annotate(events, at=("select",), tol=DEFAULT_TOL)))
    missing = set(RULE_NAMES) - {r for t in out for r in t.rules}
    if missing:
        raise RuntimeError(f"the corpus never exercises: {', '.join(sorted(missing))}")
    return out


def manifest(traces: list[CorpusTrace]) -> dict[str, Any]:
    """``manifest.json`` of a corpus folder: the rule registry and each trace's tags."""
    from wmtsim.engine.trace.rules import RULES

    return {"command": "conformance", "format": FORMAT,
            "rules": {r.name: {"source": r.source, "text": r.text} for r in RULES},
            "traces": [{"file": t.file, "description": t.description,
                        "lines": len(t.lines), "rules": list(t.rules)} for t in traces]}


def write_corpus(folder: Path, traces: list[CorpusTrace] | None = None) -> list[Path]:
    """Write the corpus into ``folder`` (an existing, empty folder: the caller's
    `wmtsim.core.output.result_folder` makes the swap atomic). Returns the files."""
    from wmtsim.core.output import atomic_write_text

    traces = build_corpus() if traces is None else traces
    paths = [atomic_write_text(folder / t.file, "".join(line + "\n" for line in t.lines))
             for t in traces]
    paths.append(atomic_write_text(folder / "manifest.json",
                                   json.dumps(manifest(traces), indent=1) + "\n"))
    return paths


MAX_MANIFEST_BYTES = 16 << 20  # a corpus manifest larger than this is refused


def corpus_files(folder: Path | None = None) -> list[Path]:
    """The trace files of a corpus folder (default: the shipped one), in manifest order.

    Raises ValueError when the folder holds no conformance manifest."""
    from wmtsim.core.input_files import check_regular, open_regular

    folder = SHIPPED if folder is None else Path(folder)
    try:
        with open_regular(folder / "manifest.json", inside=True) as f:
            data = json.loads(f.read(MAX_MANIFEST_BYTES + 1)[:MAX_MANIFEST_BYTES])
    except (OSError, ValueError, RecursionError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)[:200]
        raise ValueError(f"{str(folder)!r} is not a conformance corpus (no readable "
                         f"manifest.json: {reason})") from None
    if not isinstance(data, dict) or data.get("command") != "conformance":
        raise ValueError(f"{str(folder)!r}: manifest.json is not a conformance manifest")
    traces = data.get("traces", [])
    files = []
    for k, t in enumerate(traces if isinstance(traces, list) else [None]):
        name = t.get("file") if isinstance(t, dict) else None
        # A corpus file is one of the folder's own: a name such as "../x" or "/etc/x"
        # would read outside the corpus.
        if not isinstance(name, str) or not name or "/" in name or "\\" in name \
                or name.startswith(".") or "\x00" in name:
            raise ValueError(f"{str(folder)!r}: manifest.json traces[{k}].file: "
                             f"{name!r}; allowed: the name of a trace file in the folder")
        try:
            check_regular(folder / name, inside=True)
        except OSError as e:
            raise ValueError(f"{str(folder / name)!r}: cannot read: {e.strerror}") from None
        files.append(folder / name)
    return files
