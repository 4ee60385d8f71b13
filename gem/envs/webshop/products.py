"""WebShop's data: the product catalog, the instructions (goals) and the search index over them.

Two sources give the same shapes:

- the bundled catalog (``data/catalog.json.gz``, ``data/goals.json.gz``; written by
  ``scripts/gen_webshop_data.py``), used by default, offline;
- the original WebShop files in a directory (``data_dir=``): ``items_shuffle*.json`` (products),
  ``items_ins_v2*.json`` (attributes per ASIN) and ``items_human_ins*.json`` (human instructions),
  read by :func:`load_original`.

A product is ``{asin, name, category, query, product_category, price, options: {group: [values]},
attributes, bullet_points, description, rating, reviews}``; a goal is ``{asin, category, query, name,
product_category, instruction_text, attributes, price_upper, goal_options, weight}`` as in WebShop.
A :class:`Store` (catalog + goals + BM25 index) is built once per source and shared read-only by
every env that uses it.
"""

from __future__ import annotations

import gzip
import json
import random
import re
import threading
from pathlib import Path
from typing import Any, Optional, Union

from gem.envs.webshop.goal import words

DATA_DIR = Path(__file__).resolve().parent / "data"
SPLITS = ("train", "test")
SEARCH_RETURN_N = 50
PRICE_RANGE = [10.0 * i for i in range(1, 100)]
DEFAULT_PRICE = 100.0

_STORES: dict[str, "Store"] = {}
_LOCK = threading.Lock()


class Store:
    """A catalog, its goals by split and a BM25 index over the products (read-only once built)."""

    def __init__(self, products: list[dict[str, Any]], goals: dict[str, list[dict[str, Any]]]) -> None:
        if not products:
            raise ValueError("A WebShop catalog needs at least one product.")
        self.products = products
        self.by_asin = {p["asin"]: p for p in products}
        self.goals = goals
        # words of every attribute phrase: dropped from titles when the product type is compared
        self.attribute_words = frozenset(w for p in products for a in p["attributes"] for w in words(a))
        self._retriever: Any = None

    @property
    def retriever(self) -> Any:
        if self._retriever is None:
            from gem.services.search.retrievers import BM25Retriever

            docs = [{"title": p["name"], "text": searchable(p)} for p in self.products]
            self._retriever = BM25Retriever(docs)
        return self._retriever

    def search(self, query: str, topk: int = SEARCH_RETURN_N) -> list[str]:
        """ASINs of the best ``topk`` products for ``query`` (BM25), best first."""
        hits = self.retriever.search([query], topk)[0]
        return [self.products[i]["asin"] for i, _ in hits]


def searchable(product: dict[str, Any]) -> str:
    options = " ".join(v for values in product["options"].values() for v in values)
    return " ".join([product["description"], " ".join(product["bullet_points"]), options, product["query"]])


def _read_json(path: Path) -> Any:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return json.load(fh)


def load_bundled() -> Store:
    products = _read_json(DATA_DIR / "catalog.json.gz")
    goals = _read_json(DATA_DIR / "goals.json.gz")
    return Store(products, {s: goals[s] for s in SPLITS})


# ------------------------------------------------------------------ the original WebShop files
def _find(directory: Path, stem: str) -> Optional[Path]:
    found = sorted(directory.glob(f"{stem}*.json")) + sorted(directory.glob(f"{stem}*.json.gz"))
    return found[0] if found else None


def parse_price(pricing: Any, rng: random.Random) -> float:
    """A price from WebShop's ``pricing`` (``"$12.99"`` or ``"$10.00 - $20.00"``; a range draws one)."""
    values = [float(v) for v in re.findall(r"\d+(?:\.\d+)?", str(pricing or "").replace(",", ""))]
    if not values:
        return DEFAULT_PRICE
    if len(values) == 1:
        return values[0]
    low, high = sorted(values[:2])
    return round(rng.uniform(low, high), 2)


