"""``ToolEnvWrapper``: let the agent call tools (Python, search, MCP) inside an episode.

Each step the wrapper offers the action to its tools in order. The first tool that finds its call
in the action runs it, and the tool's output is the next observation: the inner env is *not*
stepped, so the agent can use tools as often as it needs before it answers. An action without a
tool call goes to the inner env unchanged.

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
call), ``tool_type``, ``tool_error`` and, when the action was a function call carrying an ``"id"``,
``tool_call_id``. ``reset`` puts the previous episode's totals in ``prev_ep_tool_use_counter`` and
``prev_ep_tool_success_counter``.

Native function calling: ``info["tools"]`` (in ``reset`` and every ``step``) lists the OpenAI
``tools`` entries of the inner env (its own ``info["tools"]``, if any) and of every tool
(:meth:`BaseTool.openai_schemas`). An action that is one such call as JSON
(``{"name": "python", "arguments": {"code": "..."}}``, what :class:`gem.agents.OpenAIAgent` sends
for a ``tool_calls`` reply) runs that tool like its written form.

A tool whose machinery fails (its sandbox, its search or MCP server; not the agent's code) is
reported with :func:`gem.errors.report_infra_failure` as ``info["infra_error"]`` with component
``"tool:<tool_type>"``; so is a tool that raises. The agent sees an error observation either way.

Tools may be given as instances or as factories (a class or any zero-argument callable that
returns a tool). Every wrapper owns its own tool state: an instance that another live wrapper
already uses is replaced, for this wrapper, by ``tool.fork()`` (same configuration, its own
notebook, session and counters), so the original GEM's ``partial(ToolEnvWrapper, tools=[tool])``
in ``make_vec`` works and no state leaks between envs. Factories build a new tool per wrapper
directly. ``step`` and ``reset`` hold a per-instance lock, so one wrapper may be driven from
several threads.
"""

from __future__ import annotations

import copy
import logging
import threading
import weakref
from typing import Any, Callable, Optional, Sequence, Union

from gem.core import Env, EnvWrapper, StepResult
from gem.errors import GemError, report_infra_failure
from gem.tools.base_tool import BaseTool
from gem.tools.function_call import function_call_id
from gem.utils.text import preview

logger = logging.getLogger(__name__)

DEFAULT_MAX_TOOL_USES = 10
DEFAULT_MAX_TURNS_UNLIMITED_TOOLS = 100
TOOL_LIMIT_NOTICE = "\n\nReached the maximum number of tool uses. Please output the final answer directly."
TOOL_LIMIT_TRUNCATED = "The maximum number of tool uses was already reached, so this tool call was not run; the episode ends."
TURN_LIMIT_NOTICE = "\n\nReached the maximum number of turns; the episode ends."

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

    def step(self, action: str, verbose: bool = False) -> StepResult:
        """Run the first tool call found in ``action``, or step the inner env with it.

        ``verbose=True`` logs (at INFO, on this module's logger) which tool ran, as the original's
        flag printed it.
        """
        with self._lock:
            if self._needs_reset and (ended := self._step_without_episode()) is not None:
                return ended
            self.turn_counter += 1
            capped = self.max_tool_uses is not None and self.tool_use_counter >= self.max_tool_uses
            if not capped:
                for tool in self.tools:
                    found, has_error, observation, parsed_action, failure = self._execute(tool, action)
                    if found:
                        if verbose:
                            logger.info("Tool %s ran (%s); tool uses this episode: %d", tool.tool_type,
                                        "error" if has_error else "ok", self.tool_use_counter + 1)
                        result = self._tool_result(tool, has_error, observation, parsed_action, action)
                        if failure is not None:
                            report_infra_failure(result[4], f"tool:{tool.tool_type}", failure)
                        return result
            elif self.truncate_on_tool_limit and any(self._holds_call(tool, action) for tool in self.tools):
                info = {**self._counters(), "use_tool": False, "tool_bonus": 0.0, "tool_limit_reached": True}
                return self._result(TOOL_LIMIT_TRUNCATED, 0.0, False, True, info)
            obs, reward, terminated, truncated, info = self.env.step(action)
            info = dict(info)
            if not (terminated or truncated) and self._turns_exhausted():
                truncated = True
                obs += TURN_LIMIT_NOTICE
            info.update(self._counters(), use_tool=False, tool_bonus=0.0)
            return self._result(obs, reward, terminated, truncated, info)

    # --------------------------------------------------------------------------- helpers
    def _tool_schemas(self, info: dict[str, Any]) -> list[dict[str, Any]]:
        """The inner env's ``info["tools"]`` and every tool's OpenAI schemas, each name once."""
        schemas, names = [], set()
        for schema in list(info.get("tools") or []) + [s for tool in self.tools for s in tool.openai_schemas()]:
            name = schema.get("function", {}).get("name") if isinstance(schema, dict) else None
            if name not in names:
                names.add(name)
                schemas.append(schema)
        return schemas

    def _execute(self, tool: BaseTool, action: str) -> tuple[bool, bool, str, str, Optional[BaseException]]:
        """The tool's answer and its infrastructure failure, if any; a tool that raises becomes a
        failed call (it must not crash the episode) and is reported as such a failure."""
        try:
            found, has_error, observation, parsed_action = tool.execute_action(action)
        except Exception as exc:  # noqa: BLE001 -- a broken tool is reported to the agent, and logged
            logger.exception("%s raised on an action", type(tool).__name__)
            tool.take_infra_failure()
            text = f"The {tool.tool_type} tool failed: {preview(f'{type(exc).__name__}: {exc}')}"
            return True, True, text, action, exc
        return bool(found), bool(has_error), observation, parsed_action, tool.take_infra_failure()

    @staticmethod
    def _holds_call(tool: BaseTool, action: str) -> bool:
        """Whether ``action`` holds a call of ``tool``, without running it (tools that can tell)."""
        parse = getattr(tool, "has_call", None) or getattr(tool, "_parse_action", None)
        if parse is None:
            return False
        try:
            result = parse(action)
        except Exception:  # noqa: BLE001 -- a parser that fails has found nothing
            return False
        if isinstance(result, tuple):
            return bool(result[-1])  # GEM's parsers end with is_valid
        return bool(result)

    def _tool_result(self, tool: BaseTool, has_error: bool, observation: str, parsed_action: str, action: str) -> StepResult:
        self.tool_use_counter += 1
        self.tool_use_counts[tool.tool_type] = self.tool_use_counts.get(tool.tool_type, 0) + 1
        reward = self.tool_reward
        if has_error:
            self.tool_error_counter += 1
            reward += self.tool_execute_error_reward
        else:
            self.tool_success_counter += 1
            reward += self.tool_success_reward
        if self.max_tool_uses is not None and self.tool_use_counter == self.max_tool_uses:
            observation += TOOL_LIMIT_NOTICE
        truncated = self._turns_exhausted()
        if truncated:
            observation += TURN_LIMIT_NOTICE
        info = {**self._counters(), "use_tool": True, "tool_bonus": reward, "tool_type": tool.tool_type,
                "parsed_action": parsed_action, "tool_error": has_error}
        call_id = function_call_id(action)
        if call_id is not None:
            info["tool_call_id"] = call_id
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
                     "tool_use_counts", "prev_ep_tool_use_counter", "prev_ep_tool_success_counter", "_needs_reset", "_schemas")

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
