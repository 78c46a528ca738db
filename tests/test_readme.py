"""The README's Python example runs as written (from the repository root)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_readme_python_example_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks, "the README has a Python example"
    monkeypatch.chdir(REPO)
    namespace: dict[str, object] = {}
    for code in blocks:
        exec(compile(code, "README.md", "exec"), namespace)
    u, m = namespace["u"], namespace["m"]
    assert list(u) == [0.27, 0.75] and list(m) == [1, 0]  # type: ignore[call-overload]
