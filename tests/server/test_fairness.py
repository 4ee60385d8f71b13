"""Capacity shared between clients: sessions, sandbox shells and code-test threads, on real servers."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

import gem  # noqa: E402
from gem.server.app import per_client_sessions  # noqa: E402
from gem.server.quotas import ClientPools, ShellQuota, acting_for, current_client, installed  # noqa: E402

MASTERMIND = "game:Mastermind-v0-hard"
TERMINAL = "terminal:CountLines"
RELEASE = threading.Event()  # PoolSleep steps wait for it
ALPHA = {"Authorization": "Bearer alpha"}
BETA = {"Authorization": "Bearer beta"}


class PoolEnv(gem.Env):
    """Each step runs ``jobs`` jobs on the code env's test pool and waits for them, as CodeEnv does."""

    jobs = 1
    blocks = False

    def reset(self, seed=None, **kwargs):
        super().reset(seed)
        return "go", {}

    def _step(self, action):
        from gem.envs.code_env import _test_pool

        def job(i: int) -> int:
            if self.blocks:
                RELEASE.wait(20)  # a program that sleeps until the test lets it go
            return i

        done = [f.result() for f in [_test_pool().submit(job, i) for i in range(self.jobs)]]
        return self._result(f"ran {len(done)} tests", 0.0)


class PoolSleepEnv(PoolEnv):
    jobs, blocks = 8, True


@pytest.fixture(autouse=True)
def test_ids():
    gem.register("test:PoolQuick-v0", PoolEnv)
    gem.register("test:PoolSleep-v0", PoolSleepEnv)
    RELEASE.clear()
    try:
        yield
    finally:
        RELEASE.set()
        for env_id in ("test:PoolQuick-v0", "test:PoolSleep-v0"):
            gem.envs.registration.registry.pop(env_id, None)


def new_session(server, headers: dict, env_id: str) -> str:
    r = httpx.post(server.url + "/sessions", json={"env_id": env_id}, headers=headers, timeout=30)
    assert r.status_code == 201, r.text
    return r.json()["session_id"]


def reset(server, headers: dict, sid: str, timeout: float = 60) -> httpx.Response:
    return httpx.post(f"{server.url}/sessions/{sid}/reset", json={"seed": 0}, headers=headers, timeout=timeout)


# ------------------------------------------------------------------ sessions
def test_one_client_cannot_take_every_session_when_the_total_is_lowered(serve):
    server = serve(tokens=["alpha", "beta"], max_sessions=10)  # a client holds a quarter: 2

    async def flood(headers: dict, count: int) -> list[int]:
        async with httpx.AsyncClient(base_url=server.url, headers=headers, timeout=30) as client:
            replies = await asyncio.gather(*(client.post("/sessions", json={"env_id": MASTERMIND}) for _ in range(count)))
        return sorted(r.status_code for r in replies)

    assert asyncio.run(flood(ALPHA, 12)) == [201] * 2 + [429] * 10  # a quarter of the total, however many it asks
    assert asyncio.run(flood(BETA, 6)) == [201] * 2 + [429] * 4  # beta's share was left for beta


def test_the_per_client_session_cap_stays_below_the_total():
    assert per_client_sessions(10_000) == 1000
    assert per_client_sessions(1000) == 250  # `gem serve --max-sessions 1000`: one client gets a quarter
    assert per_client_sessions(3) == 1 and per_client_sessions(1) == 1
    assert per_client_sessions(1000, 999) == 999  # an operator's own choice below the total stands
    with pytest.raises(ValueError, match="must be below max_sessions"):
        per_client_sessions(1000, 1000)
    with pytest.raises(ValueError, match="at least 1"):
        per_client_sessions(0)


