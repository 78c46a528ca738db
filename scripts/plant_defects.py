"""Plant issue 49's four defects, and two in the binary grid test, one at a time and run
the test that must catch each (docs/testing.md, "Planted defects"). Each defect is a
string replacement in the working tree, restored afterwards whatever happens; prints one
line per defect: caught or not.
Run: ``nice -n 10 python scripts/plant_defects.py``."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEETH = "tests/studies/test_coverage_teeth.py"
QUICK = "tests/studies/test_teeth_quick.py"
BINARY = "tests/core/test_grid_test_binary.py"
DEFECTS = (
    ("grid_test p-values × 0.7", "wmtsim/core/grid_test.py",
     "out.update(p=float((1 + np.sum(t_star >= t_obs)) / (b + 1)),",
     "out.update(p=0.7 * float((1 + np.sum(t_star >= t_obs)) / (b + 1)),",
     f"{TEETH}::test_grid_test_size_at_every_level"),
    ("Morris p-values × 0.6", "wmtsim/studies/sweeps/screen.py",
     "p = (1 + np.sum(t_star >= t_obs, axis=0)) / (b + 1)",
     "p = 0.6 * (1 + np.sum(t_star >= t_obs, axis=0)) / (b + 1)",
     f"{TEETH}::test_morris_size_at_every_level_for_each_null_knob"),
    ("Morris not studentised inside the bootstrap", "wmtsim/studies/sweeps/screen.py",
     "scale = np.where(se > 0, se, se0)", "scale = se0 + 0.0 * se",
     f"{QUICK}::test_morris_keeps_its_size_at_n_10_for_each_null_knob"),
    ("prediction interval without √(1 + 1/R)", "wmtsim/studies/calibration/inference.py",
     "* sd * math.sqrt(1.0 + 1.0 / r)", "* sd * math.sqrt(1.0)",
     f"{QUICK}::test_prediction_interval_covers_a_new_corpus_exactly_at_r_4"),
    ("binary grid_test without the McNemar guard", "wmtsim/core/grid_test.py",
     "p = max(p_q, float(p_pairs.min()))", "p = p_q + 0.0 * float(p_pairs.min())",
     f"{BINARY}::test_rho_m_grid_tsr_is_not_called_different"),
    ("binary grid_test p-values × 0.7", "wmtsim/core/grid_test.py",
     "p = max(p_q, float(p_pairs.min()))", "p = 0.7 * max(p_q, float(p_pairs.min()))",
     f"{BINARY}::test_binary_size_is_near_nominal_at_every_level"),
)


def main() -> int:
    missed = 0
    for label, file, old, new, test in DEFECTS:
        path = ROOT / file
        text = path.read_text()
        if text.count(old) != 1:
            print(f"{label}: its line is gone from {file}")
            return 2
        t0 = time.perf_counter()
        try:
            path.write_text(text.replace(old, new))
            rc = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p",
                                 "no:cacheprovider", test], cwd=ROOT,
                                capture_output=True, text=True).returncode
        finally:
            path.write_text(text)
        caught = rc != 0
        missed += not caught
        print(f"{label}: {'caught' if caught else 'NOT caught'} by {test} "
              f"({time.perf_counter() - t0:.0f} s)")
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
