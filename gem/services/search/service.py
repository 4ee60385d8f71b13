"""The HTTP interface every search server speaks, and the batcher behind it.

``POST /retrieve`` takes JSON (or msgpack, as ``SearchTool`` sends by default) in either of two shapes:

- Search-R1 batch: ``{"queries": ["q1", "q2"], "topk": 3, "return_scores": true}`` ->
  ``{"result": [[{"document": {...}, "score": 1.2}, ...], [...]]}``, one list per query; without
  ``return_scores`` each list holds the documents themselves, as Search-R1's server answers.
- GEM single: ``{"query": "q", "topk": 3, "return_scores": true}`` ->
  ``{"result": [{"document": {...}, "score": 1.2}, ...]}`` (``score`` is ``null`` unless asked for).

A document is ``{"id", "title", "text", "contents"}`` (``contents`` = ``'"Title"\\ntext'``).
``topk`` is optional (the server's default) and at most ``max_topk``. Bad requests get 400 (not
JSON/msgpack) or 422 (wrong fields), with ``{"detail": "what was wrong"}``; a failing backend 500.

Concurrent requests are queued and answered by one batched search: the batcher waits at most
``max_wait_ms`` for more queries, up to ``max_batch_size`` queries per search. ``GET /health``
reports the backend, the corpus size and how many requests, queries and batches were served.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

logger = logging.getLogger(__name__)

DEFAULT_TOPK = 3
DEFAULT_MAX_TOPK = 100
DEFAULT_MAX_BATCH_SIZE = 64
DEFAULT_MAX_WAIT_MS = 5.0
DEFAULT_MAX_BATCH_CHARS = 65_536  # characters searched in one batch (long queries cost more)
DEFAULT_REQUEST_TIMEOUT = 60.0  # seconds one request may wait for its results
MAX_QUERIES_PER_REQUEST = 1024
MAX_QUERY_CHARS = 8192
MAX_REQUEST_CHARS = 262_144  # all the queries of one request together
MAX_BODY_BYTES = 4 * 1024 * 1024
MSGPACK_TYPES = ("application/msgpack", "application/x-msgpack", "application/vnd.msgpack")

# A backend takes (queries, topk) and returns, per query, a list of (document, score-or-None), or the
# exception that made that one query fail (the other requests of the batch still get their results).
SearchFn = Callable[[Sequence[str], int], list[list[tuple[dict[str, Any], Optional[float]]]]]


class UpstreamError(Exception):
    """A web search API failed for one query (answered with HTTP 502 and the reason)."""


class RequestError(Exception):
    """A request the server cannot answer; ``status`` is the HTTP code, the message says why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class RetrieveRequest:
    """A parsed ``/retrieve`` body."""

    queries: list[str]
    single: bool  # GEM's {"query": ...} shape (answer with a flat list)
    topk: Optional[int]
    return_scores: bool
    msgpack: bool = False


def _decode_body(body: bytes, content_type: str) -> tuple[Any, bool]:
    """The request body as a Python value, and whether it was msgpack."""
    ctype = content_type.split(";")[0].strip().lower()
    wants_msgpack = ctype in MSGPACK_TYPES
    if not wants_msgpack:
        try:
            return json.loads(body), False
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            if ctype == "application/json":
                raise RequestError(400, f"The body is not valid JSON ({exc}).") from exc
    try:
        import msgspec
    except ImportError as exc:
        raise RequestError(400, "The body is not JSON, and msgpack is not installed on the server.") from exc
    try:
        return msgspec.msgpack.decode(body), True
    except msgspec.DecodeError as exc:
        raise RequestError(400, f"The body is neither JSON nor msgpack ({exc}).") from exc


