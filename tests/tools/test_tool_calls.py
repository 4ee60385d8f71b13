"""ToolCall/ToolResult: the types, reading an action's function call once, routing by name, unknown
and malformed calls, info["tool_call"], and tools written for the original GEM (execute_action only)."""

from __future__ import annotations

import json
from typing import Any, Optional

import pytest

from gem.core import Env
from gem.tools import ToolCall, ToolResult
from gem.tools.base_tool import BaseTool, speaks_calls
from gem.tools.function_call import function_schema, read_function_call
from gem.tools.python_code_tool import PythonCodeTool
from gem.tools.tool_env_wrapper import UNKNOWN_TOOL_TYPE, ToolEnvWrapper
from gem.wrappers.observation_wrapper import ObservationWrapper
from tests.conftest import CountEnv
from tests.wrappers.fake_tools import EchoTool
from tests.wrappers.test_observation_wrapper import ScriptedTokenizer

PLUS = "\\boxed{+}"


def native(name: str, call_id: str = "", as_string: bool = True, **arguments: Any) -> str:
    """A function call as OpenAIAgent maps a tool_calls entry to an action."""
    args: Any = json.dumps(arguments) if as_string else arguments
    entry: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": args}}
    if call_id:
        entry["id"] = call_id
    return json.dumps(entry)


class FakeRun:
    """What PythonCodeTool.run returns, without a sandbox: the code echoed as stdout."""

    def __init__(self, code: str) -> None:
        self.stdout, self.stderr, self.ok, self.reason, self.isolation = f"ran {code}\n", "", True, "exit", {}


@pytest.fixture
def python_tool(monkeypatch):
    """PythonCodeTool with run() replaced (parsing and routing are under test here, not the sandbox)."""
    ran: list[str] = []

    def run(self, code):
        ran.append(code)
        return FakeRun(code)

    monkeypatch.setattr(PythonCodeTool, "run", run)
    return ran


class AddTool(BaseTool):
    """A tool written the new way: ``add(a, b)`` natively, or ``<add>1 2</add>``."""

    tool_type = "adder"

    def instruction_string(self) -> str:
        return "Add two numbers: <add>1 2</add>."

    def openai_schemas(self) -> list[dict[str, Any]]:
        return [function_schema("add", "Add a and b.", {"a": {"type": "number"}, "b": {"type": "number"}})]

    def parse_tags(self, action: str) -> Optional[ToolCall]:
        start, end = action.find("<add>"), action.find("</add>")
        if start < 0 or end < start:
            return None
        parts = action[start + 5 : end].split()
        call_text = action[start : end + 6]
        if len(parts) != 2:
            return ToolCall("add", {}, call_text, action[: end + 6], error="write two numbers")
        return ToolCall("add", {"a": parts[0], "b": parts[1]}, call_text, action[: end + 6])

    def execute_call(self, call: ToolCall) -> ToolResult:
        if call.error:
            return self.invalid_call(call)
        try:
            total = float(call.arguments["a"]) + float(call.arguments["b"])
        except (KeyError, TypeError, ValueError):
            return ToolResult("add needs two numbers a and b.", True, call)
        return ToolResult(f"sum: {total:g}", False, call, extra={"sum": total})


class ToolsEnv(CountEnv):
    """CountEnv that declares a function of its own (``submit``) in ``info["tools"]``."""

    def reset(self, seed=None, **kwargs):
        obs, info = super().reset(seed)
        return obs, {**info, "tools": [function_schema("submit", "Submit.", {})]}


