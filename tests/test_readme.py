"""The README's Python example runs as written (from the repository root)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("doc", ["README.md", "docs/guide.md"])
def test_python_examples_run(doc: str, monkeypatch: pytest.MonkeyPatch) -> None:
    text = (REPO / doc).read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks, f"{doc} has a Python example"
    monkeypatch.chdir(REPO)
    namespace: dict[str, object] = {}
    for code in blocks:
        exec(compile(code, doc, "exec"), namespace)
    u, m = namespace["u"], namespace["m"]
    assert list(u) == [0.27, 0.75] and list(m) == [1, 0]  # type: ignore[call-overload]
