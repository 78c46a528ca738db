"""Smoke test of `make bench`: the benchmark module runs end to end on tiny sizes.

No timing is asserted (machines are shared and noisy); only that every section ran and
wrote its part of the JSON report.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # benchmarks/ is a top-level package of the repository
    sys.path.insert(0, str(REPO))

from benchmarks.cases import SECTIONS  # noqa: E402


@pytest.mark.slow  # 26 s on two loaded cores: make test-all
def test_quick_benchmark_writes_every_section(tmp_path: Path) -> None:
    out = tmp_path / "quick.json"
    done = subprocess.run([sys.executable, "-m", "benchmarks.run", "--quick", "--out",
                           str(out)], cwd=REPO, capture_output=True, text=True, timeout=600,
                          check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    doc = json.loads(out.read_text())
    for key in ("cpu", "cores_usable", "python", "numba", "date"):
        assert key in doc["machine"]
    assert doc["quick"] is True
    assert list(doc["sections"]) == list(SECTIONS)
    for name, section in doc["sections"].items():
        assert "error" not in section, (name, section.get("traceback"))
        assert section["rows"], name
        assert all(len(row) == 4 for row in section["rows"]), name
    assert doc["sections"]["reference"].get("worlds") or doc["sections"]["reference"].get(
        "skipped")
    assert "1" in doc["sections"]["threads"]["speedup"]
    assert len(doc["sections"]["growth_nodes"]["points"]) >= 2
    assert len(doc["sections"]["growth_trajectories"]["points"]) >= 2
    assert doc["sections"]["paper"]["prompt_steps"] > 0
    assert doc["sections"]["startup"]["warm_seconds"] > 0
    assert doc["sections"]["memory"]["probe"]["n"] > 0


def test_only_and_unknown_section(tmp_path: Path) -> None:
    from benchmarks.run import parse_args

    args = parse_args(["--quick", "--only", "threads,memory", "--out", str(tmp_path / "x")])
    assert args.only == ["threads", "memory"]
    with pytest.raises(SystemExit):
        parse_args(["--only", "nope"])