def test_gem_serve_max_sessions_1000_gives_one_client_a_quarter(monkeypatch, capsys):
    from gem.cli import main

    seen = {}

    def fake_serve_app(app, host, port, limits, token_mode, log_level="warning"):
        seen["per_client"] = app.state.store.max_sessions_per_client
        seen["total"] = app.state.store.max_sessions
        return 0

    monkeypatch.setattr("gem.server.cli.serve_app", fake_serve_app)
    monkeypatch.setenv("GEM_SERVER_TOKEN", "alpha")
    assert main(["serve", MASTERMIND, "--max-sessions", "1000"]) == 0
    assert seen == {"per_client": 250, "total": 1000}
    assert main(["serve", MASTERMIND, "--max-sessions", "1000", "--max-sessions-per-client", "1000"]) != 0
    assert "must be below max_sessions (1000)" in capsys.readouterr().err


# ------------------------------------------------------------------ sandbox shells
@pytest.fixture
def eight_slot_shell_sandbox(monkeypatch):
    """The shared shell sandbox with 8 slots (processes at once) instead of 256: 7 for shells."""
    from gem.tools import bash_tool
    from gem.sandbox import Sandbox

    box = Sandbox(preload=bash_tool.PRELOAD, slots=8, prefork=1)
    monkeypatch.setattr(bash_tool, "_shared", box)
    try:
        yield box
    finally:
        box.close()


def test_by_default_a_client_holds_a_quarter_of_the_shell_slots(serve, eight_slot_shell_sandbox):
    server = serve(tokens=["alpha", "beta"], call_timeout=20)
    theirs = [new_session(server, ALPHA, TERMINAL) for _ in range(2)]
    assert [reset(server, ALPHA, sid).status_code for sid in theirs] == [200, 429]  # a quarter of 7
    assert "maximum of 1 shell sandboxes" in reset(server, ALPHA, theirs[1]).json()["error"]["message"]
    assert reset(server, BETA, new_session(server, BETA, TERMINAL)).status_code == 200  # beta's share is its own


def test_one_clients_terminals_cannot_take_every_shell_slot(serve, eight_slot_shell_sandbox):
    server = serve(tokens=["alpha", "beta", "gamma"], call_timeout=20, shells_per_client=3)
    theirs = [new_session(server, ALPHA, TERMINAL) for _ in range(5)]
    assert [reset(server, ALPHA, sid).status_code for sid in theirs] == [200] * 3 + [429] * 2
    refused = reset(server, ALPHA, theirs[3])
    assert refused.status_code == 429 and "maximum of 3 shell sandboxes" in refused.json()["error"]["message"]
    mine = [new_session(server, BETA, TERMINAL) for _ in range(3)]
    start = time.monotonic()
    for sid in mine:
        answer = reset(server, BETA, sid, timeout=30)
        assert answer.status_code == 200 and "CountLines" in answer.json()["observation"]
    assert time.monotonic() - start < 30  # beta got its shells at once, it did not wait for alpha's
    # 6 of 7 shells are held: the last one goes to gamma, and past it the server says so at once
    third = [new_session(server, {"Authorization": "Bearer gamma"}, TERMINAL) for _ in range(2)]
    assert reset(server, {"Authorization": "Bearer gamma"}, third[0]).status_code == 200
    full = reset(server, {"Authorization": "Bearer gamma"}, third[1], timeout=30)
    assert full.status_code == 429 and "All 7 shell sandboxes" in full.json()["error"]["message"]
    # closing a session gives its shell back
    assert httpx.delete(f"{server.url}/sessions/{theirs[0]}", headers=ALPHA).status_code == 200
    assert reset(server, ALPHA, theirs[3]).status_code == 200
    # a finished episode is graded by a one-shot run in the slot kept free: it does not wait
    obs = httpx.post(f"{server.url}/sessions/{mine[0]}/step", json={"action": "<bash>wc -l < data.txt > count.txt</bash>"},
                     headers=BETA, timeout=30)
    assert obs.status_code == 200
    done = httpx.post(f"{server.url}/sessions/{mine[0]}/step", json={"action": "<done/>"}, headers=BETA, timeout=30)
    assert done.status_code == 200 and done.json()["terminated"] and done.json()["reward"] == 1.0, done.text


class ShellAtMakeEnv(PoolEnv):
    """Opens its sandbox session when made (a session starts its process only on its first cell)."""

    def __init__(self):
        super().__init__()
        from gem.tools.bash_tool import shell_sandbox

        self.shell = shell_sandbox().session()

    def close(self):
        self.shell.close()


