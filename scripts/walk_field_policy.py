"""Walk the change "a new field policy" for real, in a copy of the repository, and count
the files it takes (docs/architecture.md, "Where a change goes": target at most 4).

    python scripts/walk_field_policy.py            # copy, edit, regenerate, test, report
    python scripts/walk_field_policy.py --keep     # ... and leave the copy to read
    python scripts/walk_field_policy.py --anchors  # only check the anchors exist (fast)

The policy added is ``recent_k``: the ``recent_k`` newest stored memories that fit in the
budget B (a new family with one knob, ``recent_k``, default 3, and a retrieval rule
only). The walk copies the working tree (tracked and untracked files, without .venv and
results) into a temporary folder made a git repository, so ``git status`` there says what
changed; inserts the policy by small text edits at anchors of today's files (an anchor
that is missing or not unique stops the walk: the architecture moved and this entry with
it); runs the generators the change needs (the scenario schema and docs/field.md's
policies table); and runs, in the copy, the engine == twin differential for the new policy
with the registry's, parity's, the docs' and the layout's tests. It prints the files
edited by hand, the files regenerated and each test command's outcome, and exits 1 when
more than 4 files were edited by hand or a step failed.

The copy compiles its own numba kernels (its sources differ) into a cache inside the
copy, so nothing outside it is touched; expect several minutes.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = 4  # files edited by hand (docs/architecture.md's goal)
POLICY = "recent_k"


@dataclass(frozen=True)
class Edit:
    """Insert ``text`` before (or after) the one occurrence of ``anchor`` in ``path``;
    with ``replace``, put ``text`` in its place."""

    path: str
    anchor: str
    text: str
    where: str = "before"  # "before", "after" or "replace"


KNOBS = "wmtsim/core/field_knobs.py"
FIELD = "wmtsim/core/field_policies.py"
DISPATCH = "wmtsim/engine/field/dispatch.py"
TWIN = "wmtsim/twins/field_reference.py"

EDITS: tuple[Edit, ...] = (
    # 1. Its knob, appended to the `Baselines` fields.
    Edit(KNOBS, "\n    def __post_init__(self) -> None:", '''
    recent_k: int = knob(3, hi=100_000,
        doc="recent_k: how many of the newest stored memories it puts in context (within "
            "B); 0 = the shared cap, `Stubs.top_k`.")
'''),
    # 2. Its family's record, its code, and its row (registration and docs/field.md's rules).
    Edit(FIELD, "\n\n# The field's families, in code order after WMT's", '''
RECENT_K = Family(
    code=8, name="recent_k", label="recent k", knobs=("recent_k", *_FIELD_WIDE),
    item_cap=ItemCap(OWN, ("recent_k",)), signal=_queue_signal,
    engine=_ENGINE + "field.dispatch._recent_k_retrieve", twin=_TWIN + "recent_k_retrieve")
'''),
    Edit(FIELD, "TOKEN_BUFFER, MEM0)", "TOKEN_BUFFER, MEM0, RECENT_K)", where="replace"),
    Edit(FIELD, "FAM_MEM0 = MEM0.code\n", "FAM_RECENT_K = RECENT_K.code\n", where="after"),
    Edit(FIELD, "\n)\n", '''
    FieldPolicy("recent_k", "Recent k (the newest that fit in B)", RECENT_K,
        state="queue",
        rules="the `recent_k` newest stored memories that fit in B are the context"),''',
         where="before"),
    # 3. Its kernel and its branch in the engine's retrieval dispatch.
    Edit(DISPATCH, "    FAM_TOKEN_BUFFER,\n", "    FAM_RECENT_K,\n"),
    Edit(DISPATCH, "    elif sw_family == FAM_GENERATIVE:\n        _ga_retrieve(", '''\
    elif sw_family == FAM_RECENT_K:
        _recent_k_retrieve(n, bs, F, eligible, selected, budget, _cap(bl.recent_k, st))
'''),
    Edit(DISPATCH, "@jit\ndef _baseline_supersede(", '''\
@jit
def _recent_k_retrieve(n, bs, F, eligible, selected, budget, k):
    """recent_k: the ``k`` newest stored memories that fit in B (``k``: `_cap` of its
    knob, the shared cap when the knob is 0)."""
    _fit_newest(n, bs, F, eligible, selected, np.int64(-1), budget, 0.0, k)


'''),
    # 4. Its twin method and its branch in the twin's step.
    Edit(TWIN, "    FAM_TOKEN_BUFFER,\n", "    FAM_RECENT_K,\n"),
    Edit(TWIN, "        elif fam == FAM_GENERATIVE:\n            chosen = self.generative_retrieve",
         '''\
        elif fam == FAM_RECENT_K:
            chosen = self.recent_k_retrieve(pool, tokens, budget)
'''),
    Edit(TWIN, "    def supersede(self, v: str) -> bool:", '''\
    def recent_k_retrieve(self, pool: list[str], tokens: dict[str, float],
                          budget: float) -> set[str]:
        """recent_k: the ``recent_k`` newest stored memories that fit in B."""
        chosen, _ = self.newest_fit(pool, tokens, budget, 0.0, self.cap(self.k.recent_k),
                                    summary=False)
        return chosen

'''),
)

# The generators the change needs (scripts/docs.py's names), run in the copy.
GENERATORS: tuple[tuple[str, ...], ...] = (
    ("-m", "wmtsim.studies.scenarios.schema"),
    ("scripts/field_policies_table.py",),
)

# The tests run in the copy: the new policy's engine == twin differential, the registry's
# and parity's checks, the generated docs and schema, and the package's layout.
TESTS: tuple[tuple[str, ...], ...] = (
    ("tests/twins/test_baselines.py", "-k", f"{POLICY} or registered"),
    ("tests/core/test_policy_families.py",),
    ("tests/studies/test_field_parity.py::test_caps_and_signals_are_declared_for_every_policy",
     "tests/studies/test_field_parity.py::"
     "test_declared_item_caps_bound_what_the_engine_puts_in_context"),
    ("tests/test_docs_generated.py::test_the_field_policies_table_is_the_field_rows",
     "tests/studies/test_scenario.py::test_schema_file_is_generated",
     "tests/test_layout.py"),
)


def _at(text: str, edit: Edit) -> int:
    """Where ``edit``'s anchor is in ``text``; the anchor must occur exactly once."""
    count = text.count(edit.anchor)
    if count != 1:
        raise SystemExit(f"walk: anchor {edit.anchor!r} occurs {count} times in {edit.path} "
                         "(expected once): the file changed; update scripts/"
                         "walk_field_policy.py and docs/architecture.md's walk with it")
    return text.index(edit.anchor)


