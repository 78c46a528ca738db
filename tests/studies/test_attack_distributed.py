"""`wmtsim attack` on the sweep's executors (issue 24: "resumable and on the sweep
machinery, laptop or Dask"): each search runs whole on a worker, with the results of an
in-process run, and its trials reach the one trial log, from which a search resumes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from wmtsim.studies.attack.log import TrialLog
from wmtsim.studies.attack.search import SearchSettings
from wmtsim.studies.attack.space import AttackSpace
from wmtsim.studies.attack.study import attack_study
from wmtsim.studies.scenarios.scenario import load_scenario

SMALL = SearchSettings(trials=4, n_search=40, n_holdout=40, startup=2)
POLICIES = ("linear", "wmt")
BUDGETS = (1.0, 2.0)


def _same(a, b) -> None:  # two AttackStudy objects
    assert list(a.results) == list(b.results)
    for key, r in a.results.items():
        s = b.results[key]
        assert r.trials == [{**t, "sim_seconds": u["sim_seconds"]}
                            for t, u in zip(s.trials, r.trials, strict=True)]
        assert r.best == s.best and r.chosen == s.chosen
        assert np.array_equal(r.found.counts, s.found.counts)
    assert a.transfer.drop("seconds", strict=False).equals(
        b.transfer.drop("seconds", strict=False))
    assert a.claims == b.claims


def _timeless(rows: list[dict]) -> list[dict]:
    """Log lines without the simulation seconds (a measurement, not a result)."""
    return [{**r, "user_attrs": {k: v for k, v in r["user_attrs"].items()
                                 if k != "sim_seconds"}} for r in rows]


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory):
    log = tmp_path_factory.mktemp("local") / "trials.jsonl"
    sc = load_scenario("paper_poisoning")
    return attack_study(sc, POLICIES, BUDGETS, AttackSpace(), SMALL, log=log), log


@pytest.mark.slow  # 7 s (worker processes): make test-all
def test_a_process_pool_gives_the_in_process_results(local, tmp_path: Path) -> None:
    study, log = local
    sc = load_scenario("paper_poisoning")
    pool_log = tmp_path / "trials.jsonl"
    pooled = attack_study(sc, POLICIES, BUDGETS, AttackSpace(), SMALL, log=pool_log,
                          workers=2)
    _same(study, pooled)
    # The pool's trials reach the log, every search's trials numbered 0..trials - 1.
    for key, r in pooled.results.items():
        rows = TrialLog(pool_log, r.study_name).load()
        assert [row["number"] for row in rows] == list(range(SMALL.trials)), key
        assert _timeless(rows) == _timeless(TrialLog(log, r.study_name).load()), key
    # ... so that a run over the same log resumes every search: nothing to run again.
    again = attack_study(sc, POLICIES, BUDGETS, AttackSpace(), SMALL, log=pool_log)
    assert all(r.new_trials == 0 for r in again.results.values())
    _same(study, again)


def test_a_pool_resumes_a_search_from_the_trials_logged_before(tmp_path: Path) -> None:
    """Two trials logged in-process, then a pool finishes the search: the worker starts
    from the two logged trials, runs the other two, and the log holds each trial once."""
    sc = load_scenario("paper_poisoning")
    log = tmp_path / "trials.jsonl"
    from dataclasses import replace

    attack_study(sc, ("wmt",), (1.0,), AttackSpace(), replace(SMALL, trials=2), log=log)
    resumed = attack_study(sc, ("wmt",), (1.0,), AttackSpace(), SMALL, log=log, workers=2)
    r = resumed.results[("wmt", 1.0)]
    assert r.new_trials == 2
    assert [t["number"] for t in r.trials] == [0, 1, 2, 3]
    rows = TrialLog(log, r.study_name).load()
    assert [row["number"] for row in rows] == [0, 1, 2, 3]


@pytest.mark.slow  # 7 s (a dask cluster): make test-all
@pytest.mark.cluster
@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore:.*[Pp]ort.*:UserWarning")
@pytest.mark.filterwarnings("ignore::DeprecationWarning:distributed")
def test_a_dask_cluster_gives_the_in_process_results(local, tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    study, _ = local
    sc = load_scenario("paper_poisoning")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None) as cluster:
        on_dask = attack_study(sc, POLICIES, BUDGETS, AttackSpace(), SMALL,
                               log=tmp_path / "trials.jsonl",
                               scheduler=cluster.scheduler_address)
    _same(study, on_dask)
