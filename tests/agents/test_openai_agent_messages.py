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


def test_native_mode_queues_the_other_calls_of_a_reply_and_answers_each_by_id():
    calls = [echo_call("a", "c1"), echo_call("b", "c2")]
    client = FakeClient(scripted({"content": "thinking", "tool_calls": calls}, PLUS, PLUS, PLUS))
    agent, steps = run(ToolEnvWrapper(InstructedCountEnv(), tools=[EchoTool]), client, tool_calling="native")
    # both calls ran, one per step, from one request; then the server was asked again
    assert [s[0] for s in steps[:2]] == ["echo: a (call 1)", "echo: b (call 2)"]
    assert [s[4]["tool_call_id"] for s in steps[:2]] == ["c1", "c2"]
    assert steps[-1][1] == 1.0 and len(steps) == 5 and len(client.requests) == 4
    second = client.requests[1]["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "tool", "tool"]
    assert [c["id"] for c in second[2]["tool_calls"]] == ["c1", "c2"] and second[2]["content"] == "thinking"
    assert [(m["tool_call_id"], m["content"]) for m in second[3:]] == [("c1", "echo: a (call 1)"), ("c2", "echo: b (call 2)")]
    assert len(agent.calls) == 4  # one record per request, none for a queued call


def test_native_mode_answers_even_a_queued_call_the_env_judged():
    unknown = {"id": "c3", "type": "function", "function": {"name": "nope", "arguments": "{}"}}
    client = FakeClient(scripted({"content": "", "tool_calls": [echo_call("a", "c1"), unknown]}))
    agent, steps = run(ToolEnvWrapper(InstructedCountEnv(), tools=[EchoTool]), client, tool_calling="native")
    assert steps[0][0] == "echo: a (call 1)" and len(client.requests) == 1
    # the unknown function went to the env, which ended the episode with a format error
    assert steps[1][2] and steps[1][1] == CountEnv().format_error_reward
    agent.observe(steps[1][0], steps[1][4])
    assert [(m["role"], m.get("tool_call_id")) for m in agent.messages[-2:]] == [("tool", "c1"), ("tool", "c3")]
    validate_request({"messages": agent.messages})


def test_native_mode_gives_queued_calls_their_own_ids_and_reset_clears_the_queue():
    nameless = [{**echo_call("a", ""), "id": ""}, {**echo_call("b", ""), "id": ""}, {**echo_call("c", ""), "id": ""}]
    client = FakeClient(scripted({"content": "", "tool_calls": nameless}, PLUS))
    agent = OpenAIAgent("m", client=client, tool_calling="native")
    env = ToolEnvWrapper(InstructedCountEnv(), tools=[EchoTool])
    obs, info = env.reset(seed=0)
    agent.reset(obs, info)
    first = json.loads(asyncio.run(agent.aact(obs, info)))
    assert first["id"] == "call_1" and first["function"]["name"] == "echo"
    assert [c["id"] for c in agent.queued_calls] == ["call_1_1", "call_1_2"]
    obs, _, _, _, info = env.step(json.dumps(first))
    second = json.loads(asyncio.run(agent.aact(obs, info)))
    assert second["id"] == "call_1_1" and len(client.requests) == 1
    obs, info = env.reset(seed=1)
    agent.reset(obs, info)
    assert agent.queued_calls == []
    assert asyncio.run(agent.aact(obs, info)) == PLUS and len(client.requests) == 2
    validate_request(client.requests[-1])


def test_sync_act_returns_queued_calls_without_a_request():
    client = FakeClient(scripted({"content": "", "tool_calls": [echo_call("a", "c1"), echo_call("b", "c2")]}))
    agent = OpenAIAgent("m", tool_calling="native")
    agent._get_client = lambda: client  # act() makes its own event loop, and so its own client
    try:
        agent.reset("start", {})
        assert json.loads(agent.act("start"))["id"] == "c1"
        assert json.loads(agent.act("echo: a"))["id"] == "c2" and len(client.requests) == 1
        assert agent.messages[-1] == {"role": "tool", "tool_call_id": "c1", "content": "echo: a"}
    finally:
        agent.close()


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
