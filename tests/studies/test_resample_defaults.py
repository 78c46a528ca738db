"""Every interval the library computes by default meets the project's resampling rule
(docs/statistics.md, "Resamples": B = max(2000, ⌈50 / (α/2)⌉), `resamples_for`).

A default below it (the sweeps' per-point intervals once drew 1,000, the field's
robustness table 500) leaves a 95% quantile resting on fewer than 50 resamples beyond it.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import wmtsim
from wmtsim.core.inference import resamples_for

RULE = resamples_for(0.05)
SKIP = ("wmtsim.interfaces.dashboard",)  # Streamlit pages: their calls are checked below


def _modules() -> list[str]:
    out = []
    for m in pkgutil.walk_packages(wmtsim.__path__, "wmtsim."):
        if not m.name.startswith(SKIP):
            out.append(m.name)
    return out


def _defaults() -> list[tuple[str, int]]:
    found = []
    for name in _modules():
        mod = importlib.import_module(name)
        for fname, fn in vars(mod).items():
            if not inspect.isfunction(fn) or fn.__module__ != name:
                continue
            p = inspect.signature(fn).parameters.get("n_resamples")
            if p is not None and isinstance(p.default, int):
                found.append((f"{name}.{fname}", p.default))
    return found


def test_the_rule_is_2000_at_95_percent() -> None:
    assert RULE == 2000


@pytest.mark.parametrize("where,default", _defaults())
def test_every_default_meets_the_rule(where: str, default: int) -> None:
    assert default >= RULE, f"{where}: n_resamples defaults to {default}, below {RULE}"


def test_the_defaults_were_found() -> None:
    names = {w for w, _ in _defaults()}
    assert "wmtsim.studies.sweeps.analysis.point_means" in names
    assert "wmtsim.studies.sweeps.screen.morris_indices" in names
    assert "wmtsim.studies.field.robustness.field_robustness" in names or any(
        w.startswith("wmtsim.studies.field.robustness.") for w in names)


def test_the_dashboard_calls_meet_the_rule() -> None:
    import re
    from pathlib import Path

    root = Path(wmtsim.__file__).parent / "interfaces" / "dashboard"
    for path in root.rglob("*.py"):
        for m in re.finditer(r"n_resamples\s*=\s*(\d+)", path.read_text("utf-8")):
            assert int(m.group(1)) >= RULE, f"{path.name}: n_resamples={m.group(1)}"
