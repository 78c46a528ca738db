"""Every generated block of the docs has one generator (scripts/docs.py, `make docs`), and
the cheap generators still rewrite their blocks."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import REPO

_spec = importlib.util.spec_from_file_location("docs_registry", REPO / "scripts" / "docs.py")
assert _spec is not None and _spec.loader is not None
docs = importlib.util.module_from_spec(_spec)
sys.modules["docs_registry"] = docs
_spec.loader.exec_module(docs)


def _owned() -> list[tuple[str, str]]:
    return [b for g in docs.GENERATORS for b in g.blocks]


def test_every_generated_block_has_exactly_one_generator() -> None:
    owned = _owned()
    assert len(owned) == len(set(owned)), "a block is claimed by two generators"
    found = docs.found_blocks()
    assert found - set(owned) == set(), "generated blocks with no generator in scripts/docs.py"
    assert set(owned) - found == set(), "scripts/docs.py names blocks the docs do not have"


def test_every_generator_runs_an_existing_script() -> None:
    for gen in docs.GENERATORS:
        target = gen.argv[1] if gen.argv[0] == "-m" else gen.argv[0]
        path = REPO / (target.replace(".", "/") + ".py" if gen.argv[0] == "-m" else target)
        assert path.is_file(), f"{gen.name}: {path} does not exist"
        for f in gen.files:
            assert (REPO / f).is_file(), f"{gen.name}: {f} does not exist"


def test_a_cheap_generator_rewrites_its_block_and_states_its_command(tmp_path: Path) -> None:
    """The coverage study at a tiny size, into a copy of docs/statistics.md: the block is
    replaced (the prose around it kept) and records the command that made it."""
    page = tmp_path / "statistics.md"
    shutil.copy(REPO / "docs" / "statistics.md", page)
    before = page.read_text(encoding="utf-8")
    subprocess.run([sys.executable, "scripts/coverage_study.py", "--runs", "3", "--out",
                    str(page)], cwd=REPO, check=True, capture_output=True)
    after = page.read_text(encoding="utf-8")
    head = before.split("<!-- generated:coverage -->")[0]
    tail = before.split("<!-- /generated:coverage -->")[1]
    assert after.startswith(head) and after.endswith(tail)
    assert "python scripts/coverage_study.py --runs 3" in after
    assert after != before


def test_the_guides_metrics_table_is_the_metric_declaration() -> None:
    """docs/guide.md's metrics table is what scripts/metrics_table.py makes from
    `wmtsim.core.metrics.DECLARED` (one row per declared metric, its counters named)."""
    done = subprocess.run([sys.executable, "scripts/metrics_table.py", "--check"], cwd=REPO,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    from wmtsim.core.metrics import DECLARED

    block = (REPO / "docs" / "guide.md").read_text(encoding="utf-8").split(
        "<!-- generated:metrics -->")[1].split("<!-- /generated:metrics -->")[0]
    rows = [line for line in block.splitlines() if line.startswith("| ")][1:]
    assert len(rows) == len(DECLARED)


def test_the_field_policies_table_is_the_field_rows() -> None:
    """docs/field.md's table "The policies" is what scripts/field_policies_table.py makes
    from `wmtsim.core.field_policies.FIELD_ROWS` (each row's state and rules declared
    where the policy is registered)."""
    done = subprocess.run([sys.executable, "scripts/field_policies_table.py", "--check"],
                          cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    from wmtsim.core.field_policies import FIELD_ROWS

    block = (REPO / "docs" / "field.md").read_text(encoding="utf-8").split(
        "<!-- generated:field-policies -->")[1].split("<!-- /generated:field-policies -->")[0]
    rows = [line for line in block.splitlines() if line.startswith("| `")]
    assert [r.split("`")[1] for r in rows] == [f.name for f in FIELD_ROWS]
