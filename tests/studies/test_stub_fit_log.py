"""The stub log reader (docs/stub_logs.md): what it keeps, what it refuses and how it says
so (file, line, field, bad value, what is allowed), and that it agrees with the published
JSON Schema."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from wmtsim.studies.stub_fit.log import Relevance, StubLogError, read_log

SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "wmtsim" / "schemas"
                     / "stub_log.schema.json").read_text())

SEL = {"type": "selection", "candidates": [
    {"id": "a", "relevance": 0.7, "u": 0.8, "priority": 0.4, "tokens": 100},
    {"id": "b", "same_subtask": False, "tokens": 300, "poisoned": True},
    {"id": "c", "relevance": 0.1, "tokens": 50}], "chosen": ["a"], "note": "step 3"}
ANS = {"type": "answer", "evidence": True, "poisoned": [{"id": "b", "persuasiveness": 0.5}],
       "context_tokens": 1200, "compromised": True, "correct": False}
FOLD = {"type": "fold", "poisoned": [{"id": "b", "rider": True, "leaked": True},
                                     {"id": "d", "leaked": False}]}


def _write(tmp_path: Path, lines: list[object] | str) -> Path:
    path = tmp_path / "log.jsonl"
    text = lines if isinstance(lines, str) else "".join(
        (x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines)
    path.write_text(text, encoding="utf-8")
    return path


def test_every_event_type_is_read_into_columns(tmp_path: Path) -> None:
    log = read_log(_write(tmp_path, [SEL, "", ANS, FOLD]))
    assert (log.lines, log.events) == (4, 3)
    s = log.selections
    own, other = Relevance.of_world().own, Relevance.of_world().other
    assert list(s.relevance) == [0.7, other, 0.1] and other == pytest.approx(own * 0.3)
    assert list(s.chosen) == [1, 0, 0] and list(s.poisoned) == [0, 1, 0]
    assert list(s.du) == pytest.approx([0.3, 0, 0]) and list(s.has_u) == [1, 0, 0]
    assert list(log.answers.persuasiveness) == [0.5] and list(log.answers.start) == [0, 1]
    assert list(log.folds.rider) == [1, 0] and list(log.folds.leaked) == [1, 0]
    for ev in (SEL, ANS, FOLD):
        jsonschema.validate(ev, SCHEMA)


def test_every_event_type_is_optional(tmp_path: Path) -> None:
    log = read_log(_write(tmp_path, [FOLD, FOLD]))
    assert log.events == 2 and len(log.selections.relevance) == 0


def test_an_event_whose_budget_or_cap_could_bind_is_censored(tmp_path: Path) -> None:
    # The three candidates cost 450 tokens: under B = 450 the rule alone decides; under
    # B = 200 (a fits, c would have too) a relevant b could have been skipped.
    fits = read_log(_write(tmp_path, [{**SEL, "budget": 450}]))
    assert fits.selections.censored == 0 and len(fits.selections.relevance) == 3
    binds = read_log(_write(tmp_path, [{**SEL, "budget": 200}, SEL]))
    assert (binds.selections.censored, binds.selections.censored_events) == (3, 1)
    assert len(binds.selections.relevance) == 3 and binds.selections.events == 1
    capped = read_log(_write(tmp_path, [{**SEL, "top_k": 2}]))
    assert capped.selections.censored == 3 and len(capped.selections.chosen) == 0
    assert read_log(_write(tmp_path, [{**SEL, "top_k": 3}])).selections.censored == 0


BAD = [
    ({**SEL, "colour": 1}, "line 1: colour: unknown key; allowed: type, candidates"),
    ({**SEL, "chosen": ["zz"]}, "line 1: chosen[0]: \"zz\" was not offered"),
    ({**SEL, "candidates": [{"id": "a", "relevance": 1.5}], "chosen": []},
     "candidates[0].relevance: 1.5 is invalid; allowed: a finite number in [0, 1]"),
    ({**SEL, "candidates": [{"id": "a", "relevance": 0.5, "shade": 2}], "chosen": []},
     "candidates[0].shade: unknown key"),
    ({**SEL, "candidates": [{"id": "a"}], "chosen": []},
     "candidates[0]: needs exactly one of relevance, same_subtask"),
    ({**ANS, "poisoned": [], "compromised": True}, "compromised: true with no persuasive"),
    ({**ANS, "correct": "yes"}, "correct: \"yes\" is invalid; allowed: true or false"),
    ({**FOLD, "poisoned": [{"id": "b"}]}, "poisoned[0].leaked: is required"),
    ({"type": "thought"}, "type: \"thought\" is invalid; allowed: selection | answer | fold"),
    ({**SEL, "budget": 50}, "chosen: the chosen candidates cost 100 tokens, over the budget"),
]


@pytest.mark.parametrize(("event", "message"), BAD)
def test_a_bad_event_names_line_field_value_and_what_is_allowed(
        tmp_path: Path, event: dict, message: str) -> None:
    path = _write(tmp_path, [event])
    with pytest.raises(StubLogError) as e:
        read_log(path)
    assert str(e.value).startswith(str(path) + ": line 1: ")
    assert message in str(e.value)
    # The schema refuses it too, except what relates two fields (docs/stub_logs.md says
    # which checks are the reader's alone).
    cross_field = any(w in message for w in ("was not offered", "cost", "persuasive"))
    assert jsonschema.Draft202012Validator(SCHEMA).is_valid(event) is cross_field


@pytest.mark.parametrize(("text", "message"), [
    ('{"type": "answer", "evidence": true, "context_tokens": NaN, "compromised": false, '
     '"correct": true}\n', "NaN is not a JSON number"),
    (json.dumps(ANS)[:-7], "not a JSON object (a cut last line?)"),
    ("[1, 2]\n", "(event): [1, 2] is not an object"),
    ('{"type": "answer", "evidence": true, "context_tokens": 1e400, "compromised": false, '
     '"correct": true}\n', "context_tokens: inf is invalid"),
])
def test_hostile_lines_are_refused_with_their_line(tmp_path: Path, text: str,
                                                   message: str) -> None:
    path = _write(tmp_path, json.dumps(FOLD) + "\n" + text)
    with pytest.raises(StubLogError) as e:
        read_log(path)
    assert ": line 2: " in str(e.value) and message in str(e.value)


def test_a_log_over_the_event_cap_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, [FOLD] * 6)
    assert read_log(path, max_events=6).events == 6
    with pytest.raises(StubLogError, match=r"line 6: \(line\): more than 5 events"):
        read_log(path, max_events=5)


def test_not_a_regular_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(StubLogError, match=r"\(file\): cannot read: is a folder"):
        read_log(tmp_path)
