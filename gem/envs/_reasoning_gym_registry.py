"""The ``rg:`` namespace, listed without importing reasoning-gym.

reasoning-gym takes seconds to import (it imports sympy, matplotlib...), so its task names and
one-line descriptions are kept in ``reasoning_gym_tasks.json`` next to this module: ``gem list``
reads that file, and only ``gem.make("rg:...")`` imports reasoning-gym. The file is rebuilt from the
installed reasoning-gym with ``python -m gem.envs._reasoning_gym_registry`` (a test checks that it
matches whenever reasoning-gym is installed). Without reasoning-gym the ids are still listed, and
making one raises the missing-extra error.
"""

from __future__ import annotations

import copy
import functools
import os
import re
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:
    from pathlib import Path

from gem.envs.registration import EnvSpec
from gem.errors import install_hint

PREFIX = "rg:"
ENTRY_POINT = "gem.envs.reasoning_gym:ReasoningGymEnv"
DEFAULT_KWARGS = {"size": 500, "seed": 42}
EXTRA = "rg"
_TASKS_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reasoning_gym_tasks.json")


def __getattr__(name: str) -> Any:  # TASKS_FILE, a Path; pathlib loads only when it is asked for
    if name == "TASKS_FILE":
        from pathlib import Path

        return Path(_TASKS_PATH)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def installed() -> bool:
    """Whether reasoning-gym can be imported (checked without importing it)."""
    import importlib.util

    return importlib.util.find_spec("reasoning_gym") is not None


@functools.lru_cache(maxsize=1)
def cached_tasks() -> dict[str, str]:
    """``{task name: description}`` as shipped in :data:`TASKS_FILE`."""
    import json  # here: `import gem` never reads the list, `gem list` and `gem.make("rg:...")` do

    with open(_TASKS_PATH, encoding="utf-8") as fh:
        return dict(json.load(fh)["tasks"])


@functools.lru_cache(maxsize=1)
def _installed_names() -> frozenset[str]:
    """The task names of the installed reasoning-gym (imports it: only for names not in the cache)."""
    if not installed():
        return frozenset()
    import reasoning_gym

    return frozenset(reasoning_gym.factory.DATASETS)


def _first_line(doc: Optional[str]) -> str:
    doc = (doc or "").strip()
    return doc.splitlines()[0].strip().rstrip(".") if doc else ""


def describe(name: str, dataset_cls: type, config_cls: Optional[type] = None) -> str:
    """A task's one-line description, from reasoning-gym's own text: the dataset class's docstring,
    else its config class's ("Configuration for X generation"), else its module's, else the name."""
    import sys

    text = _first_line(dataset_cls.__doc__)
    if not text and config_cls is not None:
        config_doc = _first_line(config_cls.__doc__)
        if config_doc.startswith("Configuration for "):
            subject = re.sub(r"\s*(dataset|task)?\s*generation$", "", config_doc[len("Configuration for "):])
            text = f"{subject} tasks"
    if not text:
        text = _first_line(getattr(sys.modules.get(dataset_cls.__module__), "__doc__", None))
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a Markdown link: keep its words
    text = re.sub(r":?\s*https?://\S+", "", text).strip()  # a bare address
    if not text:
        return f"reasoning-gym task {name}"
    text = text[:1].lower() + text[1:] if not text[1:2].isupper() else text
    return text if len(text) <= 100 else text[:99].rstrip() + "…"


def tasks_from_reasoning_gym() -> dict[str, str]:
    """``{task name: description}`` read from the installed reasoning-gym (imports it)."""
    import reasoning_gym

    return {
        name: describe(name, entry[0], entry[1] if len(entry) > 1 else None)
        for name, entry in sorted(reasoning_gym.factory.DATASETS.items())
    }


# Presets: ``rg:<task>-<level>`` is the task with a fixed, smaller config (a start a small model can
# learn from). The config is reasoning-gym's own; the reward is the task's scorer, as for ``rg:<task>``.
PRESETS: dict[str, tuple[str, dict[str, Any], str]] = {
    "basic_arithmetic-easy": (
        "basic_arithmetic",
        {"config": {"min_terms": 2, "max_terms": 2, "min_digits": 1, "max_digits": 1, "operators": ["+", "-"],
                    "allow_parentheses": False, "allow_negation": False},
         "use_format_error_reward": True},
        "two numbers from 0 to 10 added or subtracted; a reply without a \\boxed{} answer pays -0.1",
    ),
}


def _spec(name: str, description: str, task: Optional[str] = None, kwargs: Optional[dict[str, Any]] = None) -> EnvSpec:
    return EnvSpec(
        f"{PREFIX}{name}",
        ENTRY_POINT,
        kwargs={"name": task or name, **DEFAULT_KWARGS, **(kwargs or {})},
        family="rg",
        description=description or f"reasoning-gym task {name}",
        extra=EXTRA,
    )


def resolve(env_id: str) -> Optional[EnvSpec]:
    """The spec of ``rg:<name>``, or ``None`` for a name reasoning-gym does not have.

    Without reasoning-gym installed the spec still exists (for the shipped names); making it raises
    the error that names the ``rg`` extra.
    """
    name = env_id[len(PREFIX) :]
    if not name:
        return None
    tasks = cached_tasks()
    if name in tasks:
        return _spec(name, tasks[name])
    if name in PRESETS:
        task, kwargs, description = PRESETS[name]
        return _spec(name, description, task, copy.deepcopy(kwargs))
    if name in _installed_names():  # a newer reasoning-gym than the shipped list
        return _spec(name, "")
    return None


def list_ids() -> list[str]:
    """Every ``rg:`` id, from the shipped list (reasoning-gym is not imported)."""
    return [f"{PREFIX}{n}" for n in (*cached_tasks(), *PRESETS)]


def missing_note() -> Optional[str]:
    """What ``gem list`` says under the family when reasoning-gym is not installed."""
    return None if installed() else f"needs the {EXTRA!r} extra: {install_hint(EXTRA)}"


def write_tasks_file(path: Optional["Path"] = None) -> dict[str, str]:
    """Rebuild :data:`TASKS_FILE` from the installed reasoning-gym; returns the tasks written."""
    from importlib.metadata import version

    from pathlib import Path

    path = Path(_TASKS_PATH) if path is None else Path(path)
    tasks = tasks_from_reasoning_gym()
    payload = {"reasoning_gym_version": version("reasoning_gym"), "tasks": tasks}
    import json

    path.write_text(json.dumps(payload, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    cached_tasks.cache_clear()
    return tasks


if __name__ == "__main__":
    written = write_tasks_file()
    print(f"{len(written)} reasoning-gym tasks written to {_TASKS_PATH}")