def apply(text: str, edit: Edit) -> str:
    """``text`` with ``edit`` made (a missing or repeated anchor stops the walk)."""
    i = _at(text, edit)
    j = i + len(edit.anchor)
    if edit.where == "replace":
        return text[:i] + edit.text + text[j:]
    if edit.where == "after":
        return text[:j] + edit.text + text[j:]
    return text[:i] + edit.text + text[i:]


def edited(root: Path) -> dict[str, str]:
    """The texts of the files the walk edits, with every edit made, read from ``root``."""
    texts: dict[str, str] = {}
    for edit in EDITS:
        if edit.path not in texts:
            texts[edit.path] = (root / edit.path).read_text(encoding="utf-8")
        texts[edit.path] = apply(texts[edit.path], edit)
    return texts


def _run(argv: list[str], cwd: Path, env: dict[str, str] | None = None,
         quiet: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=env, text=True,
                          capture_output=quiet, check=False)


def copy_tree(dest: Path) -> None:
    """The working tree's files (tracked and untracked, ignored ones and .venv/results
    left out) into ``dest``, committed there so ``git status`` shows the walk's changes."""
    listed = _run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                  ROOT).stdout.split("\0")
    for name in listed:
        if not name or name.split("/")[0] in (".venv", "results"):
            continue
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    for argv in (["git", "init", "-q"], ["git", "add", "-A"],
                 ["git", "-c", "user.name=walk", "-c", "user.email=walk@localhost", "commit",
                  "-q", "-m", "before the walk"]):
        done = _run(argv, dest)
        if done.returncode != 0:
            raise SystemExit(f"walk: {' '.join(argv)} failed in the copy: {done.stderr}")
    # The copy's own numba cache is not a change of the walk's.
    with (dest / ".git" / "info" / "exclude").open("a", encoding="utf-8") as f:
        f.write("/.numba_cache/\n")


