"""``WRAPPER_FACTORY``: GEM's named wrapper presets; ``TOOLS``, the table its tool presets come from;
and ``get_wrapper_fns`` to pick presets by name.

Apply them in this order (``get_wrapper_fns`` keeps the order you give, and warns when it is not
this one): first a tool wrapper (``python_tool``, ``search_tool``, ...), then an observation wrapper
(``concat``, ``concat_chat``, ...), then ``episode_tracking``::

    env = gem.make("math:GSM8K")
    for wrap in get_wrapper_fns("python_tool,concat_chat,episode_tracking", tokenizer=tokenizer):
        env = wrap(env)

Each value is a callable ``env -> wrapped env``. A preset's stage (:data:`STAGES`: ``"tool"``,
``"observation"``, ``"tracking"``) comes from what it builds: a ``ToolEnvWrapper``, an
``ObservationWrapper`` or an ``EpisodeTrackingWrapper`` (a class, or a ``functools.partial`` of one),
or from a ``wrapper_stage`` attribute the entry (or its class) declares; never from its name
(:func:`wrapper_stage`).

A tool preset is one row of :data:`TOOLS`: a name, the tool (a ``BaseTool`` class, or
``"module:Class"`` imported the first time the preset is applied), the tool's default kwargs, and
the ``ToolEnvWrapper`` rewards and limits (:class:`ToolPreset`). Writing a row (in this file, or
``TOOLS["bash"] = ToolPreset(BashTool, {"timeout": 5})`` at run time) adds the ``WRAPPER_FACTORY``
entry of that name; deleting it removes the entry.

The tool presets hold tool *factories*, not tools: every env they wrap builds its own tool, so envs
of a vector never share a tool's state. Importing this module builds nothing and imports no heavy
library; the Python and search tools are imported the first time a preset that uses them is applied.
"""

from __future__ import annotations

import difflib
import importlib
import logging
from collections import UserDict
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable, Mapping, Optional, Sequence, Union

from gem.core import Env
from gem.tools.base_tool import BaseTool
from gem.tools.tool_env_wrapper import ToolEnvWrapper
from gem.wrappers.episode_tracking_wrapper import EpisodeTrackingWrapper
from gem.wrappers.observation_wrapper import ObservationWrapper

logger = logging.getLogger(__name__)

TOOL_TIMEOUT_S = 5
MAX_TOOL_USES = 5

#: The stages of a wrapper stack, innermost first.
STAGES = ("tool", "observation", "tracking")
_STAGE_CLASSES: tuple[tuple[type, str], ...] = (
    (ToolEnvWrapper, "tool"),
    (ObservationWrapper, "observation"),
    (EpisodeTrackingWrapper, "tracking"),
)

PYTHON_CODE_TOOL = "gem.tools.python_code_tool:PythonCodeTool"
SEARCH_TOOL = "gem.tools.search_tool:SearchTool"


def python_code_tool(**kwargs: Any) -> BaseTool:
    """A new ``PythonCodeTool(**kwargs)`` (imported on first use)."""
    return build_tool(PYTHON_CODE_TOOL, **kwargs)


def search_tool(**kwargs: Any) -> BaseTool:
    """A new ``SearchTool(**kwargs)`` (imported on first use)."""
    return build_tool(SEARCH_TOOL, **kwargs)


def build_tool(tool: Union[str, Callable[..., BaseTool]], **kwargs: Any) -> BaseTool:
    """A new tool: ``tool(**kwargs)``, where ``tool`` is a ``BaseTool`` class (or any callable that
    returns one) or ``"module:Class"``, imported now."""
    if isinstance(tool, str):
        module, _, name = tool.partition(":")
        tool = getattr(importlib.import_module(module), name)
    return tool(**kwargs)


