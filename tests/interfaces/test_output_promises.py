"""Every command that writes keeps the README's promises, checked the same way.

The commands are enumerated from the typer app: each must be listed in `WRITERS` (with a
small invocation that writes its result to ``{out}``) or in `NOT_WRITING`, so a new command
cannot skip these checks. For each writer: it succeeds into a new path and writes a whole
result with a manifest naming the command and its command line, and nothing else in the
working folder (a one-file result: the file and its sidecar ``NAME.manifest.json``); it
runs again over its own result; it refuses a user's folder or file and another command's
result (exit 2, nothing touched). A symbolic link as ``--out`` is followed by every
folder writer and refused by every one-file writer (docs/faults.md).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from wmtsim.core.output import SIDECAR, sha256_of, sidecar
from wmtsim.core.provenance import KEYS as PROVENANCE
from wmtsim.interfaces.cli.main import app

VARY = ["--vary", "stubs.selector_noise=0:0.4", "--vary", "stubs.poison_boost=0:0.1",
        "--levels", "2", "--n", "2", "--no-progress", "--no-charts"]
SWEEP = ('scenario = "paper_poisoning"\npolicies = ["wmt"]\n'
         '[parameters.rho]\nvalues = [0.8, 0.9]\n[design]\nkind = "grid"\ntrajectories = 3\n')
TRACE = ('{"op": "query", "id": "q"}\n{"op": "task", "id": "t", "parent": "q"}\n'
         '{"op": "activate", "id": "t"}\n{"op": "action", "id": "a", "parent": "t"}\n'
         '{"op": "select", "selected": ["a"]}\n')

# name -> (argv, the manifest's command, kind): folder results are replaced as a whole;
# a sweep folder is resumed; a file result is one file with its sidecar manifest.
WRITERS: dict[str, tuple[list[str], str, str]] = {
    "run": (["run", "paper_poisoning", "-p", "wmt", "--n", "3", "--out", "{out}"], "run",
            "folder"),
    "compare": (["compare", "paper_poisoning", "-p", "wmt", "-p", "linear", "--n", "3",
                 "--out", "{out}"], "compare", "folder"),
    "compare --budget": (["compare", "paper_poisoning", "-p", "wmt", "--budget", "200,300",
                          "--n", "3", "--out", "{out}"], "compare-budget", "folder"),
    "compare --parity": (["compare", "paper_poisoning", "-p", "wmt", "-p", "linear", "--parity",
                          "--n", "3", "--out", "{out}"], "compare-parity", "folder"),
    "analyze": (["analyze", "{sweep}", "--out", "{out}", "--no-charts"], "analyze", "folder"),
    "attribute": (["attribute", "paper_poisoning", "--from", "a3_no_semantic", "--to", "wmt",
                   "--n", "3", "--no-charts", "--out", "{out}"], "attribute", "folder"),
    "claims": (["claims", "paper_poisoning", *VARY, "--out", "{out}"], "claims", "folder"),
    "calibrate": (["calibrate", "paper_poisoning", "--n", "2", "--maxiter", "1", "--knob",
                   "stubs.p_leak=0:1", "--method", "nelder-mead", "--fit-on", "wmt",
                   "--out", "{out}"], "calibrate", "folder"),
    "sweep": (["sweep", "{sweep_file}", "--out", "{out}", "--no-progress"], "sweep", "sweep"),
    "replay": (["replay", "{trace}", "--out", "{out}.parquet"], "replay", "file"),
    "demo": (["demo", "--out", "{out}.csv"], "demo", "file"),
    "schema": (["schema", "scenario", "--out", "{out}.json"], "schema", "file"),
    "conformance": (["conformance", "generate", "--out", "{out}"], "conformance", "folder"),
    "expect": (["expect", "{trace}", "--out", "{out}.jsonl"], "expect", "file"),
    "screen": (["screen", "paper_poisoning", "--knob", "rho", "--knob", "tau_obs", "-r", "2",
                "--n", "3", "--no-charts", "--out", "{out}"], "screen", "folder"),
    "tune": (["tune", "paper_poisoning", "--trials", "2", "--batch", "2", "--n", "3",
              "--holdout-seeds", "1", "--knob", "rho", "--no-charts", "--no-progress",
              "--out", "{out}"], "tune", "folder"),
    "attack": (["attack", "paper_poisoning", "-p", "wmt", "--budget", "1", "--trials", "2",
                "--n", "5", "--n-holdout", "5", "--no-charts", "--out", "{out}"], "attack",
               "folder"),
    "dynamics": (["dynamics", "paper_poisoning", "-p", "wmt", "--n", "5", "--no-charts",
                  "--out", "{out}"], "dynamics", "folder"),
    "simulate-log": (["simulate-log", "{out}.jsonl", "-n", "50", "--no-progress"],
                     "simulate-log", "file"),
    "fit-stubs": (["fit-stubs", "{stub_log}", "--no-chart", "--no-progress",
                   "--out", "{out}.toml"], "fit-stubs", "file"),
}
NOT_WRITING = {"check", "warmup", "dashboard", "conformance check"}
# Writers whose promises are tested elsewhere, and why.
CHECKED_ELSEWHERE = {
    "conformance run": "tests/conformance/test_cli_conformance.py: it writes only when an "
                       "implementation disagrees (exit 1), its minimal trace into --save"}


def _commands() -> dict[str, list[str]]:
    """Each command of the app (``group sub`` for a group's) with its option names."""
    out = {}

    def walk(group: typer.core.TyperGroup, prefix: str) -> None:
        for name, cmd in group.commands.items():
            if isinstance(cmd, typer.core.TyperGroup):
                walk(cmd, f"{prefix}{name} ")
            else:
                out[prefix + name] = [o for p in cmd.params for o in getattr(p, "opts", [])]

    walk(typer.main.get_command(app), "")  # type: ignore[arg-type]
    return out


def test_every_command_is_checked() -> None:
    commands = _commands()
    groups = {name.split()[0] for name in commands if " " in name}
    covered = {" ".join(argv[:2]) if argv[0] in groups else argv[0]
               for argv, _, _ in WRITERS.values()} | NOT_WRITING | set(CHECKED_ELSEWHERE)
    assert set(commands) <= covered, f"not in WRITERS or NOT_WRITING: {set(commands) - covered}"
    for name, opts in commands.items():
        if "--out" in opts or "--save" in opts:
            assert name not in NOT_WRITING, f"{name} writes: add it to WRITERS"


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    from wmtsim.studies.sweeps.sweep import load_sweep, run_sweep

    root = tmp_path_factory.mktemp("inputs")
    (root / "w.toml").write_text(SWEEP)
    (root / "t.jsonl").write_text(TRACE)
    run_sweep(load_sweep(root / "w.toml"), root / "sweep", progress=False)
    assert CliRunner().invoke(app, ["simulate-log", str(root / "log.jsonl"), "-n", "400",
                                    "--no-progress"]).exit_code == 0
    return {"sweep": str(root / "sweep"), "sweep_file": str(root / "w.toml"),
            "trace": str(root / "t.jsonl"), "stub_log": str(root / "log.jsonl")}


def _argv(argv: list[str], out: Path, inputs: dict[str, str]) -> list[str]:
    return [a.replace("{out}", str(out)).format(**inputs) if "{" in a else a for a in argv]


def _invoke(argv: list[str]) -> tuple[int, str]:
    res = CliRunner().invoke(app, argv)
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(
        res.exception)
    return res.exit_code, " ".join((res.stderr or "").split())


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            p = Path(folder) / name
            st = p.lstat()
            out[str(p.relative_to(root))] = (st.st_size, st.st_mtime_ns)
    return out


SUFFIX = {"replay": ".parquet", "demo": ".csv", "schema": ".json", "expect": ".jsonl",
          "simulate-log": ".jsonl", "fit-stubs": ".toml"}


def _target(name: str, base: Path) -> Path:
    """Where writer ``name`` invoked with ``{out}`` = ``base`` writes its result."""
    return base.with_name(base.name + SUFFIX.get(name, ""))


def _check_manifest(name: str, target: Path) -> dict:  # type: ignore[type-arg]
    """The result's manifest (a folder's manifest.json, a file's sidecar), checked."""
    _, command, kind = WRITERS[name]
    if kind == "file":
        manifest = json.loads(sidecar(target).read_text())
        assert manifest["file"] == target.name and manifest["bytes"] == target.stat().st_size
        assert manifest["sha256"] == sha256_of(target), "the sidecar describes another file"
    else:
        manifest = json.loads((target / "manifest.json").read_text())
    assert manifest["command"] == command
    assert manifest["command_line"][0] == "wmtsim" and "wmtsim_version" in manifest
    missing = set(PROVENANCE) - set(manifest)  # issue 21: how the numbers were made
    assert not missing, f"{name}: manifest lacks {sorted(missing)}"
    return manifest


def _entries(target: Path, kind: str) -> list[str]:
    """The names a result ``target`` occupies in its folder."""
    return sorted([target.name] + ([sidecar(target).name] if kind == "file" else []))


@pytest.mark.parametrize("name", list(WRITERS))
def test_a_writer_keeps_the_promises(name: str, tmp_path: Path, inputs: dict[str, str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    argv, _, kind = WRITERS[name]
    monkeypatch.chdir(tmp_path)
    target = _target(name, tmp_path / "out")
    for attempt in (1, 2):  # a new path, then over its own result
        code, err = _invoke(_argv(argv, tmp_path / "out", inputs))
        assert code == 0, (attempt, err)
        assert sorted(p.name for p in tmp_path.iterdir()) == _entries(target, kind), (
            "written outside --out, or left a temporary file")
        manifest = _check_manifest(name, target)
        if kind != "file":
            hidden = {p.name for p in target.iterdir() if p.name.startswith(".")}
            assert hidden <= {".lock"}, hidden  # a sweep keeps its lock file
        if kind == "folder":
            listed = set(manifest["files"]) | {"manifest.json"}
            assert {p.name for p in target.iterdir()} - {"sweep"} == listed
    # A user's folder or file, and another command's result: refused.
    other = json.dumps({"command": "some-other"})
    if kind == "file":  # the files to create, relative to the result's path
        refusals = {"mine": {"": "a user's file\n"},
                    "other": {"": "x\n", SIDECAR: other},
                    "mine-beside": {SIDECAR: "a user's notes\n"}}
    else:
        refusals = {"mine": {"/thesis.tex": "mine"},
                    "other": {"/manifest.json": other, "/data.bin": "x"}}
    for label, files in refusals.items():
        place = _target(name, tmp_path / label)
        for rel, text in files.items():
            path = Path(str(place) + rel)
            path.parent.mkdir(exist_ok=True)
            path.write_text(text)
        before = _tree(tmp_path)
        code, err = _invoke(_argv(argv, tmp_path / label, inputs))
        assert code == 2, (label, err)
        assert "--out" in err or str(place) in err, err
        assert _tree(tmp_path) == before, f"{label}: something was written"



FOLDER_WRITERS = [name for name, (_, _, kind) in WRITERS.items() if kind != "file"]
FILE_WRITERS = [name for name, (_, _, kind) in WRITERS.items() if kind == "file"]


@pytest.mark.parametrize("name", FOLDER_WRITERS)
def test_a_symlinked_out_is_followed(name: str, tmp_path: Path, inputs: dict[str, str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """``--out link`` (link -> an old result of the command) replaces the result the link
    points to, and the link stays a link; a link to a path that does not exist yet writes
    the result there (docs/faults.md, "Symbolic links"). Folder results only: a one-file
    result refuses a link (`test_a_symlinked_out_file_is_refused`)."""
    argv, _, kind = WRITERS[name]
    monkeypatch.chdir(tmp_path)
    real, link = _target(name, tmp_path / "real"), _target(name, tmp_path / "link")
    assert _invoke(_argv(argv, tmp_path / "real", inputs))[0] == 0
    link.symlink_to(real.name)
    _check_manifest(name, real)
    written = real / "manifest.json"
    inode = written.stat().st_ino
    code, err = _invoke(_argv(argv, tmp_path / "link", inputs))
    assert code == 0, err
    assert link.is_symlink() and os.readlink(link) == real.name
    _check_manifest(name, real)
    if kind != "sweep":  # a sweep resumes: its manifest keeps the first command line
        assert written.stat().st_ino != inode, "the result was not replaced"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [link.name, *_entries(real, kind)])
    # A dangling link: the result is written where it points.
    fresh, dangling = _target(name, tmp_path / "fresh"), _target(name, tmp_path / "dangling")
    dangling.symlink_to(fresh.name)
    code, err = _invoke(_argv(argv, tmp_path / "dangling", inputs))
    assert code == 0, err
    assert dangling.is_symlink() and _check_manifest(name, fresh)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [link.name, dangling.name, *_entries(real, kind), *_entries(fresh, kind)])


@pytest.mark.parametrize("name", FILE_WRITERS)
def test_a_symlinked_out_file_is_refused(name: str, tmp_path: Path, inputs: dict[str, str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A one-file result (``replay --out r.parquet`` and the others) through a symbolic
    link once rewrote the file the link leads to, its sidecar landing beside that file and
    not beside the name given. Now: exit 2 naming the path and the link, nothing written,
    whether the link leads to an old result of the command, to a user's file or nowhere
    (docs/faults.md, "Symbolic links")."""
    argv, _, _ = WRITERS[name]
    monkeypatch.chdir(tmp_path)
    real = _target(name, tmp_path / "real")
    assert _invoke(_argv(argv, tmp_path / "real", inputs))[0] == 0
    (tmp_path / "mine.txt").write_text("a user's file\n")
    for label, to in (("link", real.name), ("mine", "mine.txt"), ("dangling", "nowhere")):
        link = _target(name, tmp_path / label)
        link.symlink_to(to)
        before = _tree(tmp_path)
        code, err = _invoke(_argv(argv, tmp_path / label, inputs))
        assert code == 2, (label, err)
        assert str(link) in err and "symbolic link" in err, (label, err)
        assert _tree(tmp_path) == before, f"{label}: something was written"
        assert os.readlink(link) == to


def test_readme_commands_run_in_any_order_and_again(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """compare --budget writes its own result beside the comparison: compare, budget,
    compare, budget all succeed (the README's commands, shrunk)."""
    monkeypatch.chdir(tmp_path)
    compare = ["compare", "paper_poisoning", "-p", "wmt", "-p", "linear", "--n", "3"]
    budget = ["compare", "paper_poisoning", "-p", "wmt", "--budget", "200", "--n", "3"]
    for argv in (budget, compare, budget, compare):
        code, err = _invoke(argv)
        assert code == 0, (argv, err)
    results = tmp_path / "results" / "paper_poisoning"
    assert sorted(p.name for p in results.iterdir()) == ["compare", "compare-budget"]
    for name in ("compare", "compare-budget"):
        assert json.loads((results / name / "manifest.json").read_text())["command"] == name


def test_claims_default_folder_never_escapes_results(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    (tmp_path / "work" / "s.toml").write_text('name = "../../../escape"\n')
    code, err = _invoke(["claims", "s.toml", *VARY])
    assert code == 0, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["work"]
    (folder,) = (tmp_path / "work" / "results").iterdir()
    assert folder.name.endswith("escape-aaec11ca")  # one component, inside results/
    assert (folder / "claims" / "manifest.json").is_file()


# --- every result-writing mode of every command is in WRITERS ------------------------------

# The calls that name the command a result is written for, and the position of that name.
_NAMING_CALLS = {"_writing": 1, "_out_folder": 2, "result_folder": 1, "write_manifest": 1,
                 "check_out_file": 1, "_check_out": 1, "file_manifest": 0}


def _commands_in_source() -> set[str]:
    """Every command name the CLI and the studies pass to the output layer (string
    constants, or module-level names bound to one), found by reading their source."""
    import ast

    root = Path(__file__).resolve().parents[2] / "wmtsim"
    found: set[str] = set()
    for path in [*root.glob("interfaces/cli/*.py"), *root.glob("studies/**/*.py"),
                 *root.glob("conformance/*.py")]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        consts = {t.id: n.value.value for n in tree.body if isinstance(n, ast.Assign)
                  and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)
                  for t in n.targets if isinstance(t, ast.Name)}
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
            if name not in _NAMING_CALLS or len(node.args) <= _NAMING_CALLS[name]:
                continue
            arg = node.args[_NAMING_CALLS[name]]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                found.add(arg.value)
            elif isinstance(arg, ast.Name) and arg.id in consts:
                found.add(consts[arg.id])
            elif getattr(arg, "id", None) != "command":  # wrappers pass their `command` on
                found.add(f"<unresolved {path.name}:{node.lineno}>")
    return found


def test_every_kind_of_result_is_checked() -> None:
    """A mode that writes a result of its own (``compare --budget``, ``compare --parity``)
    must be in WRITERS too, not only its command."""
    written = _commands_in_source()
    assert {"run", "compare", "compare-budget", "compare-parity", "tune", "replay", "expect",
            "conformance-run"} <= written
    # conformance-run: `conformance run`, in CHECKED_ELSEWHERE
    checked = {command for _, command, _ in WRITERS.values()} | {"conformance-run"}
    assert written <= checked, f"results no WRITERS row writes: {written - checked}"


# --- a full disk, for every writer ---------------------------------------------------------


def _unshare() -> bool:
    import shutil
    import subprocess

    return shutil.which("unshare") is not None and subprocess.run(
        ["unshare", "-rm", "true"], capture_output=True).returncode == 0


# What a failed run keeps in its --out to resume from (docs/faults.md): the claims map's
# sweep, the tuning study, the attacker's trial log; a sweep keeps its folder.
KEPT = {"claims": {"sweep"}, "tune": {"optuna.journal"}, "attack": {"search"}}


def _on_tmpfs(tmp_path: Path, inputs: dict[str, str], mode: str) -> dict[str, dict]:  # type: ignore[type-arg]
    """Every writer run by `full_disk.py` with its working folder (and ``--out``) on a
    fresh 4 KB tmpfs: ``full`` (a one-file result: filled up first) or ``readonly``."""
    import subprocess
    import sys

    cases = []
    for i, (name, (argv, _, kind)) in enumerate(WRITERS.items()):
        disk = tmp_path / f"disk{i}"
        cases.append({"name": name, "disk": str(disk), "fill": mode == "full" and kind == "file",
                      "readonly": mode == "readonly", "argv": _argv(argv, disk / "out", inputs)})
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    res = subprocess.run(["unshare", "-rm", sys.executable,
                          str(Path(__file__).with_name("full_disk.py")),
                          str(tmp_path / "cases.json")],
                         capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    runs = {r["name"]: r for r in map(json.loads, res.stdout.splitlines())}
    assert set(runs) == set(WRITERS)
    return runs


@pytest.mark.slow  # every writer, 8-10 s: make test-all
@pytest.mark.skipif(not _unshare(), reason="needs unshare -rm (an unprivileged mount namespace)")
def test_every_writer_on_a_full_disk_exits_2_and_leaves_nothing(
        tmp_path: Path, inputs: dict[str, str]) -> None:
    """Each writer with its working folder (and ``--out``) on a 4 KB tmpfs, so that the
    first file beyond one page fails with ENOSPC (a file result: the disk is full from the
    start), from whichever library writes it (polars, pyarrow, SQLite, json): exit 2
    naming the path, no traceback, no result, no temporary file; only the work a rerun
    resumes from (`KEPT`) may stay. One process runs them all (`full_disk.py`)."""
    runs = _on_tmpfs(tmp_path, inputs, "full")
    failures = []
    for name, run in runs.items():
        kind = WRITERS[name][2]
        text = " ".join(run["stderr"].split())
        target = _target(name, Path("out")).name
        left = set(run["left"])
        if kind == "sweep":  # a sweep folder, resumed by the next run
            extra = set() if not left or "out/manifest.json" in left else left
        else:
            kept = {f"out/{k}" for k in KEPT.get(name, ())}
            extra = {p for p in left if p != "out" and not any(
                p == k or p.startswith(k + "/") for k in kept)}
        problems = [
            run["code"] != 2 and f"exit {run['code']}",
            run["exception"] and f"traceback {run['exception']}",
            not ("No space left on device" in text or "disk is full" in text)
            and "no ENOSPC in the message",
            target not in text and "the path is not named",
            any(".tmp" in p or "partial" in p for p in left) and "a temporary file is left",
            extra and f"left {sorted(extra)}"]
        if any(problems):
            failures.append(f"{name}: {[p for p in problems if p]}: {text[-400:]}")
    assert not failures, "\n".join(failures)


@pytest.mark.slow  # every writer, 8-10 s: make test-all
@pytest.mark.skipif(not _unshare(), reason="needs unshare -rm (an unprivileged mount namespace)")
def test_every_writer_in_a_read_only_folder_exits_2_before_any_work(
        tmp_path: Path, inputs: dict[str, str]) -> None:
    """Each writer with its working folder (and ``--out``) on a read-only tmpfs (root
    ignores file permissions, not a read-only mount): exit 2 naming the path and saying
    why, no traceback, nothing written."""
    runs = _on_tmpfs(tmp_path, inputs, "readonly")
    failures = []
    for name, run in runs.items():
        text = " ".join(run["stderr"].split())
        problems = [
            run["code"] != 2 and f"exit {run['code']}",
            run["exception"] and f"traceback {run['exception']}",
            not ("not writable" in text or "Read-only file system" in text)
            and "the message does not say the folder is read-only",
            _target(name, Path("out")).name not in text and "the path is not named",
            run["left"] and f"left {run['left']}"]
        if any(problems):
            failures.append(f"{name}: {[p for p in problems if p]}: {text[-400:]}")
    assert not failures, "\n".join(failures)
