"""The constructor kwargs of the original GEM's envs, which ``gem.make`` accepts for every env.

``gem.envs.registration`` re-exports both names. :func:`ignore_kwargs` lets a class's own
constructor take the kwargs the original's took only to ignore them (when built without ``make``).
"""

from __future__ import annotations

import functools
from typing import Any, Iterable, Sequence


# Constructor kwargs of the original GEM's envs (gem-llm 0.1.0 and its main branch), by class.
# Those classes also took any other kwarg and ignored it (``**_``), and code written for them relies
# on that: ``make_vec`` hands the same ``**kwargs`` to every id, and a seed or ``use_mp`` goes to
# games. ``make`` therefore accepts every name below for every env: an env that has no use for it
# ignores it (logged once per env class, see docs/compat.md). Any other unknown name is an error
# that suggests the closest accepted kwarg.
ORIGINAL_ENV_KWARGS: dict[str, tuple[str, ...]] = {
    "GuessTheNumberEnv": ("min_number", "max_number", "max_turns"),
    "MastermindEnv": ("code_length", "num_numbers", "duplicate_numbers", "max_turns"),
    "MinesweeperEnv": ("rows", "cols", "num_mines", "max_turns"),
    "WordleEnv": ("word_length", "only_real_words", "max_turns"),
    "HangmanEnv": ("word_length", "hardcore", "max_turns"),
    "WordSearchEnv": ("hardcore", "max_turns", "num_words"),
    "CrosswordsEnv": ("hardcore", "max_turns", "num_words"),
    "FifteenPuzzleEnv": ("max_turns", "num_rows"),
    "SudokuEnv": ("clues", "max_turns", "scale"),
    "TowerofHanoiEnv": ("num_disks", "max_turns"),
    "Game2048Env": ("target_tile", "max_turns", "board_size"),
    "SokobanEnv": ("dim_room", "room_size", "max_turns", "num_boxes"),
    "MathEnv": ("dataset_name", "split", "dataset", "question_key", "answer_key", "seed", "use_mp", "eval"),
    "MathVisualEnv": ("dataset_name", "split", "dataset", "image_key", "question_key", "answer_key", "seed",
                      "use_mp", "eval"),
    "CodeEnv": ("dataset_name", "split", "dataset", "question_key", "test_key", "seed", "max_workers",
                "max_tests", "verbose", "sandbox_type"),
    "QaEnv": ("dataset_name", "split", "dataset", "question_key", "answer_key", "seed", "extract_boxed",
              "load_from_cache_file"),
    "ReasoningGymEnv": ("name", "size", "seed"),
    "MCPMarkEnv": ("mcp_service", "tasks", "seed"),
}
ORIGINAL_KWARG_NAMES: frozenset[str] = frozenset(n for names in ORIGINAL_ENV_KWARGS.values() for n in names)

_ignored_logged: set[tuple[Any, str]] = set()


def note_ignored_kwargs(env_id: str, factory: Any, names: Iterable[str]) -> None:
    """Log once per env class and name that ``gem.make`` dropped an original GEM kwarg it has no use for."""
    for name in names:
        key = (factory, name)
        if key not in _ignored_logged:
            _ignored_logged.add(key)
            import logging  # here, not at import: `import gem` stays light

            # gem.envs.registration: where gem.make's messages have always come from
            logging.getLogger("gem.envs.registration").warning(
                "%s ignores %s=...: the original GEM accepted it (for other envs, or without using it); "
                "it has no effect here.", env_id, name,
            )


def ignore_kwargs(cls: type, names: Sequence[str]) -> None:
    """Let ``cls(...)`` take each of ``names`` and drop it (logged once per class and name).

    The original's constructors took any kwarg and ignored it (``**_``); code that builds such an
    env directly passes them. ``cls.__init__``'s signature stays its own (``inspect.signature``
    shows it), so ``gem.make`` drops these names before the call, by its own rule.
    """
    init = cls.__init__
    names = tuple(names)

    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        given = [name for name in names if name in kwargs]
        if given:
            for name in given:
                del kwargs[name]
            note_ignored_kwargs(type(self).__name__, cls, given)
        init(self, *args, **kwargs)

    cls.__init__ = __init__  # type: ignore[misc]
