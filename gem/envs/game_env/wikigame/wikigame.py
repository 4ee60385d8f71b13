"""The Wikipedia Game: reach a target article from a start article by following links.

Ids ``game:WikiGame-v0-easy`` (shortest path of 2-3 links, 30 turns) and ``game:WikiGame-v0-hard``
(4-6 links, 15 turns) play on the bundled offline wiki; ``backend="kiwix"`` or ``"mw"`` (with
``trawler_kwargs``) play on real Wikipedia, with random start and target pages as in GEM.

The action is the exact title of a page to visit, in ``\\boxed{}``; ``\\boxed{<PREV_PAGE>}``
backtracks in the variants that allow it (:mod:`.dynamics`). Rewards (:class:`.rewards.WikiGameReward`):
1 on reaching the target, -0.05 per page visited, -0.2 for a title that is not a link of the current
page (the agent stays) or an unreadable action, 0 when turns run out (truncated) or at a dead end.
Every step's ``info["suffix"]`` shows the current page's summary and its links.
"""

from __future__ import annotations

import re
from typing import Any, Optional, Union

from gem.envs.game_env._prompts import GAME_OVER_SUFFIX
from gem.core import Agent, Env, StepResult
from gem.envs.game_env.wikigame.backend import BACKENDS, BaseWikiTrawler, OfflineWikiTrawler
from gem.envs.game_env.wikigame.dynamics import VARIANTS, WikiGameDynamics
from gem.envs.game_env.wikigame.errors import BackendFailureException
from gem.envs.game_env.wikigame.rewards import WikiGameReward
from gem.envs.game_env.wikigame.wikipage import WikipediaPage
from gem.params import Param, check_params
from gem.utils.parsing import extract_last_boxed_answer

PREV_PAGE = "<PREV_PAGE>"
SUMMARY_UNITS = ("characters", "words", "sentences")
MAX_TITLE_CHARS = 300


