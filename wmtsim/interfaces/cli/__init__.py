"""The command line: ``wmtsim``, one module per group of commands.

`main` holds the Typer app (the ``wmtsim`` entry point) with the trace, sweep and
dashboard commands and registers the others: `scenarios` (run, calibrate), `compare`,
`design` (screen, tune), `attack`, `dynamics`, `why` (attribute, claims), `schema`,
`stub_fit` (fit-stubs, simulate-log), `conformance`; `analyze` is the body of
``wmtsim analyze``; `common` and `markdown` are what every command shares.

Door: `wmtsim.interfaces.cli.main` (`app`).
"""
