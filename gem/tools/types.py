"""``ToolCall`` and ``ToolResult``: a tool call read once, and what running it gave.

:class:`gem.tools.tool_env_wrapper.ToolEnvWrapper` reads an action once into a :class:`ToolCall`
(its name, its arguments, the text it was written as, and the ``id`` of a native call), routes it
by name to the tool that declares the name, and gets a :class:`ToolResult` back from
:meth:`gem.tools.base_tool.BaseTool.execute_call`. The call and its outcome are recorded in the
step's ``info["tool_call"]`` (:meth:`ToolResult.record`, plain JSON-safe data), which
:class:`gem.wrappers.observation_wrapper.ObservationWrapper` reads instead of parsing the action
again.

A tool's older interface, ``execute_action(action) -> (is_parsed, has_error, observation,
parsed_action)``, keeps working both ways: :meth:`ToolResult.as_tuple` is that tuple, and
:meth:`ToolResult.from_tuple` reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Optional

#: Where a call came from: the whole action is a function call (``{"name": ..., "arguments": ...}``,
#: what a model that calls functions natively sends), a ``<tool_call>...</tool_call>`` tag in the
#: text, or one of a tool's own tags (``<python>``, a fenced block, ``<search>``, ``<bash>``, ...).
SOURCES = ("native", "tool_call", "tag")


@dataclass(frozen=True)
class ToolCall:
    """One tool call found in an action.

    Attributes:
        name: the function called (``"python"``, ``"search"``, an MCP tool's name); ``""`` when a
            malformed call names none.
        arguments: the call's arguments (``{"code": ...}`` for ``<python>`` tags too).
        text: the call as the agent wrote it (the whole action for a native call, the tag otherwise).
        parsed_action: the action up to the end of the call (what follows it is dropped: the
            model should have waited for the result). ``ToolEnvWrapper`` reports it as
            ``info["parsed_action"]``.
        id: the ``id`` of a native call (an OpenAI ``tool_calls`` entry), else ``None``.
        source: one of :data:`SOURCES`.
        error: why the call cannot run (malformed JSON, arguments that are not an object), else
            ``None``. A tool answers such a call with an error observation; it never raises.
    """

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    text: str = ""
    parsed_action: str = ""
    id: Optional[str] = None
    source: str = "tag"
    error: Optional[str] = None

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValueError(f"ToolCall.source must be one of {SOURCES}, got {self.source!r}.")
        if not isinstance(self.arguments, dict):
            raise TypeError(f"ToolCall.arguments must be a dict, got {type(self.arguments).__name__}.")

    @property
    def native(self) -> bool:
        """Whether the whole action was this function call (the form native function calling sends)."""
        return self.source == "native"

    def record(self) -> dict[str, Any]:
        """The call as plain data (JSON-safe): ``name``, ``arguments``, ``id``, ``source``, ``error``."""
        return {"name": self.name, "arguments": self.arguments, "id": self.id, "source": self.source, "error": self.error}


@dataclass
class ToolResult:
    """What running one :class:`ToolCall` gave.

    Attributes:
        observation: the text shown to the model.
        error: whether the call failed (bad arguments, code that raised, a server that is down).
        call: the call that ran.
        reward: added to the call's reward from ``ToolEnvWrapper``'s tool rules (``tool_reward``
            plus ``tool_success_reward`` or ``tool_execute_error_reward``); ``None`` adds nothing.
            Built-in tools never set it.
        extra: anything else the tool wants to report; ``ToolEnvWrapper`` puts it in
            ``info["tool_call"]["extra"]`` (keep it JSON-safe if the env is served over HTTP).
    """

    observation: str
    error: bool
    call: ToolCall
    reward: Optional[float] = None
    extra: dict[str, Any] = field(default_factory=dict)

    def as_tuple(self) -> tuple[bool, bool, str, str]:
        """The older interface's ``(is_parsed, has_error, observation, parsed_action)``."""
        return True, bool(self.error), self.observation, self.call.parsed_action

    @classmethod
    def from_tuple(cls, answer: tuple[Any, ...], call: ToolCall) -> Optional["ToolResult"]:
        """The result an ``execute_action`` tuple describes (``None`` when it found no call).

        ``call`` is the call the tuple answers; its ``parsed_action`` is replaced by the tuple's.
        """
        found, has_error, observation, parsed_action = answer
        if not found:
            return None
        if isinstance(parsed_action, str) and parsed_action != call.parsed_action:
            call = replace(call, parsed_action=parsed_action)
        return cls(observation if isinstance(observation, str) else str(observation), bool(has_error), call)

    def record(self, tool_type: str) -> dict[str, Any]:
        """``info["tool_call"]``: the call's :meth:`ToolCall.record` plus ``tool`` (the tool type that
        ran it), ``failed`` (the error flag) and ``extra``."""
        return {**self.call.record(), "tool": tool_type, "failed": bool(self.error), "extra": dict(self.extra)}
