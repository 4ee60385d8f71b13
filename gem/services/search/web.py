"""Shared plumbing of the web search servers: an upstream API called once per query, in parallel.

A subclass says how to ask the API (``request_params``) and how to turn its JSON into documents
(``documents``). Keys come from arguments or environment variables; the upstream base URL is an
option, so tests point it at a local stand-in.
"""

from __future__ import annotations

import abc
import logging
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Optional, Sequence

from gem.services.search.corpus import make_contents
from gem.services.search.service import UpstreamError, app_options, create_app, run_server

logger = logging.getLogger(__name__)

DEFAULT_UPSTREAM_TIMEOUT = 10.0
MAX_PARALLEL_UPSTREAM = 16


def key_from(value: Optional[str], env_names: Sequence[str], what: str, flag: str) -> str:
    """``value``, or the first set environment variable of ``env_names``; a clear error otherwise."""
    if value:
        return value
    for name in env_names:
        if os.environ.get(name):
            return os.environ[name]
    raise ValueError(f"No {what}: pass {flag} or set {' or '.join(env_names)}.")


def web_document(title: str, snippet: str, link: str = "") -> dict[str, Any]:
    """A search result as a corpus-style document."""
    title = title or "No title."
    snippet = snippet or "No snippet available."
    return {"id": link, "title": title, "text": snippet, "contents": make_contents(title, snippet), "url": link}


class WebSearchBackend(abc.ABC):
    """Calls ``upstream_url`` once per query (in parallel threads) and returns documents."""

    name = "web"

    def __init__(self, upstream_url: str, timeout: float = DEFAULT_UPSTREAM_TIMEOUT) -> None:
        import httpx

        self.upstream_url = upstream_url
        self.client = httpx.Client(timeout=timeout, follow_redirects=True)
        self.pool = ThreadPoolExecutor(max_workers=MAX_PARALLEL_UPSTREAM, thread_name_prefix=f"gem-{self.name}")

    @abc.abstractmethod
    def request_params(self, query: str, topk: int) -> dict[str, Any]:
        """The query-string parameters of one upstream call."""

    @abc.abstractmethod
    def documents(self, payload: dict[str, Any], topk: int) -> list[dict[str, Any]]:
        """The documents in one upstream JSON answer, best first."""

    def search_one(self, query: str, topk: int) -> Any:
        """``[(document, None), ...]`` for one query, or the :class:`UpstreamError` that stopped it."""
        import httpx

        if not query.strip():
            return []
        try:
            response = self.client.get(self.upstream_url, params=self.request_params(query, topk))
        except httpx.HTTPError as exc:
            return UpstreamError(f"could not reach {self.upstream_url}: {type(exc).__name__}: {exc}")
        if response.status_code != 200:
            return UpstreamError(f"{self.upstream_url} answered HTTP {response.status_code}: {response.text[:200]}")
        try:
            payload = response.json()
        except ValueError:
            return UpstreamError(f"{self.upstream_url} answered something that is not JSON: {response.text[:200]!r}")
        if not isinstance(payload, dict):
            return UpstreamError(f"{self.upstream_url} answered a JSON {type(payload).__name__}, not an object.")
        if "error" in payload:
            return UpstreamError(f"{self.upstream_url} reported an error: {str(payload['error'])[:200]}")
        return [(doc, None) for doc in self.documents(payload, topk)[:topk]]

    def batch_search(self, queries: Sequence[str], topk: int) -> list[Any]:
        return list(self.pool.map(lambda q: self.search_one(q, topk), queries))

    def close(self) -> None:
        self.pool.shutdown(wait=False)
        self.client.close()


def create_web_app(backend: WebSearchBackend, **service_kwargs: Any) -> Any:
    """The FastAPI app answering ``/retrieve`` through a web search ``backend``."""
    return create_app(backend.batch_search, backend=backend.name, info={"upstream": backend.upstream_url}, **service_kwargs)


def serve_web_backend(parser: Any, make_backend: Any) -> None:
    """Parse the command line, build the backend (``make_backend(args)``) and serve it."""
    args = parser.parse_args()
    try:
        backend = make_backend(args)
    except ValueError as exc:
        parser.error(str(exc))
    run_server(create_web_app(backend, **app_options(args)), args.host, args.port, args.log_level)
