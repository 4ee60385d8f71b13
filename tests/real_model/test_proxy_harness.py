"""``gem proxy`` end to end on CPU: an OpenAI-SDK harness plays a GEM env with SmolLM2-135M-Instruct
(llama-cpp-python's server) through the proxy, and the proxy's records hold the exact ids.

The harness is the script of docs/records.md ("A recording proxy for any harness"): it knows
nothing of token ids; it sends ``X-GEM-Episode`` with each request and posts the env's steps at
the end. The proxy runs with uvicorn on 127.0.0.1 as ``gem proxy`` would.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any, Iterator

import pytest

pytest.importorskip(
    "llama_cpp",
    reason="llama-cpp-python is not installed (a package outside GEM): pip install -e '.[llm]' in the GEM checkout",
)

import gem  # noqa: E402
from gem.records.schema import record_problems  # noqa: E402
from gem.services.search.launch import free_port  # noqa: E402

from .conftest import LlamaServer  # noqa: E402


@pytest.fixture
def gem_proxy(smollm2_server: LlamaServer, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    import uvicorn

    from gem.eval.proxy import create_app

    out = tmp_path / "proxy"
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(smollm2_server.base_url, out, timeout_s=300),
                                           host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "gem proxy did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}/v1", out
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def harness(base_url: str, model: str, episode: str, seed: int) -> dict[str, Any]:
    """An OpenAI-SDK loop that plays GuessTheNumber; returns what it posted at the end."""
    import openai

    client = openai.OpenAI(base_url=base_url, api_key="EMPTY")
    env = gem.make("game:GuessTheNumber-v0-easy")
    observation, info = env.reset(seed=seed)
    first = f"{observation}\n{info.get('suffix', '')}"
    messages = [{"role": "user", "content": first}]
    steps = []
    for _ in range(2):
        reply = client.chat.completions.create(
            model=model, messages=messages, max_tokens=24, temperature=0.8, seed=seed,
            extra_headers={"X-GEM-Episode": episode},
        )
        assert reply.choices[0].logprobs is None  # the proxy asked for them; the harness sees none
        action = reply.choices[0].message.content or ""
        observation, reward, terminated, truncated, info = env.step(action)
        steps.append({"action": action, "observation": observation, "reward": reward,
                      "terminated": terminated, "truncated": truncated})
        messages += [{"role": "assistant", "content": action}, {"role": "user", "content": observation}]
        if terminated or truncated:
            break
    env.close()
    end = {"env_id": "game:GuessTheNumber-v0-easy", "seed": seed, "observation0": first, "steps": steps}
    request = urllib.request.Request(base_url.rsplit("/v1", 1)[0] + f"/gem/episodes/{episode}",
                                     data=json.dumps(end).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as answer:  # noqa: S310 -- loopback
        assert answer.status == 200
    return end


def test_an_sdk_harness_gets_exact_ids_through_the_proxy(smollm2_server: LlamaServer, gem_proxy) -> None:
    base_url, out = gem_proxy
    ends = [harness(base_url, smollm2_server.model, f"guess-{seed}", seed) for seed in (0, 1)]
    records = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert [r["key"] for r in records] == ["guess-0", "guess-1"]
    root = smollm2_server.base_url.rsplit("/v1", 1)[0]
    exact = 0
    for record, end in zip(records, ends):
        assert record_problems(record) == []
        assert record["env_id"] == "game:GuessTheNumber-v0-easy" and record["seed"] == end["seed"]
        assert record["rewards"] == [s["reward"] for s in end["steps"]]
        for turn, step in zip(record["turns"], end["steps"]):
            assert turn["action"] == step["action"]
            if turn["token_source"] == "none":  # only for a reply that split a UTF-8 character
                assert "cannot be recovered" in turn["token_note"]
                continue
            assert turn["token_source"] == "server_logprob_tokens"
            ids = turn["completion_token_ids"]
            assert len(ids) == len(turn["completion_logprobs"]) == turn["usage"]["completion_tokens"]
            detok = urllib.request.Request(root + "/extras/detokenize", data=json.dumps({"tokens": ids}).encode(),
                                           headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(detok, timeout=60) as answer:  # noqa: S310 -- loopback
                assert json.loads(answer.read())["text"] == step["action"]
            exact += 1
    assert exact >= 2
