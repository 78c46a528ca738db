"""The kit catches bugs: the independent example implementation passes, and each seeded
mutation of it is caught and shrunk to a trace of at most 12 lines that `wmtsim check`
accepts (the reference agrees with its expect line) and the mutant fails."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import REPO

from wmtsim.conformance.adapter import ReferenceAdapter
from wmtsim.conformance.runner import first_disagreement, run_conformance
from wmtsim.engine.trace.trace import check

sys.path.insert(0, str(REPO / "examples"))
from naive_wmt import NaiveWMT
from naive_wmt_mutants import MUTANTS


@pytest.mark.parametrize("impl", [NaiveWMT, ReferenceAdapter], ids=lambda c: c.__name__)
def test_a_correct_implementation_conforms(impl: type, tmp_path: Path) -> None:
    report = run_conformance(impl, examples=60, save=tmp_path, echo=None)
    assert report.passed, report.failure
    assert report.corpus_traces >= 20 and not list(tmp_path.iterdir())


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda c: c.__name__)
def test_every_seeded_mutation_is_caught_and_shrunk(mutant: type, tmp_path: Path) -> None:
    report = run_conformance(mutant, examples=60, save=tmp_path, echo=None)
    f = report.failure
    assert f is not None, f"{mutant.__name__} was not caught"
    assert len(f.lines) <= 12, "\n".join(f.lines)
    assert f.saved is not None and f.saved.read_text().splitlines() == f.lines
    assert check(f.lines) is None  # the reference holds its own expect line
    assert first_disagreement(NaiveWMT, f.lines) is None  # the correct one agrees
    assert first_disagreement(mutant, f.lines) is not None


@pytest.mark.slow  # 50 s on two loaded cores: make test-all
def test_hypothesis_phase_alone_catches_a_mutant(tmp_path: Path) -> None:
    report = run_conformance(MUTANTS[1], corpus=False, examples=300, save=None, echo=None)
    assert report.failure is not None and report.failure.found_in == "hypothesis"
    assert len(report.failure.lines) <= 12