# ------------------------------------------------------------------------------ the types
def test_tool_call_and_result_types():
    call = ToolCall("python", {"code": "1"}, "<python>1</python>", "x <python>1</python>")
    assert call.source == "tag" and call.id is None and call.error is None and not call.native
    assert json.loads(json.dumps(call.record())) == {"name": "python", "arguments": {"code": "1"}, "id": None,
                                                     "source": "tag", "error": None}
    result = ToolResult("out", False, call)
    assert result.as_tuple() == (True, False, "out", "x <python>1</python>")
    assert result.record("python_code")["tool"] == "python_code" and result.record("python_code")["failed"] is False
    with pytest.raises(ValueError, match="native"):
        ToolCall("python", source="typed")
    with pytest.raises(TypeError, match="dict"):
        ToolCall("python", ["not", "a", "dict"])  # type: ignore[arg-type]
    assert ToolResult.from_tuple((False, True, "", "a"), call) is None
    back = ToolResult.from_tuple((True, True, "boom", "x <python>"), call)
    assert back is not None and back.error and back.observation == "boom" and back.call.parsed_action == "x <python>"
    assert back.call.name == "python" and back.call.arguments == {"code": "1"}


def test_read_function_call_forms():
    call = read_function_call(native("python", "call_1", code="print(1)"))
    assert call is not None and call.native and call.id == "call_1" and call.name == "python"
    assert call.arguments == {"code": "print(1)"} and call.error is None
    assert read_function_call(native("python", as_string=False, code="1")).arguments == {"code": "1"}
    text = 'think <tool_call>{"name": "search", "arguments": {"query": "q"}}</tool_call> then'
    call = read_function_call(text)
    assert call.source == "tool_call" and call.name == "search" and call.arguments == {"query": "q"}
    assert call.parsed_action == text[: text.index(" then")] and call.text.startswith("<tool_call>") and call.id is None
    broken = read_function_call('<tool_call>{"name": "add", "arguments": {bad}</tool_call>')
    assert broken.name == "" and "not valid JSON" in broken.error
    bad_args = read_function_call('{"name": "python", "arguments": "{not json"}')
    assert bad_args.native and bad_args.name == "python" and "not valid JSON" in bad_args.error
    assert "JSON object" in read_function_call('{"name": "python", "arguments": [1]}').error
    # Not function calls: text, JSON that is not valid, JSON that is an answer rather than a call.
    assert read_function_call("print(1)") is None and read_function_call("{broken") is None
    assert read_function_call('{"answer": 42}') is None and read_function_call(None) is None


# ----------------------------------------------------------------------------- parse once
def count_parses(monkeypatch, action: str) -> dict[str, int]:
    """Counts json.loads calls: of the action itself, and of anything."""
    counts = {"action": 0, "all": 0}
    real = json.loads

    def counting(text, *args, **kwargs):
        counts["all"] += 1
        if isinstance(text, str) and text.strip() == action.strip():
            counts["action"] += 1
        return real(text, *args, **kwargs)

    monkeypatch.setattr(json, "loads", counting)
    return counts


@pytest.mark.parametrize("tools", [[PythonCodeTool], [AddTool, PythonCodeTool]])
def test_a_native_call_is_parsed_once_through_both_wrappers(monkeypatch, python_tool, tools):
    env = ObservationWrapper(ToolEnvWrapper(CountEnv(), tools=tools), tokenizer=ScriptedTokenizer())
    env.reset(seed=0)
    action = native("python", "call_1", as_string=False, code="print(6 * 7)")
    counts = count_parses(monkeypatch, action)
    obs, reward, terminated, truncated, info = env.step(action)
    assert python_tool == ["print(6 * 7)"] and info["use_tool"] and info["tool_call_id"] == "call_1"
    assert counts == {"action": 1, "all": 1}  # one json.loads in all: ToolEnvWrapper's read of the action
    assert env.messages()[1]["tool_calls"][0]["function"] == {"name": "python", "arguments": '{"code": "print(6 * 7)"}'}
    assert env.messages()[2] == {"role": "tool", "tool_call_id": "call_1", "content": "Code execution result: ran print(6 * 7)\n\n"}
    env.step(PLUS)  # rendering the history again never re-reads the call
    assert counts == {"action": 1, "all": 1}