class WikiGameEnv(Env):
    """Navigate from a start article to a target article (see the module docstring).

    Args:
        max_turns: pages the agent may try to visit; the last one truncates the episode.
        backend: ``"offline"`` (bundled wiki), ``"kiwix"`` or ``"mw"``.
        trawler_kwargs: the backend's arguments (``path`` for offline; ``url``, ``zimfile``,
            ``query_delay_ms``, ``query_use_cache`` ... for the network backends).
        page_summary_length: ``(n, unit)``, unit one of characters, words, sentences.
        variant: ``noregrets``, ``oneback``, ``freenav`` or ``eidetic``.
        shortest_path: ``(min, max)`` links between start and target (offline backend only).
    """

    VALID_BACKENDS = BACKENDS
    VALID_SUMMARY_UNITS = list(SUMMARY_UNITS)
    VALID_VARIANTS = VARIANTS
    # The game's own reward levels (class defaults; settable per instance like every env's).
    success_reward = WikiGameReward.success_reward
    fail_reward = WikiGameReward.fail_reward
    internal_step_reward = WikiGameReward.internal_step_reward
    invalid_action_reward = WikiGameReward.invalid_action_reward
    format_error_reward = WikiGameReward.format_error_reward

    PARAMS = (
        Param("max_turns", int, "pages visited before the episode is cut", min=1, client={"max": 200}),
        Param("backend", str, "where pages come from", choices=tuple(BACKENDS), client=False),
        Param("variant", str, "the navigation rules", choices=tuple(VARIANTS)),
        Param("shortest_path", tuple, "(min, max) clicks of the shortest path from start to target "
              "(None: any); offline backend only", min=1, length=(2, 2), nullable=True, client={"max": 10}),
    )

    def __init__(
        self,
        max_turns: int = 10,
        backend: str = "offline",
        trawler_kwargs: Optional[dict[str, Any]] = None,
        page_summary_length: Union[tuple[int, str], list] = (100, "characters"),
        variant: str = "noregrets",
        shortest_path: Optional[Union[tuple[int, int], list]] = None,
        **_: Any,
    ) -> None:
        check_params(self, locals())
        if not (isinstance(page_summary_length, (tuple, list)) and len(page_summary_length) == 2
                and isinstance(page_summary_length[0], int) and page_summary_length[0] >= 0):
            raise ValueError(f"page_summary_length must be (n >= 0, unit), got {page_summary_length!r}.")
        length, unit = page_summary_length
        if unit not in SUMMARY_UNITS:
            raise ValueError(f"Invalid page_summary_length unit {unit!r}; valid options are: {list(SUMMARY_UNITS)}.")
        if backend not in BACKENDS:
            raise ValueError(f"Invalid backend {backend!r}; valid options are: {list(BACKENDS)}.")
        if variant not in VARIANTS:
            raise ValueError(f"Invalid variant {variant!r}; valid options are: {list(VARIANTS)}.")
        if shortest_path is not None:
            low, high = shortest_path
            if not (isinstance(low, int) and isinstance(high, int) and 1 <= low <= high):
                raise ValueError(f"shortest_path must be (min, max) with 1 <= min <= max, got {shortest_path!r}.")
            if backend != "offline":
                raise ValueError("shortest_path needs the offline backend (it knows the whole link graph).")
        self.max_turns = max_turns
        self.page_summary_length, self.page_summary_length_unit = int(length), unit
        self.backend = backend
        self.trawler: BaseWikiTrawler = BACKENDS[backend](**(trawler_kwargs or {}))
        self.variant = variant
        self.dynamics: WikiGameDynamics = VARIANTS[variant]()
        self.shortest_path = None if shortest_path is None else (int(shortest_path[0]), int(shortest_path[1]))
        self.turn_count = 0
        self.page_history: list[WikipediaPage] = []
        self.backtracked = False

    # ------------------------------------------------------------------ text
    def _page_summary(self, page: WikipediaPage) -> str:
        n, content = self.page_summary_length, page.content
        if self.page_summary_length_unit == "characters":
            return content[:n]
        if self.page_summary_length_unit == "words":
            return " ".join(content.split()[:n])
        return " ".join(re.split(r"(?<=[.!?])\s+(?=[A-Z])", content)[:n])

    def _neighbors_text(self, page: WikipediaPage) -> str:
        return "\n- " + "\n- ".join(f"\\boxed{{{link}}}" for link in self.dynamics.valid_pages(page))

    def _get_instructions(self) -> str:
        return (
            f"You are playing the Wikipedia Game, and must reach the target Wikipedia page within "
            f"{self.max_turns} turns.\nA neighboring page is any page linked from the current page. You start "
            "at one page and must reach the target page by visiting neighboring pages. To visit a neighboring "
            "page, enter its EXACT title wrapped in \\boxed{} (for example, \\boxed{Python (programming language)}).\n"
            + self.dynamics.get_instruction_snippet()
            + f"You started at '{self.current_page.title}' and your target page is '{self.target_page.title}'.\n"
            f"Here is a summary of the target page:\n{self._page_summary(self.target_page)}...\n"
            f"You can visit up to {self.max_turns} neighboring pages to reach the target page. Before you make a "
            "guess, mention the pages that could lead to the target quickly, justify the best one and enter its "
            "title in \\boxed{}.\n\n" + self.get_task_suffix()
        )

    def get_task_suffix(self) -> str:
        return (
            f"You are currently on the '{self.current_page.title}' page. Your target page is "
            f"'{self.target_page.title}'.\nHere is a summary of the page:\n{self._page_summary(self.current_page)}...\n"
            f"This page has the following neighboring pages: {self._neighbors_text(self.current_page)}\n"
            "Enter the title of the neighboring page you want to navigate to."
        )

    # ------------------------------------------------------------------ episodes
    def _random_page(self) -> WikipediaPage:
        for _ in range(10):
            page = self.trawler.random(self.rng)
            if isinstance(page, WikipediaPage) and "disambiguation" not in page.title.lower():
                return page
        raise BackendFailureException()

    def _draw_pages(self) -> tuple[WikipediaPage, WikipediaPage]:
        if self.shortest_path is not None and isinstance(self.trawler, OfflineWikiTrawler):
            graph = self.trawler.graph
            low, high = self.shortest_path
            for _ in range(200):
                start = self.rng.choice(graph.with_links)
                candidates = sorted(t for t, d in graph.distances(start).items() if low <= d <= high)
                if candidates:
                    pages = self.trawler.get_page(start), self.trawler.get_page(self.rng.choice(candidates))
                    return pages  # type: ignore[return-value]
            raise ValueError(f"No start/target pair of the wiki is {low}-{high} links apart.")
        start = self._random_page()
        target = self._random_page()
        for _ in range(10):
            if target.title != start.title:
                break
            target = self._random_page()
        return start, target

    def reset(self, seed: Optional[int] = None, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        super().reset(seed)
        start, target = self._draw_pages()
        return self._begin(start, target)

    def _reset_fixed_page(
        self, start_page_title: str, target_page_title: str, seed: Optional[int] = None
    ) -> tuple[str, dict[str, Any]]:
        """Start from and aim at the given titles (tests and evaluation sets)."""
        super().reset(seed)
        start, target = self.trawler.get_page(start_page_title), self.trawler.get_page(target_page_title)
        if start is None or target is None:
            missing = start_page_title if start is None else target_page_title
            raise KeyError(f"No page titled {missing!r} in the {self.backend} backend.")
        return self._begin(start, target)

    def _begin(self, start: WikipediaPage, target: WikipediaPage) -> tuple[str, dict[str, Any]]:
        self.start_page, self.target_page, self.current_page = start, target, start
        self.page_history = [start]
        self.backtracked = False
        self.turn_count = 0
        self.dynamics.reset()
        self.trawler.empty_cache()
        return self._get_instructions(), {"suffix": self.get_task_suffix()}

    # ------------------------------------------------------------------ steps
    def _step_result(self, text: str, reward: float, terminated: bool = False) -> StepResult:
        """A step's result; reaching ``max_turns`` without the target truncates with ``fail_reward``."""
        if not terminated and self.turn_count >= self.max_turns:
            text += (f"\nAt turn {self.turn_count}, you have reached the maximum number of turns without "
                     f"reaching the target page '{self.target_page.title}'.")
            return self._result(text, self.fail_reward, False, True, self._info(False, ended=True))
        return self._result(text, reward, terminated, False, self._info(False, ended=terminated))

    def _info(self, success: bool, ended: bool = False) -> dict[str, Any]:
        """A step's info; once the game has ended its suffix asks for nothing more."""
        return {"suffix": GAME_OVER_SUFFIX if ended else self.get_task_suffix(), "success": success,
                "turn": self.turn_count, "path": [p.title for p in self.page_history]}

    def _step(self, action: str) -> StepResult:
        self.turn_count += 1
        title = extract_last_boxed_answer(action) if isinstance(action, str) else None
        if not title or len(title) > MAX_TITLE_CHARS:
            text = (f"At turn {self.turn_count}, you did not provide a valid page title; enter one neighboring "
                    "page's exact title in \\boxed{}.")
            return self._step_result(text, self.format_error_reward)
        if title == PREV_PAGE:
            return self.dynamics.handle_backtrack(self)
        if title not in self.dynamics.valid_pages(self.current_page):
            text = self.dynamics.construct_invalid_obs(self.turn_count, self.current_page, title)
            return self._step_result(text, self.invalid_action_reward)
        next_page = self.trawler.get_page(title)
        if next_page is None:
            raise BackendFailureException(f"The {self.backend} backend could not load the page {title!r}.")
        if next_page.title == self.target_page.title:
            self.current_page = next_page
            self.page_history.append(next_page)
            self.backtracked = False
            text = f"Congratulations! You have reached the target page '{self.target_page.title}' in {self.turn_count} turns."
            return self._result(text, self.success_reward, True, False, self._info(True, ended=True))
        if not self.dynamics.valid_pages(next_page):
            return self.dynamics.handle_dead_end(self, next_page)
        self.current_page = next_page
        self.page_history.append(next_page)
        self.backtracked = False
        text = (f"At turn {self.turn_count}, you navigated to the '{next_page.title}' page. "
                f"Here is a summary of the page:\n{self._page_summary(next_page)}...\n"
                f"This page has the following neighboring pages: {self._neighbors_text(next_page)}\n")
        return self._step_result(text, self.internal_step_reward)

    # ------------------------------------------------------------------ helpers
    def sample_random_action(self) -> str:
        links = self.dynamics.valid_pages(self.current_page)
        return f"\\boxed{{{self.action_rng.choice(links)}}}" if links else f"\\boxed{{{PREV_PAGE}}}"

    def make_solver(self) -> Agent:
        """Follows a shortest path to the target (offline backend: it knows the link graph)."""
        if not isinstance(self.trawler, OfflineWikiTrawler):
            raise NotImplementedError("The WikiGame solver needs the offline backend's link graph.")
        return WikiGameSolver(self)


class WikiGameSolver(Agent):
    """Clicks the next title on a shortest path from the current page to the target."""

    def __init__(self, env: WikiGameEnv) -> None:
        self.env = env

    def act(self, observation: str, info: Optional[dict[str, Any]] = None) -> str:
        env = self.env
        path = env.trawler.shortest_path(env.current_page.title, env.target_page.title)
        if not path or len(path) < 2:
            return env.sample_random_action()
        return f"\\boxed{{{path[1]}}}"
