"""Scenario files: round trip, errors with key paths, shipped scenarios, schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import REPO

from wmtsim.studies.scenarios.scenario import (
    ScenarioError,
    load_scenario,
    scenario_from_dict,
    shipped_scenarios,
)
from wmtsim.studies.scenarios.schema import SCHEMA_FILE, schema_text


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "s.toml"
    p.write_text(text)
    return p


def test_round_trip_every_shipped_scenario() -> None:
    for name, path in shipped_scenarios().items():
        s = load_scenario(path)
        again = scenario_from_dict(__import__("tomllib").loads(s.to_toml()))
        assert again.world == s.world and again.stubs == s.stubs and again.params == s.params
        assert (again.name, again.n, again.seed, again.policies, again.paper) == (
            s.name, s.n, s.seed, s.policies, s.paper), name


def test_shipped_copies_identical_and_load_by_name() -> None:
    shipped = shipped_scenarios()
    repo = {p.stem: p for p in (REPO / "scenarios").glob("*.toml")}
    assert {"paper_poisoning", "gaia_like"} <= set(shipped)
    assert set(repo) == set(shipped)
    for name, p in repo.items():
        assert p.read_bytes() == shipped[name].read_bytes(), name
    assert load_scenario("paper_poisoning").paper == "table4"


def test_schema_file_is_generated() -> None:
    assert SCHEMA_FILE.read_text() == schema_text()


def test_schema_validates_shipped() -> None:
    import tomllib

    from jsonschema import Draft202012Validator

    v = Draft202012Validator(json.loads(schema_text()))
    for path in shipped_scenarios().values():
        v.validate(tomllib.loads(path.read_text()))


@pytest.mark.parametrize(("text", "path", "bits"), [
    ('[[poison]]\nkind = "failed"\n[[poison]]\nkind = "x"\n', "poison[1].kind",
     ["'x'", "failed | plausible"]),
    ("[world]\np_success = 1.5\n", "world.p_success", ["1.5", "[0, 1]"]),
    ("[stubs]\np_leak = -1\n", "stubs.p_leak", ["-1"]),
    ("[params]\nrho = 0\n", "params.rho", ["(0, 1]"]),
    ("[params]\nM = 2.5\n", "params.M", ["integer"]),
    ("[world]\nbogus = 1\n", "world.bogus", ["unknown key", "p_success"]),
    ("bogus = 1\n", "bogus", ["unknown key"]),
    ("[[poison]]\nkind = \"failed\"\ncolour = 1\n", "poison[0].colour", ["unknown key"]),
    ("[[poison]]\nsubtask = 1\n", "poison[0].kind", ["required"]),
    ('policies = ["wmt", "nope"]\n', "policies[1]", ["'nope'", "linear"]),
    ('paper = "table9"\n', "paper", ["table4"]),
    ("n = 0\n", "n", ["integer"]),
    ("[world]\nn_actions = [3, 1]\n", "world.n_actions", ["min <= max"]),
    ("[world]\npoison = []\n", "world.poison", ["[[poison]]"]),
    ("world = 3\n", "world", ["table"]),
    ("x = [\n", "(syntax)", ["TOML"]),
])
def test_errors_name_file_and_key_path(tmp_path: Path, text: str, path: str,
                                       bits: list[str]) -> None:
    p = _write(tmp_path, text)
    with pytest.raises(ScenarioError) as e:
        load_scenario(p)
    msg = str(e.value)
    assert msg.startswith(f"{p}: {path}: "), msg
    for b in bits:
        assert b in msg, msg


def test_missing_file() -> None:
    with pytest.raises(ScenarioError, match="no such file"):
        load_scenario("does/not/exist.toml")


def test_with_overrides() -> None:
    s = load_scenario("paper_poisoning")
    t = s.with_overrides({"rho": 0.8, "stubs.p_leak": 0.5, "world.p_success": 0.7,
                          "poison[0].p_inject": 0.5, "n": 7})
    assert (t.params.rho, t.stubs.p_leak, t.world.p_success, t.n) == (0.8, 0.5, 0.7, 7)
    assert t.world.poison[0].p_inject == 0.5
    with pytest.raises(ScenarioError, match=r"params\.rho: 2 is invalid"):
        s.with_overrides({"rho": 2})
    with pytest.raises(ScenarioError, match="nope"):
        s.with_overrides({"nope": 1})
    with pytest.raises(ScenarioError, match=r"poison\[9\]"):
        s.with_overrides({"poison[9].kind": "failed"})


def test_update_toml_text_sets_keys_of_array_tables() -> None:
    import tomllib

    from wmtsim.studies.scenarios.toml_files import update_toml_text

    text = ('[world]\np_success = 0.8\n\n[[poison]]\nkind = "failed"  # a comment\n'
            'position = 1\n\n[[poison]]\nkind = "plausible"\n')
    out = update_toml_text(text, {"poison[1].position": 3, "poison[0].kind": "global",
                                  "world.p_success": 0.5})
    data = tomllib.loads(out)
    assert data["poison"] == [{"kind": "global", "position": 1},
                              {"kind": "plausible", "position": 3}]
    assert data["world"]["p_success"] == 0.5
    assert "# a comment" in out
