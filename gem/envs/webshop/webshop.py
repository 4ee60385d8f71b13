"""WebShop: buy the product an instruction describes by searching and clicking through a shop.

Ids ``webshop:{train,test}-{html,text,text_rich}`` (GEM's). The agent's action is
``\\boxed{search[query]}`` or ``\\boxed{click[button, ASIN or option]}`` (the bare
``search[...]``/``click[...]`` is read too). Pages: search, results (10 per page, 50 results, with
``Next >``/``< Prev``), item (options, price, rating, ``Description``/``Features``/``Reviews``,
``Buy Now``), the item's sub-pages, and the purchase. ``Buy Now`` ends the episode with WebShop's
reward (:mod:`gem.envs.webshop.goal`); an action that cannot be read, a click on something not on
the page or a search where there is no search bar gets ``format_error_reward`` and the episode
ends after more than ``error_tolerance`` of them. ``max_turns`` truncates.

The catalog is bundled (offline); ``data_dir=`` reads the original WebShop files instead
(:mod:`gem.envs.webshop.products`). Search is BM25 over the catalog and needs ``bm25s``
(``pip install -e ".[search]"`` in the GEM checkout).
"""

from __future__ import annotations

import json
import re
from typing import Any, Optional
from urllib.parse import quote

from gem.core import Env, StepResult
from gem.envs.webshop.goal import get_reward
from gem.envs.webshop.pages import (
    BACK_TO_SEARCH,
    BUY_NOW,
    NEXT_PAGE,
    OBSERVATION_MODES,
    PREV_PAGE,
    SUB_PAGES,
    Element,
    clickable_name,
    render,
)
from gem.envs.webshop.products import SPLITS, Store, get_store
from gem.errors import DependencyNotInstalled
from gem.params import Param, check_params
from gem.utils.parsing import extract_last_boxed_answer
from gem.utils.text import preview

PRODUCT_WINDOW = 10
BASE_URL = "http://127.0.0.1:3000"
MAX_QUERY_CHARS = 500
_ACTION = re.compile(r"\s*([A-Za-z_]+)\s*\[(.*)\]\s*", re.S)

WEBSHOP_INSTRUCTIONS = (
    "You are shopping online using a web browser.\n"
    "You need to buy a designated product given an instruction on our shopping site.\n"
    "You can perform two types of actions: search[keywords] or click[value].\n"
    "- search[keywords] searches the shop (only on a page with a search bar).\n"
    "- click[Buy Now] purchases the item you are viewing, with the options you chose.\n"
    "- click[Next >] / click[< Prev] page through results or go back; click[Back to Search] starts over.\n"
    "- click[<product id>] opens a product; click[<option value>] selects a buying option (size, color, ...).\n"
    "Only the action wrapped in \\boxed{} is read, e.g. \\boxed{search[laptop]} or \\boxed{click[Buy Now]}.\n"
)


def parse_action(text: str) -> tuple[Optional[str], Optional[str]]:
    """``("search"|"click"|other, argument)`` from an action, or ``(None, None)`` if unreadable."""
    if not isinstance(text, str):
        return None, None
    inner = extract_last_boxed_answer(text)
    candidate = inner if inner is not None else text
    match = _ACTION.fullmatch(candidate[:100_000])
    if match is None:
        return None, None
    return match.group(1).lower(), match.group(2).strip()


