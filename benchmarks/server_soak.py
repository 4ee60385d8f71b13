"""Soak test of ``gem serve`` under attack: real play by many sessions while an attacker floods it.

    python benchmarks/server_soak.py [--sessions 200] [--rounds 2] [--slowloris 1500]

A real ``gem serve`` (a child process, loopback only, two tokens: the players' and the attacker's,
``--max-connections 1024``) serves nine games. Everything else is measured from outside:

1. **Quiet round**: ``--sessions`` sessions play one episode each at once with the games' solvers,
   while a monitor process times ``GET /health`` (a fresh connection every 50 ms).
2. **Attack rounds**: an attacker process keeps ``--slowloris`` half-sent requests open (more than
   the connection cap; as the classic tool does, every ``--slowloris-cycle`` seconds it sends one
   more header line on each and reopens those the server cut) and floods the server: declared 400 MB
   bodies, bodies that never arrive, 100k-deep JSON, unknown-kwarg and oversized-kwarg sessions,
   and session creation with its own token until its quota refuses it. Meanwhile the players play
   ``--rounds`` more episodes per session and the monitor keeps timing ``/health``.

Every episode played remotely is compared, observation by observation and reward by reward, with
the same game, seed and actions played locally: a lost or mixed-up episode is a mismatch. The
report gives episodes and mismatches, ``/health`` latency (p50/p99/max, failures) in the quiet
round and under attack (the ratio is attack/quiet), what the attacker got (cuts, 413, 408, 429),
and the server's peak memory. Every load is bounded in count and time and stops by itself
(``--time-limit``, default 300 s).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import selectors
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any

GAMES = [
    "game:GuessTheNumber-v0-hard", "game:Mastermind-v0-easy", "game:Wordle-v0-easy", "game:Hangman-v0-easy",
    "game:TowerofHanoi-v0-easy", "game:Sudoku-v0-easy", "game:Minesweeper-v0-easy", "game:FifteenPuzzle-v0-easy",
    "game:Sokoban-v0-easy",
]
MAX_STEPS = 100
PLAYER_TOKEN, ATTACKER_TOKEN = "players-" + os.urandom(8).hex(), "attacker-" + os.urandom(8).hex()


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# ------------------------------------------------------------------ local reference episodes
def local_episode(env_id: str, seed: int) -> list[Any]:
    """The solver's episode, played locally: [first obs, (action, obs, reward, term, trunc), ...]."""
    import gem

    env = gem.make(env_id)
    solver = env.make_solver()
    obs, info = env.reset(seed=seed)
    solver.reset(obs, info)
    trace: list[Any] = [obs]
    for _ in range(MAX_STEPS):
        action = solver.act(obs, info)
        obs, reward, terminated, truncated, info = env.step(action)
        trace.append((action, obs, float(reward), bool(terminated), bool(truncated)))
        if terminated or truncated:
            break
    return trace


# ------------------------------------------------------------------------------ players
async def play(client: Any, env_id: str, seeds: list[int], expected: dict, stats: dict) -> None:
    """One session: an episode per seed, each compared with its local trace."""
    import httpx

    async def post(path: str, body: dict) -> Any:
        for attempt in range(3):
            try:
                response = await client.post(path, json=body)
                if response.status_code >= 400:
                    raise RuntimeError(f"{path}: HTTP {response.status_code}: {response.text[:200]}")
                return response.json()
            except (httpx.RemoteProtocolError, httpx.ConnectError, httpx.ReadError):
                # only connection-level failures before an answer: the server evicted an idle
                # kept-alive connection as the request left (the request was not processed)
                stats["retries"] += 1
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    sid = (await post("/sessions", {"env_id": env_id}))["session_id"]
    for seed in seeds:
        want = expected[(env_id, seed)]
        got: list[Any] = [(await post(f"/sessions/{sid}/reset", {"seed": seed}))["observation"]]
        for action, *_ in want[1:]:
            r = await post(f"/sessions/{sid}/step", {"action": action})
            got.append((action, r["observation"], r["reward"], r["terminated"], r["truncated"]))
        stats["episodes"] += 1
        stats["steps"] += len(want) - 1
        if got != want:
            stats["mismatches"] += 1
    await client.delete(f"/sessions/{sid}")