@dataclass(frozen=True)
class ToolPreset:
    """One row of :data:`TOOLS`: a tool and the ``ToolEnvWrapper`` around it.

    Attributes:
        tool: a ``BaseTool`` class (or any callable returning a tool), or ``"module:Class"``
            (imported the first time the preset is applied, so importing presets stays light).
        kwargs: the tool's default kwargs (``{"timeout": 5}``).
        tool_reward, tool_success_reward, tool_execute_error_reward, max_tool_uses, max_turns,
            truncate_on_tool_limit: the ``ToolEnvWrapper``'s arguments (see its docs).
    """

    tool: Union[str, Callable[..., BaseTool]]
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    tool_reward: float = 0.0
    tool_success_reward: float = 0.0
    tool_execute_error_reward: float = 0.0
    max_tool_uses: Optional[int] = MAX_TOOL_USES
    max_turns: Optional[int] = None
    truncate_on_tool_limit: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.tool, str):
            module, colon, name = self.tool.partition(":")
            if not (module and colon and name):
                raise ValueError(f"ToolPreset.tool as text must be 'module:Class', got {self.tool!r}.")
        elif not callable(self.tool):
            raise TypeError(f"ToolPreset.tool must be a BaseTool class or 'module:Class', got {type(self.tool).__name__}.")
        if not isinstance(self.kwargs, Mapping):
            raise TypeError(f"ToolPreset.kwargs must be a mapping of the tool's kwargs, got {type(self.kwargs).__name__}.")

    def tool_factory(self) -> Callable[[], BaseTool]:
        """A zero-argument callable that builds a new tool (one per wrapped env)."""
        return partial(build_tool, self.tool, **self.kwargs)

    def wrapper(self) -> Callable[..., Env]:
        """The ``WRAPPER_FACTORY`` entry: ``partial(ToolEnvWrapper, tools=[factory], ...)``."""
        return partial(
            ToolEnvWrapper, tools=[self.tool_factory()], tool_reward=self.tool_reward,
            tool_success_reward=self.tool_success_reward, **self._optional_kwargs(),
        )

    def _optional_kwargs(self) -> dict[str, Any]:
        """The wrapper arguments that differ from ``ToolEnvWrapper``'s defaults (GEM's presets
        passed only the rewards and ``max_tool_uses``)."""
        out: dict[str, Any] = {"max_tool_uses": self.max_tool_uses}
        if self.tool_execute_error_reward:
            out["tool_execute_error_reward"] = self.tool_execute_error_reward
        if self.max_turns is not None:
            out["max_turns"] = self.max_turns
        if self.truncate_on_tool_limit:
            out["truncate_on_tool_limit"] = True
        return out


WRAPPER_FACTORY: dict[str, Callable[..., Env]] = {}


class ToolTable(UserDict):
    """:data:`TOOLS`: ``name -> ToolPreset``, kept in step with ``WRAPPER_FACTORY``.

    Setting a row sets ``WRAPPER_FACTORY[name]`` to the row's preset; deleting it deletes the entry.
    A name that ``WRAPPER_FACTORY`` already uses for a preset that is not a tool row is refused.
    """

    def __setitem__(self, name: str, row: ToolPreset) -> None:
        if not isinstance(name, str) or not name or "," in name or name != name.strip():
            raise ValueError(f"A tool preset's name must be a non-empty word without commas, got {name!r}.")
        if not isinstance(row, ToolPreset):
            raise TypeError(f"TOOLS[{name!r}] must be a ToolPreset(tool, kwargs, ...), got {type(row).__name__}.")
        if name in WRAPPER_FACTORY and name not in self.data:
            raise ValueError(f"{name!r} is already a WRAPPER_FACTORY preset that is not a tool; choose another name.")
        self.data[name] = row
        WRAPPER_FACTORY[name] = row.wrapper()

    def __delitem__(self, name: str) -> None:
        del self.data[name]
        WRAPPER_FACTORY.pop(name, None)

    def copy(self) -> dict[str, ToolPreset]:
        """The rows as a plain dict (a copy adds no presets)."""
        return dict(self.data)


