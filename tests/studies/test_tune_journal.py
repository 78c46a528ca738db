"""The tune journal's reader (`wmtsim.studies.tune.journal.read_journal`) against journals
Optuna itself wrote: every objective count tune allows in practice (1, 2, 3), both
directions, finished and failed trials. The reader accepts exactly what Optuna writes (a
single-objective trial's number in ``value``, several in ``values``); the earlier reader
refused every single-objective journal, so a single-objective study never resumed."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import pytest

from wmtsim.studies.tune.journal import (
    CREATE_TRIAL,
    FAIL,
    STUDY,
    HeldLock,
    JournalError,
    read_journal,
)

DIRECTIONS = {  # objective count -> the directions Optuna is asked for
    1: [["maximize"], ["minimize"]],
    2: [["maximize", "minimize"], ["minimize", "minimize"]],
    3: [["maximize", "minimize", "minimize"], ["maximize", "maximize", "maximize"]],
}
CASES = [d for ds in DIRECTIONS.values() for d in ds]


def optuna_journal(path: Path, directions: list[str], finished: int = 3,
                   failed: int = 1) -> None:
    """A journal written by Optuna's own `JournalStorage`, the way tune writes one: the
    study, its fingerprint, finished trials added from an in-memory study (NaN values
    make a failed trial, as tune's undefined objectives do)."""
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    store = JournalStorage(JournalFileBackend(str(path), lock_obj=HeldLock()))  # type: ignore[arg-type]
    saved = optuna.create_study(study_name=STUDY, storage=store, directions=directions)
    saved.set_user_attr("fingerprint", "0123456789abcdef")
    work = optuna.create_study(directions=directions,
                               sampler=optuna.samplers.NSGAIISampler(seed=1))
    for i in range(finished + failed):
        t = work.ask()
        rho = t.suggest_float("params.rho", 0.5, 0.99)
        t.suggest_int("params.M", 1, 8)
        t.set_user_attr("paper_poisoning.tsr", rho)
        if i < finished:
            work.tell(t, [rho] * len(directions))
        else:
            with warnings.catch_warnings():  # Optuna warns that NaN fails the trial
                warnings.simplefilter("ignore", UserWarning)
                work.tell(t, [math.nan] * len(directions))
    saved.add_trials(work.get_trials(deepcopy=False))


@pytest.mark.parametrize("directions", CASES, ids=lambda d: ",".join(d))
def test_a_journal_optuna_wrote_is_read_whole(tmp_path: Path, directions: list[str]) -> None:
    path = tmp_path / "optuna.journal"
    optuna_journal(path, directions)
    journal = read_journal(path)
    assert journal.directions == [2 if d == "maximize" else 1 for d in directions]
    assert journal.fingerprint == "0123456789abcdef"
    assert len(journal.trials) == 4 and journal.cut_at is None
    assert [t["state"] for t in journal.trials] == [1, 1, 1, FAIL]
    # what Optuna wrote, as it wrote it: one objective in "value", several in "values"
    first = journal.trials[0]
    if len(directions) == 1:
        assert first["values"] is None and isinstance(first["value"], float)
    else:
        assert first["value"] is None and len(first["values"]) == len(directions)


@pytest.mark.parametrize("directions", CASES, ids=lambda d: ",".join(d))
def test_a_tampered_value_is_refused_by_its_line(tmp_path: Path,
                                                 directions: list[str]) -> None:
    """The other shape than Optuna's for this objective count, or a non-finite value."""
    path = tmp_path / "optuna.journal"
    optuna_journal(path, directions)
    lines = path.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if json.loads(line)["op_code"] == CREATE_TRIAL)
    record = json.loads(lines[at])
    if len(directions) == 1:
        bad = [{"value": None, "values": [0.5]}, {"value": 0.5, "values": [0.5]},
               {"value": float("inf"), "values": None}, {"value": "0.5", "values": None}]
    else:
        bad = [{"value": 0.5, "values": None}, {"value": 0.5, "values": record["values"]},
               {"value": None, "values": record["values"][:-1]},
               {"value": None, "values": [float("nan")] * len(directions)}]
    for change in bad:
        lines2 = [*lines[:at], json.dumps({**record, **change}), *lines[at + 1:]]
        path.write_text("".join(x + "\n" for x in lines2))
        with pytest.raises(JournalError, match=rf"optuna.journal: line {at + 1}: value"):
            read_journal(path)


def test_a_failed_trial_holds_no_value(tmp_path: Path) -> None:
    path = tmp_path / "optuna.journal"
    optuna_journal(path, ["maximize"])
    lines = path.read_text().splitlines()
    record = json.loads(lines[-1])
    assert record["state"] == FAIL and record["value"] is None and record["values"] is None
    path.write_text("".join(x + "\n" for x in [*lines[:-1], json.dumps(
        {**record, "value": 0.5})]))
    with pytest.raises(JournalError, match=rf"line {len(lines)}: value 0.5.*failed trial"):
        read_journal(path)


def test_blank_lines_and_copied_trials_are_refused_by_their_line(tmp_path: Path) -> None:
    """Optuna writes neither: a blank line (its reader failed on it with "Expecting
    value", naming no file) nor the same trial twice (counted as one more trial)."""
    path = tmp_path / "optuna.journal"
    optuna_journal(path, ["maximize"], failed=0)
    lines = path.read_text().splitlines()
    path.write_text("\n")
    with pytest.raises(JournalError, match=r"optuna\.journal: line 1: a blank line"):
        read_journal(path)
    path.write_text("".join(x + "\n" for x in [*lines[:2], "", *lines[2:]]))
    with pytest.raises(JournalError, match="line 3: a blank line"):
        read_journal(path)
    path.write_text("".join(x + "\n" for x in [*lines, lines[-1]]))
    with pytest.raises(JournalError, match=rf"line {len(lines) + 1}: the same trial as "
                                           rf"line {len(lines)}"):
        read_journal(path)


def test_the_states_are_optunas() -> None:
    """FAIL was once 2 (Optuna's PRUNED): a failed trial, written as 3, was refused."""
    from optuna.trial import TrialState

    from wmtsim.studies.tune.journal import COMPLETE

    assert (COMPLETE, FAIL) == (TrialState.COMPLETE.value, TrialState.FAIL.value)
