"""Run the Python the agent writes (``<python>...</python>`` or a fenced ``python`` block).

The code runs in :mod:`gem.sandbox` (own uid, no network, limits on time, memory, processes
and output), once, exactly as written: no retry with extra imports. With ``stateful=True`` the
tool is a notebook: cells of one episode run in one persistent interpreter, so variables survive
from call to call; :meth:`PythonCodeTool.reset` (called on env reset) starts a fresh one.

A model that calls functions natively calls ``python`` with ``{"code": "..."}``
(:meth:`PythonCodeTool.openai_schemas`). A sandbox that cannot run at all is an infrastructure
failure, recorded for ``info["infra_error"]``; the agent's code failing is an ordinary tool error.
"""

from __future__ import annotations

import logging
from typing import Any

from gem.tools.base_tool import BaseTool
from gem.tools.function_call import function_schema, read_function_call
from gem.tools.types import ToolCall, ToolResult
from gem.utils.constants import COMMON_IMPORTS
from gem.utils.parsing import extract_first_python_block
from gem.sandbox import Sandbox, SandboxError, SandboxLimits, SandboxResult, SandboxSession, default_sandbox

logger = logging.getLogger(__name__)

DEFAULT_TOOL_TIMEOUT = 5.0
DEFAULT_MAX_OUTPUT_CHARS = 4000
RESULT_PREFIX = "Code execution result: "
SANDBOX_TYPES = ("none", "bwrap", "auto")  # GEM's values; our sandbox always applies
FUNCTION_NAME = "python"