def parse_request(body: bytes, content_type: str = "", max_topk: int = DEFAULT_MAX_TOPK) -> RetrieveRequest:
    """Validate a ``/retrieve`` body; raises :class:`RequestError` saying what was wrong."""
    if not body:
        raise RequestError(400, 'Empty body; send JSON like {"queries": ["..."], "topk": 3}.')
    try:
        data, is_msgpack = _decode_body(body, content_type)
    except RecursionError:
        raise RequestError(400, "The body is nested too deeply.") from None
    if not isinstance(data, dict):
        raise RequestError(422, f"The body must be a JSON object, got {type(data).__name__}.")
    unknown = sorted(set(data) - {"queries", "query", "topk", "return_scores"})
    if unknown:
        raise RequestError(422, f"Unknown field(s) {unknown}; accepted: queries, query, topk, return_scores.")
    if ("queries" in data) == ("query" in data):
        raise RequestError(422, "Send exactly one of 'queries' (a list of strings) or 'query' (a string).")
    single = "query" in data
    queries = [data["query"]] if single else data["queries"]
    if not isinstance(queries, list) or not all(isinstance(q, str) for q in queries):
        name = "query" if single else "queries"
        raise RequestError(422, f"'{name}' must be {'a string' if single else 'a list of strings'}.")
    if not queries:
        raise RequestError(422, "'queries' is empty; send at least one query.")
    if len(queries) > MAX_QUERIES_PER_REQUEST:
        raise RequestError(422, f"{len(queries)} queries in one request; the limit is {MAX_QUERIES_PER_REQUEST}.")
    too_long = [i for i, q in enumerate(queries) if len(q) > MAX_QUERY_CHARS]
    if too_long:
        raise RequestError(422, f"Query {too_long[0]} is longer than {MAX_QUERY_CHARS} characters.")
    total = sum(len(q) for q in queries)
    if total > MAX_REQUEST_CHARS:
        raise RequestError(
            422, f"The queries hold {total} characters in all; the limit per request is {MAX_REQUEST_CHARS}."
        )
    topk = data.get("topk")
    if topk is not None and (isinstance(topk, bool) or not isinstance(topk, int) or not 1 <= topk <= max_topk):
        raise RequestError(422, f"'topk' must be an integer from 1 to {max_topk}, got {topk!r}.")
    scores = data.get("return_scores", False)
    if not isinstance(scores, bool):
        raise RequestError(422, f"'return_scores' must be true or false, got {scores!r}.")
    return RetrieveRequest(queries, single, topk or None, scores, is_msgpack)


def format_response(
    request: RetrieveRequest, results: list[list[tuple[dict[str, Any], Optional[float]]]]
) -> dict[str, Any]:
    """The response body for ``request`` (see the module docstring for both shapes)."""
    if request.single:
        hits = results[0]
        return {
            "result": [{"document": d, "score": s if request.return_scores else None} for d, s in hits]
        }
    if request.return_scores:
        return {"result": [[{"document": d, "score": s} for d, s in hits] for hits in results]}
    return {"result": [[d for d, _ in hits] for hits in results]}


# ----------------------------------------------------------------------- batching
@dataclass(eq=False)
class _Pending:
    queries: list[str]
    topk: int
    future: asyncio.Future
    results: list[Any] = field(default_factory=list)
    next: int = 0  # the first query not yet handed to a search
    filled: int = 0


@dataclass
class BatchStats:
    """What the batcher has done (shown by ``/health``)."""

    requests: int = 0
    queries: int = 0
    batches: int = 0
    largest_batch: int = 0
    search_seconds: float = 0.0
    errors: int = 0
    timeouts: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "queries": self.queries,
            "batches": self.batches,
            "largest_batch": self.largest_batch,
            "mean_batch_size": round(self.queries / self.batches, 2) if self.batches else 0.0,
            "search_seconds": round(self.search_seconds, 4),
            "errors": self.errors,
            "timeouts": self.timeouts,
        }