async def play_round(url: str, sessions: int, seeds_of: Any, expected: dict, limit: float) -> dict:
    import httpx

    stats = {"episodes": 0, "steps": 0, "mismatches": 0, "retries": 0, "errors": 0}
    limits = httpx.Limits(max_connections=sessions, max_keepalive_connections=sessions)
    headers = {"Authorization": f"Bearer {PLAYER_TOKEN}"}
    start = time.perf_counter()
    async with httpx.AsyncClient(base_url=url, headers=headers, limits=limits, timeout=60) as client:
        tasks = [play(client, GAMES[i % len(GAMES)], seeds_of(i), expected, stats) for i in range(sessions)]
        results = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), limit)
    stats["errors"] = sum(isinstance(r, BaseException) for r in results)
    stats["first_error"] = next((repr(r)[:300] for r in results if isinstance(r, BaseException)), None)
    stats["seconds"] = time.perf_counter() - start
    return stats


# ------------------------------------------------------------------------------ monitor
def monitor(port: int, stop: Any, out: Any) -> None:
    """Time GET /health on a fresh connection every 50 ms until told to stop."""
    latencies, failures = [], 0
    request = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    while not stop.is_set():
        start = time.perf_counter()
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
                sock.sendall(request)
                answer = b""
                while True:
                    chunk = sock.recv(4096)
                    if not chunk:
                        break
                    answer += chunk
            if not answer.startswith(b"HTTP/1.1 200"):
                raise OSError(answer[:40])
            latencies.append(time.perf_counter() - start)
        except OSError:
            failures += 1
        time.sleep(0.05)
    out.put({"latencies": latencies, "failures": failures})


