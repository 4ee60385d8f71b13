"""The tool interface that ``ToolEnvWrapper`` drives.

``ToolEnvWrapper`` reads the function call an action holds (an OpenAI-style call as the whole
action, or ``<tool_call>...</tool_call>``: :func:`gem.tools.function_call.read_function_call`)
once into a :class:`gem.tools.types.ToolCall` and offers it to each tool in turn:
:meth:`BaseTool.find_call` takes it when the tool declares its name (:meth:`BaseTool.function_names`)
or else looks for the tool's own tags (:meth:`BaseTool.parse_tags`: ``<python>...</python>``,
``<search>...</search>``, ...), and :meth:`BaseTool.execute_call` runs the call it found and
returns a :class:`gem.tools.types.ToolResult`. Tools never raise on bad input: a malformed call, a
timeout or a server failure is a result with ``error=True``.

The original GEM's interface keeps working both ways. ``execute_action(action) -> (is_parsed,
has_error, observation, parsed_action)`` on a tool written the new way parses the action and runs
the call it finds; a tool that implements only ``execute_action`` (as tools written for the
original GEM do) is driven through it by ``ToolEnvWrapper``, and its :meth:`BaseTool.execute_call`
hands the call's text to ``execute_action``.

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
from typing import Any, Collection, Optional, Union

from gem.tools.function_call import read_function_call
from gem.tools.types import ToolCall, ToolResult
from gem.utils.text import preview

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

    def __new__(cls, *args: Any, **kwargs: Any) -> "BaseTool":
        if not speaks_calls(cls) and _owner(cls, "execute_action") is BaseTool:
            raise TypeError(
                f"Can't instantiate tool class {cls.__name__}: implement execute_call (with parse_tags or "
                "function_names/openai_schemas so find_call finds its calls), or execute_action."
            )
        return super().__new__(cls)

    # ------------------------------------------------------------- the ToolCall API
    def function_names(self) -> Collection[str]:
        """The function names this tool answers; default: the names in :meth:`openai_schemas`."""
        return [s["function"]["name"] for s in self.openai_schemas()
                if isinstance(s, dict) and isinstance(s.get("function"), dict) and "name" in s["function"]]

    def accepts(self, call: ToolCall) -> bool:
        """Whether ``call`` (read from the action by :func:`read_function_call`) is this tool's to run."""
        return call.name in self.function_names()

    def parse_tags(self, action: str) -> Optional[ToolCall]:
        """The first call written in this tool's own tags in ``action`` (``source="tag"``), else ``None``.

        Default: the tool has no tags of its own.
        """
        return None

    def find_call(self, action: str, call: Optional[ToolCall] = None) -> Optional[ToolCall]:
        """This tool's call in ``action``: ``call`` (the action's function call, already read) when
        :meth:`accepts` takes it, else the tool's own tags. A whole action that is another tool's
        function call holds no call of this tool."""
        if call is not None:
            if self.accepts(call):
                return call
            if call.native:
                return None
        return self.parse_tags(action)

    def execute_call(self, call: ToolCall) -> ToolResult:
        """Run ``call`` and return its result. Never raises for bad input (``call.error`` included).

        Tools written the new way override it. The default serves tools that implement only
        ``execute_action``: it hands the call's text to ``execute_action``.
        """
        text = call.text or call.parsed_action
        result = ToolResult.from_tuple(tuple(self.execute_action(text)), call)
        if result is None:
            return ToolResult(f"The {self.tool_type} tool found no call of its own in: {preview(text)}", True, call)
        return result

    def invalid_call(self, call: ToolCall) -> ToolResult:
        """The answer to a call that cannot run (``call.error``)."""
        return ToolResult(f"Invalid {call.name or self.tool_type} call: {call.error}.\n", True, call)

    def string_argument(self, call: ToolCall, key: str) -> Union[str, ToolResult]:
        """The call's string argument ``key``; for a call that cannot run or lacks it, the error
        result to return instead."""
        if call.error is not None:
            return self.invalid_call(call)
        value = call.arguments.get(key)
        if not isinstance(value, str):
            return ToolResult(f'The {call.name or self.tool_type} call needs a string "{key}" argument.\n', True, call)
        return value

    # ----------------------------------------------------------- the action interface
    def execute_action(self, action: str) -> tuple[bool, bool, str, str]:
        """Find and run this tool's call in ``action``.

        Returns ``(is_parsed, has_error, observation, parsed_action)``: whether the action held a
        call of this tool; whether running it failed; the text to show the model; and the action
        cut down to the call (text after the call is dropped, as the model should wait for the
        result). Tools written for the original GEM implement this; on a tool written the new way
        it is :meth:`find_call` then :meth:`execute_call`.
        """
        if not isinstance(action, str):
            action = str(action)
        call = self.find_call(action, read_function_call(action))
        if call is None:
            return self.no_call(action)
        return self.execute_call(call).as_tuple()

    def no_call(self, action: str) -> tuple[bool, bool, str, str]:
        """``execute_action``'s answer when ``action`` holds no call of this tool."""
        return False, True, "", action

    def openai_schemas(self) -> list[dict[str, Any]]:
        """The tool's functions as OpenAI ``tools`` entries (``{"type": "function", "function": {...}}``).

        ``execute_action`` accepts a call of each of them written as the whole action
        (``{"name": ..., "arguments": {...}}``), and ``ToolEnvWrapper`` routes such calls by these
        names (:meth:`function_names`). The default is no function: a tool that only
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
        caller may share one instance, as ``partial(ToolEnvWrapper, tools=[tool])`` in ``make_vec``
        does. The default deep-copies the tool, giving it new locks; tools that hold something
        that cannot be copied (a process, a connection) override it.
        """
        memo: dict[int, Any] = {}
        for value in vars(self).values():
            new_lock = _LOCK_TYPES.get(type(value))
            if new_lock is not None:
                memo[id(value)] = new_lock()
        return copy.deepcopy(self, memo)


def _owner(cls: type, name: str) -> type:
    """The class in ``cls``'s MRO that defines ``name``."""
    return next(klass for klass in cls.__mro__ if name in vars(klass))


def speaks_calls(tool: Any) -> bool:
    """Whether ``tool`` (an instance or a class) is driven through :meth:`BaseTool.execute_call`.

    True when it implements ``execute_call`` at least as far down its class tree as
    ``execute_action``; a tool that implements only ``execute_action`` (or overrides it below a
    built-in tool) is driven through ``execute_action``, as the original GEM drove it.
    """
    cls = tool if isinstance(tool, type) else type(tool)
    call_owner = _owner(cls, "execute_call")
    if call_owner is BaseTool:
        return False
    mro = cls.__mro__
    return mro.index(call_owner) <= mro.index(_owner(cls, "execute_action"))
