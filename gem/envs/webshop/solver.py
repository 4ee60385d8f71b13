"""A WebShop solver: search with the instruction, read the results, open the best match, pick the
options the instruction names and buy.

It reads what a shopper sees: the instruction, the current page's elements and the public
product pages (title, features, options, price) of the results shown; never the goal.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Optional, Protocol

from gem.core import Agent
from gem.envs.webshop.goal import attribute_matches, canon, contains_phrase
from gem.envs.webshop.pages import BUY_NOW, NEXT_PAGE

if TYPE_CHECKING:
    from gem.envs.webshop.pages import Element
    from gem.envs.webshop.products import Store


class Shop(Protocol):
    """What the solver reads of the shop (a :class:`~gem.envs.webshop.webshop.WebshopEnv`, which
    builds the solver): what a shopper sees, never the goal."""

    store: "Store"
    instruction_text: str

    def page(self) -> "list[Element]": ...

_PRICE = re.compile(r",?\s*and price lower than ([\d.]+) dollars", re.I)
_OPENER = re.compile(
    r"^(i am looking for|i need|i want to buy|find me|i would like|looking for|i'm searching for|get me|can you find)\s+",
    re.I,
)
MAX_RESULT_PAGES = 5


class WebShopSolver(Agent):
    def __init__(self, env: Shop) -> None:
        self.env = env
        self.store = env.store
        self._attributes = sorted({a for p in self.store.products for a in p["attributes"]}, key=len, reverse=True)
        self.reset("")

    def reset(self, observation: str, info: Optional[dict[str, Any]] = None) -> None:
        self.best: Optional[tuple[tuple, str]] = None
        self.pages_seen = 0

    # --------------------------------------------------------------- reading
    @property
    def instruction(self) -> str:
        return self.env.instruction_text

    def price_limit(self) -> float:
        match = _PRICE.search(self.instruction)
        return float(match.group(1)) if match else float("inf")

    def wanted_attributes(self) -> list[str]:
        return [a for a in self._attributes if contains_phrase(self.instruction, a)]

    def wanted_option(self, group: str, values: list[str]) -> Optional[str]:
        for value in sorted(values, key=len, reverse=True):
            if contains_phrase(self.instruction, f"{group} {value}"):
                return value
        for value in sorted(values, key=len, reverse=True):
            if contains_phrase(self.instruction, value):
                return value
        return None

    def score(self, asin: str, rank: int) -> tuple:
        product = self.store.by_asin[asin]
        attributes = self.wanted_attributes()
        n_attr = attribute_matches(product, attributes)
        n_opt = sum(self.wanted_option(g, v) is not None for g, v in product["options"].items())
        price_ok = product["price"] <= self.price_limit()
        typed = bool(product["query"]) and contains_phrase(self.instruction, product["query"])
        full = typed and price_ok and n_attr == len(attributes) and n_opt == len(product["options"])
        return (full, typed, price_ok, n_attr, n_opt, -rank)

    def query(self) -> str:
        text = _PRICE.sub("", self.instruction)
        return _OPENER.sub("", text)

    # ---------------------------------------------------------------- acting
    def act(self, observation: str, info: Optional[dict[str, Any]] = None) -> str:
        page = self.env.page()
        kinds = {e.kind for e in page}
        if "search_input" in kinds:
            return f"\\boxed{{search[{self.query()}]}}"
        buttons = {e.text for e in page if e.kind == "button"}
        if BUY_NOW in buttons:
            return self._choose_options(page)
        products = [e.text for e in page if e.kind == "product"]
        if not products:
            return "\\boxed{click[Back to Search]}"
        self.pages_seen += 1
        offset = (self.pages_seen - 1) * 10
        for rank, asin in enumerate(products):
            candidate = (self.score(asin, offset + rank), asin)
            if self.best is None or candidate[0] > self.best[0]:
                self.best = candidate
        if self.best is not None and self.best[0][0]:
            if self.best[1] in products:
                return f"\\boxed{{click[{self.best[1]}]}}"
        if NEXT_PAGE in buttons and self.pages_seen < MAX_RESULT_PAGES:
            return f"\\boxed{{click[{NEXT_PAGE}]}}"
        best_here = max(products, key=lambda a: self.score(a, 0))
        return f"\\boxed{{click[{best_here}]}}"

    def _choose_options(self, page: list) -> str:
        chosen = {e.group for e in page if e.kind == "option" and e.selected}
        groups: dict[str, list[str]] = {}
        for e in page:
            if e.kind == "option":
                groups.setdefault(e.group, []).append(e.text)
        for group, values in groups.items():
            if group in chosen:
                continue
            value = self.wanted_option(group, values)
            if value is not None:
                return f"\\boxed{{click[{value}]}}"
        return f"\\boxed{{click[{BUY_NOW}]}}"