def _original_product(raw: dict[str, Any], attributes: dict[str, Any], rng: random.Random) -> Optional[dict[str, Any]]:
    asin = str(raw.get("asin", ""))
    if not asin or asin == "nan" or len(asin) > 10:
        return None
    options: dict[str, list[str]] = {}
    for group, contents in (raw.get("customization_options") or {}).items():
        values = [str(c.get("value", "")).strip().replace("/", " | ").lower() for c in contents or []]
        values = [v for v in values if v]
        if values:
            options[str(group).lower()] = values
    bullets = raw.get("small_description") or []
    if isinstance(bullets, str):
        bullets = [bullets]
    rating = raw.get("average_rating")
    return {
        "asin": asin,
        "name": str(raw.get("name") or raw.get("Title") or asin),
        "category": str(raw.get("category", "")),
        "query": str(raw.get("query", "")).lower().strip(),
        "product_category": str(raw.get("product_category", "")),
        "price": parse_price(raw.get("pricing"), rng),
        "options": options,
        "attributes": list((attributes.get(asin) or {}).get("attributes", [])),
        "bullet_points": [str(b) for b in bullets],
        "description": str(raw.get("full_description") or ""),
        "rating": rating if isinstance(rating, (int, float)) else None,
        "reviews": [],
    }


def _human_goals(products: dict[str, dict[str, Any]], human: dict[str, Any], rng: random.Random) -> list[dict[str, Any]]:
    """Goals from human instructions, with WebShop's price limit (two of the next four tens above)."""
    goals = []
    for asin, entries in human.items():
        product = products.get(asin)
        if product is None:
            continue
        for entry in entries if isinstance(entries, list) else [entries]:
            attributes = list(entry.get("instruction_attributes") or [])
            if not attributes:
                continue
            above = [p for p in PRICE_RANGE if p > product["price"]][:4]
            if len(above) >= 2:
                limit = max(rng.sample(above, 2))
                price_text = f", and price lower than {limit:.2f} dollars"
            else:
                limit, price_text = 1000000.0, ""
            goals.append({
                "asin": asin,
                "category": product["category"],
                "query": product["query"],
                "name": product["name"],
                "product_category": product["product_category"],
                "instruction_text": str(entry.get("instruction", "")).strip().strip(".") + price_text,
                "attributes": attributes,
                "price_upper": limit,
                "goal_options": list(entry.get("instruction_options") or []),
                "weight": 1,
            })
    return goals


def load_original(directory: Union[str, Path], seed: int = 233, num_test: int = 500) -> Store:
    """A store from the original WebShop files in ``directory`` (see the module docstring).

    Goals are shuffled with ``seed`` (WebShop's 233); the first ``num_test`` (at most a fifth of
    them) form the test split and the rest the train split.
    """
    directory = Path(directory)
    items = _find(directory, "items_shuffle")
    if items is None:
        raise FileNotFoundError(
            f"No items_shuffle*.json in {directory}; download WebShop's data (items_shuffle.json, "
            "items_ins_v2.json, items_human_ins.json) into it."
        )
    ins = _find(directory, "items_ins_v2")
    human_file = _find(directory, "items_human_ins")
    attributes = _read_json(ins) if ins else {}
    rng = random.Random(seed)
    products: dict[str, dict[str, Any]] = {}
    for raw in _read_json(items):
        product = _original_product(raw, attributes, rng)
        if product is not None and product["asin"] not in products:
            products[product["asin"]] = product
    human = _read_json(human_file) if human_file else {}
    goals = _human_goals(products, human, rng)
    if not goals:
        raise ValueError(f"{directory} holds no usable instructions (items_human_ins*.json with attributes).")
    rng.shuffle(goals)
    n_test = max(1, min(num_test, len(goals) // 5))
    return Store(list(products.values()), {"test": goals[:n_test], "train": goals[n_test:] or goals[:n_test]})


def get_store(data_dir: Optional[Union[str, Path]] = None) -> Store:
    """The shared store for ``data_dir`` (``None``: the bundled catalog), built on first use."""
    key = "bundled" if data_dir is None else str(Path(data_dir).resolve())
    with _LOCK:
        store = _STORES.get(key)
        if store is None:
            store = load_bundled() if data_dir is None else load_original(data_dir)
            store.retriever  # build the index now, once, under the lock
            _STORES[key] = store
    return store
