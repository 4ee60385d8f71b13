"""``ToolEnvWrapper``: let the agent call tools (Python, search, MCP) inside an episode.

Each step the wrapper reads the action's function call once (an OpenAI-style call as the whole
action, or ``<tool_call>...</tool_call>``: :func:`gem.tools.function_call.read_function_call`) into a
:class:`gem.tools.types.ToolCall` and offers the action to its tools in order: a tool takes the
call when it declares the call's name, else looks for its own tags (``<python>``, ``<search>``,
...). The first tool that finds its call runs it (:meth:`BaseTool.execute_call`), and the tool's
output is the next observation: the inner env is *not* stepped, so the agent can use tools as
often as it needs before it answers. An action without a tool call goes to the inner env
unchanged. Tools written for the original GEM (only ``execute_action``) are offered the action
through ``execute_action``, as before.

A function call that no tool takes goes to the inner env, which judges it as before (its reward
and its end of the episode, usually a format error). When the call names no function that the
tools or the inner env declare (an unknown tool, or a ``<tool_call>`` too malformed to name one)
and the inner env declares no functions of its own, the wrapper adds a line to the env's
observation saying what was wrong and which tools there are (``Error: unknown tool 'x';
available tools: python, search.``), and ``info["tool_call"]`` records the call with ``tool``
``"unknown"`` and ``failed=True``; ``use_tool`` stays ``False``. A whole action that is not valid
JSON is ordinary text.

Limits (GEM's semantics, plus a turn cap so no episode can run forever):

* ``max_tool_uses``: after that many tool calls, tool calls are no longer run; the action goes to
  the inner env as an ordinary action (as in GEM; the env then judges it, usually as a format
  error). The observation of the call that uses the last allowed tool call says so. With
  ``truncate_on_tool_limit=True``, a tool call past the cap instead ends the episode with
  ``truncated=True`` and reward 0.
* ``max_turns``: the most steps (tool calls and env steps together) one episode may take through
  this wrapper; the step that reaches it without the episode ending returns ``truncated=True``.
  When both limits are ``None``, ``max_turns`` is ``DEFAULT_MAX_TURNS_UNLIMITED_TOOLS``.

Rewards of a tool call: ``tool_reward`` for any call, plus ``tool_success_reward`` when it ran
cleanly or ``tool_execute_error_reward`` when it failed (GEM's names).

``info`` of every step: ``use_tool`` (this step was a tool call), ``tool_bonus`` (the part of
this step's reward that the tool rules gave: the whole reward of a tool call, 0.0 on any other
step, so the task's own reward is ``reward - tool_bonus``), ``tools`` (below),
``tool_use_counter``, ``tool_success_counter``, ``tool_error_counter``, ``tool_use_counts`` (calls
per tool type), ``turn_counter``; for a tool call also ``parsed_action`` (the action cut after the
call), ``tool_type``, ``tool_error``, ``tool_call`` (the call and its outcome as plain data:
``name``, ``arguments``, ``id``, ``source`` (``"native"``, ``"tool_call"`` or ``"tag"``), ``error``
(why the call could not run, or ``None``), ``tool``, ``failed``, ``extra``; see
:meth:`gem.tools.types.ToolResult.record`) and, when the action was a function call carrying an
``"id"``, ``tool_call_id``. ``reset`` puts the previous episode's totals in ``prev_ep_tool_use_counter`` and
``prev_ep_tool_success_counter``.

Native function calling: ``info["tools"]`` (in ``reset`` and every ``step``) lists the OpenAI
``tools`` entries of the inner env (its own ``info["tools"]``, if any) and of every tool
(:meth:`BaseTool.openai_schemas`). An action that is one such call as JSON
(``{"name": "python", "arguments": {"code": "..."}}``, what :class:`gem.agents.OpenAIAgent` sends
for a ``tool_calls`` reply) runs that tool like its written form.

Structured actions: ``step`` also takes a call given as data, read without writing it as text and
parsing it back (:func:`gem.tools.function_call.read_structured_call`): a :class:`ToolCall`, or an
OpenAI-style ``{"tool_calls": [{"id": ..., "type": "function", "function": {"name": ...,
"arguments": "{...}" or {...}}}]}`` (also the ``tool_calls`` list, one entry, or ``{"name": ...,
"arguments": ...}``). It runs like the same call written as JSON text: the tool that declares the
name runs it (with ``tool_call_id`` when it has an ``"id"``; no tool searches it for its own tags,
and a tool written for the original GEM gets the call's JSON text); only the first call of an action runs,
and the observation says how many did not. A structured action that no tool can run (malformed: no
call, an entry that is not an object, no name, arguments that are not a JSON object; or a call of
a function no tool declares) is answered by the wrapper without stepping the inner env: the
observation says what was wrong and lists the tools, the reward is the env's
``format_error_reward`` (``gem.utils.constants.FORMAT_ERROR_REWARD``, -0.1, unless the env sets
another), and it counts as a failed call of tool ``"unknown"`` towards ``max_tool_uses``. When the
inner env declares functions of its own (its ``info["tools"]``), a well-formed call that no tool
takes goes to the env as its JSON text (``ToolCall.text``), as it would as text. After the tool-use
cap, structured actions go to the env as their JSON text too.

A tool whose machinery fails (its sandbox, its search or MCP server; not the agent's code) is
reported with :func:`gem.errors.report_infra_failure` as ``info["infra_error"]`` with component
``"tool:<tool_type>"``; so is a tool that raises. The agent sees an error observation either way.

Tools may be given as instances or as factories (a class or any zero-argument callable that
returns a tool). Every wrapper owns its own tool state: an instance that another live wrapper
already uses is replaced, for this wrapper, by ``tool.fork()`` (same configuration, its own
notebook, session and counters), so ``partial(ToolEnvWrapper, tools=[tool])``
in ``make_vec`` works and no state leaks between envs. Factories build a new tool per wrapper
directly. ``step`` and ``reset`` hold a per-instance lock, so one wrapper may be driven from
several threads.
"""

