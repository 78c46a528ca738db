"""The docs stand alone: every reference a user can follow is in the repository.

A user has the repository and nothing else, so the README, the docs, the docstrings and
the command line's help may not point anywhere outside it: no relative link or section
anchor that does not resolve, no file named that the repository does not hold, and no
mention of the project's private design notes (the spec files or the shared folder they
live in), which users do not have. The knob tables generated from the dataclasses are
current (scripts/knob_tables.py).
"""

from __future__ import annotations

import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest
from conftest import REPO

# Built from pieces so that this file does not mention them itself.
_SPEC_NAMES = ("MODEL", "SIMULATION", "POLICIES")
PRIVATE = re.compile(r"(?<![\w/.-])(?:" + "|".join(_SPEC_NAMES) + r")\.md\b|\.\./" + "shared"
                     + r"\b|/work/" + "shared" + r"\b")
LINK = re.compile(r"(?<!!)\[[^\]\n]*\]\(([^)\s]+)\)|!\[[^\]\n]*\]\(([^)\s]+)\)")
# A path into one of the repository's own folders, named in prose or code.
REPO_DIRS = ("docs", "scripts", "scenarios", "sweeps", "wmtsim", "tests", "benchmarks",
             "examples", "why_study", "notebooks")
PATH = re.compile(r"(?<![\w/.-])((?:" + "|".join(REPO_DIRS) + r")/[\w./-]*\w\.(?:md|py|toml|"
                  r"json|jsonl|csv|png))\b")
BARE_MD = re.compile(r"(?<![\w/.<-])([\w-]+\.md)\b")
# Named but rightly not in the repository: files the commands write into their result
# folders, and the placeholder paths of examples.
WRITTEN = {"report.md", "curves.md", "parity.md", "benchmarks/results/quick.json"}
EXAMPLES = {"scenarios/x.toml", "sweeps/x.toml", "scenarios/my_study.toml"}


@cache
def tracked() -> tuple[str, ...]:
    """Every file of the repository (tracked or new, not ignored), relative to its root."""
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                         cwd=REPO, capture_output=True, text=True, check=True).stdout
    return tuple(p for p in out.splitlines() if (REPO / p).is_file())


def _text_files() -> list[str]:
    skip = (".png", ".parquet", ".svg", ".ico", ".jpg", ".sqlite", ".db")
    return [p for p in tracked() if not p.endswith(skip)
            and p != "tests/test_docs_links.py"]


def _doc_pages() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("**/*.md"))]


def slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading: an underscore inside a word is kept
    (``field_knobs``), one that marks emphasis is not."""
    text = re.sub(r"[`*]|(?<!\w)_|_(?!\w)|<[^>]+>", "", heading.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


@cache
def anchors(page: Path) -> frozenset[str]:
    text = page.read_text(encoding="utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    return frozenset(slug(m) for m in re.findall(r"^#{1,6} (.+)$", text, flags=re.M))


def test_nothing_mentions_the_private_design_notes() -> None:
    bad = []
    for rel in _text_files():
        try:
            text = (REPO / rel).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for k, line in enumerate(text.splitlines(), 1):
            if PRIVATE.search(line):
                bad.append(f"{rel}:{k}: {line.strip()[:100]}")
    assert not bad, "references to files users do not have:\n" + "\n".join(bad)


def _broken_links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    bad = []
    for m in LINK.finditer(text):
        target = m.group(1) or m.group(2)
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists() or REPO not in dest.parents:
            bad.append(f"{page.relative_to(REPO)}: ({target}): no such file in the repository")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            bad.append(f"{page.relative_to(REPO)}: ({target}): no heading #{anchor} in "
                       f"{dest.relative_to(REPO)}")
    return bad


def test_every_relative_link_and_anchor_resolves() -> None:
    bad = [b for page in _doc_pages() for b in _broken_links(page)]
    assert not bad, "\n".join(bad)


def _missing_files(source: str, text: str) -> list[str]:
    names = set(tracked())
    basenames = {Path(p).name for p in names}
    bad = []
    for m in PATH.finditer(text):
        path = m.group(1)
        if path in WRITTEN or path in EXAMPLES or "*" in path:
            continue
        # "studies/compare/claims.py" in a table of the package's modules is
        # wmtsim/studies/compare/claims.py
        if path not in names and not (REPO / path).exists() and not (
                REPO / "wmtsim" / path).exists():
            bad.append(f"{source}: names {path}, which is not in the repository")
    for m in BARE_MD.finditer(text):
        if m.group(1) not in basenames and m.group(1) not in WRITTEN:
            bad.append(f"{source}: names {m.group(1)}, which is not in the repository")
    return bad


def test_every_file_the_docs_and_docstrings_name_exists() -> None:
    sources = [str(p.relative_to(REPO)) for p in _doc_pages()]
    sources += [p for p in tracked() if p.endswith(".py") and p.split("/")[0] in (
        "wmtsim", "scripts", "why_study", "benchmarks", "examples")]
    bad = [b for rel in sources
           for b in _missing_files(rel, (REPO / rel).read_text(encoding="utf-8"))]
    assert not bad, "\n".join(bad)


def _help_texts() -> dict[str, str]:
    from typer.testing import CliRunner

    from wmtsim.interfaces.cli.main import app

    runner = CliRunner()
    names = ["--help"]
    top = runner.invoke(app, ["--help"], env={"COLUMNS": "200"}).output
    commands = sorted(set(re.findall(r"^│ ([a-z][a-z-]+) ", top, flags=re.M)))
    out = {"wmtsim --help": top}
    for name in commands:
        out[f"wmtsim {name} --help"] = runner.invoke(app, [name, "--help"],
                                                     env={"COLUMNS": "200"}).output
    assert len(out) > 10, names
    return out


def test_the_command_lines_help_names_only_files_in_the_repository() -> None:
    bad = []
    for source, text in _help_texts().items():
        bad += _missing_files(source, text)
        bad += [f"{source}: {line.strip()}" for line in text.splitlines()
                if PRIVATE.search(line)]
    assert not bad, "\n".join(bad)


def test_the_knob_tables_are_current() -> None:
    done = subprocess.run([sys.executable, "scripts/knob_tables.py", "--check"], cwd=REPO,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("text, found", [
    ("see " + "MODEL" + ".md §4", True),
    ("see docs/model.md §4", False),
    ("from .." + "/shared/spec", True),
])
def test_the_private_pattern_catches_what_it_must(text: str, found: bool) -> None:
    assert bool(PRIVATE.search(text)) is found


def test_a_dangling_link_is_caught(tmp_path: Path) -> None:
    page = REPO / "docs" / "model.md"
    assert _broken_links(page) == []
    assert _missing_files("x", "read docs/no_such_page.md") != []
    assert _missing_files("x", "read nowhere.md") != []
    assert "5-metrics" in anchors(page)