@dataclass
class Batcher:
    """Queues concurrent requests and answers them with batched calls of ``search``.

    The search runs in one worker thread (the event loop keeps accepting requests meanwhile); while
    it runs, new requests queue up and form the next batch. A batch takes queries from the waiting
    requests in turn, one at a time, up to ``max_batch_size`` queries and ``max_batch_chars``
    characters, so a request of many long queries is searched over several batches and a small
    request that arrives meanwhile waits for one batch at most, not for the whole big request.
    """

    search: SearchFn
    max_batch_size: int = DEFAULT_MAX_BATCH_SIZE
    max_wait_ms: float = DEFAULT_MAX_WAIT_MS
    max_batch_chars: int = DEFAULT_MAX_BATCH_CHARS
    stats: BatchStats = field(default_factory=BatchStats)

    def __post_init__(self) -> None:
        self._waiting: collections.deque[_Pending] = collections.deque()
        self._arrived: Optional[asyncio.Event] = None
        self._task: Optional[asyncio.Task] = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gem-search")

    async def start(self) -> None:
        self._arrived = asyncio.Event()
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        self._executor.shutdown(wait=False, cancel_futures=True)

    async def submit(self, queries: list[str], topk: int) -> list[list[tuple[dict[str, Any], Optional[float]]]]:
        """The results for ``queries``, searched together with whatever else is queued."""
        if self._arrived is None:
            raise RuntimeError("The batcher is not running; start the server's lifespan first.")
        future = asyncio.get_running_loop().create_future()
        self.stats.requests += 1
        self._waiting.append(_Pending(queries, topk, future, [None] * len(queries)))
        self._arrived.set()
        return await future

    def _queued(self) -> int:
        return sum(len(p.queries) - p.next for p in self._waiting)

    async def _fill(self) -> None:
        """Wait for a request, then at most ``max_wait_ms`` for the batch to fill."""
        assert self._arrived is not None
        while not self._waiting:
            self._arrived.clear()
            await self._arrived.wait()
        deadline = time.monotonic() + self.max_wait_ms / 1000.0
        while self._queued() < self.max_batch_size:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            self._arrived.clear()
            try:
                await asyncio.wait_for(self._arrived.wait(), remaining)
            except asyncio.TimeoutError:
                break

    def _take(self) -> list[tuple[_Pending, int]]:
        """The next batch: (request, query index) pairs, taken from the requests in turn."""
        taken: list[tuple[_Pending, int]] = []
        chars = 0
        while self._waiting and len(taken) < self.max_batch_size:
            pending = self._waiting.popleft()
            if pending.future.done():  # the client gave up (time limit): drop its queries
                continue
            query = pending.queries[pending.next]
            if taken and chars + len(query) > self.max_batch_chars:
                self._waiting.appendleft(pending)
                break
            taken.append((pending, pending.next))
            chars += len(query)
            pending.next += 1
            if pending.next < len(pending.queries):
                self._waiting.append(pending)
        return taken

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._fill()
            taken = self._take()
            if not taken:
                continue
            queries = [p.queries[i] for p, i in taken]
            topk = max(p.topk for p, _ in taken)
            start = time.perf_counter()
            try:
                results = await loop.run_in_executor(self._executor, self.search, queries, topk)
                if len(results) != len(queries):
                    raise RuntimeError(f"the backend answered {len(results)} of {len(queries)} queries")
            except Exception as exc:  # the backend failed: every request in the batch gets the error
                logger.exception("Search failed for a batch of %d queries", len(queries))
                self.stats.errors += 1
                for pending, _ in taken:
                    if not pending.future.done():
                        pending.future.set_exception(exc)
                continue
            self.stats.search_seconds += time.perf_counter() - start
            self.stats.batches += 1
            self.stats.queries += len(queries)
            self.stats.largest_batch = max(self.stats.largest_batch, len(queries))
            for (pending, i), hits in zip(taken, results):
                if pending.future.done():
                    continue
                if isinstance(hits, BaseException):
                    pending.future.set_exception(hits)
                    continue
                pending.results[i] = hits[: pending.topk]
                pending.filled += 1
                if pending.filled == len(pending.queries):
                    pending.future.set_result(pending.results)


# ------------------------------------------------------------------------- the app
def create_app(
    search: SearchFn,
    *,
    backend: str,
    default_topk: int = DEFAULT_TOPK,
    max_topk: int = DEFAULT_MAX_TOPK,
    max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
    max_wait_ms: float = DEFAULT_MAX_WAIT_MS,
    info: Optional[dict[str, Any]] = None,
    max_batch_chars: int = DEFAULT_MAX_BATCH_CHARS,
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
    allow_origins: Sequence[str] = (),
    limits: Optional[Any] = None,
) -> Any:
    """A FastAPI app serving ``/retrieve`` and ``/health`` over ``search``.

    Whatever clients send is bounded: bodies over ``MAX_BODY_BYTES`` are refused before they are
    read, a request's queries are capped in number and characters, batches in characters
    (``max_batch_chars``), and a request gets 504 after ``request_timeout`` seconds. Cross-origin
    browser requests are refused unless their origin is in ``allow_origins``. ``limits``
    (:class:`gem.http.limits.ServerLimits`) overrides the body, time and connection limits.
    """
    import contextlib

    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse, Response

    from gem.http.limits import GuardMiddleware, ServerLimits

    if not 1 <= default_topk <= max_topk:
        raise ValueError(f"default topk must be from 1 to max_topk={max_topk}, got {default_topk}.")
    if max_batch_size < 1:
        raise ValueError(f"max_batch_size must be at least 1, got {max_batch_size}.")
    if max_batch_chars < MAX_QUERY_CHARS:
        raise ValueError(f"max_batch_chars must be at least MAX_QUERY_CHARS={MAX_QUERY_CHARS}, got {max_batch_chars}.")
    limits = limits or ServerLimits(max_body_bytes=MAX_BODY_BYTES, request_timeout=request_timeout + 5)
    batcher = Batcher(search, max_batch_size=max_batch_size, max_wait_ms=max_wait_ms, max_batch_chars=max_batch_chars)

    @contextlib.asynccontextmanager
    async def lifespan(_: Any):
        await batcher.start()
        try:
            yield
        finally:
            await batcher.stop()

    app = FastAPI(
        title=f"GEM search server ({backend})", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None
    )
    app.state.batcher = batcher
    app.add_middleware(
        GuardMiddleware, limits=limits, allow_origins=allow_origins, error=lambda kind, message: {"detail": message}
    )

    def error(status: int, message: str) -> JSONResponse:
        return JSONResponse({"detail": message}, status_code=status)

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {
            "status": "ok",
            "backend": backend,
            "default_topk": default_topk,
            "max_topk": max_topk,
            "max_batch_size": max_batch_size,
            "max_wait_ms": max_wait_ms,
            "max_batch_chars": max_batch_chars,
            **(info or {}),
            **batcher.stats.as_dict(),
        }

    async def retrieve(request: Request) -> Response:
        body = await request.body()  # read (capped and timed) by GuardMiddleware
        try:
            parsed = parse_request(body, request.headers.get("content-type", ""), max_topk)
        except RequestError as exc:
            return error(exc.status, str(exc))
        try:
            results = await asyncio.wait_for(batcher.submit(parsed.queries, parsed.topk or default_topk), request_timeout)
        except asyncio.TimeoutError:
            batcher.stats.timeouts += 1
            return error(504, f"The search took longer than {request_timeout:g} s; retry with fewer or shorter queries.")
        except UpstreamError as exc:
            return error(502, f"The {backend} search API failed: {exc}")
        except Exception as exc:
            return error(500, f"The {backend} search failed: {type(exc).__name__}: {exc}")
        payload = format_response(parsed, results)
        if parsed.msgpack:
            import msgspec

            return Response(msgspec.msgpack.encode(payload), media_type="application/msgpack")
        return JSONResponse(payload)

    # FastAPI reads the annotation to inject the request; with postponed annotations it is only the
    # string "Request", which it cannot resolve from this local import, so give it the class.
    retrieve.__annotations__["request"] = Request
    app.post("/retrieve")(retrieve)

    return app


