"""The quick-start notebook (notebooks/quickstart.ipynb) runs from `simulate` to a figure
and exported tables, and keeps no saved outputs (they would drift from the code)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from conftest import REPO

NOTEBOOK = REPO / "notebooks" / "quickstart.ipynb"


def test_the_quickstart_notebook_runs_and_writes_its_files() -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("vl_convert")  # the dashboard extra draws the figure
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    assert all(not c.get("outputs") for c in notebook.cells if c.cell_type == "code")
    client = nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(REPO)}})
    client.execute()
    text = "".join(o.get("text", "") for c in notebook.cells for o in c.get("outputs", []))
    found = re.search(r"written to (\S+)", text)
    assert found, text
    out = Path(found.group(1))
    for name in ("quickstart.svg", "quickstart.png", "summary.csv", "summary.parquet",
                 "trajectories.csv", "wmt_trajectory_0_steps.csv",
                 "wmt_trajectory_0_steps.parquet"):
        assert (out / name).stat().st_size > 100, name
    assert (out / "quickstart.svg").read_text(encoding="utf-8").lstrip().startswith("<svg")
    assert "wmt  asr:" in text and "linear  tsr:" in text  # the printed intervals
    figure = [o for c in notebook.cells for o in c.get("outputs", [])
              if "application/vnd.vegalite.v5+json" in o.get("data", {})
              or "text/html" in o.get("data", {})]
    assert figure, "the figure cell shows no chart"
    shutil.rmtree(out)
