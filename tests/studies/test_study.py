"""The shipped why-study script (why_study/run.py): its generated blocks exist in
docs/findings.md, block replacement is exact, and its tables render the library's numbers."""

from __future__ import annotations

import sys

import polars as pl
import pytest
from conftest import REPO

if str(REPO) not in sys.path:  # why_study/ is a top-level package of the repository
    sys.path.insert(0, str(REPO))

from why_study.run import (
    ATTRIBUTIONS,
    CLAIMS_MAPS,
    FINDINGS,
    attribution_markdown,
    attribution_sentences,
    claims_markdown,
    replace_block,
)
from wmtsim.studies.attribution.attribution import attribute
from wmtsim.studies.scenarios.scenario import load_scenario


def test_every_generated_block_exists_and_its_figure_and_table_are_shipped() -> None:
    text = FINDINGS.read_text(encoding="utf-8")
    names = [f"why_{s}_{p}_{q}" for s, p, q, _ in ATTRIBUTIONS] + list(CLAIMS_MAPS)
    for name in ["provenance", *names]:
        assert f"<!-- generated:{name} -->" in text and f"<!-- /generated:{name} -->" in text
    for name in names:
        assert (REPO / "docs" / "figures" / f"{name}.png").is_file(), name
        assert (REPO / "why_study" / "tables" / f"{name}.parquet").is_file(), name
        assert f"(figures/{name}.png)" in text
    for name in CLAIMS_MAPS:
        assert (REPO / "why_study" / f"{name}.toml").is_file()


def test_replace_block_replaces_only_its_block() -> None:
    text = "a\n<!-- generated:x -->\nold\n<!-- /generated:x -->\nb\n<!-- generated:y -->\n" \
           "keep\n<!-- /generated:y -->\n"
    out = replace_block(text, "x", "new\n")
    assert out == text.replace("old", "new")
    assert replace_block(out, "x", "new") == out
    with pytest.raises(SystemExit, match="no generated block"):
        replace_block(text, "z", "")


def test_markdown_shows_the_attribution() -> None:
    att = attribute(load_scenario("paper_poisoning"), "a2_no_controller", "wmt",
                    metrics=("asr", "tsr"), n=40, n_resamples=100)
    md = attribution_markdown(att.table)
    lines = md.splitlines()
    assert lines[0] == "| | asr | tsr |"
    assert lines[2].startswith("| a2_no_controller (mean) |")
    assert lines[-1].startswith("| wmt (mean) |")
    assert len(lines) == 3 + len(att.players) + 1
    # a null player in this scenario: no [0, 0] interval, the count of nonzero instead
    assert "reopen | 0 (none of 40 nonzero) | 0 (none of 40 nonzero)" in md
    text = attribution_sentences(att.table)
    assert text.count("- **") == 2


def test_claims_markdown_counts() -> None:
    t = pl.DataFrame({"claim": ["c"] * 4, "x": [0.0, 0.0, 1.0, 1.0],
                      "y": [0.0, 1.0, 0.0, 1.0],
                      "status": ["fails (significant)", "fails (significant)",
                                 "holds (significant)", "tie"]})
    md = claims_markdown(t, "x", "y")
    assert "| c | 1 | 0 | 1 | 2 | – | x = 0 |" in md