class WebshopEnv(Env):
    """Buy the product the instruction describes (see the module docstring).

    Args:
        observation_mode: ``"html"``, ``"text"``, ``"text_rich"`` or ``"url"`` (the page's address).
        split: ``"train"`` or ``"test"`` goals.
        max_turns: actions per episode; the last one truncates the episode.
        error_tolerance: unreadable or impossible actions allowed; one more ends the episode.
        format_error_reward: the reward of such an action.
        show_attrs: show each product's attributes on its item page (as WebShop's option).
        data_dir: read the original WebShop files from this directory instead of the bundled catalog.
        stop_when_error: GEM's older switch: end at the first error (``error_tolerance=0``).
    """

    PARAMS = (
        Param("observation_mode", str, "how pages are shown", choices=OBSERVATION_MODES),
        Param("split", str, "which instructions episodes draw from", choices=SPLITS),
        Param("max_turns", int, "actions before the episode is cut", min=1, client={"max": 200}),
        Param("show_attrs", bool, "show each product's attributes"),
        Param("error_tolerance", int, "invalid actions allowed before the episode ends", min=0,
              client={"max": 200}),
        Param("format_error_reward", float, "the reward of an action that cannot be read",
              client={"min": -1.0, "max": 0.0}),
        Param("stop_when_error", bool, "end the episode at the first invalid action (None: as error_tolerance says)",
              nullable=True),
    )

    def __init__(
        self,
        observation_mode: str = "text",
        split: str = "train",
        max_turns: int = 15,
        show_attrs: bool = False,
        session: Optional[Any] = None,
        session_prefix: Optional[str] = None,
        error_tolerance: int = 0,
        format_error_reward: float = 0.0,
        stop_when_error: Optional[bool] = None,
        data_dir: Optional[str] = None,
        **_: Any,
    ) -> None:
        check_params(self, locals())
        self.observation_mode = observation_mode
        self.split = split
        self.max_turns = max_turns
        self.show_attrs = bool(show_attrs)
        self.session = session
        self.session_prefix = session_prefix
        self.error_tolerance = 0 if stop_when_error else int(error_tolerance)
        self.format_error_reward = float(format_error_reward)
        self.data_dir = data_dir
        try:
            store = get_store(data_dir)
        except DependencyNotInstalled as exc:
            raise DependencyNotInstalled(
                f"WebShop searches its catalog with BM25: {exc}"
            ) from exc
        if not store.goals.get(split):
            raise ValueError(f"The {split!r} split of this catalog has no instructions.")
        self._state: dict[str, Any] = {}
        self._purchase_info: dict[str, Any] = {}
        self.goal: dict[str, Any] = {}
        self.instruction_text = ""
        self.turn_count = 0
        self.error_turn_count = 0

    # ------------------------------------------------------------------ data
    @property
    def store(self) -> Store:
        """The shared catalog (not part of the env's state: copies share it)."""
        return get_store(self.data_dir)

    @property
    def goals(self) -> list[dict[str, Any]]:
        return self.store.goals[self.split]

    # ------------------------------------------------------------------ the API
    def reset(
        self, seed: Optional[int] = None, session: Optional[Any] = None, instruction_text: Optional[str] = None, **kwargs: Any
    ) -> tuple[str, dict[str, Any]]:
        """Start shopping for one goal: ``session`` (an int) picks goal ``session % len(goals)``;
        otherwise the env's generator draws one. ``instruction_text`` replaces the shown text."""
        super().reset(seed)
        session = self.session if session is None else session
        if isinstance(session, int) and not isinstance(session, bool):
            index = session % len(self.goals)
        else:
            index = self.rng.randrange(len(self.goals))
        self.goal = self.goals[index]
        self.goal_index = index
        self.instruction_text = instruction_text if isinstance(instruction_text, str) else self.goal["instruction_text"]
        self.turn_count = 0
        self.error_turn_count = 0
        self._state = {"page": "search", "query": "", "results": [], "page_num": 1, "asin": None,
                       "options": {}, "sub": None, "visited": [], "bought": None}
        observation = WEBSHOP_INSTRUCTIONS + f"Instruction: {self.instruction_text}\n\n" + self.observation
        return observation, self._info()

    def _step(self, action: str) -> StepResult:
        self.turn_count += 1
        name, arg = parse_action(action)
        clickables = self.clickables()
        reward, terminated = 0.0, False
        info_extra: dict[str, Any] = {"parsed_action": f"{name}[{preview(arg, 100)}]" if name else None}
        if name == "search" and arg and self._state["page"] == "search":
            self._search(arg[:MAX_QUERY_CHARS])
            feedback = ""
        elif name == "click" and arg and arg.lower() in clickables:
            reward, terminated = self._click(clickables[arg.lower()])
            feedback = ""
            if terminated:
                info_extra.update(self._purchase_info)
        else:
            self.error_turn_count += 1
            reward = self.format_error_reward
            terminated = self.error_turn_count > self.error_tolerance
            feedback = self._error_text(name, arg, clickables) + "\n"
            if terminated:
                feedback += f"Too many invalid actions ({self.error_turn_count}); the episode is over.\n"
        truncated = not terminated and self.turn_count >= self.max_turns
        if truncated:
            feedback += f"You reached the limit of {self.max_turns} actions without buying.\n"
        info = {**self._info(), **info_extra}
        return self._result(feedback + self.observation, reward, terminated, truncated, info)

    def _error_text(self, name: Optional[str], arg: Optional[str], clickables: dict[str, Element]) -> str:
        if name is None:
            return "Invalid action: write \\boxed{search[keywords]} or \\boxed{click[value]}."
        if name == "search":
            if self._state["page"] != "search":
                return f"Invalid action: there is no search bar on this page; click[{BACK_TO_SEARCH}] first."
            return "Invalid action: search[...] needs keywords."
        if name == "click":
            return (f"Invalid action: {preview(arg, 100)!r} is not clickable on this page; "
                    f"clickable: {', '.join(e.text for e in clickables.values())}.")
        return f"Invalid action: unknown action {preview(name, 40)!r}; use search[...] or click[...]."

    # --------------------------------------------------------------- transitions
    def _search(self, query: str) -> None:
        self._state.update(page="results", query=query, results=self.store.search(query), page_num=1,
                           asin=None, options={}, sub=None)

    def _click(self, element: Element) -> tuple[float, bool]:
        state = self._state
        text = element.text
        if element.kind == "product":
            state.update(page="item", asin=text, options={}, sub=None)
            if text not in state["visited"]:
                state["visited"].append(text)
        elif element.kind == "option":
            state["options"] = {**state["options"], element.group: text}
        elif text == BACK_TO_SEARCH:
            state.update(page="search", query="", results=[], page_num=1, asin=None, options={}, sub=None)
        elif text == NEXT_PAGE:
            state["page_num"] += 1
        elif text == PREV_PAGE:
            if state["page"] == "sub":
                state.update(page="item", sub=None)
            elif state["page"] == "item":
                state.update(page="results", asin=None, options={})
            else:
                state["page_num"] -= 1
        elif text in SUB_PAGES:
            state.update(page="sub", sub=text)
        elif text == BUY_NOW:
            return self._buy(), True
        return self.internal_step_reward, False

    def _buy(self) -> float:
        product = self.store.by_asin[self._state["asin"]]
        options = dict(self._state["options"])
        reward, parts = get_reward(product, self.goal, product["price"], options, self.store.attribute_words)
        self._state.update(page="done", bought={"asin": product["asin"], "options": options, "reward": reward})
        self._purchase_info = {"reward_parts": parts, "purchased": product["asin"], "options": options,
                               "success": reward >= 1.0, "correct": reward >= 1.0}
        return self.success_reward * reward  # the purchase's score (0..1) as a share of the success reward

    # ------------------------------------------------------------------ pages
    def page(self) -> list[Element]:
        """The elements of the current page."""
        state = self._state
        kind = state["page"]
        if kind == "search":
            return [Element("heading", "WebShop"), Element("search_input", "Search")]
        if kind == "results":
            results = state["results"]
            first = (state["page_num"] - 1) * PRODUCT_WINDOW
            shown = results[first:first + PRODUCT_WINDOW]
            page = [Element("button", BACK_TO_SEARCH),
                    Element("text", f"Page {state['page_num']} (Total results: {len(results)})")]
            if state["page_num"] > 1:
                page.append(Element("button", PREV_PAGE))
            if first + PRODUCT_WINDOW < len(results):
                page.append(Element("button", NEXT_PAGE))
            if not results:
                page.append(Element("text", f"No results for {preview(state['query'], 100)!r}."))
            for asin in shown:
                product = self.store.by_asin[asin]
                page += [Element("product", asin, selected=asin in state["visited"]),
                         Element("text", product["name"]), Element("text", f"${product['price']:.2f}")]
            return page
        if kind == "done":
            bought = state["bought"]
            chosen = ", ".join(f"{g}: {v}" for g, v in bought["options"].items()) or "none"
            return [Element("text", "Thank you for shopping with us!"),
                    Element("text", f"Purchased: {bought['asin']}"), Element("text", f"Options: {chosen}"),
                    Element("text", "Your score (min 0.0, max 1.0)"), Element("text", f"{bought['reward']:.2f}")]
        product = self.store.by_asin[state["asin"]]
        page = [Element("button", BACK_TO_SEARCH), Element("button", PREV_PAGE)]
        if kind == "sub":
            return page + self._sub_page(product, state["sub"])
        for group, values in product["options"].items():
            page.append(Element("option_group", group))
            page += [Element("option", v, group=group, selected=state["options"].get(group) == v) for v in values]
        page += [Element("text", product["name"]), Element("text", f"Price: ${product['price']:.2f}"),
                 Element("text", f"Rating: {product['rating'] if product['rating'] is not None else 'N.A.'}")]
        if self.show_attrs:
            page.append(Element("text", "Attributes: " + ", ".join(product["attributes"])))
        page += [Element("button", s) for s in SUB_PAGES]
        page.append(Element("button", BUY_NOW))
        return page

    @staticmethod
    def _sub_page(product: dict[str, Any], sub: str) -> list[Element]:
        if sub == "Description":
            return [Element("text", product["description"] or "No description.")]
        if sub == "Features":
            return [Element("text", b) for b in product["bullet_points"]] or [Element("text", "No features listed.")]
        reviews = product["reviews"]
        if not reviews:
            return [Element("text", "No reviews yet.")]
        return [Element("text", f"{r['score']}/5: {r['body']}") for r in reviews]

    def clickables(self) -> dict[str, Element]:
        """Lower-cased click targets of the current page (``Search`` is a search bar, not a click)."""
        out: dict[str, Element] = {}
        for element in self.page():
            name = clickable_name(element)
            if name is not None:
                out.setdefault(name.lower(), element)
        return out

    @property
    def observation(self) -> str:
        if self.observation_mode == "url":
            return self.url
        return render(self.page(), self.observation_mode)

    @property
    def url(self) -> str:
        """The current page's address in WebShop's URL scheme (the ``url`` observation mode)."""
        state = self._state
        session = f"{self.session_prefix or ''}{self.goal_index}"
        keywords = quote(state["query"] or "", safe="")
        options = quote(json.dumps(state["options"], sort_keys=True), safe="")
        page = state["page"]
        if page == "search":
            return f"{BASE_URL}/{session}"
        if page == "results":
            return f"{BASE_URL}/search_results/{session}/{keywords}/{state['page_num']}"
        if page == "done":
            return f"{BASE_URL}/done/{session}/{state['bought']['asin']}/{options}"
        item = f"{session}/{state['asin']}/{keywords}/{state['page_num']}"
        if page == "sub":
            return f"{BASE_URL}/item_sub_page/{item}/{state['sub']}/{options}"
        return f"{BASE_URL}/item_page/{item}/{options}"

    def get_available_actions(self) -> dict[str, Any]:
        """GEM's shape: ``{"has_search_bar": bool, "clickables": [lower-cased names]}``."""
        return {"has_search_bar": self._state.get("page") == "search", "clickables": list(self.clickables())}

    def get_task_suffix(self) -> str:
        available = self.get_available_actions()
        actions = [f"click[{e.text}]" for e in self.clickables().values()]
        if available["has_search_bar"]:
            actions.append("search[<your query>]")
        return (
            f"Your admissible actions of the current situation are: {actions}.\n"
            "Now it's your turn to take one action for the current step. Present it within \\boxed{}, "
            "for example \\boxed{search[...]} or \\boxed{click[...]}."
        )

    def get_task_prefix(self) -> str:
        return (f"You are shopping in the WebShop e-commerce environment. Your task is to: {self.instruction_text}.\n"
                f"Prior to this step, you have already taken {self.turn_count} step(s).\n")

    def _info(self) -> dict[str, Any]:
        return {"suffix": self.get_task_suffix(), "prefix": self.get_task_prefix(), "turn": self.turn_count}

    # ------------------------------------------------------------------ helpers
    def sample_random_action(self) -> str:
        rng = self.action_rng
        if self._state.get("page") == "search":
            words = self.instruction_text.split()
            query = " ".join(rng.sample(words, min(len(words), rng.randint(1, 4)))) or "product"
            return f"\\boxed{{search[{query}]}}"
        targets = [e.text for e in self.clickables().values()]
        if not targets:
            return "\\boxed{click[Back to Search]}"
        return f"\\boxed{{click[{rng.choice(targets)}]}}"

    def make_solver(self) -> Any:
        from gem.envs.webshop.solver import WebShopSolver

        return WebShopSolver(self)

    def __str__(self) -> str:
        return f"<WebshopEnv {self.split}-{self.observation_mode}>"


WebShopEnv = WebshopEnv  # the spelling some GEM code uses
