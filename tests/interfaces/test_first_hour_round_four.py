"""Issue 52, a researcher's first hour (round four), at the command line: the column of
a malformed trace line, the attack report at 80 columns, attribute's numbers, progress
bars at 80 columns, shipped examples by name from any folder, `wmtsim --help`'s
examples, the tables a command writes as numbers. The dashboard's rows are in
test_dashboard_browser_round_four.py."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from wmtsim.interfaces.cli import app


def test_a_malformed_line_names_the_column_in_the_line(tmp_path: Path) -> None:
    """A line cut after its last comma: the decoder fails at the line's end, column 43,
    not "column 1" of the line break after it (issue 52, row 3)."""
    trace = tmp_path / "cut.jsonl"
    line = '{"op": "action", "id": "a", "parent": "r",'
    trace.write_text('{"op": "query"}\n' + line + "\n", encoding="utf-8")
    res = CliRunner().invoke(app, ["replay", str(trace)])
    assert res.exit_code == 2, res.output
    assert f"line 2: malformed JSON: Expecting property name enclosed in double quotes " \
           f"(column {len(line) + 1})" in res.output, res.output
