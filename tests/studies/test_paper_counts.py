"""Which counts can stand behind Table 4's printed ratios
(`wmtsim.studies.calibration.paper_counts`).

Hand-derived: 3/409 = 0.00733 and 4/409 = 0.00978, so no whole number of remaining
poisons prints IP = 0.009; 2496/409 = 6.10269 prints 6.103 (Linear's AF); 128/297 =
0.43098 prints 0.431 (A1's TSR over subtasks); no k/100 has a third decimal.
"""

from __future__ import annotations

from wmtsim.studies.calibration.paper_counts import check_table4, counts_for, counts_markdown
from wmtsim.studies.compare.report import paper_table4


def test_counts_by_hand() -> None:
    assert counts_for(0.009, 409) == ()
    assert counts_for(6.103, 409) == (2496,)
    assert counts_for(0.431, 297) == (128,)
    assert counts_for(0.183, 100) == ()
    assert counts_for(0.18, 100) == (18,)
    assert counts_for(1.0, 409) == (409,)
    assert counts_for(0.5, 2) == (1,)
    assert counts_for(0.0005, 1000) == (0, 1)  # both ends of the printed interval count


def test_the_papers_table4() -> None:
    checks = {(c.metric, c.policy, c.d): c.possible for c in check_table4(paper_table4())}
    assert sum(v for (m, _, d), v in checks.items() if m == "IP") == 1  # only Linear's 1.000
    assert [p for (m, p, d), v in checks.items() if m == "AF" and v] == [
        "linear", "a2_no_controller"]
    assert not any(v for (m, _, d), v in checks.items() if m == "TSR" and d == 100)
    assert [p for (m, p, d), v in checks.items() if m == "TSR" and d == 297 and v] == [
        "a1_unweighted", "a2_no_controller"]
    text = counts_markdown(check_table4(paper_table4()), {})
    assert "* TSR over 100 scenarios (tasks): 0 of 5 cells can be a count" in text