# ---------------------------------------------------------------------- CLI pieces
def add_server_arguments(parser: argparse.ArgumentParser, default_port: int = 8000) -> None:
    """The options every search server takes (host, port, batching, topk)."""
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=default_port, help=f"port (default {default_port})")
    parser.add_argument("--topk", type=int, default=DEFAULT_TOPK, help="results per query when a request gives none")
    parser.add_argument("--max_topk", type=int, default=DEFAULT_MAX_TOPK, help="largest topk a request may ask")
    parser.add_argument(
        "--max_batch_size", type=int, default=DEFAULT_MAX_BATCH_SIZE, help="most queries searched together"
    )
    parser.add_argument(
        "--max_wait_ms", type=float, default=DEFAULT_MAX_WAIT_MS, help="how long a batch waits to fill"
    )
    parser.add_argument(
        "--max_batch_chars", type=int, default=DEFAULT_MAX_BATCH_CHARS, help="most query characters searched together"
    )
    parser.add_argument(
        "--request_timeout", type=float, default=DEFAULT_REQUEST_TIMEOUT, help="seconds a request may wait (then 504)"
    )
    parser.add_argument(
        "--allow_origin", action="append", default=[], metavar="ORIGIN",
        help="a web origin allowed to call from a browser (default: none); repeatable",
    )
    parser.add_argument("--log_level", default="info", help="uvicorn log level")
    # GEM's mosec options, accepted so existing launch scripts run (max_wait_time is in ms too).
    parser.add_argument("--max_wait_time", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--num_workers", type=int, help=argparse.SUPPRESS)


def app_options(args: argparse.Namespace) -> dict[str, Any]:
    """The :func:`create_app` keyword arguments given by :func:`add_server_arguments`' options."""
    return {
        "default_topk": args.topk,
        "max_topk": args.max_topk,
        "max_batch_size": args.max_batch_size,
        "max_wait_ms": args.max_wait_time if args.max_wait_time is not None else args.max_wait_ms,
        "max_batch_chars": args.max_batch_chars,
        "request_timeout": args.request_timeout,
        "allow_origins": args.allow_origin,
    }


def server_limits() -> Any:
    """The connection limits a search server runs with (slow clients cut, connections capped)."""
    from gem.http.limits import ServerLimits

    return ServerLimits(max_body_bytes=MAX_BODY_BYTES)


def run_server(app: Any, host: str, port: int, log_level: str = "info") -> None:
    """Serve ``app`` with uvicorn until interrupted (slow clients are cut, connections capped)."""
    import uvicorn

    from gem.http.limits import uvicorn_config

    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    uvicorn.Server(uvicorn_config(app, host, port, server_limits(), log_level=log_level)).run()
