"""The package's shape (docs/architecture.md): layers as folders, no import cycles (lazy
imports count), no module over 500 lines, readable twins free of numba."""

from __future__ import annotations

import ast
import subprocess
import sys

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


def test_no_import_cycles() -> None:
    graph = _graph()
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for d in sorted(graph[m]):
            if state.get(d) == 1:
                cycle = [*stack[stack.index(d):], d]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if d not in state:
                visit(d)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)


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


def test_old_import_paths_are_the_new_modules() -> None:
    import wmtsim.core.scoring
    import wmtsim.engine.field
    import wmtsim.twins.simulator

    assert wmtsim.core.scoring is wmtsim.core.scoring
    assert wmtsim.twins.simulator is wmtsim.twins.simulator
    assert wmtsim.engine.field is wmtsim.engine.field
    from wmtsim.engine import run
    from wmtsim.engine.world import PoisonSpec, WorldSpec, generate
    from wmtsim.studies.scenario import load_scenario

    assert callable(run) and callable(load_scenario) and callable(generate)
    assert PoisonSpec.__module__ == WorldSpec.__module__ == "wmtsim.core.world_spec"
