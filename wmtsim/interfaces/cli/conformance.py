"""The conformance commands of the ``wmtsim`` CLI: expect, conformance generate / check /
run (docs/conformance.md).

`register` adds them to the app of `wmtsim.interfaces.cli.main`. Exit codes as there: 0 success,
1 a divergence, a disagreement or an unexercised rule, 2 bad input (writing nothing).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import typer

from wmtsim.core.formatting import plural
from wmtsim.interfaces.cli.common import _fail, file_manifest, out_console
from wmtsim.interfaces.cli.scenarios import _watching

conformance_app = typer.Typer(
    name="conformance", no_args_is_help=True, rich_markup_mode="rich",
    help="The conformance kit: a corpus that exercises every named rule of the math, and "
         "a driver for your own implementation (docs/conformance.md).")


def _say(text: str) -> None:
    out_console.print(text, markup=False, highlight=False)


def expect(
    trace: Annotated[Path, typer.Argument(help="The trace to annotate (JSON Lines).",
                                          show_default=False)],
    out: Annotated[Path, typer.Option("--out", "-o", help="Where to write the annotated "
                                      "trace (a new file, or an existing trace).",
                                      show_default=False)],
    at: Annotated[list[str] | None, typer.Option(
        "--at", help="Where to add expect lines: 'select' (after every select; default), "
                     "'every' (after every event), 'end', or a trace line number. Repeat "
                     "to combine.", show_default=False)] = None,
    tol: Annotated[float, typer.Option(
        "--tol", help="Tolerance of u in the written lines (0: the reference's exact "
                      "bits; m and state are always exact).")] = 1e-9,
    replace: Annotated[bool, typer.Option(
        "--replace", help="Drop the trace's own expect lines first.")] = False,
) -> None:
    """Write TRACE back with the reference's [bold]expect[/bold] lines (golden values).

    Every line of TRACE is kept as written; after each chosen point one expect line per
    node holds the reference replay's u, m and state. Bad input exits 2 and writes nothing.

    [bold]Example[/bold]

      [cyan]wmtsim expect my_agent_log.jsonl --out my_agent_log.golden.jsonl[/cyan]
    """
    from wmtsim.conformance.expect import annotate
    from wmtsim.core.output import OutputError, atomic_write_text, check_out_file
    from wmtsim.engine.trace.trace import TraceError

    points: list[str | int] = []
    for item in at or ["select"]:
        # isdecimal and ASCII: "²" is a digit to str.isdigit but not to int()
        points.append(int(item) if item.isascii() and item.isdecimal() else item)
    try:
        if "\x00" not in str(out) and trace.exists() and \
                Path(os.path.realpath(out)) == trace.resolve():
            raise _fail(f"--out {str(out)!r} is the input trace; write to another file")
        target = check_out_file(out, "expect")
        with _watching():
            lines = annotate(trace, at=points, tol=tol, replace=replace)
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(target, "".join(line + "\n" for line in lines), file_manifest(
            "expect", {"trace": str(trace), "at": points, "tol": tol, "replace": replace}))
    except TraceError as e:
        raise _fail(f"{trace}: {e}") from None
    except OutputError as e:
        raise _fail(str(e)) from None
    except IsADirectoryError:
        raise _fail(f"cannot read {str(trace)!r}: it is a folder, not a trace file") from None
    except ValueError as e:
        raise _fail(f"--at/--tol: {e}") from None
    except OSError as e:
        raise _fail(f"cannot read {str(trace)!r} or write {str(out)!r}: "
                    f"{e.strerror or e}") from None
    expects = sum(1 for line in lines if line.startswith('{"op": "expect"'))
    _say(f"wrote {out}: {plural(len(lines), 'line')}, {plural(expects, 'expect line')}")


@conformance_app.command("generate")
def generate_cmd(
    out: Annotated[Path, typer.Option("--out", "-o", help="The corpus folder (new, empty "
                                      "or a previous corpus; replaced as a whole).",
                                      show_default=False)],
) -> None:
    """Write the conformance corpus (the same files wmtsim ships in wmtsim/data/conformance).

    Deterministic: the hand-written cases of every named rule plus seeded random traces,
    each with the reference's expect lines and tagged with the rules its replay fires.
    """
    from wmtsim.conformance.corpus import RANDOM_SEEDS, build_corpus, manifest, write_corpus
    from wmtsim.core.output import OutputError, result_folder, write_manifest
    from wmtsim.core.provenance import provenance

    with _watching():
        traces = build_corpus()
    try:
        with result_folder(out, "conformance") as work:
            write_corpus(work, traces)
            # The corpus index doubles as the result's manifest: add the command line,
            # the version and the file list (the shipped copy carries the index alone).
            index = {k: v for k, v in manifest(traces).items() if k != "command"}
            write_manifest(work, "conformance", index, extra=provenance(
                list(RANDOM_SEEDS), len(traces), None, None, None))
    except OutputError as e:
        raise _fail(str(e)) from None
    except OSError as e:
        raise _fail(f"cannot write {str(out)!r}: {e.strerror or e}") from None
    rules = {r for t in traces for r in t.rules}
    _say(f"wrote {plural(len(traces), 'trace')} to {out} covering {len(rules)} named rules")


@conformance_app.command("check")
def check_cmd(
    folder: Annotated[Path | None, typer.Argument(help="A corpus folder (default: the "
                                                  "shipped corpus).", show_default=False)]
    = None,
) -> None:
    """Replay a corpus through the reference: every expect line, and rule coverage.

    Exit 0 when every expectation holds and every named rule is exercised, 1 otherwise.
    """
    from wmtsim.conformance.corpus import corpus_files
    from wmtsim.engine.trace.rules import RULE_NAMES
    from wmtsim.engine.trace.trace import TraceError, stream

    try:
        files = corpus_files(folder)
        counts = dict.fromkeys(RULE_NAMES, 0)
        failures = []
        expectations = 0
        with _watching():
            for path in files:
                result = stream(path, rules=True)
                expectations += result.expectations
                for name, n in (result.coverage or {}).items():
                    counts[name] += n
                failures += [f"{path.name}: {d}" for d in result.divergences]
    except (ValueError, TraceError, OSError) as e:
        raise _fail(str(e)) from None
    never = [r for r, n in counts.items() if n == 0]
    for line in failures:
        _say(f"FAIL: {line}")
    _say(f"{plural(len(files), 'trace')}, {plural(expectations, 'expectation')}, "
         f"{len(failures)} failing; rules exercised: {len(RULE_NAMES) - len(never)} of "
         f"{len(RULE_NAMES)}" + (f"; never: {', '.join(never)}" if never else ""))
    if failures or never:
        raise typer.Exit(1)


@conformance_app.command("run")
def run_cmd(
    impl: Annotated[str, typer.Argument(help="Your implementation as module:Class (its "
                                        "module importable from here).",
                                        show_default=False)],
    examples: Annotated[int, typer.Option("--examples", min=0, max=100_000,
                                          help="Hypothesis-generated event streams after "
                                               "the corpus (0: corpus only).")] = 200,
    seed: Annotated[int, typer.Option("--seed", min=0, help="Seed of the generated "
                                      "streams.")] = 0,
    tol: Annotated[float, typer.Option("--tol", min=0.0, help="Tolerance of u.")] = 1e-9,
    save: Annotated[Path, typer.Option("--save", help="Folder for the minimal failing "
                                       "trace.")] = Path(".wmt-conformance"),
    timeout: Annotated[float, typer.Option(
        "--timeout", min=0.001, max=3600.0, help="Seconds one call of the implementation "
        "may take (longer: a disagreement).")] = 10.0,
    limit: Annotated[float, typer.Option(
        "--limit", min=1.0, max=86_400.0, help="Seconds the whole check may take (longer: "
        "the implementation's process is killed and the check fails).")] = 3600.0,
) -> None:
    """Check your implementation against the reference; on a disagreement print and save
    the minimal trace (exit 1).

    Your implementation runs in a child process that only answers calls; this process
    compares and decides: whatever the implementation does (raise, exit, hang past
    --timeout, end its process, run past --limit) is a disagreement, and exit 0 means
    every corpus trace and generated stream was compared. Nothing is written outside
    --save.

    [bold]Example[/bold]

      [cyan]wmtsim conformance run examples.naive_wmt:NaiveWMT[/cyan]
    """
    import math

    from wmtsim.conformance.isolated import run_isolated
    from wmtsim.conformance.runner import check_spec, save_path

    for option, value in (("--timeout", timeout), ("--limit", limit)):
        if not math.isfinite(value):
            raise _fail(f"{option} {value!r}: allowed: a finite number of seconds")
    try:
        check_spec(impl)  # imported only in the child: its import may exit
        save_path(save, impl.rpartition(".")[2].rpartition(":")[2])  # refused before work
        report = run_isolated(impl, examples=examples, seed=seed, tol=tol, save=save,
                              timeout=timeout, limit=limit, echo=_say)
    except (ValueError, RuntimeError) as e:
        raise _fail(str(e)) from None
    if not report.passed:
        raise typer.Exit(1)


def coverage_lines(coverage: dict[str, Any]) -> list[str]:
    """`wmtsim check --coverage`'s report: the rules exercised (with counts), then those
    never exercised."""
    from wmtsim.engine.trace.rules import RULES

    hit = [r for r in RULES if coverage.get(r.name)]
    never = [r for r in RULES if not coverage.get(r.name)]
    lines = [f"rules exercised: {len(hit)} of {len(RULES)}"]
    lines += [f"  {r.name:36} {coverage[r.name]:>7}  {r.source}: {r.text}" for r in hit]
    lines.append(f"never exercised: {len(never)}")
    lines += [f"  {r.name:36} {'':>7}  {r.source}: {r.text}" for r in never]
    return lines


_FIELD_RULES = {"u": ("eq4.", "eq2.", "fold.", "eq5.", "eq3."),
                "m": ("eq3.", "decision.event", "eq2.", "fold."),
                "state": ("eq7.", "supersede.", "reopen.", "fold.")}


def rule_of(d: Any) -> str:
    """The rule a divergence is filed under: of the rules that last set the node, the
    first that decides the diverging field (Eq. 4 for a score, Eq. 3 for a count, Eq. 7
    or a lifecycle op for a state)."""
    for prefix in _FIELD_RULES.get(d.field, ()):
        for rule in d.rules:
            if rule.startswith(prefix):
                return str(rule)
    return str(d.rules[0]) if d.rules else "(no rule since the node was created)"


def divergence_lines(trace: Path, divergences: Any) -> list[str]:
    """`wmtsim check --all`'s report: every divergence, grouped by `rule_of`."""
    groups: dict[str, list[Any]] = {}
    for d in divergences:
        groups.setdefault(rule_of(d), []).append(d)
    lines = [f"FAIL: {trace}: {plural(len(divergences), 'divergence')} in "
             f"{plural(len(groups), 'rule group')}"]
    for rule, items in groups.items():
        lines.append(f"{rule}: {len(items)}")
        for d in items:
            tol = "exact" if d.tol is None else f"tolerance {d.tol:g}"
            lines.append(f"  line {d.line}, node {d.node!r}, field {d.field}: expected "
                         f"{d.expected!r}, got {d.got!r} ({tol}); rules: "
                         f"{', '.join(d.rules) or '-'}")
    return lines


CoverageOpt = Annotated[bool, typer.Option(
    "--coverage", help="Also list the named rules of the math the replay exercised and "
                       "those it never did (docs/conformance.md).")]
AllOpt = Annotated[bool, typer.Option(
    "--all", help="Report every divergence, grouped by rule, not just the first.")]


def report_rules(trace: Path, result: Any, coverage: bool, all_: bool) -> None:
    """`wmtsim check`'s ``--coverage`` and ``--all`` reports; exits 1 when ``--all`` has
    reported divergences."""
    if coverage and result.coverage is not None:
        for line in coverage_lines(result.coverage):
            _say(line)
    if all_ and result.divergences:
        for line in divergence_lines(trace, result.divergences):
            _say(line)
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add ``expect`` and the ``conformance`` group to ``app``."""
    app.command("expect")(expect)
    app.add_typer(conformance_app)
