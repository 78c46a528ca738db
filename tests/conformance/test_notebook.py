"""The conformance notebook (examples/conformance.py, a jupytext notebook) executes."""

from __future__ import annotations

import pytest
from conftest import REPO


def test_the_conformance_notebook_runs() -> None:
    jupytext = pytest.importorskip("jupytext")
    nbclient = pytest.importorskip("nbclient")
    notebook = jupytext.read(REPO / "examples" / "conformance.py")
    assert all(not c.get("outputs") for c in notebook.cells)  # nothing saved to drift
    client = nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(REPO / "examples")}})
    client.execute()
    text = "".join(o.get("text", "") for c in notebook.cells for o in c.get("outputs", []))
    assert "conforms" in text and "disagrees with the reference" in text
