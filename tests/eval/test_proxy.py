"""``gem proxy`` without a model: against the mock server (no ids) and hostile clients and servers."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

import gem
from gem.records.schema import record_problems
from tests.conftest import needs_extra

GAME = "game:GuessTheNumber-v0-easy"


@pytest.fixture
def client_of(tmp_path: Path):
    needs_extra("server")
    needs_extra("eval")
    from fastapi.testclient import TestClient

    from gem.eval.proxy import create_app

    clients = []

    def make(upstream: str, **kwargs) -> TestClient:
        client = TestClient(create_app(upstream, tmp_path / "rec", **kwargs))
        client.__enter__()
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.__exit__(None, None, None)


def _play(client, key: str, model: str = "solver", seed: int = 0) -> dict:
    """One GuessTheNumber episode through the proxy, in process; returns the end body."""
    env = gem.make(GAME)
    obs, info = env.reset(seed=seed)
    messages = [{"role": "user", "content": obs + "\n" + str(info.get("suffix") or "")}]
    steps = []
    for _ in range(8):
        reply = client.post("/v1/chat/completions", json={"model": model, "messages": messages},
                            headers={"X-GEM-Episode": key})
        assert reply.status_code == 200, reply.text
        text = reply.json()["choices"][0]["message"]["content"]
        assert "logprobs" not in reply.json()["choices"][0]  # the harness did not ask
        obs, reward, terminated, truncated, info = env.step(text)
        steps.append({"action": text, "observation": obs, "reward": reward, "terminated": terminated,
                      "truncated": truncated})
        messages += [{"role": "assistant", "content": text}, {"role": "user", "content": obs}]
        if terminated or truncated:
            break
    env.close()
    return {"env_id": GAME, "seed": seed, "observation0": messages[0]["content"], "steps": steps}


def test_proxy_records_an_episode_and_says_none_without_ids(mock_server, client_of, tmp_path: Path) -> None:
    server = mock_server(env_ids=[GAME])
    client = client_of(server.base_url)
    end = _play(client, "ep-1")
    bodies = [r["body"] for r in server.requests_log]
    assert all(b["logprobs"] is True and b["return_token_ids"] is True for b in bodies)  # asked upstream
    got = client.post("/gem/episodes/ep-1", json=end)
    assert got.status_code == 200 and got.json()["token_sources"] == ["none"]
    (record,) = [json.loads(line) for line in (tmp_path / "rec" / "episodes.jsonl").read_text().splitlines()]
    assert record_problems(record) == []
    assert record["env_id"] == GAME and record["seed"] == 0 and record["success"] is True
    assert [t["action"] for t in record["turns"]] == [s["action"] for s in end["steps"]]
    assert all(t["token_note"] == "the server returned neither token ids nor logprobs" for t in record["turns"])
    calls = [json.loads(line) for line in (tmp_path / "rec" / "calls.jsonl").read_text().splitlines()]
    assert [c["call"] for c in calls] == list(range(1, len(end["steps"]) + 1))
    assert {c["episode"] for c in calls} == {"ep-1"}
    # the same end posted twice: the calls were used up
    assert client.post("/gem/episodes/ep-1", json=end).status_code == 404


def test_proxy_refuses_what_it_cannot_do(mock_server, client_of) -> None:
    server = mock_server(env_ids=[GAME])
    client = client_of(server.base_url, max_body=4096)
    chat = {"model": "solver", "messages": [{"role": "user", "content": "hi"}]}
    assert client.post("/v1/chat/completions", json={**chat, "stream": True}).status_code == 400
    assert client.post("/v1/chat/completions", content=b"{not json").status_code == 400
    assert client.post("/v1/chat/completions", json=[1, 2]).status_code == 400
    huge = {**chat, "messages": [{"role": "user", "content": "x" * 10_000}]}
    assert client.post("/v1/chat/completions", json=huge).status_code == 413
    bad = client.post("/v1/chat/completions", json=chat, headers={"X-GEM-Episode": "a b/../c"})
    assert bad.status_code == 400 and "X-GEM-Episode" in bad.json()["error"]["message"]
    assert client.post("/gem/episodes/nobody", json={"env_id": GAME, "steps": [
        {"action": "a", "observation": "o", "reward": 0, "terminated": True, "truncated": False}]}).status_code == 404
    end = _play(client, "ep-2")
    for broken, why in [
        ({**end, "steps": end["steps"] + end["steps"][-1:]}, 409),
        ({**end, "env_id": ""}, 400),
        ({**end, "steps": [{**end["steps"][0], "reward": "NaN"}]}, 400),
        ({**end, "steps": []}, 400),
        ([1], 400),
    ]:
        assert client.post("/gem/episodes/ep-2", json=broken).status_code == why
    assert client.post("/gem/episodes/ep-2", json=end).status_code == 200  # still whole after the refusals


def test_proxy_gives_504_for_a_silent_server_and_passes_upstream_errors(mock_server, client_of) -> None:
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # accepts connections, never answers
    try:
        client = client_of(f"http://127.0.0.1:{silent.getsockname()[1]}/v1", timeout_s=0.5)
        reply = client.post("/v1/chat/completions", json={"model": "m", "messages": []})
        assert reply.status_code == 504
    finally:
        silent.close()
    server = mock_server(env_ids=[GAME])
    client = client_of(server.base_url)
    unknown = client.post("/v1/chat/completions", json={"model": "no-such-model", "messages": [{"role": "user", "content": "hi"}]})
    assert 400 <= unknown.status_code < 500


def test_bad_upstream_is_refused() -> None:
    needs_extra("server")
    from gem.eval.proxy import create_app

    with pytest.raises(ValueError, match="upstream"):
        create_app("file:///etc/passwd", "/nonexistent-never-written")


def test_gem_proxy_command_serves_on_loopback(mock_server, tmp_path: Path) -> None:
    needs_extra("server")
    import os
    import subprocess
    import sys
    import time
    import urllib.request

    from gem.services.search.launch import free_port

    server = mock_server(script=["hello"])
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.Popen(
        [sys.executable, "-m", "gem.cli", "proxy", "--upstream", server.base_url, "--out", str(tmp_path / "rec"),
         "--port", str(port)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as reply:  # noqa: S310
                    assert json.loads(reply.read())["upstream"] == server.base_url
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, "gem proxy did not start"
                time.sleep(0.2)
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/v1/chat/completions",
            data=json.dumps({"model": "script", "messages": [{"role": "user", "content": "hi"}]}).encode(),
            headers={"Content-Type": "application/json", "X-GEM-Episode": "e1"},
        )
        with urllib.request.urlopen(request, timeout=30) as reply:  # noqa: S310 -- loopback
            assert json.loads(reply.read())["choices"][0]["message"]["content"] == "hello"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    (call,) = [json.loads(line) for line in (tmp_path / "rec" / "calls.jsonl").read_text().splitlines()]
    assert call["episode"] == "e1" and call["reply"] == "hello" and call["token_source"] == "none"


def test_what_the_proxy_asked_for_is_taken_out_for_a_harness_that_did_not_ask() -> None:
    needs_extra("server")
    from gem.eval.proxy import _strip

    reply = {"prompt_token_ids": [1], "choices": [{"token_ids": [2], "prompt_token_ids": [1], "logprobs": {}, "message": {}}]}
    assert _strip(dict(reply, choices=[dict(reply["choices"][0])]), {}) == {"choices": [{"message": {}}]}
    kept = _strip(dict(reply, choices=[dict(reply["choices"][0])]), {"return_prompt_token_ids": True})
    assert kept["choices"][0]["prompt_token_ids"] == [1] and "token_ids" not in kept["choices"][0]
