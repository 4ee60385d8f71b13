"""The tool interface that ``ToolEnvWrapper`` drives.

A tool looks for its own call in the agent's action (``<python>...</python>``,
``<search>...</search>``, an MCP ``<tool_call>``, or an OpenAI-style function call: see
:mod:`gem.tools.function_call`). ``execute_action`` says whether it found one and, if so, runs it
and returns the observation for the model. Tools never raise on bad input: a malformed call, a
timeout or a server failure is an observation with ``has_error=True``.

:meth:`BaseTool.openai_schemas` describes the tool as OpenAI ``tools`` entries, for models that
call functions natively; ``ToolEnvWrapper`` lists them in ``info["tools"]``. A failure of the
tool's own machinery (its sandbox, its search or MCP server), as opposed to an error in the call,
is recorded with :meth:`BaseTool.record_infra_failure` so the wrapper can report it in
``info["infra_error"]``.
"""

from __future__ import annotations

import abc
import copy
import threading
from typing import Any, Optional

_LOCK_TYPES: dict[type, Any] = {type(threading.Lock()): threading.Lock, type(threading.RLock()): threading.RLock}


class BaseTool(abc.ABC):
    """Base class of tools.

    Attributes:
        tool_type: a short name (``"python_code"``, ``"search"``, ``"mcp"``, ``"bash"``,
            ``"editor"``) used in info counters and in ``info["infra_error"]["component"]``.
    """

    tool_type: str = "base"

    def __init__(self, num_workers: int = 1) -> None:
        self.num_workers = num_workers
        self._infra_failure: Optional[BaseException] = None

    @abc.abstractmethod
    def instruction_string(self) -> str:
        """How to call the tool, appended to the env's first observation."""

    @abc.abstractmethod
    def execute_action(self, action: str) -> tuple[bool, bool, str, str]:
        """Find and run this tool's call in ``action``.

        Returns ``(is_parsed, has_error, observation, parsed_action)``: whether the action held a
        call of this tool; whether running it failed; the text to show the model; and the action
        cut down to the call (text after the call is dropped, as the model should wait for the
        result).
        """

    def openai_schemas(self) -> list[dict[str, Any]]:
        """The tool's functions as OpenAI ``tools`` entries (``{"type": "function", "function": {...}}``).

        ``execute_action`` accepts a call of each of them written as the whole action
        (``{"name": ..., "arguments": {...}}``). The default is no function: a tool that only
        reads its own tags cannot be called natively.
        """
        return []

    def record_infra_failure(self, error: BaseException) -> None:
        """Note that the tool's machinery failed in the current call (not the agent's call itself)."""
        self._infra_failure = error

    def take_infra_failure(self) -> Optional[BaseException]:
        """The failure recorded by the last call, if any, forgetting it."""
        error, self._infra_failure = getattr(self, "_infra_failure", None), None
        return error

    def reset(self) -> None:
        """Forget per-episode state (a notebook's variables, an MCP session). Called on env reset."""

    def close(self) -> None:
        """Release processes and connections."""

    def fork(self) -> "BaseTool":
        """A tool with this one's configuration and its own per-episode state.

        ``ToolEnvWrapper`` calls it when it is given an instance that another live wrapper already
        uses, so every wrapper owns its tool state (a notebook, a session, counters) while the
        caller may share one instance, as the original GEM's ``partial(ToolEnvWrapper, tools=[tool])``
        does. The default deep-copies the tool, giving it new locks; tools that hold something
        that cannot be copied (a process, a connection) override it.
        """
        memo: dict[int, Any] = {}
        for value in vars(self).values():
            new_lock = _LOCK_TYPES.get(type(value))
            if new_lock is not None:
                memo[id(value)] = new_lock()
        return copy.deepcopy(self, memo)
