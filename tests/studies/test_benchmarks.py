"""Tables 1–3 per model × benchmark: the paper's cells, its directions read
from its numbers, profiles applied to a benchmark's world, directions checked on replicate
corpora of the benchmark's size."""

from __future__ import annotations

import numpy as np
import pytest

from wmtsim.studies.calibration.benchmarks import (
    BENCHMARKS,
    CONFIGS,
    MODELS,
    benchmark_scenario,
    check_directions,
    directions,
    paper_cell,
    replicate_cell,
    summary,
)
from wmtsim.studies.calibration.inference import Replicates


def test_paper_cell_units() -> None:
    c = paper_cell("GAIA-Text", "Qwen3-8B")
    assert c["linear"]["tsr"] == pytest.approx(0.2047)
    assert c["linear"]["prompt_tokens"] == pytest.approx(43.67e6 / 127)
    assert set(c) == set(CONFIGS)
    assert paper_cell("GAIA", "Llama-3.1-8B")["wmt"]["tsr"] == pytest.approx(0.2485)
    with pytest.raises(ValueError, match="allowed"):
        paper_cell("GAIA", "GPT")


def test_directions_come_from_the_papers_numbers() -> None:
    for b in BENCHMARKS:
        for m in MODELS:
            d = {(x["a"], x["b"], x["metric"]): x["sign"] for x in directions(paper_cell(b, m))}
            assert d[("wmt", "linear", "tsr")] == 1  # Table 1: WMT more accurate everywhere
            assert d[("wmt", "linear", "prompt_tokens")] == -1
    # Llama on GAIA-Text: Tree + Summary beats Full WMT (the paper's one exception).
    d = {(x["a"], x["b"], x["metric"]): x["sign"]
         for x in directions(paper_cell("GAIA-Text", "Llama-3.1-8B"))}
    assert d[("wmt", "tree_summary", "tsr")] == -1
    # A tie has no direction: Gemma's Tree + Selection and Tree on GAIA-Text (25.2 both).
    d = {(x["a"], x["b"], x["metric"]) for x in directions(paper_cell("GAIA-Text",
                                                                      "Gemma 4 E4B"))}
    assert ("tree_selection", "tree", "tsr") not in d


def test_check_directions_on_known_replicates() -> None:
    rng = np.random.default_rng(0)
    vals = {p: {"tsr": rng.normal(0.2, 0.01, 50), "prompt_tokens": rng.normal(1e5, 1e3, 50)}
            for p in CONFIGS}
    vals["wmt"]["tsr"] = vals["linear"]["tsr"] + 0.1  # clearly above
    rep = Replicates(CONFIGS, 127, vals, {})
    cell = {"wmt": {"tsr": 0.3}, "linear": {"tsr": 0.2}, "tree": {"tsr": 0.25}}
    checks = {(c["a"], c["b"]): c for c in check_directions(rep, cell)}
    assert checks[("wmt", "linear")]["status"] == "holds"
    assert checks[("wmt", "linear")]["paper_inside"]
    assert checks[("tree", "linear")]["status"] in ("undecided", "holds", "fails")
    assert sum(summary(list(checks.values())).values()) == len(checks)


def test_profiles_apply_to_a_benchmark_world() -> None:
    q = benchmark_scenario("GAIA", "Qwen3-8B")
    llama = benchmark_scenario("GAIA", "Llama-3.1-8B")
    # One world per benchmark; a profile sets the stubs and how the model recovers a
    # missing result (the final-answer rule's knobs).
    rule = ("final_share", "p_recover")
    assert ({k: v for k, v in q.world.to_dict().items() if k not in rule}
            == {k: v for k, v in llama.world.to_dict().items() if k not in rule})
    assert q.stubs != llama.stubs
    assert q.n == 165 and benchmark_scenario("GAIA-Text", "Qwen3-8B").n == 127
    rep = replicate_cell(q.with_overrides({"world.n_actions": [1, 2]}), "GAIA", 2)
    assert rep.corpus == 165 and rep.replicates == 2
    assert set(rep.values) == set(CONFIGS)
