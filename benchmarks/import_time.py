"""Median wall time of `import gem` in a fresh interpreter (target: under 0.15 s), next to gem-llm 0.1.0,
and of `gem list game` / `gem list` (target: under 1 s, with every extra installed: reasoning-gym's
task list is read from a shipped file, never by importing it), next to a bare interpreter's start.

    python benchmarks/import_time.py [--runs 15] [--against DIR]

With PYTHONPATH set (a checkout), that checkout's gem is measured; the baseline never sees it.
``--against DIR`` also measures the gem of another checkout (``git worktree add DIR <commit>``: this
code before a change), alternating with ours run by run, so that a busy machine slows both alike.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _baseline import DEFAULT_BASELINE  # noqa: E402

CODE = "import time; t = time.perf_counter(); import gem; print(time.perf_counter() - t)"


def median_import(python: str, runs: int, keep_pythonpath: bool = False) -> float:
    env = {k: v for k, v in os.environ.items() if keep_pythonpath or k != "PYTHONPATH"}
    times = []
    with tempfile.TemporaryDirectory() as cwd:
        for _ in range(runs):
            out = subprocess.run([python, "-c", CODE], cwd=cwd, env=env, capture_output=True, text=True, check=True)
            times.append(float(out.stdout.strip().splitlines()[-1]))
    return statistics.median(times)


def median_imports_alternating(python: str, runs: int, roots: dict[str, str]) -> dict[str, float]:
    """Median ``import gem`` time of each checkout in ``roots`` (label -> directory holding ``gem/``),
    one run of each in turn."""
    times: dict[str, list[float]] = {label: [] for label in roots}
    with tempfile.TemporaryDirectory() as cwd:
        for _ in range(runs):
            for label, root in roots.items():
                env = {**os.environ, "PYTHONPATH": root}
                out = subprocess.run([python, "-c", CODE], cwd=cwd, env=env, capture_output=True, text=True, check=True)
                times[label].append(float(out.stdout.strip().splitlines()[-1]))
    return {label: statistics.median(t) for label, t in times.items()}


def median_command(argv: list[str], runs: int) -> float:
    """Median wall time of running ``argv`` (a fresh process each time), output discarded."""
    times = []
    with tempfile.TemporaryDirectory() as cwd:
        for _ in range(runs):
            start = time.perf_counter()
            subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--baseline-python", default=DEFAULT_BASELINE)
    parser.add_argument("--against", default=None, metavar="DIR", help="another checkout, measured alternately")
    args = parser.parse_args()
    if args.against:
        here = os.environ.get("PYTHONPATH") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        both = median_imports_alternating(sys.executable, args.runs, {"ours": here, "against": args.against})
        ours = both["ours"]
        print(f"import gem, median of {args.runs} (alternating): ours {ours * 1000:.1f} ms, {args.against} "
              f"{both['against'] * 1000:.1f} ms (ours / that = {ours / both['against']:.2f})")
    else:
        ours = median_import(sys.executable, args.runs, keep_pythonpath=True)
        print(f"import gem, median of {args.runs}: ours {ours * 1000:.1f} ms (target < 150 ms)")
    if os.path.exists(args.baseline_python):
        base = median_import(args.baseline_python, args.runs)
        print(f"gem-llm 0.1.0: {base * 1000:.1f} ms  (ours / baseline = {ours / base:.2f})")
    bare = median_command([sys.executable, "-c", "pass"], args.runs)
    print(f"python -c pass: {bare * 1000:.1f} ms")
    for argv in (["list", "game"], ["list"]):
        took = median_command([sys.executable, "-m", "gem.cli", *argv], args.runs)
        print(f"gem {' '.join(argv)}: {took * 1000:.1f} ms (target < 1000 ms; / bare interpreter = {took / bare:.1f})")


if __name__ == "__main__":
    main()
