"""docs/architecture.md's map, drawn from the tree: capability → folder → door → command → page.

    python scripts/architecture_map.py           # rewrite the generated block
    python scripts/architecture_map.py --check   # exit 1 if the block or the tree disagree

A *capability* is a package of wmtsim whose ``__init__`` docstring names its door:

    Door: `wmtsim.studies.sweeps.sweep` (`run_sweep`, ...).
    CLI: `wmtsim sweep`, `wmtsim analyze`.
    Dashboard: Sweep explorer.

Its first paragraph says what it answers. The map is made from those lines and checked against
the code, so a declaration cannot drift from what it declares:

* the door module exists inside the folder;
* every ``wmtsim X`` named is a registered command (or command group) whose module reaches
  the folder: the command's function, the module's top level, or a function of the module
  that the command calls imports from the folder;
* every page named is a page of the dashboard (``st.Page(..., title=...)`` in its app)
  whose view, or a ``services_*`` module the view imports, imports from the folder;
* every command and every page belongs to some capability, and every subpackage of
  ``studies``, ``engine``, ``interfaces`` and the ``conformance`` layer is a capability.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # sibling: the one block writer
from doc_blocks import write_or_check

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "wmtsim"
DOC = ROOT / "docs" / "architecture.md"
BLOCK = "map"
APP = PACKAGE / "interfaces" / "dashboard" / "app.py"
VIEWS = APP.parent / "views"
# The folders whose every subpackage must be a capability (and these themselves).
MUST = ("studies", "engine", "interfaces", "conformance")
DECL = re.compile(r"^(Door|CLI|Dashboard):\s*(.*?)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Capability:
    """One row of the map: a package and what its docstring declares."""

    module: str  # dotted name of the package
    folder: str  # its folder, relative to the repository
    answers: str  # the docstring's first line
    door: str  # dotted name of the door module
    commands: tuple[str, ...]  # `wmtsim X ...` as declared
    names: tuple[str, ...]  # the command of each (X, options dropped)
    pages: tuple[str, ...]  # dashboard page titles
    modules: tuple[str, ...]  # the package's own modules (file stems, __init__ left out)


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _items(text: str) -> tuple[str, ...]:
    """The items of a declaration line: `a`, `b` → (a, b); "none" → ()."""
    if text.strip().rstrip(".").lower() in ("", "none"):
        return ()
    ticked = re.findall(r"`([^`]+)`", text)
    if ticked:
        return tuple(ticked)
    parts = re.split(r",\s*(?![^()]*\))", text.strip().rstrip("."))  # not inside (...)
    return tuple(s.strip() for s in parts if s.strip())


def capabilities() -> list[Capability]:
    """Every package of wmtsim whose docstring declares a door, in folder order."""
    out = []
    for init in sorted(PACKAGE.rglob("__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        decl = {k: v for k, v in DECL.findall(doc)}
        if "Door" not in decl:
            continue
        door = re.findall(r"`([^`]+)`", decl["Door"])
        commands = _items(decl.get("CLI", ""))
        out.append(Capability(
            module=_module_name(init), folder=init.parent.relative_to(ROOT).as_posix() + "/",
            answers=" ".join(doc.split("\n\n")[0].split()), door=door[0] if door else "",
            commands=commands,
            names=tuple(c.removeprefix("wmtsim ").split(" -")[0] for c in commands),
            pages=_items(decl.get("Dashboard", "")),
            modules=tuple(sorted(p.stem for p in init.parent.glob("*.py")
                                 if p.name != "__init__.py"))))
    return out


# ------------------------------------------------------------------ what the code says

def _imports(node: ast.AST) -> set[str]:
    """Every wmtsim module an AST node imports, at any depth (``from a import b``: a, a.b)."""
    found: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Import):
            found |= {a.name for a in n.names}
        elif isinstance(n, ast.ImportFrom) and n.level == 0 and n.module:
            found.add(n.module)
            found |= {f"{n.module}.{a.name}" for a in n.names}
    return {m for m in found if m.startswith("wmtsim")}


def _module_file(module: str) -> Path:
    path = ROOT / (module.replace(".", "/") + ".py")
    return path if path.is_file() else ROOT / module.replace(".", "/") / "__init__.py"


def _command_reach(module: str, function: str) -> set[str]:
    """What a command's function reaches: its imports, its module's top-level imports, and
    the imports of the module's functions it calls by name. A command group (``function``
    empty) reaches what its module's commands do together: the whole module's imports."""
    tree = ast.parse(_module_file(module).read_text(encoding="utf-8"))
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    top = set().union(*(_imports(n) for n in tree.body
                        if isinstance(n, (ast.Import, ast.ImportFrom))))
    if not function:
        return _imports(tree)
    body = functions[function]
    called = {n.func.id for n in ast.walk(body)
              if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    reach = top | _imports(body)
    for name in called & functions.keys():
        reach |= _imports(functions[name])
    return reach


def registered_commands() -> dict[str, tuple[str, str]]:
    """``wmtsim`` command (or group) name → (its module, its function)."""
    from wmtsim.interfaces.cli.main import app

    out = {}
    for c in app.registered_commands:
        assert c.callback is not None
        out[c.name or c.callback.__name__.replace("_", "-")] = (c.callback.__module__,
                                                              c.callback.__name__)
    for g in app.registered_groups:
        sub = g.typer_instance
        assert sub is not None
        name = g.name if isinstance(g.name, str) else sub.info.name
        first = sub.registered_commands[0].callback
        assert isinstance(name, str) and first is not None
        out[name] = (first.__module__, "")
    return out


def dashboard_pages() -> dict[str, Path]:
    """Page title → its view script (``st.Page(PAGES / "x.py", title=...)`` in the app)."""
    pages = {}
    for node in ast.walk(ast.parse(APP.read_text(encoding="utf-8"))):
        if (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "Page"
                and isinstance(node.args[0], ast.BinOp)):
            script = node.args[0].right
            title = next(k.value for k in node.keywords if k.arg == "title")
            assert isinstance(script, ast.Constant) and isinstance(title, ast.Constant)
            pages[str(title.value)] = VIEWS / str(script.value)
    return pages


def _page_reach(view: Path) -> set[str]:
    """What a page imports: its view and the dashboard modules the view imports."""
    reach = _imports(ast.parse(view.read_text(encoding="utf-8")))
    for m in list(reach):
        if m.startswith("wmtsim.interfaces.dashboard.") and _module_file(m).is_file():
            reach |= _imports(ast.parse(_module_file(m).read_text(encoding="utf-8")))
    return reach


def problems(caps: list[Capability]) -> list[str]:
    """Where the declarations and the code disagree (empty: the map is the tree)."""
    out = []
    commands, pages = registered_commands(), dashboard_pages()
    declared = {c.module for c in caps}
    for init in sorted(PACKAGE.rglob("__init__.py")):
        module = _module_name(init)
        parts = module.split(".")
        is_capability = len(parts) >= 3 or parts[-1] == "conformance"  # not a layer itself
        if (len(parts) >= 2 and parts[1] in MUST and is_capability
                and module not in declared):
            out.append(f"{init.relative_to(ROOT)}: no 'Door:' line (every package under "
                       f"{', '.join(MUST)} is a capability that names its door)")
    for c in caps:
        where = f"{c.folder}__init__.py"
        if not c.door.startswith(c.module + ".") or not _module_file(c.door).is_file():
            out.append(f"{where}: door {c.door!r} is not a module of {c.module}")
        for cmd in c.names:
            if cmd not in commands:
                out.append(f"{where}: `wmtsim {cmd}` is not a command; commands: "
                           f"{', '.join(sorted(commands))}")
                continue
            reach = _command_reach(*commands[cmd])
            if not any(m == c.module or m.startswith(c.module + ".") for m in reach):
                out.append(f"{where}: `wmtsim {cmd}` ({commands[cmd][0]}) does not reach "
                           f"{c.module}")
        for title in c.pages:
            if title not in pages:
                out.append(f"{where}: no dashboard page titled {title!r}; pages: "
                           f"{', '.join(pages)}")
            elif not any(m == c.module or m.startswith(c.module + ".")
                         for m in _page_reach(pages[title])):
                out.append(f"{where}: the page {title!r} ({pages[title].name}) does not "
                           f"import from {c.module}")
    owned_commands = {cmd for c in caps for cmd in c.names}
    owned_pages = {p for c in caps for p in c.pages}
    out += [f"`wmtsim {cmd}` belongs to no capability" for cmd in sorted(commands)
            if cmd not in owned_commands]
    out += [f"the page {p!r} belongs to no capability" for p in pages if p not in owned_pages]
    return out


# ------------------------------------------------------------------ the block

def render(caps: list[Capability]) -> str:
    """The map as a Markdown table, one row per capability."""
    lines = ["Generated by `python scripts/architecture_map.py` from each package's "
             "`__init__` docstring (its first paragraph, and its `Door:`, `CLI:` and "
             "`Dashboard:` lines), checked against the command line's registered commands "
             "and the dashboard's pages (tests/test_architecture_map.py).", "",
             "| capability | folder | door | commands | dashboard pages | modules |",
             "|---|---|---|---|---|---|"]
    for c in caps:
        cmds = ", ".join(f"`{x}`" for x in c.commands) or "—"
        pages = ", ".join(c.pages) or "—"
        lines.append(f"| {c.answers} | `{c.folder}` | `{c.door}` | {cmds} | {pages} | "
                     f"{', '.join(c.modules)} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true",
                    help="exit 1 when the tree and its declarations or the block differ")
    args = ap.parse_args(argv)
    caps = capabilities()
    bad = problems(caps)
    for p in bad:
        print(p, file=sys.stderr)
    if args.check:
        return write_or_check(DOC, BLOCK, render(caps), True, "python scripts/architecture_map.py"
                              ) or (1 if bad else 0)
    if bad:
        return 1
    write_or_check(DOC, BLOCK, render(caps), False, "")
    print(f"wrote the map ({len(caps)} capabilities) into {DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
