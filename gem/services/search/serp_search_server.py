"""Web search through SerpAPI, served over ``POST /retrieve`` like the local retrieval server.

    SERPAPI_API_KEY=... python -m gem.services.search.serp_search_server --port 8000

Results come from SerpAPI's JSON: the answer box first, then organic results, then "people also
ask" questions, cut to ``topk``. ``--search_url`` points at another SerpAPI-compatible endpoint.
"""

from __future__ import annotations

import argparse
from typing import Any, Optional

from gem.services.search.service import add_server_arguments
from gem.services.search.web import (
    DEFAULT_UPSTREAM_TIMEOUT,
    WebSearchBackend,
    create_web_app,
    key_from,
    serve_web_backend,
    web_document,
)

SERPAPI_URL = "https://serpapi.com/search"
SERPAPI_KEY_ENV = ("SERPAPI_API_KEY", "SERP_API_KEY")


class SerpSearchBackend(WebSearchBackend):
    """One SerpAPI call per query."""

    name = "serpapi"

    def __init__(
        self,
        api_key: Optional[str] = None,
        engine: str = "google",
        search_url: str = SERPAPI_URL,
        timeout: float = DEFAULT_UPSTREAM_TIMEOUT,
    ) -> None:
        self.api_key = key_from(api_key, SERPAPI_KEY_ENV, "SerpAPI key", "--serp_api_key")
        self.engine = engine
        super().__init__(search_url, timeout)

    def request_params(self, query: str, topk: int) -> dict[str, Any]:
        return {"engine": self.engine, "q": query, "api_key": self.api_key, "num": topk}

    def documents(self, payload: dict[str, Any], topk: int) -> list[dict[str, Any]]:
        docs = []
        box = payload.get("answer_box")
        if isinstance(box, dict) and box:
            snippet = box.get("snippet") or box.get("answer") or ""
            docs.append(web_document(box.get("title", ""), snippet, box.get("link", "")))
        for item in payload.get("organic_results") or []:
            if isinstance(item, dict):
                docs.append(web_document(item.get("title", ""), item.get("snippet", ""), item.get("link", "")))
        for item in payload.get("related_questions") or []:
            if isinstance(item, dict):
                docs.append(web_document(item.get("question", ""), item.get("snippet", ""), item.get("link", "")))
        return docs


create_serp_app = create_web_app  # the app over a SerpSearchBackend


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m gem.services.search.serp_search_server", description=__doc__.split("\n")[0])
    parser.add_argument("--serp_api_key", help=f"SerpAPI key (default: ${SERPAPI_KEY_ENV[0]})")
    parser.add_argument("--serp_engine", default="google", help="SerpAPI engine (default google)")
    parser.add_argument("--search_url", default=SERPAPI_URL, help=f"upstream endpoint (default {SERPAPI_URL})")
    parser.add_argument("--timeout", type=float, default=DEFAULT_UPSTREAM_TIMEOUT, help="upstream timeout (s)")
    add_server_arguments(parser)
    serve_web_backend(parser, lambda args: SerpSearchBackend(args.serp_api_key, args.serp_engine, args.search_url, args.timeout))

if __name__ == "__main__":
    main()
