"""The package's shape (docs/architecture.md): layers as folders, no import cycles (lazy
imports count), no module over 500 lines, readable twins free of numba, no re-export
shims."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from wmtsim.numba_cache import PACKAGE_DIR, _imported_modules, _module_name

MAX_LINES = 500
# Modules over the limit (none: issue 15 split the last ones); the set may only shrink.
OVERSIZED: set[str] = set()
# What each layer may import from wmtsim (besides itself and the top-level helpers).
LAYERS = ("core", "engine", "twins", "studies", "conformance", "interfaces")
MAY_IMPORT = {
    "core": set(),
    "engine": {"core"},
    "twins": {"core"},
    "studies": {"core", "engine"},
    "conformance": {"core", "engine", "twins", "studies"},
    "interfaces": {"core", "engine", "studies", "conformance"},
}
TOP_LEVEL = {"wmtsim", "wmtsim.numba_cache"}  # __version__ and the cache configuration


def _graph() -> dict[str, set[str]]:
    """Module → the wmtsim modules it imports (eagerly or lazily), old-path shims skipped."""
    files = {_module_name(p, PACKAGE_DIR): p for p in sorted(PACKAGE_DIR.rglob("*.py"))}
    graph = {}
    for name, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        deps = _imported_modules(tree, name, path.name == "__init__.py")
        graph[name] = {d for d in deps if d in files and d != name}
    return graph


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) >= 2 and parts[1] in LAYERS else None


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` (module → modules it imports), or None."""
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for d in sorted(graph[m]):
            if state.get(d) == 1:
                return [*stack[stack.index(d):], d]
            if d not in state and (found := visit(d)):
                return found
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state and (found := visit(m)):
            return found
    return None


