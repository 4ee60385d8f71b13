"""PythonCodeTool: parsing, formatting, limits, stateful notebooks."""

from __future__ import annotations

import time

import pytest

from gem.tools.base_tool import BaseTool
from gem.tools.python_code_tool import RESULT_PREFIX, PythonCodeTool, truncate_middle
from gem.utils.parsing import extract_code_from_model, extract_first_python_block
from gem.sandbox import Sandbox


@pytest.fixture(scope="module")
def sandbox():
    box = Sandbox(slots=32)
    try:
        yield box
    finally:
        box.close()


@pytest.fixture
def tool(sandbox):
    t = PythonCodeTool(timeout=5, sandbox=sandbox)
    yield t
    t.close()


def test_is_a_tool(tool):
    assert isinstance(tool, BaseTool) and tool.tool_type == "python_code"
    assert "<python>" in tool.instruction_string()


def test_python_tag(tool):
    action = "Let me compute. <python>print(1+1)</python> and then more text"
    parsed, err, obs, parsed_action = tool.execute_action(action)
    assert (parsed, err, obs) == (True, False, RESULT_PREFIX + "2\n\n")  # GEM's format: stdout, then "\n"
    assert parsed_action == "Let me compute. <python>print(1+1)</python>"


def test_fenced_block_and_first_block_wins(tool):
    parsed, err, obs, cut = tool.execute_action("```python\nprint('a')\n```\n<python>print('b')</python>")
    assert obs == RESULT_PREFIX + "a\n\n" and cut.endswith("```")


def test_no_code(tool):
    assert tool.execute_action("just words, no code") == (False, True, "", "just words, no code")
    assert tool.execute_action("<python>unclosed")[0] is False


def test_error_output_and_last_line(sandbox):
    code = "<python>print('before')\n1/0</python>"
    _, err, obs, _ = PythonCodeTool(sandbox=sandbox).execute_action(code)
    assert err is True and obs.startswith(RESULT_PREFIX + "before\n") and "Traceback" in obs
    _, err, obs, _ = PythonCodeTool(sandbox=sandbox, keep_error_last_line=True).execute_action(code)
    assert obs == RESULT_PREFIX + "before\n\nZeroDivisionError: division by zero\n"


def test_no_second_run_on_name_error(tool):
    # gem-llm re-ran such a program with extra imports, printing (and doing) everything twice.
    _, err, obs, _ = tool.execute_action("<python>print('side effect')\nsqrt(4)</python>")
    assert err and obs.count("side effect") == 1 and "NameError" in obs


def test_auto_imports_are_opt_in(sandbox):
    _, err, obs, _ = PythonCodeTool(sandbox=sandbox, auto_imports=True).execute_action(
        "<python>print(sqrt(16))</python>"
    )
    assert not err and obs == RESULT_PREFIX + "4.0\n\n"


def test_timeout_is_respected(sandbox):
    t = time.monotonic()
    _, err, obs, _ = PythonCodeTool(timeout=1, sandbox=sandbox).execute_action(
        "<python>while True: pass</python>"
    )
    assert err and "TimeoutError" in obs
    assert time.monotonic() - t < 4


def test_long_output_is_truncated(sandbox):
    t = PythonCodeTool(sandbox=sandbox, max_output_chars=300)
    _, err, obs, _ = t.execute_action("<python>for i in range(10000): print(i)</python>")
    assert not err and "characters truncated" in obs and len(obs) < 400
    assert obs.startswith(RESULT_PREFIX + "0\n1\n") and obs.rstrip().endswith("9999")
    assert truncate_middle("abc", 10) == "abc"


def test_hostile_actions_never_raise(tool):
    for action in (
        "",
        "\x00<python>\x00</python>",
        "<python>print('\ud800')</python>",
        "<python>" * 100_000,
        "x" * 10_000_000,
        "```python\nimport os; os.kill(os.getppid(), 9)\n```",
    ):
        parsed, err, obs, cut = tool.execute_action(action)
        assert isinstance(obs, str) and isinstance(cut, str)
    assert tool.execute_action("<python>print(3)</python>")[2] == RESULT_PREFIX + "3\n\n"


def test_stateful_notebook(sandbox):
    nb = PythonCodeTool(sandbox=sandbox, stateful=True)
    try:
        assert nb.execute_action("<python>x = 20\nprint('once')</python>")[2] == RESULT_PREFIX + "once\n\n"
        _, err, obs, _ = nb.execute_action("<python>x += 1\nprint(x * 2)</python>")
        assert not err and obs == RESULT_PREFIX + "42\n\n"  # 'once' was not printed again
        nb.reset()
        _, err, obs, _ = nb.execute_action("<python>print(x)</python>")
        assert err and "NameError" in obs
    finally:
        nb.close()
    assert "persist" in nb.instruction_string()


def test_stateful_timeout_says_state_was_lost(sandbox):
    nb = PythonCodeTool(sandbox=sandbox, stateful=True, timeout=1)
    try:
        nb.execute_action("<python>y = 1</python>")
        _, err, obs, _ = nb.execute_action("<python>import time; time.sleep(60)</python>")
        assert err and "restarted" in obs
        _, err, obs, _ = nb.execute_action("<python>print(y)</python>")
        assert err and "NameError" in obs and "restarted" in obs
    finally:
        nb.close()


def test_stateless_calls_are_independent(tool):
    tool.execute_action("<python>z = 5</python>")
    assert "NameError" in tool.execute_action("<python>print(z)</python>")[2]


def test_bad_arguments():
    with pytest.raises(ValueError, match="sandbox_type"):
        PythonCodeTool(sandbox_type="docker")
    with pytest.raises(ValueError, match="timeout"):
        PythonCodeTool(timeout=0)
    with pytest.raises(ValueError, match="max_output_chars"):
        PythonCodeTool(max_output_chars=-1)


def test_parsing_helpers():
    assert extract_first_python_block("<python> a=1 </python>") == ("a=1", 22)
    assert extract_first_python_block("```py\nb=2\n```") == ("b=2", 13)
    assert extract_first_python_block("```\nnot tagged\n```") is None
    assert extract_first_python_block(None) is None  # type: ignore[arg-type]
    assert extract_code_from_model("a ```python\nx=1\n``` b ```cpp\ny=2\n```") == "y=2"
    assert extract_code_from_model("no fence <python>z=3</python>") == "z=3"
    assert extract_code_from_model("```python\nunclosed") is None
    start = time.monotonic()
    extract_first_python_block("<python>" * 200_000)
    extract_code_from_model("```\n" * 200_000)
    assert time.monotonic() - start < 2  # linear, not quadratic
