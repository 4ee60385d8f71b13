"""Every message list OpenAIAgent sends is one a real OpenAI-compatible server accepts.

Text and native tool calling, with tools, over several turns; each recorded request is checked
with the SDK's own message types (:func:`tests.agents.fake_openai.validate_request`).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

pytest.importorskip("openai")

from gem.agents.openai_agent import OpenAIAgent  # noqa: E402
from gem.tools.tool_env_wrapper import ToolEnvWrapper  # noqa: E402
from tests.agents.fake_openai import FakeClient, play, user_texts, validate_request  # noqa: E402
from tests.conftest import CountEnv  # noqa: E402
from tests.wrappers.fake_tools import EchoTool  # noqa: E402

PLUS = "\\boxed{+}"
INSTRUCTION = "Answer with \\boxed{+} to count."


class InstructedCountEnv(CountEnv):
    """CountEnv whose answer format is stated only in ``info["suffix"]`` (like math:Arithmetic)."""

    def reset(self, seed=None, **kwargs):
        obs, _ = super().reset(seed)
        return obs, {"suffix": INSTRUCTION}

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, reward, terminated, truncated, {**info, "suffix": INSTRUCTION}


def scripted(*replies: Any):
    queue = list(replies)
    return lambda request: queue.pop(0)


def echo_call(text: str, call_id: str = "call_a") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "echo", "arguments": json.dumps({"text": text})}}


def run(env, client: FakeClient, max_steps: int = 10, **kwargs: Any):
    agent = OpenAIAgent("m", client=client, system_prompt="sys", **kwargs)
    steps = asyncio.run(play(env, agent, max_steps=max_steps))
    for request in client.requests:
        validate_request(request)
    return agent, steps


@pytest.mark.parametrize("tool_role", ["tool", "user"])
def test_text_mode_sends_the_instruction_and_tool_output_as_user_messages(tool_role):
    client = FakeClient(scripted("<echo>hi</echo>", PLUS, PLUS, PLUS))
    agent, steps = run(ToolEnvWrapper(InstructedCountEnv(), tools=[EchoTool]), client, tool_role=tool_role)
    assert steps[-1][1] == 1.0 and steps[-1][2]  # counted to 3
    first = client.requests[0]
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert first["messages"][1]["content"].endswith(INSTRUCTION) and "tools" not in first
    later = client.requests[1]["messages"]
    assert later[3] == {"role": "user", "content": "echo: hi (call 1)"}
    assert all(m["role"] != "tool" for r in client.requests for m in r["messages"])
    assert user_texts(client.requests[2])[-1] == f"count 1\n\n{INSTRUCTION}"


def test_native_mode_maps_tool_calls_and_answers_them_by_id():
    client = FakeClient(scripted({"content": None, "tool_calls": [echo_call("hi")]}, PLUS, PLUS, PLUS))
    agent, steps = run(ToolEnvWrapper(InstructedCountEnv(), tools=[EchoTool]), client, tool_calling="native")
    assert steps[0][4]["use_tool"] and steps[0][0] == "echo: hi (call 1)" and steps[0][4]["tool_call_id"] == "call_a"
    assert steps[-1][1] == 1.0
    first = client.requests[0]
    assert [t["function"]["name"] for t in first["tools"]] == ["echo"]
    second = client.requests[1]["messages"]
    assert second[2]["tool_calls"][0]["id"] == "call_a" and second[2]["tool_calls"][0]["function"]["name"] == "echo"
    assert second[3] == {"role": "tool", "tool_call_id": "call_a", "content": "echo: hi (call 1)"}
    assert [m["role"] for m in client.requests[2]["messages"]][-2:] == ["assistant", "user"]
    assert all("tools" in r for r in client.requests)


def test_native_mode_keeps_the_one_call_it_runs_and_answers_even_a_call_the_env_judged():
    calls = [echo_call("a", "c1"), echo_call("b", "c2")]
    unknown = {"id": "c3", "type": "function", "function": {"name": "nope", "arguments": "{}"}}
    client = FakeClient(scripted({"content": "thinking", "tool_calls": calls}, {"content": "", "tool_calls": [unknown]}))
    agent, steps = run(ToolEnvWrapper(InstructedCountEnv(), tools=[EchoTool]), client, tool_calling="native")
    assert steps[0][0] == "echo: a (call 1)"
    assert [c["id"] for c in client.requests[1]["messages"][2]["tool_calls"]] == ["c1"]
    # the unknown function went to the env, which ended the episode with a format error
    assert steps[1][2] and steps[1][1] == CountEnv().format_error_reward
    agent.observe(steps[1][0], steps[1][4])
    assert agent.messages[-1]["role"] == "tool" and agent.messages[-1]["tool_call_id"] == "c3"
    validate_request({"messages": agent.messages})


def test_native_mode_without_tools_sends_no_tools_field():
    client = FakeClient(scripted(PLUS, PLUS, PLUS))
    run(InstructedCountEnv(), client, tool_calling="native")
    assert all("tools" not in r for r in client.requests)


def test_a_tool_message_without_a_call_is_refused_by_the_validator():
    with pytest.raises(AssertionError, match="answers no open tool call"):
        validate_request({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"},
                                       {"role": "tool", "tool_call_id": "x", "content": "out"}]})
    with pytest.raises(Exception):
        validate_request({"messages": [{"role": "tool", "content": "out"}]})
    with pytest.raises(AssertionError, match="were answered"):
        validate_request({"messages": [{"role": "user", "content": "q"},
                                       {"role": "assistant", "content": "", "tool_calls": [echo_call("x")]},
                                       {"role": "user", "content": "out"}]})


@pytest.mark.parametrize("kwargs, match", [
    ({"tool_calling": "json"}, r"tool_calling must be one of \('text', 'native'\)"),
    ({"tool_calling": "native", "tool_role": "user"}, "tool_role='user'"),
])
def test_bad_tool_calling_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        OpenAIAgent("m", client=object(), **kwargs)
