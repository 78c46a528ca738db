"""Hostile cases, round four (issue 48): each row of the issue's table as a test that
failed on the code before it.

* ``RESUME``: a tune study of every objective count and direction resumes, and a resumed
  study equals one uninterrupted run (rerun as is, extended, killed and rerun). A
  single-objective study once could not resume at all: the journal's reader refused the
  ``"value": x, "values": null`` lines Optuna writes for one objective.
* ``CASES``: inputs that must exit 2, name the file and line, and write nothing (the
  harness of `test_hostile_round_three`).
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from test_hostile_round_three import TRIAL, Case, check_case, journal, tune_case
from typer.testing import CliRunner

from wmtsim.interfaces.cli import app

# --- resume = uninterrupted, for every objective count and direction -------------------

TUNE = ("tune", "paper_poisoning", "--batch", "2", "--n", "5", "--holdout-seeds", "1",
        "--choose", "1", "--knob", "rho", "--knob", "M", "--no-charts", "--no-progress")

RESUME: dict[str, tuple[str, ...]] = {
    "1-max": ("tsr:max",),
    "1-min": ("tsr:min",),
    "1-min-tokens": ("prompt_tokens:min",),
    "2-max-min": ("tsr:max", "asr:min"),
    "2-min-min": ("tsr:min", "prompt_tokens:min"),
    "3-max-min-min": ("tsr:max", "asr:min", "prompt_tokens:min"),
    "3-max-max-max": ("tsr:max", "asr:max", "prompt_tokens:max"),
}


def _tune(out: Path, objectives: tuple[str, ...], trials: int) -> pl.DataFrame:
    argv = [*TUNE, "--trials", str(trials), "--out", str(out)]
    for o in objectives:
        argv += ["--objective", o]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["equals_uninterrupted"] is True, manifest
    return pl.read_parquet(out / "trials.parquet")


@pytest.mark.parametrize("name", list(RESUME))
def test_a_resumed_study_equals_an_uninterrupted_one(name: str, tmp_path: Path) -> None:
    objectives = RESUME[name]
    whole = _tune(tmp_path / "whole", objectives, 6)
    out = tmp_path / "resumed"
    first = _tune(out, objectives, 4)
    assert first.equals(whole.head(4))
    assert _tune(out, objectives, 4).equals(first)  # the same command again
    assert _tune(out, objectives, 6).equals(whole)  # extended at a generation boundary
    # Killed in the second generation: the journal keeps the first generation (lines 1
    # and 2 create the study and set its fingerprint) and part of a line.
    lines = (out / "optuna.journal").read_bytes().splitlines(keepends=True)
    (out / "optuna.journal").write_bytes(b"".join(lines[:4]) + lines[4][:40])
    assert _tune(out, objectives, 6).equals(whole)


# --- exit 2, the file and line named, nothing written -----------------------------------

CASES: dict[str, Case] = {
    "tune-journal-only-a-newline": tune_case(
        {"o/manifest.json": '{"command": "tune"}', "o/optuna.journal": "\n"},
        "optuna.journal", "line 1", "a blank line"),
    "tune-journal-blank-line-inside": tune_case(journal("", json.dumps(TRIAL)),
                                                "optuna.journal", "line 2", "a blank line"),
    "tune-journal-trial-copied": tune_case(journal(json.dumps(TRIAL), json.dumps(TRIAL)),
                                           "optuna.journal", "line 3",
                                           "the same trial as line 2"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_hostile_input_exits_2_names_the_problem_and_writes_nothing(
        name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    check_case(CASES[name], tmp_path, monkeypatch)