def test_no_import_cycles() -> None:
    cycle = _cycle(_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_no_cycle_between_capability_folders() -> None:
    """The capability folders of studies/ (docs/architecture.md's map) import one another
    in one direction only (scenarios ← sweeps ← tune, attack, compare ← calibration, ...),
    so each can be read after the ones it uses."""
    graph: dict[str, set[str]] = {}

    def folder(m: str) -> str | None:
        parts = m.split(".")
        return ".".join(parts[:3]) if len(parts) >= 4 and parts[1] == "studies" else None

    for m, deps in _graph().items():
        if (f := folder(m)) is None:
            continue
        graph.setdefault(f, set()).update(
            d for d in map(folder, deps) if d is not None and d != f)
    for deps in list(graph.values()):
        for d in deps:
            graph.setdefault(d, set())
    assert len(graph) >= 10, sorted(graph)
    cycle = _cycle(graph)
    assert cycle is None, "a cycle between folders: " + " -> ".join(cycle or [])


FIRST_PARTY = ("benchmarks", "scripts", "why_study", "tests", "examples", "dashboards")


def test_no_import_cycles_outside_the_package_either() -> None:
    """No circle anywhere: the benchmarks, scripts, studies, tests and examples too (a
    module's lazy imports count, as in the package)."""
    root = PACKAGE_DIR.parent
    files = {}
    for folder in FIRST_PARTY:
        for path in sorted((root / folder).rglob("*.py")):
            if path.is_symlink():
                continue
            files[_module_name(path, root / folder)] = path
    graph = {}
    for name, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        deps = _imported_modules(tree, name, path.name == "__init__.py")
        graph[name] = {d for d in deps if d in files and d != name}
    cycle = _cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_layers_import_only_downwards() -> None:
    bad = []
    for m, deps in _graph().items():
        layer = _layer(m)
        if layer is None:
            continue
        for d in deps:
            other = _layer(d)
            if other is None:
                if d not in TOP_LEVEL:
                    bad.append(f"{m} -> {d} (an old-path shim or top-level module)")
            elif other != layer and other not in MAY_IMPORT[layer]:
                bad.append(f"{m} -> {d}")
    assert not bad, "\n".join(sorted(bad))


def test_no_module_over_500_lines() -> None:
    sizes = {p.relative_to(PACKAGE_DIR).as_posix(): len(p.read_text().splitlines())
             for p in PACKAGE_DIR.rglob("*.py")}
    too_big = {n for n, size in sizes.items() if size > MAX_LINES}
    assert too_big <= OVERSIZED, f"new modules over {MAX_LINES} lines: {too_big - OVERSIZED}"
    split = OVERSIZED - too_big
    assert not split, f"now under {MAX_LINES} lines, remove from OVERSIZED: {split}"


def test_the_readable_twins_import_no_numba() -> None:
    code = ("import sys\n"
            "import wmtsim.twins.reference, wmtsim.twins.simulator, "
            "wmtsim.twins.field_reference\n"
            "import wmtsim.core.params, wmtsim.core.stubs, wmtsim.core.world_spec, "
            "wmtsim.core.field_knobs, wmtsim.core.policies, wmtsim.core.draws\n"
            "assert 'numba' not in sys.modules, sorted(m for m in sys.modules if 'numba' in m)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


# Modules that re-export nothing: a caller imports each name from the module
# that defines it, so every name has one import path.
NO_REEXPORTS = ("wmtsim.engine.world", "wmtsim.engine.field.dispatch", "wmtsim.engine.loop")
CALLERS = ("wmtsim", "tests", "scripts", "benchmarks", "why_study", "examples")


def _defined(path: Path) -> set[str]:
    """The names a module's top level defines (functions, classes, assignments)."""
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names


def test_callers_import_names_from_the_module_that_defines_them() -> None:
    root = PACKAGE_DIR.parent
    defined = {m: _defined(root / (m.replace(".", "/") + ".py")) for m in NO_REEXPORTS}
    assert {"generate", "WorldRows", "_baseline_step"} <= defined[NO_REEXPORTS[0]] | defined[
        NO_REEXPORTS[1]]
    wrong = []
    for folder in CALLERS:
        for path in sorted((root / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.module in defined:
                    wrong += [f"{path.relative_to(root)}:{node.lineno}: {node.module}.{a.name}"
                              for a in node.names if a.name not in defined[node.module]]
    assert wrong == [], "import these from the module that defines them:\n" + "\n".join(wrong)
    for m in NO_REEXPORTS:
        assert "noqa: F401" not in (root / (m.replace(".", "/") + ".py")).read_text(), m


# Modules that still pass on names they import from another wmtsim module (their docs
# call them a public import path); the set may only shrink.
PASSES_ON = {"wmtsim.engine", "wmtsim.engine.trace.trace", "wmtsim.studies.sweeps.sweep",
             "wmtsim.studies.tune.tune", "wmtsim.testing"}


def _passed_on(path: Path) -> set[str]:
    """The names a module imports from wmtsim at its top level and never uses itself (kept
    with ``# noqa: F401``, ``import X as X`` or ``__all__``): names it re-exports."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported = {a.asname or a.name for node in tree.body if isinstance(node, ast.ImportFrom)
                and node.level == 0 and (node.module or "").startswith("wmtsim.")
                for a in node.names}
    return imported - {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


def test_no_module_passes_on_names_defined_elsewhere() -> None:
    """No re-export shim (the dashboard's old ``services`` gathered its per-page modules'
    names with ``# noqa: F401``): a caller imports each name from the module defining it."""
    files = {_module_name(p, PACKAGE_DIR): p for p in sorted(PACKAGE_DIR.rglob("*.py"))}
    shims = {m: sorted(names) for m, p in files.items() if (names := _passed_on(p))}
    new = {m: names[:5] for m, names in shims.items() if m not in PASSES_ON}
    assert new == {}, f"import these from the module that defines them: {new}"
    assert PASSES_ON <= shims.keys(), f"re-export nothing now: {PASSES_ON - shims.keys()}"
