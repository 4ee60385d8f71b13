"""Puzzle games: reset time (p50/p95/max over seeds) and step speed, next to gem-llm 0.1.0.

    python benchmarks/game_resets.py [--seeds 200] [--seconds 1] [--ids ID ...]
                                     [--baseline-python /opt/gemref/bin/python] [--no-baseline]

Each interpreter runs the same worker (this file with ``--worker``) through the public API only
(``gem.make``, ``reset(seed=s)``, ``step``), so the script runs in both venvs; ours runs in this
process's interpreter and gem-llm's in ``--baseline-python``. Resets are timed one by one for seeds
0..N-1; steps/s times ``step`` alone on well-formed random actions (drawn from a local generator, the
same pool for both, since gem-llm's Sudoku and TowerofHanoi cannot sample actions); when an episode
ends, an untimed copy of one of a few freshly reset envs takes its place (a gem-llm Sokoban-hard
reset takes seconds, so resetting there would take most of the run). An id that fails in one interpreter is reported with its error.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import io
import json
import os
import random
import statistics
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

RESET_IDS = [
    "game:Sokoban-v0-easy",
    "game:Sokoban-v0-hard",
    "game:Sokoban-v0-random",
    "game:Sudoku-v0-easy",
    "game:Sudoku-v0-hard",
    "game:Sudoku-v0-random",
    "game:FifteenPuzzle-v0-hard",
    "game:FifteenPuzzle-v0-random",
    "game:TowerofHanoi-v0-hard",
    "game:Game2048-v0-easy",
]
STEP_STARTS = 4  # fresh episodes the step timing cycles through
STEP_IDS = [
    "game:FifteenPuzzle-v0-hard",
    "game:Sudoku-v0-hard",
    "game:TowerofHanoi-v0-hard",
    "game:Game2048-v0-easy",
    "game:Sokoban-v0-hard",
]


def _action(env_id: str, env: Any, rng: random.Random) -> str:
    if "Sudoku" in env_id:
        n = getattr(env, "scale", 9) or 9
        return f"\\boxed{{{rng.randint(1, n)} {rng.randint(1, n)} {rng.randint(1, n)}}}"
    if "TowerofHanoi" in env_id:
        src, dst = rng.sample("ABC", 2)
        return f"\\boxed{{{src} {dst}}}"
    return f"\\boxed{{{rng.choice(['up', 'down', 'left', 'right'])}}}"


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def reset_times(env_id: str, seeds: int) -> dict[str, Any]:
    import gem

    try:
        env = gem.make(env_id)
        times = []
        for seed in range(seeds):
            start = time.perf_counter()
            env.reset(seed=seed)
            times.append(time.perf_counter() - start)
    except Exception as exc:  # report, so the other ids still run
        return {"error": f"{type(exc).__name__}: {exc}"[:120]}
    return {"p50": statistics.median(times), "p95": _percentile(times, 0.95), "max": max(times)}


def steps_per_second(env_id: str, seconds: float) -> dict[str, Any]:
    import gem

    try:
        starts = []
        for seed in range(STEP_STARTS):  # a few fresh episodes, copied: gem-llm's resets take seconds
            env = gem.make(env_id)
            env.reset(seed=seed)
            starts.append(env)
        env = copy.deepcopy(starts[0])
        rng = random.Random(0)
        steps, busy, episodes = 0, 0.0, 0
        while busy < seconds:
            action = _action(env_id, env, rng)
            start = time.perf_counter()
            _, _, terminated, truncated, _ = env.step(action)
            busy += time.perf_counter() - start
            steps += 1
            if terminated or truncated:
                episodes += 1
                env = copy.deepcopy(starts[episodes % STEP_STARTS])
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}"[:120]}
    return {"steps_per_s": steps / busy}


def workload(ids: list[str], seeds: int, seconds: float) -> dict[str, Any]:
    out: dict[str, Any] = {"resets": {}, "steps": {}}
    with contextlib.redirect_stdout(io.StringIO()):  # gem-llm prints from its library code
        for env_id in ids:
            out["resets"][env_id] = reset_times(env_id, seeds)
        for env_id in STEP_IDS:
            out["steps"][env_id] = steps_per_second(env_id, seconds)
    return out


def _fmt(result: dict[str, Any], key: str) -> str:
    if not result:
        return "n/a"
    if "error" in result:
        return "error"
    return f"{result[key] * 1000:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=200, help="resets timed per id (seeds 0..N-1)")
    parser.add_argument("--seconds", type=float, default=1.0, help="time spent stepping per id")
    parser.add_argument("--ids", nargs="*", default=RESET_IDS)
    parser.add_argument("--no-baseline", action="store_true", help="measure ours only")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    from _baseline import DEFAULT_BASELINE, run_worker

    parser.add_argument("--baseline-python", default=DEFAULT_BASELINE)
    args = parser.parse_args()
    worker_args = ["--seeds", str(args.seeds), "--seconds", str(args.seconds), "--ids", *args.ids]
    if args.worker:
        print(json.dumps(workload(args.ids, args.seeds, args.seconds)))
        return
    ours = run_worker(sys.executable, __file__, worker_args, timeout=3600) or {}
    base = {} if args.no_baseline else (run_worker(args.baseline_python, __file__, worker_args, timeout=7200) or {})
    print(f"reset time in ms over seeds 0..{args.seeds - 1}: ours | gem-llm 0.1.0")
    print(f"{'id':<30}{'p50':>8}{'p95':>8}{'max':>8}  |{'p50':>9}{'p95':>9}{'max':>9}")
    for env_id in args.ids:
        a, b = ours.get("resets", {}).get(env_id, {}), base.get("resets", {}).get(env_id, {})
        row = "".join(f"{_fmt(a, k):>8}" for k in ("p50", "p95", "max"))
        row_b = "".join(f"{_fmt(b, k):>9}" for k in ("p50", "p95", "max"))
        note = f"   gem-llm: {b['error']}" if "error" in b else ""
        print(f"{env_id.removeprefix('game:'):<30}{row}  |{row_b}{note}")
    print("\nstep() calls per second on random well-formed actions: ours | gem-llm 0.1.0")
    for env_id in STEP_IDS:
        a, b = ours.get("steps", {}).get(env_id, {}), base.get("steps", {}).get(env_id, {})
        sa = f"{a['steps_per_s']:,.0f}" if "steps_per_s" in a else a.get("error", "n/a")
        sb = f"{b['steps_per_s']:,.0f}" if "steps_per_s" in b else b.get("error", "n/a")
        print(f"{env_id.removeprefix('game:'):<30}{sa:>12}  |{sb:>12}")


if __name__ == "__main__":
    main()