from __future__ import annotations

import copy
import logging
import threading
import weakref
from dataclasses import replace
from typing import Any, Callable, Optional, Sequence, Union

from gem.core import Env, EnvWrapper, StepResult
from gem.errors import GemError, report_infra_failure
from gem.tools.base_tool import BaseTool, speaks_calls
from gem.tools.function_call import read_function_call, read_structured_call
from gem.tools.types import ToolCall, ToolResult
from gem.utils.constants import FORMAT_ERROR_REWARD
from gem.utils.text import preview

logger = logging.getLogger(__name__)

DEFAULT_MAX_TOOL_USES = 10
DEFAULT_MAX_TURNS_UNLIMITED_TOOLS = 100
TOOL_LIMIT_NOTICE = "\n\nReached the maximum number of tool uses. Please output the final answer directly."
TOOL_LIMIT_TRUNCATED = "The maximum number of tool uses was already reached, so this tool call was not run; the episode ends."
TURN_LIMIT_NOTICE = "\n\nReached the maximum number of turns; the episode ends."
UNKNOWN_TOOL_TYPE = "unknown"  # info["tool_call"]["tool"] of a function call that no tool takes

ToolSpec = Union[BaseTool, Callable[[], BaseTool]]


def build_tools(specs: Sequence[ToolSpec]) -> list[BaseTool]:
    """Instantiate tool factories; instances are returned as they are."""
    tools = []
    for i, spec in enumerate(specs):
        tool = spec if isinstance(spec, BaseTool) else spec() if callable(spec) else spec
        if not isinstance(tool, BaseTool):
            raise TypeError(
                f"tools[{i}] must be a BaseTool instance or a callable returning one, got {type(spec).__name__}"
                + ("" if spec is tool else f" (which returned {type(tool).__name__})")
                + "."
            )
        tools.append(tool)
    return tools


# Which live wrapper owns each tool instance (weakly held on both sides).
_OWNERS: "weakref.WeakKeyDictionary[BaseTool, weakref.ref]" = weakref.WeakKeyDictionary()
_OWNERS_LOCK = threading.Lock()


def _claim(tools: Sequence[BaseTool], owner: "ToolEnvWrapper") -> list[BaseTool]:
    """The tools ``owner`` will use: each one, or its ``fork()`` if another live wrapper has it."""
    claimed = []
    with _OWNERS_LOCK:
        for tool in tools:
            try:
                current = _OWNERS.get(tool)
            except TypeError:  # not weakly referenceable / hashable: cannot track it
                claimed.append(tool)
                continue
            holder = None if current is None else current()
            if holder is not None and holder is not owner:
                tool = _fork(tool)
            try:
                _OWNERS[tool] = weakref.ref(owner)
            except TypeError:
                pass
            claimed.append(tool)
    return claimed


