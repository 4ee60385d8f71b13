"""WikiGame's rule variants: which pages the agent may visit, backtracking and dead ends.

- ``noregrets`` (default): only the current page's links; no ``<PREV_PAGE>``; a dead end ends the game.
- ``oneback``: ``<PREV_PAGE>`` goes back one page, never twice in a row; a dead end sends the agent
  back at the cost of one more turn.
- ``freenav``: ``<PREV_PAGE>`` as often as wanted; dead ends as ``oneback``.
- ``eidetic``: any page linked from any page seen this episode; no backtracking.
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, Any, Protocol

from gem.utils.text import preview

if TYPE_CHECKING:
    from gem.envs.game_env.wikigame.wikipage import WikipediaPage

StepTuple = tuple[str, float, bool, bool, dict[str, Any]]


class GameState(Protocol):
    """What a rule variant reads and moves in the game (a
    :class:`~gem.envs.game_env.wikigame.wikigame.WikiGameEnv`, which holds the variant)."""

    current_page: "WikipediaPage"
    page_history: "list[WikipediaPage]"
    backtracked: bool
    turn_count: int
    invalid_action_reward: float
    internal_step_reward: float
    fail_reward: float

    def _step_result(self, text: str, reward: float, terminated: bool = False) -> StepTuple: ...

    def _page_summary(self, page: "WikipediaPage") -> str: ...


class WikiGameDynamics(abc.ABC):
    """One rule variant (see the module docstring)."""

    def reset(self) -> None:
        """Forget what the last episode left behind."""

    @abc.abstractmethod
    def get_instruction_snippet(self) -> str:
        """The movement rules, for the prompt."""

    def valid_pages(self, current_page: "WikipediaPage") -> list[str]:
        """Titles the agent may visit from ``current_page``."""
        return current_page.links

    def construct_invalid_obs(self, turn_count: int, current_page: "WikipediaPage", next_page_title: str) -> str:
        guess = preview(next_page_title, 120)
        lowered = next_page_title.lower()
        close = next((link for link in self.valid_pages(current_page) if lowered and lowered in link.lower()), None)
        hint = f"Did you mean '{close}'? " if close else ""
        return (
            f"At turn {turn_count}, you guessed '{guess}', which is not a neighboring page of "
            f"'{current_page.title}'. {hint}You must match **exactly** one of the neighboring page titles."
        )

    def handle_backtrack(self, env: GameState) -> StepTuple:
        return env._step_result(
            f"At turn {env.turn_count}, you attempted to backtrack to the previous page, but backtracking "
            "is not allowed in this variant of the Wikipedia Game.",
            env.invalid_action_reward,
        )

    def handle_dead_end(self, env: GameState, next_page: "WikipediaPage") -> StepTuple:
        env.current_page = next_page
        env.page_history.append(next_page)
        return env._step_result(
            f"At turn {env.turn_count}, you navigated to the '{next_page.title}' page, which is a dead-end "
            "page with no neighboring pages. The game is over.",
            env.fail_reward,
            terminated=True,
        )


class NoRegretsDynamics(WikiGameDynamics):
    def get_instruction_snippet(self) -> str:
        return (
            "Choose wisely, as you may NOT backtrack; you can only visit neighboring pages (though you may "
            "revisit pages). Trying to backtrack is an illegal move and still counts towards your turns.\n"
        )


class EideticDynamics(NoRegretsDynamics):
    """Any page whose link has appeared on a page seen this episode."""

    def __init__(self) -> None:
        self.seen: dict[str, None] = {}

    def reset(self) -> None:
        self.seen = {}

    def valid_pages(self, current_page: "WikipediaPage") -> list[str]:
        for link in current_page.links:
            self.seen.setdefault(link, None)
        return list(self.seen)

    def get_instruction_snippet(self) -> str:
        return (
            "You may visit any page whose link appeared on any page you have seen in this game, not only "
            "the current page's links. You may NOT backtrack with <PREV_PAGE>.\n"
        )


class OneBackDynamics(WikiGameDynamics):
    allow_repeat_backtrack = False

    def get_instruction_snippet(self) -> str:
        extra = "" if self.allow_repeat_backtrack else " You may NOT backtrack twice in a row."
        return (
            "If you wish, you may respond \\boxed{<PREV_PAGE>} to return to the previous page; it counts "
            f"towards your maximum number of turns.{extra}\n"
        )

    def handle_backtrack(self, env: GameState) -> StepTuple:
        if len(env.page_history) < 2:
            text = (f"At turn {env.turn_count}, you attempted to backtrack to the previous page, but there "
                    "is no previous page to return to.")
            return env._step_result(text, env.invalid_action_reward)
        if env.backtracked and not self.allow_repeat_backtrack:
            text = (f"At turn {env.turn_count}, you attempted to backtrack again, but you may not "
                    "backtrack twice in a row.")
            return env._step_result(text, env.invalid_action_reward)
        env.page_history.pop()
        env.current_page = env.page_history[-1]
        env.backtracked = True
        text = (f"At turn {env.turn_count}, you backtracked to the previous page '{env.current_page.title}'. "
                f"Here is a summary of the page:\n{env._page_summary(env.current_page)}...\n")
        return env._step_result(text, env.internal_step_reward)

    def handle_dead_end(self, env: GameState, next_page: "WikipediaPage") -> StepTuple:
        env.backtracked = True
        env.turn_count += 1
        text = (f"At turn {env.turn_count - 1}, you reached the dead-end page '{next_page.title}' with no "
                f"neighboring pages and were sent back to '{env.current_page.title}' at the cost of an extra "
                f"turn; you are now at turn {env.turn_count}.")
        return env._step_result(text, 2 * env.internal_step_reward)


class FreeNavDynamics(OneBackDynamics):
    allow_repeat_backtrack = True


VARIANTS: dict[str, type[WikiGameDynamics]] = {
    "noregrets": NoRegretsDynamics,
    "oneback": OneBackDynamics,
    "freenav": FreeNavDynamics,
    "eidetic": EideticDynamics,
}
