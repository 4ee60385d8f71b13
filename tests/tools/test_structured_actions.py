"""ToolEnvWrapper.step with actions given as data: a ToolCall, or an OpenAI-style tool_calls dict or list.

They run like the same call written as JSON text, without writing them as text and parsing them
back; a malformed one gets a clear observation and the env's format-error reward, never an
exception; strings behave as before.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from gem.tools import ToolCall
from gem.tools.function_call import read_structured_call
from gem.tools.tool_env_wrapper import UNKNOWN_TOOL_TYPE, ToolEnvWrapper
from gem.wrappers.episode_tracking_wrapper import EpisodeTrackingWrapper
from gem.wrappers.observation_wrapper import ObservationWrapper
from tests.conftest import CountEnv
from tests.tools.test_tool_calls import AddTool, ToolsEnv, count_parses
from tests.wrappers.fake_tools import EchoTool
from tests.wrappers.test_observation_wrapper import ScriptedTokenizer

PLUS = "\\boxed{+}"


def entry(name: str, arguments: Any, call_id: str = "call_1") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def wrapped(**kwargs: Any) -> ToolEnvWrapper:
    env = ToolEnvWrapper(CountEnv(), tools=[AddTool, EchoTool], **kwargs)
    env.reset(seed=0)
    return env


def nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


ADD = {"a": 2, "b": 3}
FORMS = {
    "tool_calls dict, arguments as JSON text": {"tool_calls": [entry("add", json.dumps(ADD))]},
    "tool_calls dict, arguments as a dict": {"tool_calls": [entry("add", ADD)]},
    "tool_calls list": [entry("add", ADD)],
    "one entry": entry("add", ADD),
    "bare function": {"name": "add", "arguments": ADD},
    "ToolCall": ToolCall("add", dict(ADD), id="call_1", source="native"),
}


@pytest.mark.parametrize("action", FORMS.values(), ids=FORMS)
def test_every_form_runs_like_the_same_call_as_text(action):
    env = wrapped(tool_reward=0.1, tool_success_reward=0.2)
    obs, reward, terminated, truncated, info = env.step(action)
    text = wrapped(tool_reward=0.1, tool_success_reward=0.2).step(json.dumps(entry("add", ADD)))
    assert (obs, reward, terminated, truncated) == text[:4] == ("sum: 5", pytest.approx(0.3), False, False)
    assert info["use_tool"] and info["tool_type"] == "adder" and info["tool_use_counter"] == 1
    record = info["tool_call"]
    assert (record["name"], record["arguments"], record["source"], record["error"]) == ("add", ADD, "native", None)
    if isinstance(action, ToolCall) or "id" in json.dumps(action):
        assert info["tool_call_id"] == "call_1" and record["id"] == "call_1"
    assert env.env.count == 0  # the inner env did not move


def test_a_structured_action_is_not_written_as_text_and_parsed_back(monkeypatch):
    env = wrapped()
    counts = count_parses(monkeypatch, "")
    assert env.step({"tool_calls": [entry("add", ADD)]})[0] == "sum: 5"
    assert env.step(ToolCall("add", {"a": 1, "b": 1}))[0] == "sum: 2"
    assert counts["all"] == 0  # no json.loads at all
    env.step({"tool_calls": [entry("add", '{"a": 1, "b": 4}')]})
    assert counts["all"] == 1  # the arguments string, which is JSON text by the OpenAI format


def test_a_tool_call_given_as_data_keeps_what_it_says():
    env = wrapped()
    call = ToolCall("add", {"a": 1, "b": 2}, "<add>1 2</add>", "so <add>1 2</add>", source="tag")
    obs, _, _, _, info = env.step(call)
    assert obs == "sum: 3" and info["parsed_action"] == "so <add>1 2</add>" and info["tool_call"]["source"] == "tag"
    assert "tool_call_id" not in info
    # without text of its own, its text (info["parsed_action"], the history) is the call as JSON
    obs, _, _, _, info = env.step(ToolCall("add", {"a": 1, "b": 2}))
    assert json.loads(info["parsed_action"]) == {"name": "add", "arguments": {"a": 1, "b": 2}}


def test_a_tool_written_for_the_original_gem_gets_the_call_as_text():
    env = wrapped()
    obs, _, _, _, info = env.step({"tool_calls": [entry("echo", {"text": "hi"}, "c9")]})
    assert obs == "echo: hi (call 1)" and info["tool_type"] == "echo" and info["tool_call_id"] == "c9"


def test_a_structured_call_is_routed_by_name_only():
    # a tag inside the arguments is not a call: as text, the echo tool would have run it
    action = {"name": "calculator", "arguments": {"x": "<echo>hi</echo>"}}
    assert wrapped().step(json.dumps(action))[0] == "echo: hi (call 1)"
    obs, reward, _, _, info = wrapped().step(action)
    assert "unknown tool 'calculator'" in obs and info["tool_type"] == UNKNOWN_TOOL_TYPE and reward == pytest.approx(-0.1)
    obs, *_ = wrapped().step(ToolCall("calculator", {}, "<add>1 2</add>", "<add>1 2</add>", source="tag"))
    assert "unknown tool 'calculator'" in obs


def test_only_the_first_call_runs_and_the_observation_says_so():
    env = wrapped()
    action = {"tool_calls": [entry("add", ADD, "c1"), entry("echo", {"text": "x"}, "c2"), entry("add", ADD, "c3")]}
    obs, _, _, _, info = env.step(action)
    assert obs == "sum: 5\n\n(2 more tool calls in this action did not run: one call runs per step.)\n"
    assert info["tool_call_id"] == "c1" and info["tool_use_counter"] == 1
    assert read_structured_call(action).count == 3


MALFORMED = {
    "no calls": ({"tool_calls": []}, "non-empty list"),
    "tool_calls not a list": ({"tool_calls": "add"}, "non-empty list"),
    "empty list": ([], "non-empty list"),
    "entry not an object": ([1], "must be an object"),
    "not a function call": ({"tool_calls": [{"id": "c", "type": "custom", "custom": {"name": "add"}}]}, "type 'custom'"),
    "no name": ({"tool_calls": [{"function": {"arguments": "{}"}}]}, "non-empty string"),
    "name not a string": ({"name": 7, "arguments": {}}, "non-empty string"),
    "an answer, not a call": ({"answer": 42}, "non-empty string"),
    "arguments not JSON": ({"tool_calls": [entry("add", "{a: 1")]}, "Invalid add call: the arguments are not valid JSON"),
    "arguments a list": ({"tool_calls": [entry("add", [1, 2])]}, "Invalid add call: the arguments must be a JSON object, got list"),
    "arguments JSON text of a list": ({"tool_calls": [entry("add", "[1, 2]")]}, "must be a JSON object, got list"),
    "values that are not JSON": ({"tool_calls": [entry("add", {"a": {1, 2}})]}, "not JSON data"),
    "nested too deep": (nested(5000), "not JSON data"),
    "unknown tool": ({"tool_calls": [entry("calculator", {"x": 1})]}, "Error: unknown tool 'calculator'"),
    "ToolCall of an unknown tool": (ToolCall("nope", {}), "unknown tool 'nope'"),
    "ToolCall with an error": (ToolCall("add", {}, error="write two numbers"), "Invalid add call: write two numbers"),
    "ToolCall that is not JSON": (ToolCall("add", {"a": object()}), "not JSON data"),
    "ToolCall name not a string": (ToolCall(5, {}), "non-empty string"),  # type: ignore[arg-type]
}


@pytest.mark.parametrize("action,says", MALFORMED.values(), ids=MALFORMED)
def test_a_malformed_structured_action_gets_a_clear_observation_and_the_format_error_reward(action, says):
    env = ToolEnvWrapper(CountEnv(), tools=[AddTool, EchoTool], tool_reward=0.5, tool_success_reward=0.5)
    env.env.set_reward_levels(format_error_reward=-0.25)
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(action)
    assert says in obs and "Available tools: add, echo" in obs.replace("available tools", "Available tools")
    assert reward == -0.25 and not terminated and not truncated  # the env's level; the env did not move
    assert env.env.count == 0 and info["use_tool"] and info["tool_error"] and info["tool_bonus"] == -0.25
    assert info["tool_type"] == UNKNOWN_TOOL_TYPE and info["tool_call"]["tool"] == UNKNOWN_TOOL_TYPE
    assert info["tool_call"]["failed"] and isinstance(info["parsed_action"], str)
    assert (info["tool_use_counter"], info["tool_error_counter"], info["tool_use_counts"]) == (1, 1, {UNKNOWN_TOOL_TYPE: 1})
    # the episode goes on: a good call runs next
    assert env.step({"name": "add", "arguments": ADD})[0] == "sum: 5"


def test_the_default_format_error_reward_and_an_id_to_answer():
    env = wrapped()
    obs, reward, _, _, info = env.step({"tool_calls": [entry("nope", {}, "c7")]})
    assert reward == pytest.approx(-0.1) and info["tool_call_id"] == "c7" and "unknown tool 'nope'" in obs


def test_strings_behave_as_before():
    env = wrapped()
    obs, reward, terminated, _, info = env.step(json.dumps({"tool_calls": []}))  # JSON text that is no call: text
    assert (obs, terminated, info["use_tool"]) == ("format error", True, False) and reward == pytest.approx(-0.1)
    env = wrapped()
    obs, _, terminated, _, info = env.step(json.dumps(entry("calculator", {"x": 1})))  # the env judges, with a note
    assert obs.startswith("format error") and "unknown tool 'calculator'" in obs and terminated and not info["use_tool"]


def test_tools_that_declare_no_functions_say_so():
    env = ToolEnvWrapper(CountEnv(), tools=[TagOnlyTool])
    env.reset(seed=0)
    obs, reward, terminated, _, _ = env.step({"name": "python", "arguments": {}})
    assert "available tools: none" in obs and reward == pytest.approx(-0.1) and not terminated


class TagOnlyTool(EchoTool):
    """An original-GEM tool that declares no function: it is called in its tags only."""

    def openai_schemas(self):
        return []


def test_an_env_that_declares_functions_gets_a_call_no_tool_takes_as_json_text():
    seen: list[Any] = []

    class Recording(ToolsEnv):
        def step(self, action):
            seen.append(action)
            return super().step(action)

    env = ToolEnvWrapper(Recording(), tools=[AddTool])
    env.reset(seed=0)
    call = {"tool_calls": [entry("submit", {}, "s1")]}
    obs, reward, terminated, _, info = env.step(call)
    assert seen == [json.dumps(call, ensure_ascii=False)] and obs == "format error" and terminated
    env.reset(seed=0)
    assert env.step({"tool_calls": [entry("add", ADD)]})[0] == "sum: 5"  # tools still come first
    obs, reward, terminated, _, _ = env.step({"tool_calls": "nonsense"})  # malformed: the wrapper answers
    assert "non-empty list" in obs and not terminated and len(seen) == 1


def test_after_the_tool_limit_a_structured_call_goes_to_the_env_or_truncates():
    env = wrapped(max_tool_uses=1)
    env.step({"name": "add", "arguments": ADD})
    obs, reward, terminated, _, info = env.step({"name": "add", "arguments": ADD})
    assert obs == "format error" and terminated and not info["use_tool"]  # the env judged the call's JSON text
    env = wrapped(max_tool_uses=1, truncate_on_tool_limit=True)
    env.step({"name": "add", "arguments": ADD})
    obs, reward, terminated, truncated, info = env.step(ToolCall("add", dict(ADD)))
    assert truncated and not terminated and reward == 0.0 and info["tool_limit_reached"]


def test_malformed_structured_calls_count_towards_the_tool_limit():
    env = wrapped(max_tool_uses=2)
    env.step([])
    obs, *_ = env.step([])
    assert "Reached the maximum number of tool uses" in obs
    obs, _, terminated, _, _ = env.step([])  # past the cap: the env judges it, so no episode runs forever
    assert obs == "format error" and terminated


def test_outer_wrappers_take_structured_actions():
    env = EpisodeTrackingWrapper(ObservationWrapper(ToolEnvWrapper(CountEnv(), tools=[AddTool]), tokenizer=ScriptedTokenizer()))
    env.reset(seed=0)
    obs, reward, _, _, info = env.step({"tool_calls": [entry("add", ADD, "c1")]})
    messages = env.env.messages()
    assert messages[1]["tool_calls"][0]["id"] == "c1" and messages[2] == {"role": "tool", "tool_call_id": "c1", "content": "sum: 5"}
    obs, reward, _, _, info = env.step([7])
    assert "must be an object" in obs and reward == pytest.approx(-0.1)
    for _ in range(3):
        obs, reward, terminated, _, info = env.step(PLUS)
    assert terminated and info["episode"]["tool_calls"] == 2 and info["episode"]["return"] == pytest.approx(0.9)


def test_other_types_are_not_structured_calls():
    for action in ("text", '{"name": "add"}', None, 3, b"bytes"):
        assert read_structured_call(action) is None