#: The tool presets: one row per ``WRAPPER_FACTORY`` tool name (GEM's names and settings).
TOOLS: ToolTable = ToolTable({
    "python_tool": ToolPreset(PYTHON_CODE_TOOL, {"timeout": TOOL_TIMEOUT_S}, tool_reward=0.05, tool_success_reward=0.25),
    "python_tool_no_int_reward": ToolPreset(PYTHON_CODE_TOOL, {"timeout": TOOL_TIMEOUT_S}),
    "python_tool_no_int_reward_last_line_error": ToolPreset(
        PYTHON_CODE_TOOL, {"timeout": TOOL_TIMEOUT_S, "keep_error_last_line": True}
    ),
    "search_tool": ToolPreset(SEARCH_TOOL, {"topk": 3, "timeout": TOOL_TIMEOUT_S}, tool_reward=0.3),
    "search_tool_no_int_reward": ToolPreset(SEARCH_TOOL, {"topk": 3, "timeout": TOOL_TIMEOUT_S}),
})

WRAPPER_FACTORY.update({
    # observation formatting
    "concat": partial(ObservationWrapper, include_action=False, include_chat_template=False),
    "concat_with_action": partial(ObservationWrapper, include_action=True, include_chat_template=False),
    "concat_chat": partial(ObservationWrapper, include_action=True, include_chat_template=True),
    "concat_chat_on_reset": partial(
        ObservationWrapper, include_action=True, include_chat_template=False, apply_chat_template_on_reset=True
    ),
    # statistics (outermost)
    "episode_tracking": EpisodeTrackingWrapper,
})

TOKENIZER_REQUIRED = ("concat_chat", "concat_chat_on_reset")


def wrapper_stage(entry: Any) -> Optional[str]:
    """The stage (one of :data:`STAGES`) of a ``WRAPPER_FACTORY`` entry, or ``None`` when it declares none.

    A ``wrapper_stage`` attribute on the entry, on the callable a ``functools.partial`` wraps, or on
    the wrapper class comes first; otherwise the class it builds: ``ToolEnvWrapper`` (or a subclass)
    is ``"tool"``, ``ObservationWrapper`` ``"observation"``, ``EpisodeTrackingWrapper`` ``"tracking"``.
    Raises ``ValueError`` for a declared stage that is not one of :data:`STAGES`.
    """
    target = entry
    for _ in range(100):  # partials of partials; bounded
        declared = getattr(target, "wrapper_stage", None)
        if declared is not None:
            if declared not in STAGES:
                raise ValueError(f"wrapper_stage must be one of {STAGES}, got {declared!r} (on {target!r}).")
            return declared
        if not isinstance(target, partial):
            break
        target = target.func
    if isinstance(target, type):
        for cls, stage in _STAGE_CLASSES:
            if issubclass(target, cls):
                return stage
    return None


def get_wrapper_fns(wrappers: Union[str, Sequence[str], None], tokenizer: Any = None) -> list[Callable[[Env], Env]]:
    """The wrapper callables named in ``wrappers`` (``"a,b,c"`` or a list), in that order.

    Raises ``KeyError`` for an unknown name (listing the valid ones) and ``ValueError`` when a
    chat-template wrapper is asked for without a ``tokenizer``. Logs a warning when the named
    presets are out of stage order (:func:`wrapper_stage`: tools, then observation, then tracking);
    a preset without a stage is not checked.
    """
    if not wrappers:
        return []
    names = [w.strip() for w in wrappers.split(",")] if isinstance(wrappers, str) else [str(w).strip() for w in wrappers]
    names = [n for n in names if n]
    fns: list[Callable[[Env], Env]] = []
    stages: list[int] = []
    for name in names:
        if name not in WRAPPER_FACTORY:
            close = difflib.get_close_matches(name, WRAPPER_FACTORY, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise KeyError(f"Unknown wrapper {name!r}.{hint} Valid names: {', '.join(WRAPPER_FACTORY)}.")
        fn = WRAPPER_FACTORY[name]
        stage = wrapper_stage(fn)
        if stage is not None:
            stages.append(STAGES.index(stage))
        if name in TOKENIZER_REQUIRED:
            if tokenizer is None:
                raise ValueError(f"Wrapper {name!r} renders a chat template and needs tokenizer=... (a transformers tokenizer).")
            fn = partial(fn, tokenizer=tokenizer)
        fns.append(fn)
    if stages != sorted(stages):
        logger.warning("Wrappers %s are out of the usual order (tools, then observation, then episode_tracking).", names)
    return fns
