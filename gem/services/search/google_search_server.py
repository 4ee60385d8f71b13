"""Web search through the Google Custom Search JSON API, served over ``POST /retrieve``.

    GOOGLE_API_KEY=... GOOGLE_CSE_ID=... python -m gem.services.search.google_search_server --port 8000

Each result is the page's title and snippet (Google returns at most 10 per call). ``--search_url``
points at another endpoint with the same JSON (a proxy, or a local stand-in in tests).
"""

from __future__ import annotations

import argparse
import re
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

GOOGLE_CSE_URL = "https://www.googleapis.com/customsearch/v1"
GOOGLE_KEY_ENV = ("GOOGLE_API_KEY",)
GOOGLE_CSE_ENV = ("GOOGLE_CSE_ID",)
GOOGLE_MAX_NUM = 10  # the API's limit on results per call

_NOT_WORD = re.compile(r"[^\w\s]")
_SPACES = re.compile(r"\s+")


def sanitize_query(query: str) -> str:
    """The query with punctuation and control characters turned into single spaces."""
    return _SPACES.sub(" ", _NOT_WORD.sub(" ", query)).strip()


def clean_snippet(snippet: str) -> str:
    """A snippet with Google's line breaks and "..." joins collapsed."""
    return _SPACES.sub(" ", snippet.replace("\n", " ")).strip()


class GoogleSearchBackend(WebSearchBackend):
    """One Custom Search call per query."""

    name = "google"

    def __init__(
        self,
        api_key: Optional[str] = None,
        cse_id: Optional[str] = None,
        search_url: str = GOOGLE_CSE_URL,
        timeout: float = DEFAULT_UPSTREAM_TIMEOUT,
    ) -> None:
        self.api_key = key_from(api_key, GOOGLE_KEY_ENV, "Google API key", "--api_key")
        self.cse_id = key_from(cse_id, GOOGLE_CSE_ENV, "Custom Search engine id", "--cse_id")
        super().__init__(search_url, timeout)

    def request_params(self, query: str, topk: int) -> dict[str, Any]:
        return {"key": self.api_key, "cx": self.cse_id, "q": sanitize_query(query), "num": min(topk, GOOGLE_MAX_NUM)}

    def documents(self, payload: dict[str, Any], topk: int) -> list[dict[str, Any]]:
        docs = []
        for item in payload.get("items") or []:
            if isinstance(item, dict) and (item.get("title") or item.get("snippet")):
                docs.append(web_document(item.get("title", ""), clean_snippet(item.get("snippet", "")), item.get("link", "")))
        return docs


create_google_app = create_web_app  # the app over a GoogleSearchBackend


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m gem.services.search.google_search_server", description=__doc__.split("\n")[0])
    parser.add_argument("--api_key", help="Google API key (default: $GOOGLE_API_KEY)")
    parser.add_argument("--cse_id", help="Custom Search engine id (default: $GOOGLE_CSE_ID)")
    parser.add_argument("--search_url", default=GOOGLE_CSE_URL, help=f"upstream endpoint (default {GOOGLE_CSE_URL})")
    parser.add_argument("--timeout", type=float, default=DEFAULT_UPSTREAM_TIMEOUT, help="upstream timeout (s)")
    parser.add_argument("--snippet_only", action="store_true", help="accepted for GEM scripts; results are snippets")
    add_server_arguments(parser)
    serve_web_backend(parser, lambda args: GoogleSearchBackend(args.api_key, args.cse_id, args.search_url, args.timeout))

if __name__ == "__main__":
    main()
