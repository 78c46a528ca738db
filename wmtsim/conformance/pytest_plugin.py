"""The pytest plugin of the conformance kit (registered as the ``pytest11`` entry point
``wmtsim``): ``pytest --wmt-impl module:Class`` adds one test, ``wmt_conformance``, that runs
`wmtsim.conformance.runner.run_conformance` on the implementation, judged in the pytest
process while the implementation runs in a child that only answers calls
(`wmtsim.conformance.isolated`), and fails with the minimal disagreeing trace. Without
``--wmt-impl`` the plugin does nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("wmtsim", "WMT conformance (wmtsim)")
    group.addoption("--wmt-impl", action="append", default=[], metavar="MODULE:CLASS",
                    help="check this WMT implementation against wmtsim's reference "
                         "(repeatable)")
    group.addoption("--wmt-examples", type=int, default=200, metavar="N",
                    help="Hypothesis-generated event streams after the corpus (default 200)")
    group.addoption("--wmt-timeout", type=float, default=10.0, metavar="SECONDS",
                    help="seconds one call of the implementation may take (default 10)")
    group.addoption("--wmt-limit", type=float, default=3600.0, metavar="SECONDS",
                    help="seconds the whole check may take (default 3600)")
    group.addoption("--wmt-save", default=".wmt-conformance", metavar="DIR",
                    help="folder for minimal failing traces (default .wmt-conformance)")


class ConformanceItem(pytest.Item):
    """One implementation's conformance run."""

    def __init__(self, *, spec: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.spec = spec

    def runtest(self) -> None:
        from wmtsim.conformance.isolated import run_isolated

        # The implementation in a child process, the judge here: nothing it does (exit,
        # hang, patch the comparison) ends the session or passes the test.
        opt = self.config.getoption
        report = run_isolated(self.spec, examples=opt("--wmt-examples"),
                              save=Path(opt("--wmt-save")), echo=None,
                              timeout=opt("--wmt-timeout"), limit=opt("--wmt-limit"))
        if report.failure is not None:
            f = report.failure
            raise ConformanceFailure(
                f"{self.spec} disagrees with the reference ({f.found_in}): "
                f"{f.disagreement}\nminimal trace ({len(f.lines)} lines"
                + (f", saved to {f.saved}" if f.saved else "") + "):\n" + "\n".join(f.lines))

    def repr_failure(self, excinfo: Any, style: Any = None) -> str:
        if isinstance(excinfo.value, ConformanceFailure):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[str, int, str]:
        return "wmt-conformance", 0, f"wmt_conformance[{self.spec}]"


class ConformanceFailure(AssertionError):
    """The implementation disagrees with the reference."""


def pytest_collection_modifyitems(session: Any, config: Any, items: list[Any]) -> None:
    for spec in config.getoption("--wmt-impl"):
        items.append(ConformanceItem.from_parent(session, name=f"wmt_conformance[{spec}]",
                                                 spec=spec))
