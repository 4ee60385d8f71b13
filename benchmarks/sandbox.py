"""Sandboxed Python: latency, throughput and the code env's judging time, next to gem-llm 0.1.0.

    python benchmarks/sandbox.py                 # about a minute
    python benchmarks/sandbox.py --calls 300     # more calls per measurement

Rows (both interpreters run the same snippets through their ``PythonCodeTool.execute_action``):

- ``latency``: ``print(1+1)`` one call at a time, back to back: p50 and p95 in ms.
- ``spaced latency``: the same with 10 ms between calls (as when calls interleave with
  generation): the worker's clean-up of one run does not compete with the next.
- ``concurrent N``: N threads calling at once (N = 1, 2, 8): calls/s.
- ``64 envs``: 64 tools (one per env, as ``ToolEnvWrapper`` holds them) called from 64 threads: calls/s.
- ``cpu per call ms``: CPU time of the caller, the sandbox worker and its runs together per
  ``print(1+1)`` run, back to back (``getrusage`` and the worker's ``/proc/<pid>/stat``, which
  counts the runs it reaped): the measure least moved by other work on a shared machine.
- ``session cell p50``: a stateful session's cell (``x += 1; print(x)``) back to back, p50 in ms
  (ours only: gem-llm has no sessions).
- ``code env, 10 tests``: judging a correct program on a 10-test bundled problem (stdin/stdout),
  ms per step. Ours: ``CodeEnv.step``. gem-llm's ``CodeEnv`` needs ``datasets`` at import, so its
  judging is reproduced exactly: its ``run_python`` per test on a 5-thread pool, as its
  ``_check_correct`` does.

gem-llm starts ``python`` from ``PATH`` for every call; its worker runs with its own venv's
``bin`` first on ``PATH`` (the fair setting). Ours and gem-llm alternate for ``--rounds`` rounds and
each row shows the median over the rounds (``--stat best`` for each row's best); read the ratios
(the machine may be shared). The load average before and after is printed with the table.

"Ours" is the ``gem`` of the checkout holding this script. ``--before DIR`` adds a column for
another copy of the package (a directory holding ``gem/``: a checkout made with ``git worktree add
DIR <commit>``, or ``git archive <commit> gem | tar -x -C DIR``), run in the same rounds, alternating,
for before/after comparisons on a noisy machine:

    python benchmarks/sandbox.py --no-baseline --before /tmp/gem-before --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

SNIPPET = "<python>print(1+1)</python>"


def _latency(tool, calls: int, gap: float = 0.0) -> dict[str, float]:
    tool.execute_action(SNIPPET)  # warm up (starts our worker)
    times = []
    for _ in range(calls):
        if gap:
            time.sleep(gap)
        t = time.perf_counter()
        _, _err, obs, _ = tool.execute_action(SNIPPET)
        times.append(time.perf_counter() - t)
        if "2" not in obs:
            raise RuntimeError(f"unexpected tool output {obs!r}")
    times.sort()
    return {"p50_ms": 1000 * statistics.median(times), "p95_ms": 1000 * times[int(0.95 * (len(times) - 1))]}


def _throughput(make_tool, threads: int, calls_per_thread: int) -> float:
    tools = [make_tool() for _ in range(threads)]
    for t in tools[:1]:
        t.execute_action(SNIPPET)
    barrier = threading.Barrier(threads + 1)

    def work(tool) -> None:
        barrier.wait()
        for _ in range(calls_per_thread):
            tool.execute_action(SNIPPET)

    workers = [threading.Thread(target=work, args=(tool,)) for tool in tools]
    for w in workers:
        w.start()
    barrier.wait()
    start = time.perf_counter()
    for w in workers:
        w.join()
    return threads * calls_per_thread / (time.perf_counter() - start)


def _problem() -> tuple[str, list[str], list[str]]:
    """A bundled problem with 10 stdin/stdout tests and its reference solution (read from the file)."""
    path = os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "gem", "data", "bundled", "code_problems.jsonl"
    )
    with open(path) as fh:
        for line in fh:
            row = json.loads(line)
            tests = json.loads(row["tests"])
            if row["name"] == "Edit distance":
                return row["solution"], tests["inputs"], tests["outputs"]
    raise RuntimeError("the bundled problem 'Edit distance' is missing")


def _code_env_ours(steps: int) -> float:
    from gem.envs.code_env import CodeEnv

    solution, inputs, outputs = _problem()
    env = CodeEnv(dataset=[{"problem": "edit distance", "tests": {"inputs": inputs, "outputs": outputs}}])
    reply = f"```python\n{solution}\n```"
    times = []
    for _ in range(steps):
        env.reset(idx=0)
        t = time.perf_counter()
        _, reward, *_ = env.step(reply)
        times.append(time.perf_counter() - t)
        assert reward == 1.0
    return 1000 * statistics.median(times)


def _code_env_baseline(steps: int) -> float:
    from concurrent.futures import ThreadPoolExecutor

    from gem.utils.sandbox import run_python  # gem-llm's

    solution, inputs, outputs = _problem()
    pool = ThreadPoolExecutor(max_workers=5)  # as its CodeEnv(max_workers=5)
    times = []
    for _ in range(steps):
        t = time.perf_counter()
        results = list(pool.map(lambda i: run_python(solution, "none", i), inputs))
        ok = all(r[0] for r in results) and all(o.strip() == r[1].strip() for o, r in zip(outputs, results))
        times.append(time.perf_counter() - t)
        assert ok
    return 1000 * statistics.median(times)


def _cpu_per_call(calls: int) -> float | None:
    """CPU ms (this process, the sandbox worker and its runs) per ``print(1+1)`` run."""
    import resource

    def own() -> float:
        me = resource.getrusage(resource.RUSAGE_SELF)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime

    try:
        from gem.utils.sandbox import Sandbox
    except ImportError:  # gem-llm: a process per call, reaped by the call (RUSAGE_CHILDREN)
        from gem.utils.sandbox import run_python

        start = own()
        for _ in range(calls):
            run_python("print(1+1)", "none")
        return 1000 * (own() - start) / calls

    def worker_cpu(pid: int) -> float:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")  # utime stime cutime cstime

    box = Sandbox()
    try:
        for _ in range(20):
            box.run("print(1+1)")
        time.sleep(0.2)  # (the worker has reaped the warm-up runs)
        pid = box._proc.pid
        start = own() + worker_cpu(pid)
        for _ in range(calls):
            box.run("print(1+1)")
        time.sleep(0.2)
        return 1000 * (own() + worker_cpu(pid) - start) / calls
    except (OSError, AttributeError):  # a worker this process cannot see
        return None
    finally:
        box.close()


def _session_cell(cells: int) -> float | None:
    """p50 ms of a stateful session's cell (``x += 1; print(x)``), back to back; ``None`` for a
    sandbox without sessions (gem-llm)."""
    try:
        from gem.utils.sandbox import Sandbox
    except ImportError:
        return None
    box = Sandbox()
    try:
        with box.session() as s:
            s.run("x = 0")
            times = []
            for i in range(cells):
                t = time.perf_counter()
                r = s.run("x += 1; print(x)")
                times.append(time.perf_counter() - t)
                if r.stdout != f"{i + 1}\n":
                    raise RuntimeError(f"unexpected cell output {r.stdout!r} {r.stderr!r}")
        times.sort()
        return 1000 * times[len(times) // 2]
    finally:
        box.close()


def worker(calls: int) -> dict[str, float]:
    """Run every measurement in this interpreter (ours or gem-llm's)."""
    from gem.tools.python_code_tool import PythonCodeTool

    baseline = not hasattr(PythonCodeTool, "format_result")
    if baseline:  # gem-llm runs `python` from PATH: make it its own venv's
        os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    out: dict[str, float] = {}
    lat = _latency(PythonCodeTool(), calls)
    out["latency p50 ms"] = lat["p50_ms"]
    out["latency p95 ms"] = lat["p95_ms"]
    lat = _latency(PythonCodeTool(), calls, gap=0.01)
    out["spaced latency p50 ms"] = lat["p50_ms"]
    out["spaced latency p95 ms"] = lat["p95_ms"]
    for n in (1, 2, 8):
        out[f"concurrent {n} calls/s"] = _throughput(PythonCodeTool, n, max(4, calls // n))
    out["64 envs calls/s"] = _throughput(PythonCodeTool, 64, max(2, calls // 32))
    cpu = _cpu_per_call(max(300, calls))
    if cpu is not None:
        out["cpu per call ms"] = cpu
    cell = _session_cell(max(200, calls))
    if cell is not None:
        out["session cell p50 ms"] = cell
    steps = max(3, calls // 20)
    out["code env 10 tests ms"] = _code_env_baseline(steps) if baseline else _code_env_ours(steps)
    if not baseline:
        from gem.utils.sandbox import default_sandbox

        r = default_sandbox().run("pass")
        out["isolation"] = r.isolation  # type: ignore[assignment]
        out["gem"] = os.path.dirname(sys.modules["gem"].__file__)  # type: ignore[assignment]
    return out


LOWER_IS_BETTER = ("ms",)


def _run_with_path(path: str, args: list[str]) -> dict | None:
    """This script's worker in this interpreter, importing ``gem`` from ``path`` first."""
    import subprocess
    import tempfile

    env = {**os.environ, "PYTHONPATH": os.path.abspath(path)}
    with tempfile.TemporaryDirectory() as cwd:
        proc = subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--worker", *args],
            cwd=cwd, env=env, capture_output=True, text=True, timeout=600,
        )
    if proc.returncode != 0:
        sys.stderr.write(f"worker for {path} failed:\n{proc.stderr[-2000:]}\n")
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--calls", type=int, default=120, help="calls per latency measurement")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--baseline-python", default=None)
    parser.add_argument("--no-baseline", action="store_true")
    parser.add_argument("--before", default=None, help="a directory holding another copy of gem/ to compare")
    parser.add_argument("--stat", choices=("median", "best"), default="median", help="how rounds combine")
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.calls)))
        return
    from _baseline import DEFAULT_BASELINE, run_worker

    base_py = args.baseline_python or DEFAULT_BASELINE
    checkout = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    load_before = os.getloadavg()
    ours: dict = {}
    before: dict = {}
    base: dict = {}
    samples: dict[int, dict[str, list[float]]] = {id(ours): {}, id(before): {}, id(base): {}}
    worker_args = ["--calls", str(args.calls)]
    contenders = [
        (lambda: _run_with_path(checkout, worker_args), ours, False),
        (lambda: _run_with_path(args.before, worker_args), before, args.before is None),
        (lambda: run_worker(base_py, __file__, worker_args), base, args.no_baseline),
    ]
    for i in range(args.rounds):
        # Interleaved, and the order turns every round: neither side always runs right after the other.
        order = contenders if i % 2 == 0 else contenders[::-1]
        for run, best, skip in order:
            if skip:
                continue
            for key, value in (run() or {}).items():
                if not isinstance(value, (int, float)):
                    best[key] = value
                    continue
                seen = samples[id(best)].setdefault(key, [])
                seen.append(value)
                if args.stat == "median":
                    best[key] = statistics.median(seen)
                else:
                    better = min if key.endswith(LOWER_IS_BETTER) else max
                    best[key] = better(seen)
    columns = [("ours", ours)] + ([("before", before)] if args.before else []) + (
        [("gem-llm 0.1.0", base)] if not args.no_baseline else []
    )
    print(f"{'measurement':<28}" + "".join(f"{name:>16}" for name, _ in columns) + "".join(
        f"{'vs ' + name:>14}" for name, _ in columns[1:]
    ))
    for key, value in ours.items():
        if not isinstance(value, (int, float)):
            continue
        row = f"{key:<28}" + "".join(
            f"{col[key]:>16.1f}" if isinstance(col.get(key), (int, float)) else f"{'-':>16}"
            for _, col in columns
        )
        for _, col in columns[1:]:
            b = col.get(key)
            ratio = ((b / value) if key.endswith(LOWER_IS_BETTER) else (value / b)) if b else None
            row += f"{ratio:>13.2f}x" if ratio else f"{'':>14}"
        print(row)
    print(f"ratio: how many times better ours is (faster, or more calls/s); {args.stat} of {args.rounds} rounds.")
    load_after = os.getloadavg()
    print(
        f"load average (1/5/15 min) before: {' '.join(f'{x:.2f}' for x in load_before)}, "
        f"after: {' '.join(f'{x:.2f}' for x in load_after)} on {os.cpu_count()} CPUs"
    )
    print(f"isolation here: {ours.get('isolation')}")
    print(f"ours: {ours.get('gem')}" + (f", before: {before.get('gem')}" if args.before else ""))


if __name__ == "__main__":
    main()