def _fork(tool: BaseTool) -> BaseTool:
    """``tool.fork()``, with a message that says what to do if the tool cannot be copied."""
    try:
        new = tool.fork()
    except Exception as exc:  # noqa: BLE001 -- reported with the fix
        raise GemError(
            f"This {type(tool).__name__} instance is already used by another ToolEnvWrapper and cannot be forked "
            f"({type(exc).__name__}: {exc}); give it a fork() method, or pass a factory (e.g. "
            "tools=[PythonCodeTool] or a functools.partial) so each env builds its own."
        ) from exc
    if not isinstance(new, BaseTool):
        raise TypeError(f"{type(tool).__name__}.fork() returned {type(new).__name__}, not a BaseTool.")
    return new


def _more_calls_note(more: int) -> str:
    """What the observation says when a structured action held calls after the one that ran."""
    if more <= 0:
        return ""
    return f"({more} more tool call{'s' if more > 1 else ''} in this action did not run: one call runs per step.)"


def _check_limit(name: str, value: Optional[int]) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise ValueError(f"{name} must be a non-negative int or None (no limit), got {value!r}.")


class ToolEnvWrapper(EnvWrapper):
    """Adds tools to an env (see the module doc for the semantics).

    Args:
        env: the env to wrap.
        tools: tool instances or factories, tried in this order.
        tool_reward: reward of every tool call.
        tool_success_reward: added when the call ran without error.
        tool_execute_error_reward: added when the call failed (usually 0 or negative).
        max_tool_uses: tool calls allowed per episode (``None``: no limit).
        max_turns: steps allowed per episode through this wrapper (``None``: no limit unless
            ``max_tool_uses`` is ``None`` too).
        truncate_on_tool_limit: end the episode (``truncated``) on a tool call past the cap
            instead of passing the action to the inner env.
    """

    def __init__(
        self,
        env: Env,
        tools: Sequence[ToolSpec],
        tool_reward: float = 0.0,
        tool_success_reward: float = 0.0,
        tool_execute_error_reward: float = 0.0,
        max_tool_uses: Optional[int] = DEFAULT_MAX_TOOL_USES,
        max_turns: Optional[int] = None,
        truncate_on_tool_limit: bool = False,
    ) -> None:
        super().__init__(env)
        if isinstance(tools, (BaseTool, str)) or not isinstance(tools, Sequence):
            raise TypeError("tools must be a list of tools or tool factories, e.g. tools=[PythonCodeTool].")
        if not tools:
            raise ValueError("ToolEnvWrapper needs at least one tool.")
        _check_limit("max_tool_uses", max_tool_uses)
        _check_limit("max_turns", max_turns)
        if max_turns is None and max_tool_uses is None:
            max_turns = DEFAULT_MAX_TURNS_UNLIMITED_TOOLS
        self._tool_specs = list(tools)
        self.tools = _claim(build_tools(self._tool_specs), self)
        self.tool_reward = float(tool_reward)
        self.tool_success_reward = float(tool_success_reward)
        self.tool_execute_error_reward = float(tool_execute_error_reward)
        self.max_tool_uses = max_tool_uses
        self.max_turns = max_turns
        self.truncate_on_tool_limit = truncate_on_tool_limit
        self._lock = threading.RLock()
        self._schemas: list[dict[str, Any]] = []
        self._env_functions = False  # the inner env declares functions (its info["tools"]) of its own
        self._zero_counters()
        self.prev_ep_tool_use_counter = 0
        self.prev_ep_tool_success_counter = 0

    def _zero_counters(self) -> None:
        self.tool_use_counter = 0
        self.tool_success_counter = 0
        self.tool_error_counter = 0
        self.turn_counter = 0
        self.tool_use_counts: dict[str, int] = {}

    # ------------------------------------------------------------------------------- API
    def reset(self, seed: Optional[int] = None, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        """Reset the env and the tools; the tools' instructions follow the first observation."""
        with self._lock:
            self.prev_ep_tool_use_counter = self.tool_use_counter
            self.prev_ep_tool_success_counter = self.tool_success_counter
            self._zero_counters()
            for tool in self.tools:
                tool.reset()
            obs, info = self.env.reset(seed=seed, **kwargs)
            self._open_episode()
            instructions = "\n".join(tool.instruction_string() for tool in self.tools)
            if len(self.tools) > 1:
                instructions = f"Available tools:\n{instructions}"
            info = dict(info)
            self._schemas = self._tool_schemas(info)
            info.update(self._counters(), use_tool=False, tool_bonus=0.0)
            info["prev_ep_tool_use_counter"] = self.prev_ep_tool_use_counter
            info["prev_ep_tool_success_counter"] = self.prev_ep_tool_success_counter
            return f"{obs}\n{instructions}", info

    def step(self, action: str | ToolCall | dict[str, Any] | list[Any], verbose: bool = False) -> StepResult:
        """Run the first tool call found in ``action``, or step the inner env with it.

        ``action`` is text, or a call given as data: a :class:`ToolCall` or an OpenAI-style
        ``tool_calls`` dict or list (see the module doc). ``verbose=True`` logs (at INFO, on this
        module's logger) which tool ran.
        """
        with self._lock:  # the episode check and the step together
            return Env.step(self, action, verbose=verbose)  # the step contract, then _step

    def _step(self, action: str | ToolCall | dict[str, Any] | list[Any], verbose: bool = False) -> StepResult:
        with self._lock:  # reentrant: step holds it already
            self.turn_counter += 1
            capped = self.max_tool_uses is not None and self.tool_use_counter >= self.max_tool_uses
            structured = read_structured_call(action)  # an action given as data: no text to parse
            tools = self.tools
            if structured is not None:  # routed by name only: no tool searches its text for tags
                call, action = structured.call, structured.call.text
                tools = [tool for tool in self.tools if self._accepts(tool, call)]
            else:
                call = read_function_call(action)  # the one parse of the action's function call
            if not capped:
                if structured is not None and call.error is not None:
                    return self._invalid_structured(call)
                for tool in tools:
                    result, failure = self._execute(tool, action, call)
                    if result is not None:
                        if verbose:
                            logger.info("Tool %s ran (%s); tool uses this episode: %d", tool.tool_type,
                                        "error" if result.error else "ok", self.tool_use_counter + 1)
                        note = _more_calls_note(structured.count - 1) if structured is not None else ""
                        step = self._tool_result(tool.tool_type, result, note=note)
                        if failure is not None:
                            report_infra_failure(step[4], f"tool:{tool.tool_type}", failure)
                        return step
                if structured is not None and not getattr(self, "_env_functions", False):
                    return self._invalid_structured(call)
                if call is not None and self._answers_unclaimed(call):
                    return self._unclaimed(action, call)
            elif self.truncate_on_tool_limit and any(self._holds_call(tool, action, call) for tool in tools):
                info = {**self._counters(), "use_tool": False, "tool_bonus": 0.0, "tool_limit_reached": True}
                return self._result(TOOL_LIMIT_TRUNCATED, 0.0, False, True, info)
            return self._step_env(action)

    # --------------------------------------------------------------------------- helpers
    def _step_env(self, action: str, note: str = "", record: Optional[dict[str, Any]] = None) -> StepResult:
        """Step the inner env with ``action``; ``note`` is added to its observation."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        info = dict(info)
        if note:
            obs = f"{obs}\n\n{note}"
        if not (terminated or truncated) and self._turns_exhausted():
            truncated = True
            obs += TURN_LIMIT_NOTICE
        info.update(self._counters(), use_tool=False, tool_bonus=0.0)
        if record is not None:
            info["tool_call"] = record
        return self._result(obs, reward, terminated, truncated, info)

    def _unclaimed(self, action: str, call: ToolCall) -> StepResult:
        """A function call no tool took, naming no declared function: the env judges the action,
        and the observation says what was wrong."""
        text = self._unclaimed_text(call)
        return self._step_env(action, text, ToolResult(text, True, call).record(UNKNOWN_TOOL_TYPE))

    def _invalid_structured(self, call: ToolCall) -> StepResult:
        """A structured action that no tool can run (malformed, or naming no tool's function): the
        wrapper answers it as a failed tool call with the env's ``format_error_reward``."""
        text = f"{self._unclaimed_text(call)}\n"
        reward = float(getattr(self.env, "format_error_reward", FORMAT_ERROR_REWARD))
        return self._tool_result(UNKNOWN_TOOL_TYPE, ToolResult(text, True, call), reward=reward)

    @staticmethod
    def _accepts(tool: BaseTool, call: ToolCall) -> bool:
        """Whether ``tool`` takes ``call`` by its name (a tool whose check fails takes nothing)."""
        try:
            return bool(tool.accepts(call))
        except Exception:  # noqa: BLE001 -- a tool whose schemas fail has named nothing
            logger.debug("%s.accepts() failed", type(tool).__name__, exc_info=True)
            return False

    def _tool_schemas(self, info: dict[str, Any]) -> list[dict[str, Any]]:
        """The inner env's ``info["tools"]`` and every tool's OpenAI schemas, each name once."""
        self._env_functions = bool(info.get("tools"))
        schemas, names = [], set()
        for schema in list(info.get("tools") or []) + [s for tool in self.tools for s in tool.openai_schemas()]:
            name = schema.get("function", {}).get("name") if isinstance(schema, dict) else None
            if name not in names:
                names.add(name)
                schemas.append(schema)
        return schemas

    def _execute(self, tool: BaseTool, action: Any, call: Optional[ToolCall]) -> tuple[Optional[ToolResult], Optional[BaseException]]:
        """The tool's result (``None``: no call of it in ``action``) and its infrastructure failure,
        if any; a tool that raises becomes a failed call (it must not crash the episode) and is
        reported as such a failure."""
        found: Optional[ToolCall] = None
        try:
            if speaks_calls(tool):
                found = tool.find_call(action if isinstance(action, str) else str(action), call)
                result = None if found is None else tool.execute_call(found)
            else:  # a tool written for the original GEM: only execute_action
                answer = tool.execute_action(action)
                result = None if not answer[0] else ToolResult.from_tuple(tuple(answer), self._call_of(tool, call, action))
        except Exception as exc:  # noqa: BLE001 -- a broken tool is reported to the agent, and logged
            logger.exception("%s raised on an action", type(tool).__name__)
            tool.take_infra_failure()
            text = f"The {tool.tool_type} tool failed: {preview(f'{type(exc).__name__}: {exc}')}"
            failed = replace(found or self._call_of(tool, call, action), parsed_action=action)
            return ToolResult(text, True, failed), exc
        return result, tool.take_infra_failure()

    @staticmethod
    def _call_of(tool: BaseTool, call: Optional[ToolCall], action: Any) -> ToolCall:
        """The call an ``execute_action``-only tool ran: the action's function call when the whole
        action is one or names one of the tool's functions, else the tool's own (unread) text."""
        if call is not None:
            try:
                if call.native or call.name in tool.function_names():
                    return call
            except Exception:  # noqa: BLE001 -- a tool whose schemas fail has named nothing
                logger.debug("%s.function_names() failed", type(tool).__name__, exc_info=True)
        text = action if isinstance(action, str) else str(action)
        return ToolCall(tool.tool_type, {}, text, text, source="tag")

    def _declared_names(self) -> list[str]:
        return [str(s["function"]["name"]) for s in self._schemas
                if isinstance(s, dict) and isinstance(s.get("function"), dict) and s["function"].get("name")]

    def _answers_unclaimed(self, call: ToolCall) -> bool:
        """Whether the wrapper says what is wrong with a function call no tool took: yes unless the
        inner env takes function calls itself or declares the name, or no tool declares any function."""
        if getattr(self, "_env_functions", False):
            return False
        names = self._declared_names()
        return bool(names) and call.name not in names

    def _unclaimed_text(self, call: ToolCall) -> str:
        available = ", ".join(sorted(self._declared_names())) or "none (the tools here are called only in their own tags)"
        if call.name and call.error and call.name in self._declared_names():
            return f"Invalid {preview(call.name, 80)} call: {call.error}. Available tools: {available}."
        if call.name:
            return f"Error: unknown tool {preview(call.name, 80)!r}; available tools: {available}."
        return f"Invalid tool call: {call.error or 'it names no tool'}. Available tools: {available}."

    def _holds_call(self, tool: BaseTool, action: str, call: Optional[ToolCall]) -> bool:
        """Whether ``action`` holds a call of ``tool``, without running it (tools that can tell)."""
        try:
            if speaks_calls(tool):
                return tool.find_call(action if isinstance(action, str) else str(action), call) is not None
            parse = getattr(tool, "has_call", None) or getattr(tool, "_parse_action", None)
            if parse is None:
                return False
            result = parse(action)
        except Exception:  # noqa: BLE001 -- a parser that fails has found nothing
            return False
        if isinstance(result, tuple):
            return bool(result[-1])  # GEM's parsers end with is_valid
        return bool(result)

    def _tool_result(self, tool_type: str, result: ToolResult, note: str = "", reward: Optional[float] = None) -> StepResult:
        """A tool call's step; ``reward`` (the answer to an invalid structured call) replaces the
        tool rules' reward, and ``note`` follows the tool's output."""
        self.tool_use_counter += 1
        self.tool_use_counts[tool_type] = self.tool_use_counts.get(tool_type, 0) + 1
        ruled = self.tool_reward
        if result.error:
            self.tool_error_counter += 1
            ruled += self.tool_execute_error_reward
        else:
            self.tool_success_counter += 1
            ruled += self.tool_success_reward
        if result.reward is not None:
            ruled += float(result.reward)
        reward = ruled if reward is None else reward
        observation = f"{result.observation.rstrip(chr(10))}\n\n{note}\n" if note else result.observation
        if self.max_tool_uses is not None and self.tool_use_counter == self.max_tool_uses:
            observation += TOOL_LIMIT_NOTICE
        truncated = self._turns_exhausted()
        if truncated:
            observation += TURN_LIMIT_NOTICE
        call = result.call
        info = {**self._counters(), "use_tool": True, "tool_bonus": reward, "tool_type": tool_type,
                "parsed_action": call.parsed_action, "tool_error": bool(result.error),
                "tool_call": result.record(tool_type)}
        if call.native and call.id is not None:
            info["tool_call_id"] = call.id
        return self._result(observation, reward, False, truncated, info)

    def _turns_exhausted(self) -> bool:
        return self.max_turns is not None and self.turn_counter >= self.max_turns

    def _counters(self) -> dict[str, Any]:
        return {
            "tools": list(self._schemas),
            "tool_use_counter": self.tool_use_counter,
            "tool_success_counter": self.tool_success_counter,
            "tool_error_counter": self.tool_error_counter,
            "tool_use_counts": dict(self.tool_use_counts),
            "turn_counter": self.turn_counter,
        }

    # ---------------------------------------------------------------- state and lifecycle
    _STATE_FIELDS = ("tool_use_counter", "tool_success_counter", "tool_error_counter", "turn_counter",
                     "tool_use_counts", "prev_ep_tool_use_counter", "prev_ep_tool_success_counter", "_needs_reset", "_schemas",
                     "_env_functions")

    def get_state(self) -> dict[str, Any]:
        """The inner env's state and this wrapper's counters (tools are not snapshotted)."""
        with self._lock:
            own = {name: copy.deepcopy(getattr(self, name)) for name in self._STATE_FIELDS}
            return {"env": self.env.get_state(), "wrapper": own}

    def set_state(self, state: dict[str, Any]) -> None:
        with self._lock:
            self.env.set_state(state["env"])
            for name, value in state["wrapper"].items():
                setattr(self, name, copy.deepcopy(value))

    def spawn(self, same_state: bool = False, **kwargs: Any) -> "ToolEnvWrapper":
        """The same wrapper around ``env.spawn(...)``, with new tools from the factories.

        Tools given as instances are forked (``tool.fork()``).
        """
        specs = [_fork(spec) if isinstance(spec, BaseTool) else spec for spec in self._tool_specs]
        new = ToolEnvWrapper(
            self.env.spawn(same_state=same_state, **kwargs), specs, self.tool_reward, self.tool_success_reward,
            self.tool_execute_error_reward, self.max_tool_uses, self.max_turns, self.truncate_on_tool_limit,
        )
        if same_state:
            for name in self._STATE_FIELDS:
                setattr(new, name, copy.deepcopy(getattr(self, name)))
        return new

    def close(self) -> None:
        """Close the tools, then the env."""
        for tool in self.tools:
            try:
                tool.close()
            except Exception:  # noqa: BLE001 -- closing must go on to the other tools and the env
                logger.exception("closing %s failed", type(tool).__name__)
        self.env.close()
