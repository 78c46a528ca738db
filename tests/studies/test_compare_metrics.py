"""`wmtsim compare` shows the metrics whose declaration names its table
(`wmtsim.core.metrics.Metric.compare`), and only those: a metric declared for a table is
shown without a second list to edit."""

from __future__ import annotations

from dataclasses import replace

import polars as pl
import pytest

from wmtsim.core import metrics
from wmtsim.core.metrics import DECLARED, LABELS, Metric
from wmtsim.studies.compare.report import Comparison, comparison_tables, tables_markdown
from wmtsim.studies.scenarios.scenario import load_scenario


def _comparison(scenario: str, names: tuple[str, ...]) -> Comparison:
    """A comparison of two configurations whose every cell is 0.5 (nothing is run)."""
    policies = ("linear", "wmt")
    summary = pl.DataFrame([{"policy": p, "metric": m, "mean": 0.5, "low": 0.4, "high": 0.6,
                             "n": 10, "pooled": 0.5, "pooled_low": 0.4, "pooled_high": 0.6,
                             "paper": None} for p in policies for m in names],
                           schema_overrides={"paper": pl.Float64})
    paired = pl.DataFrame([{"policy": "linear", "reference": "wmt", "metric": m, "mean": 0.1,
                            "low": 0.0, "high": 0.2, "n": 10, "n_nonzero": 5, "p": 0.5,
                            "test": "t", "interval": "i"} for m in names])
    return Comparison(scenario=load_scenario(scenario), n=10, seed=0, policies=policies,
                      summary=summary, paired=paired, checks=[], seconds=0.0)


@pytest.mark.parametrize(("scenario", "table"), [("paper_poisoning", "table4"),
                                                 ("gaia", "table123"),
                                                 ("stale_memory", "table123")])
def test_compare_shows_the_metrics_declared_for_its_table(scenario: str, table: str,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    new = Metric("pool_share", "-", "lower", "a metric added for this test", "POOL SHARE ↓",
                 ("h_p",), ("prompt_steps",), compare=(table,))
    monkeypatch.setattr(metrics, "DECLARED", (*DECLARED, new))
    monkeypatch.setitem(LABELS, new.name, new.label)  # derived at import, as DECLARED's
    comp = _comparison(scenario, (*LABELS, new.name))
    main, paired = (tables_markdown([t]) for t in comparison_tables(comp)[:2])
    shown = [m for m in DECLARED if table in m.compare] + [new]
    for m in shown:
        assert m.label in main and m.label in paired, (m.name, table)
    for m in DECLARED:
        if table not in m.compare:
            assert m.label not in main, (m.name, table)
    # not declared for the table: not shown
    monkeypatch.setattr(metrics, "DECLARED", (*DECLARED, replace(new, compare=())))
    assert "POOL SHARE" not in tables_markdown(comparison_tables(comp)[:1])


def test_a_difference_defined_on_no_trajectory_is_shown_as_undefined() -> None:
    """No Memory has no candidate memories, so its CCR is undefined on every trajectory
    and its paired difference has n = 0: compare's paired table shows a dash, it does not
    divide by n (`wmtsim compare gaia` raised ZeroDivisionError)."""
    from wmtsim.core.verdicts import effect_text

    cell = {"mean": float("nan"), "low": float("nan"), "high": float("nan"), "n": 0,
            "n_nonzero": 0, "p": float("nan")}
    assert effect_text(cell) == "– (defined on no trajectory)"