def test_string_arguments_are_decoded_once_too(monkeypatch, python_tool):
    env = ObservationWrapper(ToolEnvWrapper(CountEnv(), tools=[PythonCodeTool]), tokenizer=ScriptedTokenizer())
    env.reset(seed=0)
    action = native("python", "call_2", code="print(1)")  # arguments as a JSON string, as OpenAI sends them
    counts = count_parses(monkeypatch, action)
    env.step(action)
    env.step(PLUS)
    assert counts == {"action": 1, "all": 2}  # the action once, its arguments string once


# -------------------------------------------------------------------------------- routing
def test_calls_are_routed_by_name(python_tool):
    env = ToolEnvWrapper(CountEnv(), tools=[PythonCodeTool, AddTool])
    env.reset(seed=0)
    obs, _, _, _, info = env.step(native("add", "c1", a=2, b=3))
    assert obs.startswith("sum: 5") and info["tool_type"] == "adder" and python_tool == []
    assert info["tool_call"] == {"name": "add", "arguments": {"a": 2, "b": 3}, "id": "c1", "source": "native",
                                 "error": None, "tool": "adder", "failed": False, "extra": {"sum": 5.0}}
    obs, _, _, _, info = env.step('<tool_call>{"name": "add", "arguments": {"a": 1, "b": 1}}</tool_call> and more')
    assert obs.startswith("sum: 2") and info["tool_call"]["source"] == "tool_call" and "tool_call_id" not in info
    assert info["parsed_action"].endswith("</tool_call>")
    # A native call of one tool is that tool's, even when its arguments hold another tool's tags.
    obs, _, _, _, info = env.step(native("add", a="<python>print(1)</python>", b=1))
    assert info["tool_type"] == "adder" and info["tool_error"] and python_tool == []
    obs, _, _, _, info = env.step("x <add>4 5</add> y <python>print(2)</python>")
    assert info["tool_type"] == "python_code" and python_tool == ["print(2)"]  # tools are tried in order
    obs, _, _, _, info = env.step("<add>4 5</add>")
    assert obs.startswith("sum: 9") and info["tool_call"]["source"] == "tag" and info["parsed_action"] == "<add>4 5</add>"
    assert info["use_tool"] and info["tool_use_counter"] == 5 and info["tool_use_counts"] == {"adder": 4, "python_code": 1}


@pytest.mark.parametrize("action, says", [
    (native("calculator", "c9", x=1), "Error: unknown tool 'calculator'; available tools: add, python."),
    ('<tool_call>{"name": "calculator", "arguments": {}}</tool_call>', "Error: unknown tool 'calculator'"),
    ('<tool_call>{"name": "add", "arguments": {bad}</tool_call>', "Invalid tool call: the tool call is not valid JSON"),
    ('<tool_call>{"name": "add"', "Invalid tool call: the tool call has no closing </tool_call> tag"),
    ('<tool_call>["add"]</tool_call>', 'Invalid tool call: the tool call must be a JSON object with "name"'),
])
def test_an_unknown_or_malformed_call_is_judged_by_the_env_with_a_clear_observation(python_tool, action, says):
    env = ToolEnvWrapper(CountEnv(), tools=[PythonCodeTool, AddTool], tool_reward=0.1, tool_execute_error_reward=-0.3)
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(action)
    # The env's own judgement (CountEnv: a format error ends the episode), as before; the wrapper says why.
    assert obs.startswith("format error\n\n") and says in obs
    assert reward == CountEnv().format_error_reward and terminated and not truncated
    assert not info["use_tool"] and info["tool_use_counter"] == 0 and info["tool_bonus"] == 0.0
    assert info["tool_call"]["tool"] == UNKNOWN_TOOL_TYPE and info["tool_call"]["failed"] and python_tool == []


def test_malformed_arguments_of_a_known_tool_are_that_tools_error(python_tool):
    env = ToolEnvWrapper(CountEnv(), tools=[PythonCodeTool, AddTool], tool_execute_error_reward=-0.5)
    env.reset(seed=0)
    obs, reward, _, _, info = env.step('{"name": "python", "arguments": "{not json"}')
    assert obs.startswith("Invalid python call: the arguments are not valid JSON") and reward == -0.5
    assert info["tool_type"] == "python_code" and info["tool_call"]["error"] and python_tool == []
    obs, _, _, _, info = env.step("<add>1</add>")
    assert obs.startswith("Invalid add call: write two numbers") and info["tool_error"]


