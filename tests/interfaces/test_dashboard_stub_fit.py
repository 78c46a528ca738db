"""The Stubs page under `streamlit.testing.v1.AppTest`: it fits the shipped example log and
shows its calibration, and explains a log that breaks the format."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from conftest import REPO, no_exception, tooltips_follow_the_policy
from streamlit.testing.v1 import AppTest

PAGE = REPO / "wmtsim" / "interfaces" / "dashboard" / "views" / "stub_fit.py"


def test_the_page_fits_the_example_log_and_shows_its_calibration() -> None:
    at = AppTest.from_file(str(PAGE), default_timeout=300)
    at.run()
    no_exception(at)
    assert at.title[0].value == "Stubs fitted to a log"
    assert at.subheader[0].value.startswith("600 events: the stub family describes")
    assert len(at.get("vega_lite_chart")) == 1
    tooltips_follow_the_policy(at)


def test_the_page_explains_a_log_that_is_not_one(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "selection", "candidates": [], "chosen": []}\n')
    at = AppTest.from_file(str(PAGE), default_timeout=300)
    at.run()
    at.sidebar.selectbox(key="stubfit_source").set_value("other path").run()
    at.sidebar.text_input(key="stubfit_path").set_value(str(bad)).run()
    no_exception(at)
    assert "line 1: candidates: [] is invalid; allowed: at least one candidate" in \
        at.info[0].value
