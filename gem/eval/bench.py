"""``python -m gem.eval.bench``: ``gem eval`` throughput against the mock server (concurrency 1 vs 16).

Prints episodes per second for 100 episodes (GuessTheNumber easy + math:Arithmetic, the solver
model) with and without 50 ms of simulated model latency, and the speed-up of concurrency 16 over 1.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path


def main() -> int:
    from gem.eval.mock_server import MockServer
    from gem.eval.runner import EvalConfig, EvalRunner

    envs = ["game:GuessTheNumber-v0-easy", "math:Arithmetic"]
    with tempfile.TemporaryDirectory() as tmp:
        for delay in (0.0, 0.05):
            rates = {}
            with MockServer(delay_s=delay, env_ids=envs, wrapper_sets=("",)) as server:
                for concurrency in (1, 16):
                    out = Path(tmp) / f"d{delay}-c{concurrency}"
                    start = time.perf_counter()
                    summary = EvalRunner(
                        EvalConfig(
                            env_ids=envs,
                            out=str(out),
                            model="solver",
                            base_url=server.base_url,
                            episodes=50,
                            concurrency=concurrency,
                            progress=False,
                        )
                    ).run()
                    seconds = time.perf_counter() - start
                    rates[concurrency] = 100 / seconds
                    sys.stdout.write(
                        f"model latency {delay * 1000:.0f} ms, concurrency {concurrency:2d}: "
                        f"{rates[concurrency]:.1f} episodes/s "
                        f"(success {summary['overall']['success_rate']})\n"
                    )
            sys.stdout.write(f"  concurrency 16 / 1: {rates[16] / rates[1]:.1f}x\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
