"""The schema command of the ``wmtsim`` CLI (`register` adds it to the app of
`wmtsim.interfaces.cli`): the scenario format's JSON Schema, regenerated from the
dataclasses (`wmtsim.studies.scenario_schema`). Exit codes as there: 0 success, 2 bad
input (an unknown schema, an output path that cannot be written).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from wmtsim.interfaces.cli_common import _fail, file_manifest
from wmtsim.interfaces.cli_scenarios import _say


def schema(
    which: Annotated[str, typer.Argument(help="Which schema: scenario.")] = "scenario",
    out: Annotated[Path | None, typer.Option(
        "--out", "-o", help="Write here (default: the shipped "
                            "wmtsim/schemas/scenario.schema.json).", show_default=False)
    ] = None,
    stdout: Annotated[bool, typer.Option("--stdout", help="Print instead of writing.")
                      ] = False,
) -> None:
    """Regenerate the scenario format's JSON Schema from the dataclasses.

    [bold]Example[/bold]

      [cyan]wmtsim schema scenario --stdout[/cyan]
    """
    from wmtsim.studies.scenario_schema import SCHEMA_FILE, schema_text

    if which != "scenario":
        raise _fail(f"schema {which!r} is unknown; allowed: scenario")
    text = schema_text()
    if stdout:
        print(text, end="")
        return
    from wmtsim.core.input_files import open_regular
    from wmtsim.core.output import OutputError, atomic_write_bytes, check_out_file

    def shipped(path: Path) -> bool:  # the package's own schema, regenerated in place
        with open_regular(path) as f:
            return b'"title": "wmtsim scenario"' in f.read(1 << 16)

    # Without --out: the package's own file, under version control, without a sidecar
    # (docs/faults.md); with --out: a one-file result with its manifest.
    path = out or SCHEMA_FILE
    try:
        if out is None:
            path = check_out_file(path, "schema", legacy=shipped, sidecar_manifest=False)
            atomic_write_bytes(path, text.encode("utf-8"))
        else:
            path = check_out_file(path, "schema")
            atomic_write_bytes(path, text.encode("utf-8"),
                               file_manifest("schema", {"schema": which}))
    except OutputError as e:
        raise _fail(str(e)) from None
    _say(f"wrote {path}")


def register(app: typer.Typer) -> None:
    """Add schema to ``app``."""
    app.command()(schema)
