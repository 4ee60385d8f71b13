"""Native function calling: every tool describes itself as OpenAI ``tools`` and runs a function call;
ToolEnvWrapper's ``info["tools"]``, ``info["tool_bonus"]``, ``info["tool_call_id"]`` and its reports of
infrastructure failures; missing optional dependencies."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from gem.errors import DependencyNotInstalled, InfrastructureError
from gem.tools.function_call import find_function_call, function_call_id, parse_function_call
from gem.tools.python_code_tool import PythonCodeTool
from gem.tools.search_tool import SearchTool
from gem.tools.tool_env_wrapper import ToolEnvWrapper
from tests.conftest import CountEnv, needs_extra
from tests.wrappers.fake_tools import BrokenTool, EchoTool

PLUS = "\\boxed{+}"


def call(name: str, call_id: str = "", **arguments: Any) -> str:
    """A function call as OpenAIAgent maps a tool_calls entry to an action."""
    entry: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
    if call_id:
        entry["id"] = call_id
    return json.dumps(entry)


def check_schemas(schemas: list[dict[str, Any]]) -> list[str]:
    """Validate with the SDK's ChatCompletionToolParam when present; the function names."""
    assert schemas and all(s["type"] == "function" and s["function"]["parameters"]["type"] == "object" for s in schemas)
    try:
        from openai.types.chat import ChatCompletionToolParam
        from pydantic import TypeAdapter
    except ImportError:
        pass
    else:
        TypeAdapter(list[ChatCompletionToolParam]).validate_python(schemas)
    return [s["function"]["name"] for s in schemas]


# --------------------------------------------------------------------------- the parser
def test_function_call_forms():
    assert parse_function_call(call("python", code="1")) == ("python", {"code": "1"})
    assert parse_function_call('  {"name": "s", "arguments": {"query": "q"}} ') == ("s", {"query": "q"})
    assert parse_function_call("print(1)") is None and parse_function_call("{broken") is None
    assert function_call_id(call("python", "call_1", code="1")) == "call_1"
    assert function_call_id(call("python", code="1")) is None and function_call_id("<python>1</python>") is None
    assert find_function_call(call("python", code="1"), ("search",)) is None
    text = 'look: <tool_call>{"name": "search", "arguments": {"query": "q"}}</tool_call> then'
    assert find_function_call(text, ("search",)) == ("search", {"query": "q"}, text[: text.index(" then")])


# ------------------------------------------------------------------------- each tool
def test_python_tool_schema_and_call():
    tool = PythonCodeTool(timeout=10)
    assert check_schemas(tool.openai_schemas()) == ["python"]
    found, error, obs, parsed = tool.execute_action(call("python", code="print(6 * 7)"))
    assert found and not error and "42" in obs
    found, error, obs, _ = tool.execute_action(call("python", code=5))
    assert found and error and "code" in obs
    assert tool.execute_action(call("search", query="x"))[0] is False  # another tool's function


def test_search_tool_schema_and_call(monkeypatch):
    needs_extra("search")  # SearchTool speaks HTTP through requests
    from tests.tools import test_search_tool

    tool = SearchTool(search_url="http://127.0.0.1:9/retrieve", max_retries=0, timeout=1)
    assert check_schemas(tool.openai_schemas()) == ["search"]
    assert tool.has_call(call("search", query="Harbor")) and not tool.has_call(call("python", code="1"))
    seen = []
    monkeypatch.setattr(SearchTool, "search", lambda self, query: seen.append(query) or test_search_tool.DOCS[:1])
    found, error, obs, _ = tool.execute_action(call("search", query=" Harbor Town "))
    assert found and not error and seen == ["Harbor Town"] and "Doc 1(Title: Harbor Town)" in obs


def test_bash_and_editor_tools_schema_and_call():
    from gem.tools.bash_tool import BashTool
    from gem.tools.editor_tool import EditorTool

    bash = BashTool(timeout=20)
    editor = EditorTool(bash.shell)
    try:
        assert check_schemas(bash.openai_schemas()) == ["bash"]
        assert check_schemas(editor.openai_schemas()) == ["view", "str_replace", "insert", "create"]
        found, error, obs, _ = editor.execute_action(call("create", path="a.txt", file_text="hello\n"))
        assert found and not error
        found, error, obs, _ = bash.execute_action(call("bash", command="cat a.txt"))
        assert found and not error and "hello" in obs
    finally:
        bash.close()


def test_mcp_tool_schema_and_call():
    pytest.importorskip("mcp")
    from gem.tools.mcp_tool import MCPTool

    tool = MCPTool({"command": sys.executable, "args": ["-m", "gem.tools.mcp_server"]}, execution_timeout=20)
    try:
        assert "calculate" in check_schemas(tool.openai_schemas())
        found, error, obs, parsed = tool.execute_action(call("calculate", expression="2 + 3"))
        assert found and not error and "5" in obs
        assert tool.execute_action(call("python", code="1"))[0] is False  # not one of its tools
    finally:
        tool.close()


# ------------------------------------------------------------------------- the wrapper
class EnvWithTools(CountEnv):
    """An env that offers its own function (like the terminal env's ``submit``)."""

    SUBMIT = {"type": "function", "function": {"name": "submit", "description": "finish",
                                               "parameters": {"type": "object", "properties": {}}}}

    def reset(self, seed=None, **kwargs):
        obs, info = super().reset(seed)
        return obs, {**info, "tools": [self.SUBMIT]}


