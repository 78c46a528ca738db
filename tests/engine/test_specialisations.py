"""Every numba kernel compiles once per use: one specialisation after a cold run.

A kernel whose argument numba types as a literal (or as another integer type at another
call site) compiles again for each distinct value or type, and each compile costs
seconds on a cold cache (issue 26, item 4). So after a cold run of every policy of one
kernel group (`wmtsim.engine.warm`: world generation with WMT's configurations, as
``wmtsim run`` makes it, without per-step records; the field's policies; trace replay),
each kernel of the package must have exactly one signature in that process.

Each group runs in a fresh process; the groups share one fresh numba cache, in order, so
world generation compiles once. A kernel loaded from the cache never compiles its
callees, so only a cold run shows them all. Slow: one cold compile of every group.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

GROUPS = ("engine", "field", "trace")

SCRIPT = r"""
import json, sys
from numba.core.registry import CPUDispatcher
from wmtsim.core.policies import POLICIES
from wmtsim.core.policies import FAM_WMT
from wmtsim.engine.simulation import simulate
from wmtsim.core.world_spec import PoisonSpec, WorldSpec
from wmtsim.engine.world import generate

group = sys.argv[1]
spec = WorldSpec(n_subtasks=(1, 3), n_globals=1, p_resume=0.5, p_revise=0.2,
                 poison=(PoisonSpec("plausible", p_supersede=0.5), PoisonSpec("global")))
world = generate(spec, n=6)
ran = []
if group == "trace":
    from importlib import resources
    from pathlib import Path
    from wmtsim.engine.trace.trace import run
    run(Path(str(resources.files("wmtsim") / "data" / "paper_a4.jsonl")))
    ran.append("trace")
else:
    for name, pol in POLICIES.items():
        if (pol.family == FAM_WMT) == (group == "engine"):
            simulate(world, name)
            simulate(world, name, threads=1)
            ran.append(name)
kernels = {}
for mod_name, mod in list(sys.modules.items()):
    if not mod_name.startswith("wmtsim"):
        continue
    for attr, obj in vars(mod).items():
        if isinstance(obj, CPUDispatcher) and obj.py_func.__module__ == mod_name:
            kernels[f"{mod_name}.{attr}"] = [str(s) for s in obj.signatures]
print(json.dumps({"ran": ran, "kernels": kernels}))
"""


class Recompiled(AssertionError):
    """A kernel has more than one specialisation after a cold run."""


def cold_signatures(group: str, cache: Path) -> dict[str, list[str]]:
    """Each kernel's signatures after a run of ``group`` in a new process on ``cache``."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    done = subprocess.run([sys.executable, "-c", SCRIPT, group], capture_output=True,
                          text=True, timeout=2400, check=False, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["ran"], group
    return {k: sigs for k, sigs in report["kernels"].items() if sigs}


@pytest.mark.slow
def test_each_kernel_compiles_once_per_group(tmp_path: Path) -> None:
    cache = tmp_path / "numba-cache"
    twice: dict[str, list[str]] = {}
    for group in GROUPS:
        used = cold_signatures(group, cache)
        if group == "engine":  # the cold run compiles the world's and WMT's kernels
            assert len(used) >= 20, sorted(used)
        twice.update({f"{group}: {k}": s for k, s in used.items() if len(s) != 1})
    if twice:
        raise Recompiled("kernels compiled more than once:\n" + "\n".join(
            f"{k}: {len(s)} signatures: {s}" for k, s in sorted(twice.items())))


def test_every_purpose_has_a_typed_copy_for_the_kernels() -> None:
    # Kernels import the draw purposes from core.rng, where each is an np.int64 (numba
    # would type a plain int global as a literal and compile `_uniform` once per value).
    import numpy as np

    from wmtsim.core import draws, rng

    names = [k for k in vars(draws) if k.startswith("PURPOSE_")] + ["STEP_WORLD"]
    assert len(names) >= 10
    for name in names:
        typed = getattr(rng, name)
        assert isinstance(typed, np.int64) and typed == getattr(draws, name), name