def truncate_middle(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters: the head and the tail, with a marker between."""
    if limit <= 0 or len(text) <= limit:
        return text
    head = (limit * 2) // 3
    tail = limit - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n... [{cut} characters truncated] ...\n{text[len(text) - tail :]}"


class PythonCodeTool(BaseTool):
    """Executes the first Python block of an action in the sandbox.

    Args:
        timeout: seconds of wall time per call (GEM's kwarg).
        sandbox_type: accepted for GEM compatibility (``"none"``, ``"bwrap"``, ``"auto"``); the
            confinement is always :mod:`gem.sandbox`'s.
        keep_error_last_line: show only the last line of stderr (the exception) to the model.
        stateful: keep variables across calls of one episode (a notebook); ``reset()`` clears them.
        max_output_chars: longer output is cut in the middle with a marker (0: never cut).
        memory_mb, max_processes: sandbox limits per call (per session when stateful).
        auto_imports: put common imports (math, itertools, collections, ...) before the code.
        sandbox: a :class:`~gem.sandbox.Sandbox` to use instead of the shared one.
    """

    tool_type = "python_code"

    def __init__(
        self,
        timeout: float = DEFAULT_TOOL_TIMEOUT,
        sandbox_type: str = "none",
        keep_error_last_line: bool = False,
        stateful: bool = False,
        max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
        memory_mb: int = 1024,
        max_processes: int = 16,
        auto_imports: bool = False,
        sandbox: Sandbox | None = None,
        num_workers: int = 1,
    ) -> None:
        super().__init__(num_workers=num_workers)
        if sandbox_type not in SANDBOX_TYPES:
            raise ValueError(f"sandbox_type must be one of {SANDBOX_TYPES}, got {sandbox_type!r}.")
        if max_output_chars < 0:
            raise ValueError(f"max_output_chars must be >= 0 (0 means no limit), got {max_output_chars!r}.")
        self.timeout = float(timeout)
        self.sandbox_type = sandbox_type
        self.keep_error_last_line = bool(keep_error_last_line)
        self.stateful = bool(stateful)
        self.max_output_chars = int(max_output_chars)
        self.auto_imports = bool(auto_imports)
        # Validates timeout, memory and processes (raises ValueError naming the bad one).
        self.limits = SandboxLimits(timeout=self.timeout, memory_mb=memory_mb, max_processes=max_processes)
        self._sandbox = sandbox
        self._session: SandboxSession | None = None

    @property
    def sandbox(self) -> Sandbox:
        return self._sandbox if self._sandbox is not None else default_sandbox()

    def instruction_string(self) -> str:
        state = (
            "Variables, functions and imports persist between your code blocks in this episode. "
            if self.stateful
            else "Each code block runs on its own as a complete script, so include the imports it needs. "
        )
        return (
            "You can run Python code to help your reasoning: write it inside <python>...</python> tags "
            "or a ```python ... ``` block. It is executed in a sandbox (no network, "
            f"{self.timeout:g} s limit) and what it prints is returned to you after "
            f'"{RESULT_PREFIX.strip()}". ' + state + "Return your final answer within \\boxed{}."
        )

    def openai_schemas(self) -> list[dict[str, Any]]:
        """One function, ``python(code)``."""
        return [function_schema(
            FUNCTION_NAME,
            "Run Python code in a sandbox (no network) and return what it prints (stdout, then stderr).",
            {"code": {"type": "string", "description": "the Python program to run; print what you want to see"}},
        )]

    def function_names(self) -> tuple[str, ...]:
        return (FUNCTION_NAME,)

    def parse_tags(self, action: str) -> ToolCall | None:
        """The first ``<python>`` or fenced ``python`` block (the one that closes first)."""
        found = extract_first_python_block(action)
        if found is None:
            return None
        code, end = found
        head = action[:end]
        start = head.find("<python>") if head.endswith("</python>") else head.rfind("```", 0, end - 3)
        return ToolCall(FUNCTION_NAME, {"code": code}, action[max(start, 0) : end], head, source="tag")

    def _parse_action(self, action: str) -> tuple[str | None, str, bool]:
        """``(code, action cut after the block, found)`` as GEM's tool returns them."""
        call = self.find_call(action, read_function_call(action))
        if call is None:
            return None, action, False
        code = call.arguments.get("code")
        return (code if isinstance(code, str) and call.error is None else None), call.parsed_action, True

    def execute_call(self, call: ToolCall) -> ToolResult:
        """Run the call's ``code`` in the sandbox; a call without a string ``code`` is an error."""
        code = self.string_argument(call, "code")
        if isinstance(code, ToolResult):
            return code
        if self.auto_imports:
            code = COMMON_IMPORTS + code
        try:
            result = self.run(code)
        except SandboxError as exc:  # the sandbox itself failed: not the agent's code
            self.record_infra_failure(exc)
            return ToolResult(f"The Python sandbox is not available: {exc}\n", True, call)
        return ToolResult(self.format_result(result), not result.ok, call)

    def run(self, code: str) -> SandboxResult:
        """Run ``code`` (statefully in this episode's session when ``stateful``)."""
        if not self.stateful:
            return self.sandbox.run(code, limits=self.limits)
        if self._session is None:
            self._session = self.sandbox.session(limits=self.limits)
        return self._session.run(code)

    def format_result(self, result: SandboxResult) -> str:
        """The observation for the model: stdout, then stderr (or its last line)."""
        stdout, stderr = result.stdout, result.stderr.strip()
        if stderr and self.keep_error_last_line:
            stderr = stderr.rsplit("\n", 1)[-1]
        if self.stateful and result.isolation.get("restarted"):
            stderr = (stderr + "\n" if stderr else "") + (
                "Note: the interpreter was restarted after the previous error; earlier variables are gone."
            )
        if (
            self.stateful
            and result.reason in ("timeout", "output_limit", "memory")
            and not result.isolation.get("session_alive", True)
        ):
            stderr += "\nThe interpreter was restarted; variables defined so far are lost."
        text = f"{stdout}\n{stderr}" if stderr else stdout
        text = truncate_middle(text.lstrip(" \n"), self.max_output_chars)
        return RESULT_PREFIX + text + "\n"

    def reset(self) -> None:
        """Forget the notebook's variables (stateful mode): the next call starts a fresh interpreter."""
        if self._session is not None:
            self._session.close()
            self._session = None

    def close(self) -> None:
        self.reset()

    def __deepcopy__(self, memo: dict[int, Any]) -> PythonCodeTool:
        # A copy (env.spawn) shares the sandbox but never the notebook session.
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        new.__dict__.update({k: v for k, v in self.__dict__.items() if k != "_session"})
        new._session = None
        return new
