"""Light paths stay light: ``wmtsim --help`` (and ``import wmtsim``) import no numba,
polars or altair (issue 26, item 5: the warm start). Each is checked in a fresh process,
so nothing another test imported counts."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

HEAVY = ("numba", "polars", "altair")

HELP = r"""
import json, sys
sys.argv = ["wmtsim"] + ARGS
from wmtsim.interfaces.cli.main import app
try:
    app()
except SystemExit:
    pass
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in HEAVY)))
"""


def _heavy_after(code: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("args", [["--help"], ["run", "--help"], ["compare", "--help"]])
def test_help_imports_no_heavy_library(args: list[str]) -> None:
    code = HELP.replace("ARGS", repr(args)).replace("HEAVY", repr(HEAVY))
    assert _heavy_after(code) == [], args


def test_help_imports_neither_numpy_nor_the_package_metadata() -> None:
    """``wmtsim.__version__`` loads on first use: importlib.metadata (~45 ms) is for a
    run's manifest, not for ``--help``; and no numpy either (`Params`, `Stubs` are lazy)."""
    light = ("numpy", "scipy", "importlib.metadata")
    code = HELP.replace("ARGS", repr(["--help"])).replace(
        "m.split(\".\")[0] in HEAVY", f"m in {light!r} or m.split('.')[0] in {HEAVY!r}")
    assert _heavy_after(code) == []


def test_the_lazy_version_is_the_installed_one() -> None:
    from importlib.metadata import version

    import wmtsim

    assert wmtsim.__version__ == version("wmtsim")


def test_import_wmtsim_imports_no_heavy_library_and_sets_the_cache_on_demand() -> None:
    code = ("import json, os, sys, wmtsim\n"
            f"heavy = sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})\n"
            "before = os.environ.get('NUMBA_CACHE_DIR')\n"
            "import numba\n"
            "from numba.core import config\n"
            "print(json.dumps([heavy, before, os.environ.get('NUMBA_CACHE_DIR'), "
            "config.CACHE_DIR]))\n")
    env_free = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False, env=env_free)
    assert done.returncode == 0, done.stderr[-2000:]
    heavy, before, after, numba_dir = json.loads(done.stdout.strip().splitlines()[-1])
    assert heavy == []
    assert before is None  # not hashed at import: nothing asked for numba yet
    assert after and "wmtsim" in after and numba_dir == after  # set before numba read it