def test_info_tools_in_reset_and_every_step_and_a_native_call_runs_the_tool():
    env = ToolEnvWrapper(EnvWithTools(), tools=[EchoTool], tool_reward=0.1, tool_success_reward=0.2)
    _, info = env.reset(seed=0)
    assert check_schemas(info["tools"]) == ["submit", "echo"]
    obs, reward, terminated, truncated, info = env.step(call("echo", "call_9", text="hi"))
    assert obs == "echo: hi (call 1)" and info["use_tool"] and info["tool_call_id"] == "call_9"
    assert reward == pytest.approx(0.3) and info["tool_bonus"] == pytest.approx(0.3)
    assert [s["function"]["name"] for s in info["tools"]] == ["submit", "echo"]
    obs, reward, terminated, truncated, info = env.step(PLUS)
    assert info["tool_bonus"] == 0.0 and not info["use_tool"] and "tool_call_id" not in info
    assert [s["function"]["name"] for s in info["tools"]] == ["submit", "echo"]


def test_tool_bonus_is_the_tool_part_of_the_reward_only():
    env = ToolEnvWrapper(CountEnv(target=1), tools=[EchoTool], tool_reward=0.5, tool_execute_error_reward=-1.0,
                         max_tool_uses=1, truncate_on_tool_limit=True)
    env.reset(seed=0)
    _, reward, *_, info = env.step("<echo>fail</echo>")
    assert reward == info["tool_bonus"] == pytest.approx(-0.5)
    _, reward, _, truncated, info = env.step("<echo>again</echo>")  # past the cap: ends, no bonus
    assert truncated and reward == 0.0 and info["tool_bonus"] == 0.0
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step(PLUS)
    assert terminated and reward == 1.0 and info["tool_bonus"] == 0.0


def test_infrastructure_failures_are_reported_and_agent_errors_are_not(monkeypatch):
    needs_extra("search")  # SearchTool speaks HTTP through requests
    monkeypatch.delenv("GEM_STRICT_INFRA", raising=False)
    search = ToolEnvWrapper(CountEnv(), tools=[SearchTool(search_url="http://127.0.0.1:9/retrieve", max_retries=0, timeout=1)])
    search.reset(seed=0)
    obs, _, _, _, info = search.step("<search>harbor</search>")
    assert info["tool_error"] and info["infra_error"]["component"] == "tool:search" and "SearchTool Error" in obs
    broken = ToolEnvWrapper(CountEnv(), tools=[BrokenTool])
    broken.reset(seed=0)
    *_, info = broken.step("<boom>")
    assert info["infra_error"] == {"component": "tool:boom", "type": "RuntimeError", "message": "the tool exploded"}
    python = ToolEnvWrapper(CountEnv(), tools=[PythonCodeTool(timeout=10)])
    python.reset(seed=0)
    obs, _, _, _, info = python.step("<python>raise ValueError('mine')</python>")
    assert info["tool_error"] and "ValueError" in obs and "infra_error" not in info  # the agent's own error
    *_, info = python.step("<python>print(1)</python>")
    assert "infra_error" not in info
    monkeypatch.setenv("GEM_STRICT_INFRA", "1")
    with pytest.raises(InfrastructureError, match="tool:search"):
        search.step("<search>harbor</search>")


def test_a_sandbox_that_cannot_run_is_an_infrastructure_failure(monkeypatch):
    monkeypatch.delenv("GEM_STRICT_INFRA", raising=False)
    from gem.sandbox import Sandbox

    sandbox = Sandbox()
    sandbox.close()
    env = ToolEnvWrapper(CountEnv(), tools=[PythonCodeTool(sandbox=sandbox)])
    env.reset(seed=0)
    obs, _, _, _, info = env.step("<python>print(1)</python>")
    assert info["tool_error"] and "not available" in obs and info["infra_error"]["component"] == "tool:python_code"


# ------------------------------------------------------------------ missing optional dependencies
def test_search_tool_without_requests_names_the_extra(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "requests" else real(name, *a))
    with pytest.raises(DependencyNotInstalled, match=r"pip install -e \"\.\[search\]\" in the GEM checkout"):
        SearchTool()


def test_search_without_msgspec_is_an_observation_never_an_exception(monkeypatch):
    needs_extra("search")  # SearchTool speaks HTTP through requests
    monkeypatch.setitem(sys.modules, "msgspec", None)  # import msgspec now raises ImportError
    tool = SearchTool(search_url="http://127.0.0.1:9/retrieve", max_retries=0)
    found, error, obs, _ = tool.execute_action("<search>harbor</search>")
    assert found and error and 'pip install -e ".[search]"' in obs and "msgspec" in obs


def test_mcp_tool_without_the_sdk_names_the_extra(monkeypatch):
    from gem.tools.mcp_tool import MCPTool

    monkeypatch.setitem(sys.modules, "mcp", None)
    with pytest.raises(DependencyNotInstalled, match=r"pip install -e \"\.\[mcp\]\" in the GEM checkout"):
        MCPTool("http://127.0.0.1:9/mcp", validate_on_init=False)


# ------------------------------------------------------------------ envs that use tools themselves
def test_customer_service_offers_its_functions_and_reads_a_mapped_call():
    import gem

    env = gem.make("multi:CustomerService-v0-vs-scripted")
    _, info = env.reset(seed=0)
    names = check_schemas(info["tools"])
    assert "get_order_details" in names and "transfer_to_human_agents" in names
    from gem.envs.multiagent.customer_service.env import parse_assistant_action

    assert parse_assistant_action(call("get_order_details", "c1", order_id="#W1")) == ("get_order_details", {"order_id": "#W1"})