def test_an_env_that_opens_its_shell_when_made_gets_429_past_the_quota(serve):
    gem.register("test:ShellAtMake-v0", ShellAtMakeEnv)
    try:
        server = serve(tokens=["alpha", "beta"], shells_per_client=1)
        statuses = [httpx.post(server.url + "/sessions", json={"env_id": "test:ShellAtMake-v0"}, headers=ALPHA,
                               timeout=30) for _ in range(2)]
        assert [r.status_code for r in statuses] == [201, 429]
        assert "maximum of 1 shell sandboxes" in statuses[1].json()["error"]["message"]
        assert new_session(server, BETA, "test:ShellAtMake-v0")  # beta's share is its own
        assert httpx.delete(f"{server.url}/sessions/{statuses[0].json()['session_id']}", headers=ALPHA).status_code == 200
        assert new_session(server, ALPHA, "test:ShellAtMake-v0")  # closing gave alpha's shell back
    finally:
        gem.envs.registration.registry.pop("test:ShellAtMake-v0", None)


def test_shell_quota_counts_per_client_and_releases_once():
    quota = ShellQuota(per_client=2, total=4)
    first, second = quota.take("a"), quota.take("a")
    with pytest.raises(Exception, match="maximum of 2"):
        quota.take("a")
    other = quota.take("b")  # another client's share is its own
    first()
    first()  # a second release changes nothing
    assert quota.held("a") == 1
    quota.take("a")
    with pytest.raises(Exception, match="maximum of 2"):
        quota.take("a")
    quota.take("b")
    with pytest.raises(Exception, match="All 4 shell sandboxes"):
        quota.take("c")  # the total holds whoever asks
    second()
    other()
    assert quota.held("a") == 1 and quota.held("b") == 1 and quota.held() == 2


# ------------------------------------------------------------------ code-test pools
def test_one_clients_sleeping_tests_cannot_fill_the_test_pool(serve):
    server = serve(tokens=["alpha", "beta"], workers=8, per_client_workers=4, call_timeout=8,
                   test_threads_per_client=8)
    blocked = [new_session(server, ALPHA, "test:PoolSleep-v0") for _ in range(4)]
    for sid in blocked:
        assert reset(server, ALPHA, sid).status_code == 200
    mine = new_session(server, BETA, "test:PoolQuick-v0")
    assert reset(server, BETA, mine).status_code == 200

    def step(sid: str, headers: dict) -> httpx.Response:
        return httpx.post(f"{server.url}/sessions/{sid}/step", json={"action": "x"}, headers=headers, timeout=30)

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        pending = [pool.submit(step, sid, ALPHA) for sid in blocked]  # 32 sleeping tests
        deadline = time.monotonic() + 10
        while "gem_workers_busy 4" not in httpx.get(server.url + "/metrics", headers=BETA).text:
            assert time.monotonic() < deadline, "alpha's steps did not start"
            time.sleep(0.05)
        time.sleep(0.3)  # alpha's tests have filled its pool
        for _ in range(3):
            start = time.monotonic()
            r = step(mine, BETA)
            assert r.status_code == 200 and r.json()["observation"] == "ran 1 tests", r.text
            assert time.monotonic() - start < 5
        assert not any(f.done() for f in pending)  # alpha's tests are all still asleep
        RELEASE.set()
        results = [f.result(timeout=30).status_code for f in pending]
    assert all(code in (200, 504) for code in results)  # alpha's own steps wait on alpha's own tests


def test_client_pools_run_each_clients_work_apart_and_drop_idle_pools():
    pools = ClientPools(per_client=2)
    gate = threading.Event()
    with acting_for("a"):
        assert current_client() == "a"
        slow = [pools.submit(gate.wait, 10) for _ in range(4)]  # fills a's two threads and queues two
    with acting_for("b"):
        assert pools.submit(lambda: current_client()).result(timeout=5) is None  # b's pool is free
    assert current_client() is None
    assert not any(f.done() for f in slow)
    gate.set()
    assert all(f.result(timeout=5) for f in slow)
    deadline = time.monotonic() + 5
    while pools.pools() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert pools.pools() == 0
    pools.shutdown()


