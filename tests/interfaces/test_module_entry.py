"""``python -m wmtsim`` is the ``wmtsim`` command: the same app, the same exit codes."""

from __future__ import annotations

import subprocess
import sys


def test_python_dash_m_wmtsim_runs_the_command_line() -> None:
    out = subprocess.run([sys.executable, "-m", "wmtsim", "--help"], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "Usage: wmtsim" in out.stdout and "compare" in out.stdout


def test_python_dash_m_wmtsim_refuses_bad_input_with_exit_2() -> None:
    out = subprocess.run([sys.executable, "-m", "wmtsim", "replay", "/nonexistent/trace.jsonl"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, (out.stdout, out.stderr)
