"""Bad traces: `TraceError("line N: ...")` from Python, exit 2 and no output file from the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from wmtsim.engine.trace.trace import TraceError, read_events, replay
from wmtsim.interfaces.cli.main import app

Q = '{"op": "query"}'
TASK = '{"op": "task", "id": "t", "parent": "root"}'
ACTION = '{"op": "action", "id": "a", "parent": "root"}'

# (case id, trace lines, expected error message prefix including "line N: ")
CASES: list[tuple[str, list[str], str]] = [
    ("malformed_json", [Q, '{"op": "task", "id": "t"'], "line 2: malformed JSON: "),
    ("trailing_garbage", [Q, TASK + " x"], "line 2: malformed JSON: Extra data"),
    ("nan_literal", [Q, '{"op": "expect", "id": "root", "u": NaN}'],
     "line 2: malformed JSON: NaN is not valid JSON"),
    ("duplicate_key", [Q, '{"op": "task", "op": "action", "id": "t", "parent": "root"}'],
     "line 2: malformed JSON: field 'op' appears more than once"),
    ("not_an_object", [Q, "[1, 2]"], "line 2: expected a JSON object, got an array"),
    ("unknown_op", [Q, '{"op": "jump", "id": "t"}'], "line 2: unknown op 'jump' (allowed: "),
    ("op_not_string", [Q, '{"op": 3}'], "line 2: unknown op 3"),
    ("missing_op", [Q, '{"id": "t"}'], "line 2: missing required field 'op'"),
    ("unknown_field", [Q, '{"op": "task", "id": "t", "parent": "root", "colour": "red"}'],
     "line 2: unknown field 'colour' for op 'task' (allowed: op, id, parent, tokens, note)"),
    ("params_not_on_query", [Q, '{"op": "task", "id": "t", "parent": "root", "params": {}}'],
     "line 2: field 'params' is allowed only on the query line"),
    ("missing_required", [Q, '{"op": "task", "id": "t"}'],
     "line 2: op 'task' is missing required field 'parent'"),
    ("missing_result", [Q, ACTION, '{"op": "outcome", "id": "a"}'],
     "line 3: op 'outcome' is missing required field 'result'"),
    ("wrong_type_tokens", [Q, '{"op": "task", "id": "t", "parent": "root", "tokens": "many"}'],
     "line 2: field 'tokens' must be an integer, got a string \"many\""),
    ("wrong_type_bool", [Q, '{"op": "global", "id": "g", "poisoned": "yes"}'],
     "line 2: field 'poisoned' must be true or false"),
    ("wrong_type_selected", [Q, '{"op": "select", "selected": "a"}'],
     "line 2: field 'selected' must be an array"),
    ("wrong_type_selected_item", [Q, '{"op": "select", "selected": [1]}'],
     "line 2: field 'selected[0]' must be a string"),
    ("negative_tokens", [Q, '{"op": "action", "id": "a", "parent": "root", "tokens": -1}'],
     "line 2: field 'tokens' must be >= 0, got -1"),
    ("bad_result", [Q, ACTION, '{"op": "outcome", "id": "a", "result": "win"}'],
     "line 3: field 'result' must be one of 'success', 'failure', got 'win'"),
    ("empty_id", [Q, '{"op": "task", "id": "", "parent": "root"}'],
     "line 2: field 'id' must be a non-empty string"),
    ("expect_nothing", [Q, '{"op": "expect", "id": "root"}'],
     "line 2: expect needs at least one of 'u', 'm', 'state'"),
    ("expect_bad_state", [Q, '{"op": "expect", "id": "root", "state": "done"}'],
     "line 2: field 'state' must be one of 'active', 'completed', 'folded', 'obsolete'"),
    ("duplicate_in_selected", [Q, ACTION, '{"op": "select", "selected": ["a", "a"]}'],
     "line 3: field 'selected' lists 'a' more than once"),
    ("unknown_id", [Q, '{"op": "activate", "id": "nope"}'], "line 2: unknown id 'nope'"),
    ("unknown_parent", [Q, '{"op": "task", "id": "t", "parent": "nope"}'],
     "line 2: unknown parent id 'nope'"),
    ("unknown_expect_id", [Q, '{"op": "expect", "id": "ghost", "m": 0}'],
     "line 2: unknown id 'ghost'"),
    ("unknown_selected", [Q, '{"op": "select", "selected": ["ghost"]}'],
     "line 2: unknown selected id 'ghost'"),
    ("unknown_candidate", [Q, '{"op": "select", "selected": [], "candidates": ["ghost"]}'],
     "line 2: unknown candidate id 'ghost'"),
    ("duplicate_id", [Q, TASK, '{"op": "action", "id": "t", "parent": "root"}'],
     "line 3: duplicate id 't' (already defined on line 2)"),
    ("duplicate_root_id", [Q, '{"op": "global", "id": "root"}'],
     "line 2: duplicate id 'root' (already defined on line 1)"),
    ("summary_id_taken", [Q, TASK, '{"op": "global", "id": "t/summary"}',
                          '{"op": "complete", "id": "t"}'],
     "line 4: duplicate id 't/summary' (already defined on line 3)"),
    ("parent_is_action", [Q, ACTION, '{"op": "action", "id": "b", "parent": "a"}'],
     "line 3: parent 'a' is an action, not a task or the root"),
    ("parent_is_global", [Q, '{"op": "global", "id": "g"}',
                          '{"op": "task", "id": "t", "parent": "g"}'],
     "line 3: parent 'g' is a global, not a task or the root"),
    ("activate_action", [Q, ACTION, '{"op": "activate", "id": "a"}'],
     "line 3: activate target 'a' is an action, not a task or the root"),
    ("outcome_on_task", [Q, TASK, '{"op": "outcome", "id": "t", "result": "success"}'],
     "line 3: outcome on 't', which is a task; outcomes belong to actions"),
    ("outcome_on_root", [Q, '{"op": "outcome", "id": "root", "result": "failure"}'],
     "line 2: outcome on 'root', which is a root"),
    ("selected_not_candidate", [Q, ACTION, '{"op": "action", "id": "b", "parent": "root"}',
                                '{"op": "select", "selected": ["b"], "candidates": ["a"]}'],
     "line 4: selected 'b' is not among the candidates"),
    ("selected_root", [Q, '{"op": "select", "selected": ["root"]}'],
     "line 2: selected 'root' is not in the candidate pool: it is the root"),
    ("selected_active_path", [Q, TASK, '{"op": "activate", "id": "t"}',
                              '{"op": "select", "selected": ["t"]}'],
     "line 4: selected 't' is not in the candidate pool: it is on the active path"),
    ("selected_obsolete", [Q, ACTION, '{"op": "supersede", "id": "a"}',
                           '{"op": "select", "selected": ["a"]}'],
     "line 4: selected 'a' is not in the candidate pool: it is obsolete"),
    ("selected_in_obsolete_branch", [Q, TASK, '{"op": "action", "id": "a", "parent": "t"}',
                                     '{"op": "supersede", "id": "t"}',
                                     '{"op": "select", "selected": ["a"]}'],
     "line 5: selected 'a' is not in the candidate pool: it is inside the obsolete branch 't'"),
    ("selected_hidden_by_fold", [Q, TASK, '{"op": "action", "id": "a", "parent": "t"}',
                                 '{"op": "complete", "id": "t"}',
                                 '{"op": "select", "selected": ["a"]}'],
     "line 5: selected 'a' is not in the candidate pool: it is hidden inside a folded branch"),
    ("selected_folded_task", [Q, TASK, '{"op": "complete", "id": "t"}',
                              '{"op": "select", "selected": ["t"]}'],
     "line 4: selected 't' is not in the candidate pool: it is folded"),
    ("first_line_not_query", [TASK], "line 1: the first line must be a query, got op 'task'"),
    ("first_nonblank_not_query", ["", TASK],
     "line 2: the first line must be a query, got op 'task'"),
    ("second_query", [Q, TASK, Q], "line 3: a trace has exactly one query (already on line 1)"),
    ("empty_file", [], "line 1: the trace is empty; its first line must be a query"),
    ("blank_file", ["", "   "], "line 1: the trace is empty"),
    ("bad_params_value", ['{"op": "query", "params": {"rho": 2}}'],
     "line 1: params: Params.rho=2 is invalid; allowed: (0, 1]"),
    ("unknown_param", ['{"op": "query", "params": {"rhoo": 0.5}}'],
     "line 1: params: unknown parameter(s) rhoo; allowed: "),
    ("params_not_object", ['{"op": "query", "params": [1]}'],
     "line 1: field 'params' must be an object"),
    ("complete_action", [Q, ACTION, '{"op": "complete", "id": "a"}'],
     "line 3: complete needs a task; 'a' is an action"),
    ("complete_root", [Q, '{"op": "complete", "id": "root"}'],
     "line 2: complete needs a task; 'root' is a root"),
    ("complete_twice", [Q, TASK, '{"op": "complete", "id": "t"}', '{"op": "complete", "id": "t"}'],
     "line 4: cannot complete task 't': it is folded"),
    ("complete_obsolete", [Q, TASK, '{"op": "supersede", "id": "t"}',
                           '{"op": "complete", "id": "t"}'],
     "line 4: cannot complete task 't': it is obsolete"),
    ("reopen_active", [Q, TASK, '{"op": "reopen", "id": "t"}'],
     "line 3: cannot reopen task 't': it is active, not folded"),
    ("reopen_action", [Q, ACTION, '{"op": "reopen", "id": "a"}'],
     "line 3: reopen needs a task; 'a' is an action"),
    ("supersede_root", [Q, '{"op": "supersede", "id": "root"}'],
     "line 2: cannot supersede the root 'root'"),
]


@pytest.mark.parametrize(("lines", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_python_api_raises_trace_error(lines: list[str], message: str) -> None:
    with pytest.raises(TraceError) as info:
        replay(lines)
    assert str(info.value).startswith(message), str(info.value)
    assert isinstance(info.value, ValueError)
    assert str(info.value) == f"line {info.value.line}: {info.value.message}"


@pytest.mark.parametrize(("lines", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_cli_exits_2_and_writes_nothing(tmp_path: Path, lines: list[str], message: str) -> None:
    trace = tmp_path / "bad.jsonl"
    trace.write_text("".join(x + "\n" for x in lines))
    out_dir = tmp_path / "out"
    result = CliRunner().invoke(app, ["replay", str(trace), "--out", str(out_dir / "r.parquet")])
    assert result.exit_code == 2, result.output
    assert f"error: {trace}: {message}" in result.stderr  # the error names the file
    assert not out_dir.exists()  # nothing written, not even the directory
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl"]
    check = CliRunner().invoke(app, ["check", str(trace)])
    assert check.exit_code == 2
    assert f"error: {trace}: {message}" in check.stderr


def test_error_lines_count_blank_lines_in_files(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(Q + "\n\n\n" + '{"op": "bogus"}\n')
    with pytest.raises(TraceError, match=r"^line 4: unknown op 'bogus'"):
        replay(trace)


def test_first_error_wins_in_line_order() -> None:
    # line 2 is semantically wrong, line 3 is malformed: replay streams, line 2 is reported.
    with pytest.raises(TraceError, match=r"^line 2: unknown id"):
        replay([Q, '{"op": "activate", "id": "x"}', "{"])


def test_iterable_items_must_be_dicts_or_strings() -> None:
    with pytest.raises(TraceError, match=r"^line 2: expected a JSON object or string, got int"):
        list(read_events([{"op": "query"}, 5]))  # type: ignore[list-item]


def test_trace_error_pickles() -> None:
    import pickle

    err = pickle.loads(pickle.dumps(TraceError(7, "boom")))
    assert (err.line, err.message, str(err)) == (7, "boom", "line 7: boom")
