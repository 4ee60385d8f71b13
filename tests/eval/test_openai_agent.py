"""OpenAIAgent through the real openai client against the mock server."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import pytest

from gem.agents.openai_agent import ModelRequestError, OpenAIAgent
from tests.conftest import needs_extra

needs_extra("eval")  # openai


def test_import_gem_agents_does_not_import_openai() -> None:
    code = (
        "import sys, gem.agents; assert 'openai' not in sys.modules; print(gem.agents.OpenAIAgent.__name__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "OpenAIAgent"


def test_sync_act_builds_chat_history_with_instructions_and_text_tool_output_as_user(mock_server) -> None:
    server = mock_server(script=["first", "second", "third"])
    agent = OpenAIAgent(
        "script", base_url=server.base_url, api_key="k", system_prompt="be brief", max_retries=0
    )
    suffix = "Put your final answer within \\boxed{}."
    try:
        agent.reset("obs0", {"suffix": suffix})
        assert agent.act("obs0", {"suffix": suffix}) == "first"
        assert agent.act("tool out", {"use_tool": True}) == "second"
        assert agent.act("env says", {"use_tool": False, "suffix": "Go on."}) == "third"
    finally:
        agent.close()
    roles = [m["role"] for m in agent.messages]
    # A text-tag tool call has no tool_call_id, so its output is a user message (a tool one would be refused).
    assert roles == ["system", "user", "assistant", "user", "assistant", "user", "assistant"]
    assert agent.messages[1]["content"] == f"obs0\n\n{suffix}"
    assert agent.messages[3]["content"] == "tool out"
    assert agent.messages[5]["content"] == "env says\n\nGo on."
    assert len(agent.calls) == 3 and all(c["usage"]["prompt_tokens"] > 0 for c in agent.calls)


def test_tool_role_user_option(mock_server) -> None:
    server = mock_server(script=["a", "b"])
    agent = OpenAIAgent("script", base_url=server.base_url, tool_role="user")

    async def go() -> None:
        agent.reset("o", {})
        await agent.aact("o", {})
        await agent.aact("tool out", {"use_tool": True})

    asyncio.run(go())
    assert [m["role"] for m in agent.messages] == ["user", "assistant", "user", "assistant"]


def test_retries_with_backoff_then_succeeds(mock_server) -> None:
    server = mock_server(script=["ok"], fail_first=2)
    agent = OpenAIAgent("script", base_url=server.base_url, max_retries=2, backoff_s=0.05)
    agent.reset("o", {})
    start = time.perf_counter()
    assert agent.act("o", {}) == "ok"
    agent.close()
    assert agent.calls[0]["attempts"] == 3
    assert time.perf_counter() - start >= 0.05 + 0.1  # two backoffs: 0.05 and 0.1 s
    assert server.requests == 3


def test_gives_up_after_retries(mock_server) -> None:
    server = mock_server(script=["ok"], fail_first=5)
    agent = OpenAIAgent("script", base_url=server.base_url, max_retries=1, backoff_s=0.01)
    agent.reset("o", {})
    with pytest.raises(ModelRequestError) as err:
        agent.act("o", {})
    agent.close()
    assert err.value.attempts == 2 and err.value.status == 503


def test_per_request_timeout(mock_server) -> None:
    server = mock_server(script=["late"], delay_s=1.0)
    agent = OpenAIAgent("script", base_url=server.base_url, timeout_s=0.3, max_retries=0)
    agent.reset("o", {})
    start = time.perf_counter()
    with pytest.raises(ModelRequestError, match="Timeout"):
        agent.act("o", {})
    agent.close()
    assert time.perf_counter() - start < 0.9


def test_client_errors_are_not_retried(mock_server) -> None:
    server = mock_server()
    agent = OpenAIAgent("no-such-model", base_url=server.base_url, max_retries=3, backoff_s=0.01)
    agent.reset("o", {})
    with pytest.raises(ModelRequestError) as err:
        agent.act("o", {})
    agent.close()
    assert err.value.status == 404 and err.value.attempts == 1


def test_api_key_from_environment(monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "from-env")
    assert OpenAIAgent("m").api_key == "from-env"
    assert OpenAIAgent("m", api_key="arg").api_key == "arg"


def test_act_inside_event_loop_points_to_aact() -> None:
    agent = OpenAIAgent("m", base_url="http://127.0.0.1:9/v1")

    async def go() -> None:
        agent.reset("o", {})
        with pytest.raises(RuntimeError, match="aact"):
            agent.act("o", {})

    asyncio.run(go())


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"model": ""}, "model name"),
        ({"model": "m", "tool_role": "x"}, "tool_role"),
        ({"model": "m", "timeout_s": 0}, "timeout_s"),
    ],
)
def test_bad_arguments(kwargs, match) -> None:
    with pytest.raises(ValueError, match=match):
        OpenAIAgent(**kwargs)
