"""`make mutation`: a bounded mutation run with cosmic-ray (docs/testing.md).

The mutant set is chosen, not exhaustive: in each group below, only the named functions
(or module-level names) of the named files are mutated, with the operators in `KEEP`
(the boundaries of comparisons and == ↔ !=, + ↔ −, × ↔ ÷, booleans, and ↔ or, a
dropped unary minus or not, loops run zero times, break ↔ continue). Each group runs
its own fast test subset:

* ``kernels`` — Eqs. 3–7 (`core/scoring.py`, `core/lifecycle.py`) with
  ``NUMBA_DISABLE_JIT=1``: the kernels run as Python, so a mutant costs no compilation;
* ``selector`` and ``loop`` — engine kernels that draw random numbers (the counter-based
  generator needs numba's wrapping uint64 arithmetic, so these cannot run as Python):
  compiled per mutant into a throw-away numba cache, hence few, hand-picked lines;
* ``twin``, ``metrics``, ``stats``, ``inference``, ``round4``, ``output`` — plain Python.

First the issue's hand-made mutants (`HAND`) are applied one by one by string replacement
and their group's subset run. Results go to ``results/mutation/`` (one cosmic-ray session per
group and ``summary.json``); the score and the survivors are recorded in docs/testing.md.
Run ``python scripts/mutation.py [group ...]`` (``--list`` shows the mutant counts only).
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "results" / "mutation"
PY = sys.executable
PYTEST = (f"{PY} -m pytest -q -x -p no:randomly -p no:cacheprovider "
          "-W ignore::RuntimeWarning")

KEEP = re.compile("|".join([
    r"core/ReplaceComparisonOperator_(Lt_LtE|LtE_Lt|Gt_GtE|GtE_Gt|Eq_NotEq|NotEq_Eq)$",
    r"core/ReplaceBinaryOperator_(Add_Sub|Sub_Add|Mul_Div|Div_Mul)$",
    r"core/ReplaceTrueWithFalse$", r"core/ReplaceFalseWithTrue$",
    r"core/ReplaceAndWithOr$", r"core/ReplaceOrWithAnd$", r"core/ReplaceUnaryOperator_Delete_USub$",
    r"core/ReplaceUnaryOperator_Delete_Not$", r"core/ZeroIterationForLoop$",
    r"core/ReplaceBreakWithContinue$",
]))


@dataclass(frozen=True)
class Group:
    name: str
    targets: dict[str, tuple[str, ...]]  # file -> functions / module-level names mutated
    tests: str  # pytest arguments
    env: dict[str, str]
    timeout: float = 120.0
    fresh_cache: bool = False  # mutates a module numba compiles: use a throw-away cache


BOUNDARY = "tests/core/test_boundaries.py"
GROUPS = (
    Group("kernels", {
        "wmtsim/core/scoring.py": ("_clip01", "_rho_power", "_decay_multiplier",
                                   "_feedback_one", "_cumulative_exponent",
                                   "_branch_priority_core", "_branch_priority"),
        "wmtsim/core/lifecycle.py": ("_candidate_pool_into", "_branch_priorities_into",
                                     "_suppress", "_branch_of", "_mark_active_path")},
        f"{BOUNDARY} tests/core/test_scoring.py tests/twins/test_differential_kernels.py "
        "-k 'eq or test_scoring or differential'", {"NUMBA_DISABLE_JIT": "1"}),
    Group("twin", {
        "wmtsim/twins/reference.py": ("_clip01", "_rho_power", "MemoryTree.branch_priority",
                                      "MemoryTree._feedback", "MemoryTree.select"),
        "wmtsim/twins/stubs_reference.py": ("AgentStubs.select_items",
                                            "AgentStubs.select_branches")},
        f"{BOUNDARY} tests/core/test_properties.py tests/twins/test_reference.py", {}),
    Group("selector", {
        "wmtsim/engine/selector.py": ("_select_items", "_select_branches")},
        f"{BOUNDARY} -k 'selector or poison or weighted'", {}, 300.0, fresh_cache=True),
    Group("metrics", {
        "wmtsim/core/metrics.py": ("DECLARED", "RATIOS", "_ratio", "metrics_from_counters",
                                   "ratio_parts", "frame_parts")},
        "tests/core/test_metric_counters.py -k 'not engine'", {}, fresh_cache=True),
    Group("stats", {
        "wmtsim/core/bootstrap.py": ("mean_cis", "_type7", "pooled_cis", "paired_bootstrap"),
        "wmtsim/core/inference.py": ("paired_difference",),
        "wmtsim/studies/compare/claims.py": ("Claim.favour", "evaluate"),
        "wmtsim/studies/compare/report.py": ("paired_vs",),
        "wmtsim/studies/attribution/shapley.py": ("shapley_exact",)},
        "tests/studies/test_signs.py tests/studies/test_claims.py tests/core/test_bootstrap.py "
        "-k 'cell or signs or "
        "favour or verdict or quantile or paired or shapley or game or mean_ci or pooled' "
        "tests/studies/test_attribution.py::test_two_player_game_by_hand "
        "tests/studies/test_attribution.py::test_glove_game_by_hand", {}),
    Group("inference", {  # the one estimator and verdict vocabulary
        "wmtsim/core/inference.py": ("rule_of_three", "clopper_pearson_upper",
                                     "_linearised", "_contributions", "paired_effect",
                                     "adjust", "two_sided", "verdict",
                                     "directed_verdict"),
        "wmtsim/core/verdicts.py": ("pair_test", "check_claim", "read_family"),
        "wmtsim/studies/compare/paper_checks.py": ("_favour", "range_test", "read_checks")},
        "tests/core/test_inference_cases.py tests/studies/test_verdict_cases.py "
        "tests/studies/test_statistics_coverage.py tests/studies/test_signs.py "
        "tests/studies/test_claims.py tests/studies/test_paper_tables.py "
        "tests/core/test_inference_interval.py", {}, 300.0),
    Group("round4", {  # issue 49's: the grid test, Morris's test, the prediction interval
        "wmtsim/core/grid_test.py": ("_studentised_max", "grid_test", "mcnemar_midp",
                                     "binary_test"),
        "wmtsim/studies/sweeps/screen.py": ("morris_test",),
        "wmtsim/studies/calibration/inference.py": ("prediction_interval", "predictive_cell")},
        "-m 'not slow' tests/core/test_round4_cases.py tests/core/test_grid_test_binary.py "
        "tests/studies/test_teeth_quick.py "
        "tests/studies/test_flatness.py tests/studies/test_prediction_coverage.py", {}, 120.0),
    Group("output", {
        "wmtsim/core/output.py": ("temp_path", "commit", "atomic_write")},
        "tests/core/test_output.py tests/studies/test_kill_injection.py "
        "tests/interfaces/test_cli_output.py", {},
        300.0),
)

# The hand-made mutants that survived the suite: (label, file, old, new, group).
HAND = (
    ("Eq. 7 suppression at the threshold (kernel)", "wmtsim/core/lifecycle.py",
     "if priority[b] < p.tau_obs:", "if priority[b] <= p.tau_obs:", "kernels"),
    ("Eq. 7 suppression at the threshold (twin)", "wmtsim/twins/reference.py",
     "and u_b < self.params.tau_obs):", "and u_b <= self.params.tau_obs):", "twin"),
    ("budget check strict (engine items)", "wmtsim/engine/selector.py",
     "if used + cost <= budget:", "if used + cost < budget:", "selector"),
    ("budget check strict (twin items)", "wmtsim/twins/stubs_reference.py",
     "if used + cost <= self.budget:", "if used + cost < self.budget:", "twin"),
    ("paired_difference sign flipped", "wmtsim/core/inference.py",
     "out = paired_effect(ta[metric].to_numpy(), tb[metric].to_numpy(), alpha=alpha,",
     "out = paired_effect(tb[metric].to_numpy(), ta[metric].to_numpy(), alpha=alpha,",
     "stats"),
    ("the bootstrap's lower quantile moved (every interval and claims verdict)",
     "wmtsim/core/inference.py",
     "lo, hi = np.quantile(stats_[np.isfinite(stats_)], [alpha / 2, 1 - alpha / 2])",
     "lo, hi = np.quantile(stats_[np.isfinite(stats_)], [alpha, 1 - alpha / 2])",
     "inference"),
    ("ASR over prompt steps (its one declaration)", "wmtsim/core/metrics.py",
     '''("compromised_steps",), ("critical_steps",),''',
     '''("compromised_steps",), ("prompt_steps",),''', "metrics"),
    ("PRR = H_p / H_c", "wmtsim/core/metrics.py",
     '''("h_p",), ("h_p", "h_c"),''', '''("h_p",), ("h_c",),''', "metrics"),
)


def spans(path: Path, names: tuple[str, ...]) -> list[tuple[int, int]]:
    """(first, last) line of each named function, method (``Class.method``) or
    module-level assignment."""
    tree = ast.parse(path.read_text())
    found: dict[str, tuple[int, int]] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            found[node.name] = (node.lineno, node.end_lineno or node.lineno)
        elif isinstance(node, ast.ClassDef):
            for sub in node.body:
                if isinstance(sub, ast.FunctionDef):
                    found[f"{node.name}.{sub.name}"] = (sub.lineno,
                                                        sub.end_lineno or sub.lineno)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name):
                    found[t.id] = (node.lineno, node.end_lineno or node.lineno)
    missing = [n for n in names if n not in found]
    if missing:
        raise SystemExit(f"{path}: no function or name {missing}")
    return [found[n] for n in names]


def _env(group: Group, cache: str) -> dict[str, str]:
    env = dict(os.environ, **group.env)
    if group.fresh_cache:
        env["NUMBA_CACHE_DIR"] = cache
    env.pop("PYTEST_ADDOPTS", None)
    return env


def run_group(group: Group, list_only: bool) -> dict[str, object]:
    """One cosmic-ray session: init, keep the chosen mutants, exec, collect."""
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    OUT.mkdir(parents=True, exist_ok=True)
    config = OUT / f"{group.name}.toml"
    session = OUT / f"{group.name}.sqlite"
    session.unlink(missing_ok=True)
    modules = ", ".join(f'"{f}"' for f in group.targets)
    config.write_text(
        "[cosmic-ray]\n"
        f"module-path = [{modules}]\n"
        f"timeout = {group.timeout}\n"
        "excluded-modules = []\n"
        f'test-command = "{PYTEST} {group.tests}"\n'
        '[cosmic-ray.distributor]\nname = "local"\n')
    subprocess.run([PY, "-m", "cosmic_ray.cli", "init", str(config), str(session)],
                   cwd=ROOT, check=True)
    keep_lines = {(ROOT / f).resolve(): spans(ROOT / f, names)
                  for f, names in group.targets.items()}
    kept = 0
    with use_db(str(session), WorkDB.Mode.open) as db:
        for item in list(db.pending_work_items):
            keep = False
            for mut in item.mutations:
                lines = keep_lines[Path(mut.module_path).resolve()]
                line = mut.start_pos[0]
                keep = bool(KEEP.match(mut.operator_name)) and any(
                    a <= line <= b for a, b in lines)
            if keep:
                kept += 1
            else:
                db.set_result(item.job_id, WorkResult(output="not in the chosen set",
                                                      worker_outcome=WorkerOutcome.SKIPPED))
    print(f"[{group.name}] {kept} mutants", flush=True)
    if list_only:
        return {"group": group.name, "mutants": kept}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="wmtsim-mutation-numba-") as cache:
        subprocess.run([PY, "-m", "cosmic_ray.cli", "exec", str(config), str(session)],
                       cwd=ROOT, check=True, env=_env(group, cache))
    seconds = time.perf_counter() - t0
    survivors, killed, total = [], 0, 0
    with use_db(str(session), WorkDB.Mode.open) as db:
        for item, result in db.completed_work_items:
            if result.worker_outcome == WorkerOutcome.SKIPPED:
                continue
            total += 1
            if result.is_killed:
                killed += 1
            else:
                m = item.mutations[0]
                src = Path(m.module_path).read_text().splitlines()[m.start_pos[0] - 1]
                survivors.append({"file": str(m.module_path), "line": m.start_pos[0],
                                  "operator": m.operator_name, "occurrence": m.occurrence,
                                  "source": src.strip(),
                                  "outcome": str(result.worker_outcome)})
    print(f"[{group.name}] killed {killed}/{total} in {seconds:.0f} s", flush=True)
    return {"group": group.name, "mutants": total, "killed": killed,
            "seconds": round(seconds), "survivors": survivors}


def run_hand(groups: dict[str, Group]) -> list[dict[str, object]]:
    """Apply each of the issue's hand-made mutants, run its group's tests, revert."""
    out = []
    for label, file, old, new, gname in HAND:
        if gname not in groups:
            continue
        path = ROOT / file
        text = path.read_text()
        if text.count(old) != 1:
            raise SystemExit(f"hand mutant {label!r}: {old!r} not found once in {file}")
        group = groups[gname]
        try:
            path.write_text(text.replace(old, new))
            with tempfile.TemporaryDirectory(prefix="wmtsim-mutation-numba-") as cache:
                r = subprocess.run(f"{PYTEST} {group.tests}", shell=True, cwd=ROOT,
                                   env=_env(group, cache), capture_output=True,
                                   timeout=group.timeout * 3)
        finally:
            path.write_text(text)
        killed = r.returncode != 0
        print(f"[hand] {'killed ' if killed else 'SURVIVED'} {label}", flush=True)
        out.append({"mutant": label, "file": file, "killed": killed})
    return out


def main(argv: list[str]) -> int:
    list_only = "--list" in argv
    names = [a for a in argv if not a.startswith("--")] or [g.name for g in GROUPS]
    groups = {g.name: g for g in GROUPS if g.name in names}
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "wmtsim"], cwd=ROOT,
                           capture_output=True, text=True).stdout
    if dirty.strip() and not list_only:
        print("wmtsim/ has uncommitted changes; commit or stash them first "
              "(mutants are applied in place and reverted from git's copy)")
        return 2
    t0 = time.perf_counter()
    hand = [] if list_only else run_hand(groups)
    results = [run_group(g, list_only) for g in groups.values()]
    # cosmic-ray restores each file after its mutant; make sure nothing is left over.
    subprocess.run(["git", "checkout", "--", "wmtsim"], cwd=ROOT, check=True)
    if list_only:
        return 0
    total = sum(int(r["mutants"]) for r in results)  # type: ignore[call-overload]
    killed = sum(int(r["killed"]) for r in results)  # type: ignore[call-overload]
    summary = {"mutants": total, "killed": killed,
               "score": round(killed / total, 4) if total else None,
               "seconds": round(time.perf_counter() - t0), "groups": results, "hand": hand}
    (OUT / "summary.json").write_text(json.dumps(summary, indent=2))
    print(f"mutation score {killed}/{total} ({summary['score']}); "
          f"hand-made: {sum(bool(h['killed']) for h in hand)}/{len(hand)} killed; "
          f"{summary['seconds']} s; see {OUT / 'summary.json'}")
    shutil.rmtree(ROOT / ".pytest_cache", ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