def changed(repo: Path) -> list[str]:
    """The files ``git status`` reports changed or new in the copy."""
    out = _run(["git", "status", "--porcelain", "--untracked-files=all"], repo).stdout
    return sorted(line[3:] for line in out.splitlines() if line.strip())


def _summary(output: str) -> str:
    """pytest's last line ("3 passed, 1 deselected in 4.2s"), or the last line at all."""
    lines = [line.strip("= ") for line in output.splitlines() if line.strip()]
    return lines[-1] if lines else "(no output)"


def walk(copy: Path) -> int:
    """Add the policy in ``copy``, regenerate, test; print the report; 0 if it passed."""
    env = {**os.environ, "PYTHONPATH": str(copy),
           "NUMBA_CACHE_DIR": str(copy / ".numba_cache")}
    python = sys.executable
    print(f"walk: a new field policy, {POLICY!r}, in a copy of {ROOT} at {copy}")
    copy_tree(copy)
    where = _run([python, "-c", "import wmtsim; print(wmtsim.__file__)"], copy, env).stdout
    if not where.startswith(str(copy)):
        raise SystemExit(f"walk: the copy's python imports wmtsim from {where.strip()}")
    for path, text in edited(copy).items():
        (copy / path).write_text(text, encoding="utf-8")
    by_hand = changed(copy)
    failed = []
    for argv in GENERATORS:
        done = _run([python, *argv], copy, env)
        if done.returncode != 0:
            failed.append(f"generator {' '.join(argv)}: {done.stderr.strip()[-500:]}")
    regenerated = [f for f in changed(copy) if f not in by_hand]
    results = []
    ruff = Path(python).with_name("ruff")
    if ruff.exists():
        done = _run([str(ruff), "check", *by_hand], copy, env)
        results.append((f"ruff check {' '.join(by_hand)}", done.returncode,
                        _summary(done.stdout)))
    for args in TESTS:
        argv = [python, "-m", "pytest", "-q", "-p", "no:xdist", "-p", "no:cacheprovider",
                *args]
        print(f"walk: running pytest {' '.join(args)} ...", flush=True)
        done = _run(argv, copy, env)
        results.append((f"pytest {' '.join(args)}", done.returncode, _summary(done.stdout)))
        if done.returncode != 0:
            print(done.stdout[-4000:], done.stderr[-2000:], sep="\n")
    ok = len(by_hand) <= TARGET and not failed and all(rc == 0 for _, rc, _ in results)
    print(f"\nfiles edited by hand: {len(by_hand)} (target: at most {TARGET})")
    print("".join(f"  {f}\n" for f in by_hand), end="")
    print(f"files regenerated: {len(regenerated)}")
    print("".join(f"  {f}\n" for f in regenerated), end="")
    print("diff --stat in the copy:")
    print(_run(["git", "diff", "--stat"], copy).stdout, end="")
    print("checks run in the copy:")
    for what, rc, line in results:
        print(f"  [{'ok' if rc == 0 else 'FAILED'}] {what}: {line}")
    for what in failed:
        print(f"  [FAILED] {what}")
    print(f"walk: {'PASSED' if ok else 'FAILED'}")
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python scripts/walk_field_policy.py",
                                 description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keep", action="store_true", help="leave the copy (its path printed)")
    ap.add_argument("--anchors", action="store_true",
                    help="only check that every edit's anchor exists once in today's files")
    ap.add_argument("--dir", type=Path, default=None,
                    help="make the copy in this (new or empty) folder")
    args = ap.parse_args(argv)
    if args.anchors:
        texts = edited(ROOT)
        print(f"walk: {len(EDITS)} edits in {len(texts)} files apply to today's tree")
        return 0
    if args.dir is not None:
        args.dir.mkdir(parents=True, exist_ok=True)
        if any(args.dir.iterdir()):
            raise SystemExit(f"walk: {args.dir} is not empty")
        copy = args.dir
    else:
        copy = Path(tempfile.mkdtemp(prefix="wmtsim-walk-"))
    try:
        return walk(copy)
    finally:
        if args.keep or args.dir is not None:
            print(f"walk: the copy is kept at {copy}")
        else:
            shutil.rmtree(copy, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
