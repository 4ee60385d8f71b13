"""The suite's configuration does what the docs say: `pytest tests/...` without -m skips slow tests,
and the suite runs with strict infrastructure failures."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SLOW_TEST = "tests/envs/game_env/test_fifteen_puzzle.py"


def _collect(*args: str) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    return out.stdout


def test_slow_tests_are_left_out_without_dash_m():
    slow = [line for line in _collect(SLOW_TEST, "-m", "slow").splitlines() if "::" in line]
    assert slow, "the file no longer holds a slow test; point SLOW_TEST at one that does"
    default = _collect(SLOW_TEST)
    assert not any(test in default for test in slow), "pytest without -m collected a slow test"
    assert "deselected" in default


def test_the_suite_runs_with_strict_infrastructure_failures():
    assert os.environ.get("GEM_STRICT_INFRA") == "1"