def test_quotas_are_installed_only_while_a_server_runs(serve):
    from gem.envs import code_env
    from gem.tools.bash_tool import shell_sandbox

    assert installed() is None and "session" not in vars(shell_sandbox())
    server = serve()
    assert installed() is not None and isinstance(code_env._test_pool(), ClientPools)
    assert "session" in vars(shell_sandbox())
    server.stop()
    assert installed() is None and not isinstance(code_env._test_pool(), ClientPools)
    assert "session" not in vars(shell_sandbox())


PAIRS_WITH_SUM = """```python
import sys
from collections import Counter
data = sys.stdin.read().split()
n, k = int(data[0]), int(data[1])
seen, pairs = Counter(), 0
for x in map(int, data[2:2 + n]):
    pairs += seen[k - x]
    seen[x] += 1
print(pairs)
```"""
SLEEPS = "```python\nimport time\ntime.sleep(60)\n```"


@pytest.mark.slow
def test_real_code_env_programs_that_sleep_do_not_time_out_another_clients_step(serve):
    """CodeEnv itself: alpha's programs sleep through their tests, beta's correct program is graded."""
    server = serve(tokens=["alpha", "beta"], call_timeout=12)
    kwargs = {"test_timeout": 2.0}  # each sleeping test is killed after its wall limit of 6 s

    def session(headers: dict) -> str:
        r = httpx.post(server.url + "/sessions", json={"env_id": "code:Bundled", "kwargs": kwargs},
                       headers=headers, timeout=30)
        assert r.status_code == 201, r.text
        sid = r.json()["session_id"]
        assert "Pairs with sum" in reset(server, headers, sid).json()["observation"]
        return sid

    def step(sid: str, headers: dict, action: str) -> httpx.Response:
        return httpx.post(f"{server.url}/sessions/{sid}/step", json={"action": action}, headers=headers, timeout=60)

    sleepers = [session(ALPHA) for _ in range(4)]
    mine = session(BETA)
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        pending = [pool.submit(step, sid, ALPHA, SLEEPS) for sid in sleepers]
        time.sleep(1.0)  # alpha's 40 tests are queued or asleep
        r = step(mine, BETA, PAIRS_WITH_SUM)
        assert r.status_code == 200, r.text  # before per-client pools: 504 behind alpha's sleepers
        assert r.json()["reward"] == 1.0 and r.json()["info"]["passed"] == r.json()["info"]["total"]
        # alpha's steps earn nothing: ungraded (500, an infrastructure error: the program slept), or
        # over their time limit (504) waiting on alpha's own pool
        for reply in (f.result(timeout=120) for f in pending):
            assert reply.status_code in (500, 504) or reply.json()["reward"] == 0.0, reply.text


def test_a_session_collected_while_the_quota_is_locked_does_not_deadlock():
    """A dropped session's finalizer can run whenever the garbage collector does, also inside take()
    on the thread that holds the quota's lock: it must not wait for that lock."""
    import gc
    import threading

    class Session:
        def close(self) -> None:
            pass

    class Sandbox:
        def session(self) -> Session:
            return Session()

    quota, sandbox = ShellQuota(per_client=1), Sandbox()
    undo = quota.guard(sandbox)
    try:
        with acting_for("a"):
            opened = sandbox.session()
        assert quota.held("a") == 1
        done = threading.Event()

        def collect_under_the_lock() -> None:
            nonlocal opened
            with quota._lock:  # as take() holds it when the collector runs
                del opened
                gc.collect()
            done.set()

        worker = threading.Thread(target=collect_under_the_lock, daemon=True)
        worker.start()
        assert done.wait(10), "the finalizer waited for the quota's lock"
        assert quota.held("a") == 0  # the dropped session's share came back
        with acting_for("a"):
            sandbox.session().close()
    finally:
        undo()