def test_text_that_is_no_function_call_goes_to_the_env():
    env = ToolEnvWrapper(CountEnv(), tools=[AddTool])
    env.reset(seed=0)
    obs, reward, terminated, _, info = env.step('{"name": "add", "arguments": {"a": 1')  # not JSON: text
    assert obs == "format error" and terminated and not info["use_tool"] and "tool_call" not in info


def test_an_env_that_declares_functions_judges_the_calls_no_tool_takes_alone():
    env = ToolEnvWrapper(ToolsEnv(), tools=[AddTool])
    _, info = env.reset(seed=0)
    assert [s["function"]["name"] for s in info["tools"]] == ["submit", "add"]
    obs, _, terminated, _, info = env.step(native("calculator", x=1))  # the env's functions are its business
    assert obs == "format error" and terminated and not info["use_tool"] and "tool_call" not in info


def test_the_tool_limit_and_truncation_see_routed_calls(python_tool):
    env = ToolEnvWrapper(CountEnv(), tools=[PythonCodeTool, AddTool], max_tool_uses=1, truncate_on_tool_limit=True)
    env.reset(seed=0)
    env.step(native("add", a=1, b=2))
    obs, reward, _, truncated, info = env.step(native("add", a=1, b=2))
    assert truncated and info["tool_limit_reached"] and reward == 0.0


def test_a_tool_result_reward_adds_to_the_tool_rules():
    class Paying(AddTool):
        def execute_call(self, call):
            return ToolResult("paid", False, call, reward=0.25)

    env = ToolEnvWrapper(CountEnv(), tools=[Paying], tool_reward=0.5)
    env.reset(seed=0)
    _, reward, _, _, info = env.step("<add>1 2</add>")
    assert reward == pytest.approx(0.75) and info["tool_bonus"] == pytest.approx(0.75)


# --------------------------------------------------------- the original GEM's tool API
def test_a_user_tool_with_only_execute_action_still_works():
    assert not speaks_calls(EchoTool) and speaks_calls(PythonCodeTool) and speaks_calls(AddTool)
    env = ToolEnvWrapper(CountEnv(), tools=[EchoTool, AddTool])
    env.reset(seed=0)
    obs, _, _, _, info = env.step("<echo>hi</echo> and the rest")
    assert obs == "echo: hi (call 1)" and info["parsed_action"] == "<echo>hi</echo>" and info["tool_type"] == "echo"
    assert info["tool_call"]["source"] == "tag" and info["tool_call"]["tool"] == "echo"
    obs, _, _, _, info = env.step(native("echo", "call_3", text="yo"))  # it reads its own function calls
    assert obs == "echo: yo (call 2)" and info["tool_call_id"] == "call_3"
    assert info["tool_call"]["name"] == "echo" and info["tool_call"]["arguments"] == {"text": "yo"}
    obs, _, _, _, info = env.step(native("add", a=1, b=1))  # the new-style tool after it still gets its calls
    assert obs.startswith("sum: 2")
    # The new API on the old tool: execute_call hands the call's text to execute_action.
    result = EchoTool().execute_call(ToolCall("echo", {"text": "x"}, "<echo>x</echo>", "<echo>x</echo>"))
    assert result.observation == "echo: x (call 1)" and not result.error
    missing = EchoTool().execute_call(ToolCall("echo", {}, "no tag", "no tag"))
    assert missing.error and "found no call" in missing.observation


