"""The bash tool: an agent's commands in a persistent sandboxed shell.

:class:`BashTool` is the :class:`~gem.tools.base_tool.BaseTool` over a
:class:`~gem.sandbox.shell_sandbox.SandboxShell` (one episode's shell in a sandbox session; see
:mod:`gem.sandbox.shell` for the :class:`~gem.sandbox.shell.Shell` protocol every backend
provides): the agent writes ``<bash>ls -la</bash>`` (or a fenced ``bash``/``sh`` block, or an
OpenAI-style function call ``{"name": "bash", "arguments": {"command": "..."}}``) and sees the
output. Its :meth:`BashTool.tool_schema` is the function schema to give a function-calling model.

The shell and its types lived here first; ``SandboxShell``, ``CommandResult``, ``ShellError``,
``sanitize_command``, ``shell_sandbox`` and the shell's constants are still importable from this
module.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import types
from typing import Any, NamedTuple, Optional

from gem.tools.base_tool import BaseTool
from gem.tools.function_call import parse_function_call  # noqa: F401 -- imported from here by gem.envs.terminal
from gem.tools.types import ToolCall, ToolResult
from gem.sandbox import Sandbox, SandboxError, SandboxLimits, SandboxSession  # noqa: F401
from gem.sandbox.shell import MAX_ARCHIVE_BYTES, CommandResult, ShellError, sanitize_command  # noqa: F401
from gem.sandbox.shell_sandbox import (  # noqa: F401 -- their old home; the shell lives in gem.sandbox
    DEFAULT_COMMAND_TIMEOUT,
    DEFAULT_MAX_OUTPUT,
    MAX_COMMAND_CHARS,
    PRELOAD,
    RUNTIME_SOURCE,
    WORKSPACE_DIR,
    SandboxShell,
    compiled_cell,
    shell_sandbox,
)

logger = logging.getLogger(__name__)
_shell_sandbox_module = sys.modules[SandboxShell.__module__]


class _BashToolModule(types.ModuleType):
    """This module, whose ``_shared`` (the shared shell sandbox, which code written when it lived
    here reads or replaces) is the one :func:`shell_sandbox` uses in :mod:`gem.sandbox.shell_sandbox`."""

    @property
    def _shared(self) -> Optional[Sandbox]:
        return _shell_sandbox_module._shared

    @_shared.setter
    def _shared(self, value: Optional[Sandbox]) -> None:
        _shell_sandbox_module._shared = value


sys.modules[__name__].__class__ = _BashToolModule

BASH_SCHEMA: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": (
            "Run a bash command in the task's workspace and return its output and exit status. The "
            "working directory and variables persist between calls; background processes do not."
        ),
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string", "description": "the command line to run"}},
            "required": ["command"],
        },
    },
}


# ------------------------------------------------------------------ parsing actions
_FENCE_OPEN = re.compile(r"```(?:bash|sh|shell|console)[ \t]*\n")


class BashCall(NamedTuple):
    command: str
    start: int
    end: int


def find_bash_command(action: str) -> Optional[BashCall]:
    """The first ``<bash>`` block or fenced shell block (command and span), else ``None``.

    Linear in the action's length (``str.find`` from the first opening only): an action with
    thousands of unclosed openings costs no more than one.
    """
    found = []
    start = action.find("<bash>")
    if start >= 0:
        end = action.find("</bash>", start + 6)
        if end >= 0:
            found.append(BashCall(action[start + 6 : end], start, end + 7))
    fence = _FENCE_OPEN.search(action)
    if fence is not None:
        end = action.find("```", fence.end())
        if end >= 0:
            found.append(BashCall(action[fence.end() : end], fence.start(), end + 3))
    if not found:
        return None
    first = min(found, key=lambda call: call.start)
    return first._replace(command=first.command.strip("\n"))


class BashTool(BaseTool):
    """Runs the agent's shell commands in a persistent sandboxed shell (see the module doc).

    Args:
        timeout: seconds per command.
        max_output: bytes of output shown per command.
        sandbox: a :class:`Sandbox` instead of the shared one.
        files: a tar archive the workspace starts with at every reset.
    """

    tool_type = "bash"

    def __init__(
        self,
        timeout: float = DEFAULT_COMMAND_TIMEOUT,
        max_output: int = DEFAULT_MAX_OUTPUT,
        sandbox: Optional[Sandbox] = None,
        files: Optional[bytes] = None,
        num_workers: int = 1,
    ) -> None:
        super().__init__(num_workers=num_workers)
        self.shell = SandboxShell(sandbox=sandbox, command_timeout=timeout, max_output=max_output)
        self.files = files

    @staticmethod
    def tool_schema() -> dict[str, Any]:
        """The OpenAI function-calling schema of the ``bash`` tool."""
        return json.loads(json.dumps(BASH_SCHEMA))

    def openai_schemas(self) -> list[dict[str, Any]]:
        """One function, ``bash(command)``."""
        return [self.tool_schema()]

    def instruction_string(self) -> str:
        return (
            "You can run shell commands: write one command line (or a short script) inside "
            "<bash>...</bash> tags. It runs in bash in a sandbox without network, with a "
            f"{self.shell.command_timeout:g} s limit per command; you see its output and exit code. "
            "The working directory and variables persist between commands; background processes do not."
        )

    def function_names(self) -> tuple[str, ...]:
        return ("bash",)

    def parse_tags(self, action: str) -> Optional[ToolCall]:
        """The first ``<bash>`` block or fenced shell block."""
        found = find_bash_command(action)
        if found is None:
            return None
        return ToolCall("bash", {"command": found.command}, action[found.start : found.end], action[: found.end], source="tag")

    def execute_call(self, call: ToolCall) -> ToolResult:
        """Run the call's ``command`` in the shell; a call without a string ``command`` is an error."""
        command = self.string_argument(call, "command")
        if isinstance(command, ToolResult):
            return command
        try:
            if not self.shell.started:
                self.shell.start(self.files)
            result = self.shell.run(command)
        except (ShellError, SandboxError) as exc:  # the sandbox itself failed: say so, never raise
            self.record_infra_failure(exc)
            return ToolResult(f"The shell is not available: {exc}\n", True, call)
        return ToolResult(result.render() + "\n", result.exit_code != 0, call)

    def reset(self) -> None:
        """A fresh shell (and workspace) for the next episode; started on first use."""
        self.shell.close()

    def close(self) -> None:
        self.shell.close()

    def __deepcopy__(self, memo: dict[int, Any]) -> "BashTool":
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        new.__dict__.update(self.__dict__)
        new.shell = SandboxShell(
            sandbox=self.shell._sandbox,
            command_timeout=self.shell.command_timeout,
            max_output=self.shell.max_output,
        )
        return new
