"""`wmtsim fit-stubs` and `wmtsim simulate-log` (docs/stub_logs.md): the stubs section they
write is a scenario's, the summary fits 80 columns, hostile logs exit 2 naming the line."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from wmtsim.interfaces.cli.main import app
from wmtsim.studies.scenarios.scenario import load_scenario, scenario_from_dict


@pytest.fixture(scope="module")
def fitted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    from wmtsim.engine.warm import ensure_compiled

    ensure_compiled(("stub_fit",))  # the summary, not a cold cache's one-time notice
    d = tmp_path_factory.mktemp("fit")
    log, out = d / "sim.jsonl", d / "stubs.toml"
    r = CliRunner().invoke(app, ["simulate-log", str(log), "-n", "2500", "--seed", "2",
                                 "--set", "p_leak=0.3", "--set", "stubs.p_misled=0.7",
                                 "--no-progress"])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(app, ["fit-stubs", str(log), "--out", str(out), "--no-progress"],
                           env={"COLUMNS": "80"}, terminal_width=80)
    assert r.exit_code == 0, r.output
    return log, out, r.output


def test_the_stubs_section_loads_as_a_scenario_and_into_one(fitted: tuple) -> None:
    _, out, _ = fitted
    s = load_scenario(out)  # run / compare / sweep / tune read scenarios this way
    assert s.stubs.selector_rule == "choose" and 0.2 < s.stubs.p_leak < 0.4
    section = tomllib.loads(out.read_text())["stubs"]
    base = tomllib.loads(Path(str(load_scenario("paper_poisoning").source)).read_text())
    merged = scenario_from_dict({**base, "stubs": {**base.get("stubs", {}), **section}})
    assert merged.stubs.p_misled == section["p_misled"]
    assert merged.world == load_scenario("paper_poisoning").world
    assert (out.parent / "stubs.calibration.png").stat().st_size > 1000


def test_the_summary_fits_80_columns_and_says_how_well_the_family_describes_it(
        fitted: tuple) -> None:
    _, _, output = fitted
    assert max(len(line) for line in output.splitlines()) <= 80, output
    for name in ("select_threshold", "p_persuade_vs_evidence", "dilution_tokens",
                 "p_leak_rider"):
        assert name in output
    assert output.count("Hosmer–Lemeshow") == 3


def _hostile(tmp_path: Path, text: str, *args: str) -> str:
    log = tmp_path / "bad.jsonl"
    log.write_text(text)
    out = tmp_path / "stubs.toml"
    r = CliRunner().invoke(app, ["fit-stubs", str(log), "--out", str(out), "--no-progress",
                                 *args])
    assert r.exit_code == 2, r.output
    assert not out.exists()  # bad input writes nothing
    return " ".join(r.output.split())


FOLD = json.dumps({"type": "fold", "poisoned": [{"id": "x", "leaked": False}]}) + "\n"


def test_hostile_logs_exit_2_with_line_field_and_what_is_allowed(tmp_path: Path) -> None:
    sel = {"type": "selection", "candidates": [{"id": "a", "relevance": 0.5}], "chosen": []}
    cases = {
        FOLD + FOLD[:25]: "line 2: (line): not a JSON object (a cut last line?)",
        FOLD + '{"type": "answer", "evidence": true, "context_tokens": NaN, "compromised": '
               'false, "correct": true}\n': "line 2: (line): not a JSON object",
        FOLD + json.dumps({**sel, "chosen": ["b"]}) + "\n":
            'line 2: chosen[0]: "b" was not offered; allowed: an id of this event',
        json.dumps({**sel, "mood": "x"}) + "\n": "line 1: mood: unknown key; allowed:",
    }
    for text, message in cases.items():
        assert message in _hostile(tmp_path, text)
    assert "line 4: (line): more than 3 events" in _hostile(tmp_path, FOLD * 5,
                                                            "--max-events", "3")
    assert "not a .toml file" in " ".join(CliRunner().invoke(
        app, ["fit-stubs", str(tmp_path / "bad.jsonl"), "--out", "x.json"]).output.split())


@pytest.mark.slow
def test_a_million_events_exit_2_at_the_cap_with_bounded_memory(tmp_path: Path) -> None:
    log = tmp_path / "big.jsonl"
    with log.open("w") as f:
        for _ in range(1000):
            f.write(FOLD * 1000)
    r = CliRunner().invoke(app, ["fit-stubs", str(log), "--out", str(tmp_path / "s.toml"),
                                 "--no-progress"])
    assert r.exit_code == 2
    assert "line 500001: (line): more than 500,000 events" in " ".join(r.output.split())