# ----------------------------------------------------------------------------- attacker
def attacker(port: int, token: str, slowloris: int, cycle: float, seconds: float, stop: Any, out: Any) -> None:
    """Slowloris plus floods, for at most ``seconds`` (or until ``stop``); reports what the server answered."""
    import threading

    end = time.monotonic() + seconds

    def attacking() -> bool:
        return time.monotonic() < end and not stop.is_set()

    stats = {"slow_opened": 0, "slow_cut": 0, "status": {}, "floods": 0}
    lock = threading.Lock()

    def count(status: str) -> None:
        with lock:
            stats["status"][status] = stats["status"].get(status, 0) + 1
            stats["floods"] += 1

    def slow() -> None:
        """Classic slowloris: every ``cycle`` seconds, one more header line on each open socket, and
        the sockets the server closed are opened again."""
        sel = selectors.DefaultSelector()
        live: set[socket.socket] = set()

        def drop(sock: socket.socket) -> None:
            sel.unregister(sock)
            live.discard(sock)
            sock.close()
            stats["slow_cut"] += 1

        next_cycle = 0.0
        while attacking():
            if time.monotonic() >= next_cycle:
                for sock in list(live):
                    try:
                        sock.send(b"X-a: b\r\n")
                    except OSError:
                        drop(sock)
                while len(live) < slowloris and attacking():
                    try:
                        sock = socket.create_connection(("127.0.0.1", port), timeout=2)
                        sock.sendall(b"POST /sessions HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                        sock.setblocking(False)
                    except OSError:
                        continue
                    sel.register(sock, selectors.EVENT_READ)
                    live.add(sock)
                    stats["slow_opened"] += 1
                next_cycle = time.monotonic() + cycle
            for key, _ in sel.select(timeout=max(0.05, next_cycle - time.monotonic())):
                try:
                    data = key.fileobj.recv(4096)  # type: ignore[union-attr]
                except OSError:
                    data = b""
                if not data:
                    drop(key.fileobj)  # type: ignore[arg-type]
        for sock in live:
            sock.close()

    def raw(data: bytes, timeout: float = 15) -> str:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
                sock.sendall(data)
                answer = sock.recv(64)
            return answer[9:12].decode() or "closed"
        except OSError:
            return "error"

    def flood() -> None:
        auth = f"Authorization: Bearer {token}\r\n".encode()
        deep = b"[" * 100_000 + b"]" * 100_000
        attacks = [
            b"POST /sessions HTTP/1.1\r\nHost: 127.0.0.1\r\n" + auth + b"Content-Length: 400000000\r\n\r\n",
            b"POST /sessions HTTP/1.1\r\nHost: 127.0.0.1\r\n" + auth + b"Content-Length: %d\r\n\r\n%s" % (len(deep), deep),
            b"POST /sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}",  # no token
        ]
        for kwargs in ({"code_length": 100_000_000}, {"dataset_name": "/etc/passwd"}, {}):
            body = json.dumps({"env_id": "game:Mastermind-v0-easy", "kwargs": kwargs}).encode()
            attacks.append(
                b"POST /sessions HTTP/1.1\r\nHost: 127.0.0.1\r\n" + auth
                + b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
            )
        i = 0
        while attacking() and stats["floods"] < 20_000:
            count(raw(attacks[i % len(attacks)]))
            i += 1

    def never_ending_bodies() -> None:
        auth = f"Authorization: Bearer {token}\r\n".encode()
        while attacking() and stats["floods"] < 20_000:
            count(raw(b"POST /sessions HTTP/1.1\r\nHost: 127.0.0.1\r\n" + auth + b"Content-Length: 1000\r\n\r\n{", 60))

    threads = [threading.Thread(target=f, daemon=True) for f in (slow, flood, flood, *[never_ending_bodies] * 8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 30)
    out.put(stats)


# --------------------------------------------------------------------------------- main
def start_server(port: int, workdir: str, max_connections: int) -> subprocess.Popen:
    token_file = os.path.join(workdir, "tokens")
    with open(os.open(token_file, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        f.write(f"{PLAYER_TOKEN}\n{ATTACKER_TOKEN}\n")
    command = [
        sys.executable, "-m", "gem.cli", "serve", *GAMES, "--port", str(port), "--token-file", token_file,
        "--max-connections", str(max_connections), "--max-sessions-per-client", "500",
    ]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def wait_healthy(port: int, proc: subprocess.Popen, timeout: float = 60) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"gem serve exited: {proc.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit("gem serve did not become healthy")


def peak_memory_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def health_row(name: str, m: dict) -> str:
    lat = [x * 1000 for x in m["latencies"]]
    return (
        f"| {name} | {len(lat)} | {m['failures']} | {percentile(lat, 0.5):.1f} | {percentile(lat, 0.99):.1f} "
        f"| {max(lat) if lat else float('nan'):.1f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3, help="episodes per session under attack")
    parser.add_argument(
        "--min-attack-seconds", type=float, default=40.0,
        help="the attack (and /health timing) lasts at least this long, past the header timeout",
    )
    parser.add_argument("--slowloris", type=int, default=1500, help="half-sent requests kept open")
    parser.add_argument(
        "--slowloris-cycle", type=float, default=2.0,
        help="seconds between the attacker's rounds of trickling a header line and reopening cut sockets",
    )
    parser.add_argument("--max-connections", type=int, default=1024, help="the server's connection cap")
    parser.add_argument("--time-limit", type=float, default=300.0, help="seconds for each round at most")
    args = parser.parse_args()

    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, args.slowloris + args.sessions + 512)), hard))

    total_rounds = 1 + args.rounds
    seeds_of = {r: (lambda i, r=r: [1000 * r + i]) for r in range(total_rounds)}
    start = time.perf_counter()
    expected = {
        (GAMES[i % len(GAMES)], seed): local_episode(GAMES[i % len(GAMES)], seed)
        for r in range(total_rounds) for i in range(args.sessions) for seed in seeds_of[r](i)
    }
    print(f"local reference episodes: {len(expected)} in {time.perf_counter() - start:.1f} s", flush=True)
    attack_seeds = lambda i: [s for r in range(1, total_rounds) for s in seeds_of[r](i)]  # noqa: E731

    from gem.services.search.launch import free_port

    port = free_port()
    ctx = mp.get_context("spawn")
    with tempfile.TemporaryDirectory() as workdir:
        proc = start_server(port, workdir, args.max_connections)
        try:
            wait_healthy(port, proc)
            url = f"http://127.0.0.1:{port}"

            out: Any = ctx.Queue()
            stop = ctx.Event()
            mon = ctx.Process(target=monitor, args=(port, stop, out))
            mon.start()
            quiet = asyncio.run(play_round(url, args.sessions, seeds_of[0], expected, args.time_limit))
            stop.set()
            quiet_health = out.get(timeout=60)
            mon.join(30)

            attack_seconds = args.time_limit
            stop = ctx.Event()
            mon = ctx.Process(target=monitor, args=(port, stop, out))
            attack_out: Any = ctx.Queue()
            atk_stop = ctx.Event()
            atk = ctx.Process(
                target=attacker,
                args=(port, ATTACKER_TOKEN, args.slowloris, args.slowloris_cycle, attack_seconds, atk_stop, attack_out),
            )
            atk.start()
            attack_start = time.monotonic()
            time.sleep(5)  # the slowloris connections are open and the floods running
            mon.start()
            loud = asyncio.run(play_round(url, args.sessions, attack_seeds, expected, args.time_limit))
            while time.monotonic() - attack_start < args.min_attack_seconds:  # /health keeps being timed
                time.sleep(0.2)
            stop.set()
            loud_health = out.get(timeout=60)
            mon.join(30)
            atk_stop.set()
            try:
                attack = attack_out.get(timeout=60)
            except Exception:  # noqa: BLE001 - the report goes on without the attacker's counts
                attack = None
            atk.join(30)
            if atk.is_alive():
                atk.terminate()
            memory = peak_memory_mb(proc.pid)
        finally:
            proc.terminate()
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    print(f"\ngem serve soak: {args.sessions} sessions over {len(GAMES)} games, server --max-connections "
          f"{args.max_connections}, {args.slowloris} slowloris connections + floods for at least "
          f"{args.min_attack_seconds:g} s\n")
    print("| round | episodes | steps | mismatches | failed sessions | retried requests | seconds |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, s in (("quiet", quiet), (f"under attack ({args.rounds} episodes/session)", loud)):
        print(f"| {name} | {s['episodes']} | {s['steps']} | {s['mismatches']} | {s['errors']} | {s['retries']} "
              f"| {s['seconds']:.1f} |")
        if s["first_error"]:
            print(f"\nfirst error ({name}): {s['first_error']}\n")
    print("\n| /health (fresh connection each) | answered | failed | p50 ms | p99 ms | max ms |")
    print("| --- | --- | --- | --- | --- | --- |")
    print(health_row("quiet", quiet_health))
    print(health_row("under attack", loud_health))
    q99 = percentile(quiet_health["latencies"], 0.99)
    l99 = percentile(loud_health["latencies"], 0.99)
    print(f"\np99 under attack / quiet: {l99 / q99:.1f}x; target p99 < 2 s: {'met' if l99 < 2 else 'NOT met'}")
    if attack:
        print(f"attacker: slowloris connections opened {attack['slow_opened']}, cut by the server "
              f"{attack['slow_cut']}; flood answers by status: {dict(sorted(attack['status'].items()))}")
    print(f"server peak memory (VmHWM): {memory:.0f} MB")


if __name__ == "__main__":
    main()