def test_the_old_tuple_api_on_a_new_style_tool(python_tool):
    assert AddTool().execute_action("<add>1 2</add> tail") == (True, False, "sum: 3", "<add>1 2</add>")
    assert AddTool().execute_action(native("add", a=1, b=2)) == (True, False, "sum: 3", native("add", a=1, b=2))
    assert AddTool().execute_action("nothing") == (False, True, "", "nothing")
    assert PythonCodeTool().execute_action("<python>x = 1</python> tail") == (
        True, False, "Code execution result: ran x = 1\n\n", "<python>x = 1</python>")
    call = PythonCodeTool().find_call("a ```python\nprint(3)\n``` b")
    assert call == ToolCall("python", {"code": "print(3)"}, "```python\nprint(3)\n```", "a ```python\nprint(3)\n```")


def test_overriding_execute_action_below_a_builtin_tool_is_honoured(python_tool):
    class Shouting(PythonCodeTool):
        def execute_action(self, action):
            found, error, obs, parsed = super().execute_action(action)
            return found, error, obs.upper(), parsed

    assert not speaks_calls(Shouting)
    env = ToolEnvWrapper(CountEnv(), tools=[Shouting])
    env.reset(seed=0)
    assert env.step("<python>x</python>")[0] == "CODE EXECUTION RESULT: RAN X\n\n"


def test_a_tool_with_neither_api_cannot_be_built():
    class Nothing(BaseTool):
        def instruction_string(self) -> str:
            return ""

    with pytest.raises(TypeError, match="execute_call .* or execute_action"):
        Nothing()


def test_the_observation_wrapper_reads_an_env_without_a_record():
    class NativeEnv(Env):
        """Reports a native call's id the way an env with its own tools may, without info["tool_call"]."""

        def reset(self, seed=None, **kwargs):
            super().reset(seed)
            return "start", {}

        def step(self, action):
            return "result", 0.0, False, False, {"use_tool": True, "tool_call_id": "id7"}

    env = ObservationWrapper(NativeEnv(), tokenizer=ScriptedTokenizer())
    env.reset(seed=0)
    env.step(native("look", "id7", where="here"))
    assert env.messages()[1]["tool_calls"][0]["function"]["name"] == "look"
    assert env.messages()[2] == {"role": "tool", "tool_call_id": "id7", "content": "result"}
    env.step("plain text")
    assert env.messages()[3] == {"role": "assistant", "content": "plain text"}


def test_bash_and_editor_calls_are_read_without_running_anything():
    from gem.tools.bash_tool import BashTool, SandboxShell
    from gem.tools.editor_tool import EditorTool

    bash = BashTool()
    call = bash.find_call("run <bash>ls -l</bash> then", None)
    assert call == ToolCall("bash", {"command": "ls -l"}, "<bash>ls -l</bash>", "run <bash>ls -l</bash>")
    action = native("bash", "b1", command="pwd")
    assert bash.find_call(action, read_function_call(action)).arguments == {"command": "pwd"}
    action = '<tool_call>{"name": "bash", "arguments": {"command": "pwd"}}</tool_call>'
    assert bash.find_call(action, read_function_call(action)).source == "tool_call"
    action = native("view", path="a.txt")  # the editor's function: no bash call, whatever its text holds
    assert bash.find_call(action, read_function_call(action)) is None
    assert bash.execute_action(native("bash", command=5)) == (True, True, 'The bash call needs a string "command" argument.\n',
                                                             native("bash", command=5))
    assert not bash.shell.started  # nothing ran

    editor = EditorTool(SandboxShell())
    call = editor.find_call('<view path="a.txt" range="1,2"/> more', None)
    assert call.name == "view" and call.arguments == {"path": "a.txt", "view_range": [1, 2]} and call.error is None
    assert call.parsed_action == '<view path="a.txt" range="1,2"/>'
    bad = editor.find_call('<insert path="a.txt">x</insert>', None)
    assert bad.error == 'insert needs line="N"'
    assert editor.execute_call(bad).as_tuple() == (True, True, 'Editor error: insert needs line="N".\n', bad.parsed_action)
    action = native("str_replace_editor", command="erase", path="a.txt")
    result = editor.execute_call(editor.find_call(action, read_function_call(action)))
    assert result.error and "unknown editor command 'erase'; valid commands: view, str_replace, insert, create" in result.observation
    assert not editor.shell.started
