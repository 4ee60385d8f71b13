"""Terminal tasks in a sandboxed shell, judged by hidden tests outside the agent's reach (docs/terminal.md).

``from gem.envs.terminal import TerminalEnv, TerminalTask`` works; the classes (and the sandbox they
use) load on first use, because ``import gem`` imports this package for the task ids only.
"""

from typing import Any

# name -> module that defines it (imported when the name is first asked for)
_LAZY = {
    "TerminalEnv": "gem.envs.terminal.env",
    "TerminalTask": "gem.envs.terminal.task",
    "Verdict": "gem.envs.terminal.verify",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
