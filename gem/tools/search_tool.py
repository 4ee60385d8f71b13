"""``SearchTool``: lets the agent search with ``<search>query</search>``.

The tool posts the query to a search server (``gem.services.search``: a local corpus, SerpAPI
or Google, or the original GEM's mosec servers) and shows the documents as ``Doc 1(Title: ...)``
lines: as they are by default, as the original GEM's main branch does, or inside
``<information>...</information>`` with ``wrap_observation=True``, as gem-llm 0.1.0 did. The
request is msgpack ``{"query": ..., "topk": ..., "return_scores": true}``, as the original sends
it (its servers accept nothing else); a server that refuses msgpack (HTTP 400/415/422) is asked
again in JSON (``{"queries": [...]}``, the Search-R1 shape), and the tool remembers that. The
answer is read as msgpack or JSON by its content type. The server's
address comes from ``search_url`` or the ``SEARCH_URL`` environment variable. A server that is
down, slow or answers garbage never breaks the episode: the observation says what went wrong and
``has_error`` is ``True``, and the failure is recorded as an infrastructure failure (the wrapper
puts it in ``info["infra_error"]``). The tool is thread-safe (each thread has its own HTTP session),
so one instance can serve a vector env on threads.

A model that calls functions natively calls ``search`` with ``{"query": "..."}``
(:meth:`SearchTool.openai_schemas`). Building the tool without ``requests`` installed raises
:class:`gem.errors.DependencyNotInstalled` naming the ``search`` extra; without ``msgspec`` a
msgpack request becomes an error observation that says so.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import threading
import time
from typing import Any, Optional
from urllib.parse import urlsplit

from gem.errors import missing_extra
from gem.tools.base_tool import BaseTool
from gem.tools.function_call import function_schema, read_function_call
from gem.tools.types import ToolCall, ToolResult
from gem.utils.text import clean_text, preview

logger = logging.getLogger(__name__)

TIMEOUT = 5  # seconds per request, GEM's default
DEFAULT_TOPK = 3
DEFAULT_MAX_RETRIES = 2
DEFAULT_RETRY_BACKOFF = 0.25  # seconds, doubled after each failed try
MAX_QUERY_CHARS = 1000
SEARCH_URL_ENV = "SEARCH_URL"
WIRE_FORMATS = ("msgpack", "json")
MSGPACK_TYPES = ("application/msgpack", "application/x-msgpack", "application/vnd.msgpack")
_FORMAT_REFUSED = {400, 415, 422}  # a server that does not read this body format answers one of these

_SEARCH = re.compile(r"<search>(.*?)</search>", re.DOTALL)
FUNCTION_NAME = "search"
_RETRY_STATUS = {429, 500, 502, 503, 504}


class SearchTool(BaseTool):
    """Search a server for ``<search>query</search>`` and show the top documents.

    Args:
        num_workers: kept for GEM compatibility.
        search_url: the server's ``/retrieve`` URL (a bare ``http://host:port`` gets ``/retrieve``
            added); default: the ``SEARCH_URL`` environment variable, read at the first search.
        topk: documents per search.
        timeout: seconds per request.
        max_retries: further tries after a connection error or an HTTP 429/5xx answer.
        retry_backoff: seconds before the first retry (doubled for each next one).
        wire_format: ``"msgpack"`` (the original GEM's request, the default; JSON is tried when a
            server refuses it) or ``"json"`` (Search-R1 batch shape only).
        wrap_observation: put the results inside ``<information>...</information>`` (gem-llm 0.1.0).
    """

    tool_type = "search"

    def __init__(
        self,
        num_workers: int = 1,
        search_url: Optional[str] = None,
        topk: int = DEFAULT_TOPK,
        timeout: float = TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        retry_backoff: float = DEFAULT_RETRY_BACKOFF,
        wire_format: str = "msgpack",
        wrap_observation: bool = False,
    ) -> None:
        super().__init__(num_workers)
        if importlib.util.find_spec("requests") is None:
            raise missing_extra("SearchTool", "search", "requests")
        if isinstance(topk, bool) or not isinstance(topk, int) or topk < 1:
            raise ValueError(f"topk must be a positive integer, got {topk!r}.")
        if not isinstance(timeout, (int, float)) or timeout <= 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}.")
        if not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError(f"max_retries must be a non-negative integer, got {max_retries!r}.")
        if wire_format not in WIRE_FORMATS:
            raise ValueError(f"wire_format must be one of {WIRE_FORMATS}, got {wire_format!r}.")
        self.search_url = normalize_search_url(search_url) if search_url else None
        self.topk = topk
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self.retry_backoff = float(retry_backoff)
        self.wire_format = wire_format
        self.wrap_observation = bool(wrap_observation)
        self._json_fallback = False  # set when a server refused msgpack and took JSON
        self._local = threading.local()

    # ------------------------------------------------------------ BaseTool API
    def instruction_string(self) -> str:
        return (
            "You have access to a search engine to help answer questions.\n\n"
            "Additional instructions:\n"
            "- If you lack some knowledge, reason about what you need to find inside <think> ... </think>.\n"
            "- Then search with:\n"
            "  <search> your query here </search>\n"
            + (
                "- The search engine answers inside:\n  <information> ... </information>\n"
                if self.wrap_observation
                else "- The search results come back as the next message.\n"
            )
            + 
            "- You may think and search as many times as you need.\n"
            "- When you are ready, give your final answer in:\n"
            "  <answer> your answer here </answer>"
        )

    def openai_schemas(self) -> list[dict[str, Any]]:
        """One function, ``search(query)``."""
        return [function_schema(
            FUNCTION_NAME,
            f"Search the document collection and return the top {self.topk} documents for the query.",
            {"query": {"type": "string", "description": "what to search for"}},
        )]

    def function_names(self) -> tuple[str, ...]:
        return (FUNCTION_NAME,)

    def parse_tags(self, action: str) -> Optional[ToolCall]:
        """The first ``<search>query</search>``."""
        match = _SEARCH.search(action)
        if match is None:
            return None
        return ToolCall(FUNCTION_NAME, {"query": match.group(1)}, match.group(0), action[: match.end()], source="tag")

    def execute_action(self, action: str) -> tuple[bool, bool, str, str]:
        """``(is_parsed, has_error, observation, parsed_action)`` for the first search call. Never raises."""
        if not isinstance(action, str):
            return False, True, "", ""
        return super().execute_action(action)

    def no_call(self, action: str) -> tuple[bool, bool, str, str]:
        return False, True, "", ""

    def execute_call(self, call: ToolCall) -> ToolResult:
        """Search for the call's ``query``; an empty or overlong query is an error. Never raises."""
        if call.error is not None:
            return ToolResult(self._observation(f"Invalid search call: {call.error}."), True, call)
        raw_query = call.arguments.get("query")
        query = clean_text(raw_query if isinstance(raw_query, str) else "").strip()
        if not query:
            return ToolResult(self._observation("Your search query was empty; write it between <search> and </search>."), True, call)
        if len(query) > MAX_QUERY_CHARS:
            return ToolResult(
                self._observation(f"Your search query is {len(query)} characters long; keep it under {MAX_QUERY_CHARS}: {preview(query)}"),
                True,
                call,
            )
        try:
            documents = self.search(query)
        except (SearchError, ImportError) as exc:  # the server or the client side failed, not the query
            logger.warning("Search for %r failed: %s", preview(query, 80), exc)
            self.record_infra_failure(exc)
            return ToolResult(self._observation(f"[SearchTool Error: {exc}]"), True, call)
        if not documents:
            return ToolResult(self._observation(f"No documents found for: {preview(query)}"), False, call)
        return ToolResult(self._observation(format_documents(documents)), False, call)

    def has_call(self, action: str) -> bool:
        """Whether ``action`` holds a search call (without running it)."""
        return isinstance(action, str) and self.find_call(action, read_function_call(action)) is not None

    def __getstate__(self) -> dict[str, Any]:
        # Sessions are per thread and not copyable; a copy (spawn, pickling) opens its own.
        return {k: v for k, v in self.__dict__.items() if k != "_local"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._local = threading.local()

    def close(self) -> None:
        session = getattr(self._local, "session", None)
        if session is not None:
            session.close()
            self._local.session = None

    # --------------------------------------------------------------- searching
    def resolve_url(self) -> str:
        """The server URL: ``search_url`` or ``$SEARCH_URL``; :class:`SearchError` if neither is set."""
        if self.search_url is None:
            from_env = os.environ.get(SEARCH_URL_ENV)
            if not from_env:
                raise SearchError(
                    f"no search server configured; pass SearchTool(search_url=...) or set {SEARCH_URL_ENV}"
                )
            self.search_url = normalize_search_url(from_env)
        return self.search_url

    def search(self, query: str) -> list[dict[str, Any]]:
        """The documents the server returns for ``query`` (retrying transient failures)."""
        url = self.resolve_url()
        attempts = self.max_retries + 1
        last_error = ""
        for attempt in range(attempts):
            if attempt:
                time.sleep(self.retry_backoff * (2 ** (attempt - 1)))
            try:
                return self._post(url, query)
            except _Retryable as exc:
                last_error = str(exc)
        raise SearchError(f"{last_error} (after {attempts} tr{'y' if attempts == 1 else 'ies'})")

    def _session(self) -> Any:
        session = getattr(self._local, "session", None)
        if session is None:
            import requests

            session = requests.Session()
            self._local.session = session
        return session

    def _observation(self, text: str) -> str:
        return f"\n\n<information>{text}</information>\n\n" if self.wrap_observation else text

    def _use_json(self) -> bool:
        return self.wire_format == "json" or self._json_fallback

    def _post(self, url: str, query: str) -> list[dict[str, Any]]:
        import requests

        as_json = self._use_json()
        response = self._send(requests, url, query, as_json)
        if not as_json and response.status_code in _FORMAT_REFUSED:
            retry = self._send(requests, url, query, True)
            if retry.status_code == 200:  # a JSON-only server: ask it in JSON from now on
                logger.info("The search server at %s refused msgpack; using JSON with it.", url)
                self._json_fallback = True
                response = retry
        if response.status_code in _RETRY_STATUS:
            raise _Retryable(f"the search server answered HTTP {response.status_code}: {_detail(response)}")
        if response.status_code != 200:
            raise SearchError(f"the search server rejected the request (HTTP {response.status_code}): {_detail(response)}")
        try:
            return [_as_document(hit) for hit in _hits(_decode(response))]
        except Exception as exc:  # any malformed answer is the server's fault, reported, not raised
            raise SearchError(f"the search server sent a malformed answer ({type(exc).__name__}: {exc})") from exc

    def _send(self, requests: Any, url: str, query: str, as_json: bool) -> Any:
        if as_json:
            import json

            body = json.dumps({"queries": [query], "topk": self.topk, "return_scores": True}).encode()
            headers = {"Content-Type": "application/json"}
        else:
            body = _msgpack().encode({"query": query, "topk": self.topk, "return_scores": True})
            headers = {"Content-Type": "application/msgpack"}
        try:
            return self._session().post(url, data=body, headers=headers, timeout=self.timeout)
        except requests.Timeout as exc:
            raise _Retryable(f"the search server at {url} did not answer within {self.timeout:g} s") from exc
        except requests.RequestException as exc:
            raise _Retryable(f"could not reach the search server at {url} ({type(exc).__name__})") from exc


def _msgpack() -> Any:
    """``msgspec.msgpack`` (the ``search`` extra), or a clear error naming the fix."""
    try:
        import msgspec
    except ImportError as exc:
        raise SearchError(f"{missing_extra('msgpack requests', 'search', 'msgspec')} (or use wire_format='json')") from exc
    return msgspec.msgpack


def _decode(response: Any) -> Any:
    """The answer's body: msgpack or JSON, by its content type (msgpack, then JSON, when it names neither)."""
    ctype = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
    if ctype in MSGPACK_TYPES:
        return _msgpack().decode(response.content)
    if ctype == "application/json":
        return response.json()
    try:
        return _msgpack().decode(response.content)
    except SearchError:
        raise
    except Exception:
        return response.json()


def _hits(answer: Any) -> list[Any]:
    """The documents of the one query: ``result`` is a flat list (GEM's single shape) or one list per query."""
    result = answer["result"]
    if not isinstance(result, list):
        raise TypeError(f"'result' must be a list, got {type(result).__name__}")
    if result and all(isinstance(item, list) for item in result):
        return result[0]
    return result


class SearchError(Exception):
    """A search that failed for good; its message becomes the observation."""


class _Retryable(SearchError):
    """A failure worth another try (connection refused, timeout, 429/5xx)."""


def normalize_search_url(url: str) -> str:
    """``url`` with ``/retrieve`` added when it names only a host (``http://127.0.0.1:8000``)."""
    url = url.strip()
    if "://" not in url:
        url = "http://" + url
    if urlsplit(url).path in ("", "/"):
        url = url.rstrip("/") + "/retrieve"
    return url


def _detail(response: Any) -> str:
    try:
        detail = response.json().get("detail", "")
    except Exception:
        detail = response.text
    return preview(str(detail), 300)


def _as_document(hit: Any) -> dict[str, Any]:
    """A result entry (``{"document": ..., "score": ...}`` or a bare document) as a document."""
    doc = hit["document"] if isinstance(hit, dict) and "document" in hit else hit
    if not isinstance(doc, dict):
        raise TypeError(f"a result is a JSON object, got {type(doc).__name__}")
    if "contents" in doc and "title" not in doc:
        first, _, rest = str(doc["contents"]).partition("\n")
        return {"title": first.strip().strip('"'), "text": rest}
    return {"title": str(doc.get("title", "")), "text": str(doc.get("text", ""))}


def format_documents(documents: list[dict[str, Any]]) -> str:
    """``Doc 1(Title: ...) text`` lines, as Search-R1 and GEM show retrieved passages."""
    return "".join(f"Doc {i}(Title: {doc['title']}) {doc['text']}\n" for i, doc in enumerate(documents, start=1))
