"""The env server: registered env ids over HTTP and WebSocket (FastAPI, run by uvicorn).

A *session* is one env instance on the server, made by a client, reset and stepped through its
episodes, and closed by the client or, after ``session_ttl`` idle seconds, by the server.

Every client is treated as hostile (see docs/scale.md, "Running a server safely"):

- who may connect: :class:`gem.http.limits.GuardMiddleware` refuses cross-origin browser requests
  (unless allowed) and wrong tokens, caps and times request bodies; the uvicorn protocol from
  :func:`gem.http.limits.uvicorn_config` cuts slow clients and caps open connections;
- what a client may ask: constructor kwargs are checked against the env's declared schema
  (:mod:`gem.server.schema`) before anything is built;
- how much it may take: sessions and WebSockets per client (a quarter of each total by default,
  :func:`gem.http.protocol.client_share`) and in total are capped exactly; a WebSocket that
  makes no session within ``session_grace`` seconds is closed; env calls (make, reset, step, sample) run on a
  :class:`gem.server.scheduler.FairScheduler` that serves clients round-robin with a per-client
  share and a time limit per call; sandbox shells and code-test threads, which envs share across
  the process, are shared per client (:mod:`gem.server.quotas`).

HTTP (JSON bodies; ``Authorization: Bearer <token>`` when the server has tokens):

- ``GET /health`` (never needs the token): ``{"status": "ok", "sessions": n, "uptime_s": t}``
- ``GET /metrics``: Prometheus text (sessions, resets, steps, errors, step seconds, queue)
- ``GET /envs``: the ids this server serves
- ``GET /envs/{id}/kwargs``: ``{"env_id", "kwargs"}``, the JSON Schema of the kwargs a client may send
- ``POST /sessions`` ``{"env_id", "kwargs"}`` -> ``{"session_id", "env_id"}``
- ``POST /sessions/{id}/reset`` ``{"seed"}`` -> ``{"observation", "info"}``
- ``POST /sessions/{id}/step`` ``{"action"}`` -> ``{"observation", "reward", "terminated", "truncated", "info"}``
- ``POST /sessions/{id}/sample`` -> ``{"action"}``;  ``DELETE /sessions/{id}``

WebSocket ``/ws`` (token in the header or ``?token=``): JSON text messages ``{"op": "make" |
"reset" | "step" | "sample" | "close", ...}`` with the same fields, answered by ``{"ok": true, ...}``
or ``{"ok": false, "status", "error": {...}}``; one session per connection, closed with the socket.
A socket that has not made its session within ``session_grace`` seconds of opening is closed (1008).

Errors are ``{"error": {"kind", "type", "message"}}`` with the status of ``protocol.ERROR_STATUS``.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import json
import logging
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence, Union

from fastapi import FastAPI, Request, WebSocket, WebSocketDisconnect
from fastapi.responses import JSONResponse, PlainTextResponse

from gem.core import Env
from gem.envs import registration
from gem.envs.registration import spec as lookup_spec
from gem.errors import ResetNeeded, UnknownEnvError
from gem.http.limits import CLIENT_SCOPE_KEY, GuardMiddleware, ServerLimits
from gem.http.protocol import (
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_MAX_SESSIONS,
    DEFAULT_MAX_SESSIONS_PER_CLIENT,
    DEFAULT_SESSION_GRACE,
    DEFAULT_SESSION_TTL,
    DEFAULT_WORKERS,
    ERROR_STATUS,
    client_share,
    jsonable,
)
from gem.server.quotas import (
        DEFAULT_TEST_THREADS_PER_CLIENT,
    ClientQuotaExceeded,
    check_numbers as check_quota_numbers,
    install as install_quotas,
)
from gem.server.scheduler import CallTimeout, FairScheduler
from gem.server.schema import ClientKwargs, KwargsError, check_kwargs, kwargs_json_schema

logger = logging.getLogger(__name__)
SHUTDOWN_CLOSE_TIMEOUT = 10.0  # seconds the server waits at shutdown for its sessions' envs to close


class AsciiJSONResponse(JSONResponse):
    """JSON with non-ASCII escaped, so a lone surrogate an env echoes can still be sent."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, separators=(",", ":")).encode("ascii")


class ApiError(Exception):
    """An error answered to the client: a ``kind`` from ``ERROR_STATUS`` and a message."""

    def __init__(self, kind: str, message: str, type_name: Optional[str] = None) -> None:
        super().__init__(message)
        self.kind, self.message = kind, message
        self.type_name = type_name or kind
        self.status = ERROR_STATUS[kind]

    def body(self) -> dict[str, Any]:
        return {"error": {"kind": self.kind, "type": self.type_name, "message": self.message}}


@dataclass
class Session:
    env: Env
    env_id: str
    client: str
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    last_used: float = field(default_factory=time.monotonic)


@dataclass
class Metrics:
    sessions_created: int = 0
    sessions_closed: int = 0
    sessions_expired: int = 0
    resets: int = 0
    steps: int = 0
    errors: int = 0
    timeouts: int = 0
    refused: int = 0
    step_seconds: float = 0.0


class SessionStore:
    """The live sessions, with the env calls both the HTTP and the WebSocket routes use."""

    def __init__(
        self,
        env_ids: Optional[Sequence[str]],
        session_ttl: float,
        max_sessions: int,
        max_sessions_per_client: int = DEFAULT_MAX_SESSIONS_PER_CLIENT,
        client_kwargs: Union[ClientKwargs, str] = ClientKwargs.DECLARED,
        scheduler: Optional[FairScheduler] = None,
        call_timeout: float = DEFAULT_CALL_TIMEOUT,
        session_log: Any = None,
    ) -> None:
        """``session_log``: a :class:`gem.server.session_log.SessionLog` that records every episode, or None."""
        self.session_log = session_log
        self.allowed = None if env_ids is None else set(env_ids)
        self.session_ttl = session_ttl
        self.max_sessions = max_sessions
        self.max_sessions_per_client = max_sessions_per_client
        self.client_kwargs = ClientKwargs(client_kwargs)
        self.scheduler = scheduler or FairScheduler(DEFAULT_WORKERS)
        self.call_timeout = call_timeout
        self.sessions: dict[str, Session] = {}
        self.metrics = Metrics()
        # Sessions held or being made, in total and per client: checked and taken under one lock.
        self._quota_lock = threading.Lock()
        self._held = 0
        self._held_by: collections.Counter[str] = collections.Counter()
        self._closing: set[asyncio.Task] = set()  # closes of timed-out sessions, kept referenced

    # --------------------------------------------------------------- quotas
    def _take_slot(self, client: str) -> None:
        with self._quota_lock:
            if self._held >= self.max_sessions:
                message = f"The server holds its maximum of {self.max_sessions} sessions; close some or retry later."
            elif self._held_by[client] >= self.max_sessions_per_client:
                message = (
                    f"This client holds its maximum of {self.max_sessions_per_client} sessions; "
                    "close some (DELETE /sessions/{id}) or retry later."
                )
            else:
                self._held += 1
                self._held_by[client] += 1
                return
        self.metrics.refused += 1
        raise ApiError("too_many_sessions", message)

    def _give_slot(self, client: str) -> None:
        with self._quota_lock:
            self._held -= 1
            self._held_by[client] -= 1
            if self._held_by[client] <= 0:
                del self._held_by[client]

    # ------------------------------------------------------------ lifecycle
    async def create(self, env_id: Any, kwargs: Any, client: str = "local") -> str:
        if not isinstance(env_id, str) or (self.allowed is not None and env_id not in self.allowed):
            served = ", ".join(sorted(self.allowed or ())) or "(every registered id)"
            raise ApiError("unknown_env", f"This server does not serve {str(env_id)[:100]!r}; it serves: {served}.")
        try:
            env_spec = lookup_spec(env_id)
            kwargs = check_kwargs(env_spec, kwargs, self.client_kwargs)
        except UnknownEnvError as exc:
            raise ApiError("unknown_env", str(exc), "UnknownEnvError") from exc
        except KwargsError as exc:
            raise ApiError("bad_request", str(exc), "ValueError") from exc
        self._take_slot(client)
        made = False
        try:
            env = await self._run(client, functools.partial(registration.make, env_id, **kwargs))
            made = True
        except (ValueError, TypeError) as exc:
            raise ApiError("bad_request", f"{env_id}: {exc}", type(exc).__name__) from exc
        except ApiError:
            raise
        except ClientQuotaExceeded as exc:  # an env that opens its shell when made
            self.metrics.refused += 1
            raise ApiError("too_many_sessions", str(exc), "ClientQuotaExceeded") from exc
        except Exception as exc:  # noqa: BLE001 - any failure of the env's constructor goes to the client
            self.metrics.errors += 1
            raise ApiError(
                "env_error", f"Making {env_id} raised {type(exc).__name__}: {exc}", type(exc).__name__
            ) from exc
        finally:
            if not made:
                self._give_slot(client)
        session_id = secrets.token_urlsafe(16)
        self.sessions[session_id] = Session(env, env_id, client)
        self.metrics.sessions_created += 1
        if self.session_log is not None:
            self.session_log.opened(session_id, env_id, kwargs, env)
        return session_id

    def get(self, session_id: Optional[str], client: Optional[str] = None) -> Session:
        session = self.sessions.get(session_id or "")
        if session is None or (client is not None and session.client != client):
            shown = str(session_id)[:40]
            raise ApiError(
                "unknown_session",
                f"No session {shown!r}: it was closed or expired (idle over {self.session_ttl:g} s). "
                "Create a new one (RemoteEnv.reset() does so by itself).",
            )
        session.last_used = time.monotonic()
        return session

    async def close(self, session_id: Optional[str], expired: bool = False, client: Optional[str] = None) -> bool:
        session = self.sessions.get(session_id or "")
        if session is None or (client is not None and session.client != client):
            return False
        del self.sessions[session_id or ""]
        if self.session_log is not None:
            self.session_log.closed(session_id or "")
        if expired:
            self.metrics.sessions_expired += 1
        else:
            self.metrics.sessions_closed += 1
        await self._close_env(session)
        return True

    async def _close_env(self, session: Session) -> None:
        """Close a session's env once no call of it runs, and free its quota slot."""
        try:
            async with session.lock:
                await self._run(session.client, _close_quietly, session.env)
        except ApiError:
            logger.warning("Closing a %s session timed out", session.env_id)
        finally:
            self._give_slot(session.client)

    async def expire(self) -> int:
        """Close the sessions idle for longer than ``session_ttl``; how many were closed."""
        now = time.monotonic()
        stale = [
            sid for sid, s in self.sessions.items() if now - s.last_used > self.session_ttl and not s.lock.locked()
        ]
        for sid in stale:
            await self.close(sid, expired=True)
        if stale:
            logger.info("Expired %d idle session(s)", len(stale))
        return len(stale)

    async def close_all(self) -> None:
        for sid in list(self.sessions):
            await self.close(sid)

    # ------------------------------------------------------------- env calls
    async def _run(
        self, client: str, fn: Callable[..., Any], *args: Any, on_done: Optional[Callable[[], None]] = None
    ) -> Any:
        try:
            return await self.scheduler.run(client, fn, *args, timeout=self.call_timeout, on_done=on_done)
        except CallTimeout as exc:
            self.metrics.timeouts += 1
            raise ApiError("timeout", str(exc), "TimeoutError") from exc

    async def _call(
        self, session_id: Optional[str], client: Optional[str], fn: Callable[[Env], Any], stage: Optional[str] = None
    ) -> Any:
        """``fn(env)`` on the session's env; ``stage`` (``"reset"`` or ``"env"``, a step) names the
        call to the session log when it fails."""
        session = self.get(session_id, client)
        # The lock is released when the env call has returned, not when this request ends: a call
        # that timed out or whose request was cancelled still owns the env until it finishes.
        await session.lock.acquire()
        try:
            if self.sessions.get(session_id or "") is not session:  # closed while we waited
                self.get(None)
        except ApiError:
            session.lock.release()
            raise
        try:
            return await self._run(session.client, fn, session.env, on_done=session.lock.release)
        except ApiError as exc:
            if exc.kind == "timeout":  # the env may still be busy: it cannot be used again
                exc.message += " The session was closed; create a new one."
                self._log_failure(session_id, stage, exc)
                self._retire(session_id, session)
            raise
        except ResetNeeded as exc:
            raise ApiError("reset_needed", str(exc), "ResetNeeded") from exc
        except ClientQuotaExceeded as exc:
            self.metrics.refused += 1
            self._log_failure(session_id, stage, exc)
            raise ApiError("too_many_sessions", str(exc), "ClientQuotaExceeded") from exc
        except Exception as exc:
            self.metrics.errors += 1
            self._log_failure(session_id, stage, exc)
            logger.exception("Session %s (%s) raised", session_id, session.env_id)
            raise ApiError(
                "env_error", f"{session.env_id} raised {type(exc).__name__}: {exc}", type(exc).__name__
            ) from exc
        finally:
            session.last_used = time.monotonic()

    def _retire(self, session_id: Optional[str], session: Session) -> None:
        """Drop a session whose call overran; its env is closed once that call has returned."""
        if self.sessions.get(session_id or "") is not session:
            return
        del self.sessions[session_id or ""]
        self.metrics.sessions_closed += 1
        if self.session_log is not None:
            self.session_log.closed(session_id or "")

        task = asyncio.get_running_loop().create_task(self._close_env(session))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def reset(self, session_id: Optional[str], seed: Any, client: Optional[str] = None) -> dict[str, Any]:
        if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
            raise ApiError("bad_request", f"seed must be an integer or null, got {str(seed)[:40]!r}.")
        obs, info = await self._call(session_id, client, lambda env: env.reset(seed=seed), stage="reset")
        self.metrics.resets += 1
        out = {"observation": obs, "info": jsonable(info)}
        if self.session_log is not None:
            self.session_log.reset(session_id or "", seed, obs, out["info"])
        return out

    def _log_failure(self, session_id: Optional[str], stage: Optional[str], exc: BaseException) -> None:
        """Tell the session log that a reset or step of the session's env failed."""
        if self.session_log is not None and stage is not None:
            self.session_log.failed(session_id or "", stage, exc)

    async def step(self, session_id: Optional[str], action: Any, client: Optional[str] = None) -> dict[str, Any]:
        if not isinstance(action, str):
            raise ApiError("bad_request", f"action must be a string, got {type(action).__name__}.")
        start = time.perf_counter()
        obs, reward, terminated, truncated, info = await self._call(
            session_id, client, lambda env: env.step(action), stage="env"
        )
        seconds = time.perf_counter() - start
        self.metrics.steps += 1
        self.metrics.step_seconds += seconds
        out = {
            "observation": obs,
            "reward": float(reward),
            "terminated": bool(terminated),
            "truncated": bool(truncated),
            "info": jsonable(info),
        }
        if self.session_log is not None:
            self.session_log.stepped(session_id or "", action, out, seconds)
        return out

    async def sample(self, session_id: Optional[str], client: Optional[str] = None) -> dict[str, Any]:
        return {"action": await self._call(session_id, client, lambda env: env.sample_random_action())}

    def metrics_text(self) -> str:
        m = self.metrics
        rows = [
            ("gem_sessions_active", "gauge", "sessions open now", len(self.sessions)),
            ("gem_sessions_created_total", "counter", "sessions created", m.sessions_created),
            ("gem_sessions_closed_total", "counter", "sessions closed by clients", m.sessions_closed),
            ("gem_sessions_expired_total", "counter", "sessions closed for idling", m.sessions_expired),
            ("gem_sessions_refused_total", "counter", "sessions refused by a quota", m.refused),
            ("gem_resets_total", "counter", "episodes started", m.resets),
            ("gem_steps_total", "counter", "env steps", m.steps),
            ("gem_errors_total", "counter", "env calls that raised", m.errors),
            ("gem_timeouts_total", "counter", "env calls over their time limit", m.timeouts),
            ("gem_step_seconds_total", "counter", "seconds spent in env steps", round(m.step_seconds, 6)),
            ("gem_workers_busy", "gauge", "workers running an env call", self.scheduler.busy),
            ("gem_calls_queued", "gauge", "env calls waiting for a worker", self.scheduler.queued),
        ]
        if self.session_log is not None:
            rows += self.session_log.metrics()
        lines = []
        for name, kind, help_text, value in rows:
            lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}", f"{name} {value}"]
        return "\n".join(lines) + "\n"


def _close_quietly(env: Env) -> None:
    try:
        env.close()
    except Exception:  # noqa: BLE001 - one env failing to close must not stop the server
        logger.exception("Closing an env raised")


def parse_json(data: Union[str, bytes]) -> Any:
    """A client's JSON, or ``ApiError("bad_request")`` saying why not (bad UTF-8, too deep, ...)."""
    try:
        return json.loads(data)
    except RecursionError:
        raise ApiError("bad_request", "The JSON is nested too deeply.") from None
    except ValueError as exc:  # includes UnicodeDecodeError
        raise ApiError("bad_request", f"The body must be JSON: {str(exc)[:200]}.") from None


async def _json_object(request: Request) -> dict[str, Any]:
    body = await request.body()
    if not body.strip():
        return {}
    data = parse_json(body)
    if not isinstance(data, dict):
        raise ApiError("bad_request", f"The body must be a JSON object, got {type(data).__name__}.")
    return data


def _client(conn: Union[Request, WebSocket]) -> str:
    return conn.scope.get(CLIENT_SCOPE_KEY, "local")


def open_session_log(record_dir: Optional[str], limits: Any = None) -> Any:
    """The :class:`gem.server.session_log.SessionLog` of ``record_dir``, or None without one."""
    if record_dir is None:
        if limits is not None:
            raise ValueError("record_limits without record_dir: give the folder the episodes go to.")
        return None
    from gem.server.session_log import SessionLog

    return SessionLog(record_dir, limits)


def per_client_sessions(max_sessions: int, asked: Optional[int] = None) -> int:
    """Sessions one client may hold: ``asked`` if given (it must be below ``max_sessions``), else
    the default per-client cap, lowered to a quarter of ``max_sessions``
    (:func:`~gem.http.protocol.client_share`) so that no one or two clients can take all."""
    if isinstance(max_sessions, bool) or not isinstance(max_sessions, int) or max_sessions < 1:
        raise ValueError(f"max_sessions must be at least 1, got {max_sessions!r}.")
    if asked is None:
        return min(DEFAULT_MAX_SESSIONS_PER_CLIENT, client_share(max_sessions))
    if isinstance(asked, bool) or not isinstance(asked, int) or asked < 1:
        raise ValueError(f"max_sessions_per_client must be at least 1, got {asked!r}.")
    if asked >= max_sessions > 1:
        raise ValueError(
            f"max_sessions_per_client ({asked}) must be below max_sessions ({max_sessions}), or one client could "
            f"hold every session and refuse all others; leave it out to use a quarter "
            f"({client_share(max_sessions)})."
        )
    return asked


class WebSocketGate:
    """Who may hold a WebSocket open, and for how long it may wait without a session.

    At most ``total`` WebSockets are open at once (half of the connection cap), and one client holds
    at most ``per_client`` of them: the operator's per-client session cap if one was given (below
    ``total``), else a quarter of ``total`` (:func:`~gem.http.protocol.client_share`). A socket
    must make its session within ``grace`` seconds of opening (or of losing its session); until then
    it holds a slot without having asked for anything, so past it the socket is closed. A socket
    with a session may stay idle for ``session_ttl`` seconds.
    """

    def __init__(
        self, connections: int, session_ttl: float, grace: float, asked_per_client: Optional[int] = None
    ) -> None:
        if isinstance(grace, bool) or not isinstance(grace, (int, float)) or not grace > 0:
            raise ValueError(f"session_grace must be positive seconds, got {grace!r}.")
        self.total = max(1, connections // 2)
        share = client_share(self.total)
        self.per_client = share if asked_per_client is None else max(1, min(asked_per_client, self.total - 1))
        self.session_ttl, self.grace = session_ttl, grace
        self.open: collections.Counter[str] = collections.Counter()

    def take(self, client: str) -> bool:
        """Take a slot for ``client``; False when the server or the client is at its cap."""
        if sum(self.open.values()) >= self.total or self.open[client] >= self.per_client:
            return False
        self.open[client] += 1
        return True

    def give(self, client: str) -> None:
        self.open[client] -= 1
        if self.open[client] <= 0:
            del self.open[client]

    def clock(self) -> "WebSocketClock":
        return WebSocketClock(self.session_ttl, self.grace)


class WebSocketClock:
    """One socket's wait for its next message: ``grace`` seconds in all while it holds no
    session (messages that make none do not extend it), ``session_ttl`` idle seconds while it does."""

    def __init__(self, session_ttl: float, grace: float) -> None:
        self.session_ttl, self.grace = session_ttl, grace
        self.without_session_since: Optional[float] = time.monotonic()

    def timeout(self, has_session: bool) -> float:
        if has_session:
            self.without_session_since = None
            return self.session_ttl
        if self.without_session_since is None:
            self.without_session_since = time.monotonic()
        return max(0.0, self.without_session_since + self.grace - time.monotonic())

    def closing(self, has_session: bool, make: str) -> dict[str, Any]:
        """The close frame for a socket whose wait ran out (``make``: the message that makes a session)."""
        if has_session:
            return {"code": 1000, "reason": f"idle for {self.session_ttl:g} s"}
        return {"code": 1008, "reason": f"no session within {self.grace:g} s of opening: send {make} first"}


async def receive_or_close(
    ws: WebSocket, clock: WebSocketClock, has_session: bool, make: str
) -> Optional[dict[str, Any]]:
    """The socket's next message, or None after closing it because its wait ran out."""
    try:
        return await asyncio.wait_for(ws.receive(), clock.timeout(has_session))
    except asyncio.TimeoutError:
        await ws.close(**clock.closing(has_session, make))
        return None


def create_app(
    env_ids: Optional[Sequence[str]] = None,
    token: Optional[str] = None,
    session_ttl: float = DEFAULT_SESSION_TTL,
    max_sessions: int = DEFAULT_MAX_SESSIONS,
    *,
    tokens: Sequence[str] = (),
    allow_origins: Sequence[str] = (),
    limits: Optional[ServerLimits] = None,
    client_kwargs: Union[ClientKwargs, str] = ClientKwargs.DECLARED,
    max_sessions_per_client: Optional[int] = None,
    workers: int = DEFAULT_WORKERS,
    per_client_workers: Optional[int] = None,
    call_timeout: float = DEFAULT_CALL_TIMEOUT,
    allowed_hosts: Optional[Sequence[str]] = None,
    shells_per_client: Optional[int] = None,
    test_threads_per_client: int = DEFAULT_TEST_THREADS_PER_CLIENT,
    session_grace: float = DEFAULT_SESSION_GRACE,
    record_dir: Optional[str] = None,
    record_limits: Any = None,
) -> FastAPI:
    """The server app (run it with uvicorn, or ``gem serve``).

    Args:
        env_ids: the ids clients may make (default: every registered id). Unknown ids raise.
        token: if given, every route but ``/health`` needs ``Authorization: Bearer <token>``.
        session_ttl: seconds a session may stay idle before the server closes it.
        max_sessions: sessions held at once; more are refused with status 429.
        tokens: more accepted tokens, one per client (quotas and fair shares are per token).
        allow_origins: browser origins allowed to call (default none; ``"*"`` any).
        limits: body, time and connection limits (:class:`ServerLimits`).
        client_kwargs: ``"declared"`` (kwargs only as each env's schema declares, the default),
            ``"typed"`` or ``"any"`` (see :mod:`gem.server.schema`).
        max_sessions_per_client: sessions one client (a token; without tokens, see
            :func:`gem.http.limits.client_of_peer`) may hold (default :func:`per_client_sessions`:
            1000, and at most a quarter of ``max_sessions``); it must be below ``max_sessions``, so
            no client can take every session. Given, it is also the client's WebSocket cap (below
            the WebSocket total); else that is a quarter of the WebSockets (:class:`WebSocketGate`).
        workers: threads running env calls; per_client_workers: how many of them one client may
            use at once (default half).
        call_timeout: seconds one env call (make, reset, step, sample) may wait and run.
        allowed_hosts: if given, the only ``Host`` names answered (``gem serve`` on a loopback
            address answers only to loopback names).
        shells_per_client: sandbox sessions (terminal shells, Python-tool kernels) one client may
            hold at once in each shared sandbox (default a quarter of what it may hold);
            test_threads_per_client: threads of each client's own code-test pool (see
            :mod:`gem.server.quotas`).
        session_grace: seconds a new WebSocket has to make its session (``make``) before it is
            closed with 1008.
        record_dir: if given, every episode played is written to ``record_dir/episodes.jsonl`` as a
            trajectory record (:mod:`gem.server.session_log`), within ``record_limits``
            (a :class:`gem.server.session_log.RecordLimits`; default its defaults).
    """
    if env_ids is not None:
        env_ids = list(env_ids)
        for env_id in env_ids:
            lookup_spec(env_id)  # an unknown id fails now, with suggestions
    if session_ttl <= 0:
        raise ValueError(f"session_ttl must be positive seconds, got {session_ttl!r}.")
    if max_sessions < 1:
        raise ValueError(f"max_sessions must be at least 1, got {max_sessions!r}.")
    asked_per_client = max_sessions_per_client
    max_sessions_per_client = per_client_sessions(max_sessions, max_sessions_per_client)
    check_quota_numbers(shells_per_client, test_threads_per_client)
    if not call_timeout > 0:
        raise ValueError(f"call_timeout must be positive seconds, got {call_timeout!r}.")
    all_tokens = ([token] if token else []) + list(tokens)
    limits = limits or ServerLimits()
    store = SessionStore(
        env_ids, session_ttl, max_sessions, max_sessions_per_client, client_kwargs,
        FairScheduler(workers, per_client_workers), call_timeout, open_session_log(record_dir, record_limits),
    )
    started = time.monotonic()
    gate = WebSocketGate(limits.max_connections, session_ttl, session_grace, asked_per_client)

    async def sweep() -> None:
        while True:
            await asyncio.sleep(min(max(session_ttl / 4, 0.05), 30.0))
            await store.expire()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> Any:
        task = asyncio.create_task(sweep())
        uninstall_quotas = install_quotas(shells_per_client, test_threads_per_client)
        try:
            yield
        finally:
            task.cancel()
            uninstall_quotas()
            try:  # envs still busy in a call are left to finish on their own
                await asyncio.wait_for(store.close_all(), SHUTDOWN_CLOSE_TIMEOUT)
            except asyncio.TimeoutError:
                logger.warning("Shutting down with %d session(s) still busy", len(store.sessions))
            store.scheduler.shutdown()
            if store.session_log is not None:
                store.session_log.close()

    app = FastAPI(
        title="GEM env server", lifespan=lifespan, default_response_class=AsciiJSONResponse,
        docs_url=None, redoc_url=None, openapi_url=None,
    )
    app.state.store = store
    app.add_middleware(
        GuardMiddleware, limits=limits, tokens=all_tokens, allow_origins=allow_origins, open_paths=("/health",),
        allowed_hosts=allowed_hosts,
    )

    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> JSONResponse:
        return AsciiJSONResponse(exc.body(), status_code=exc.status)

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {"status": "ok", "sessions": len(store.sessions), "uptime_s": round(time.monotonic() - started, 3)}

    @app.get("/metrics", response_class=PlainTextResponse)
    async def metrics() -> str:
        return store.metrics_text()

    @app.get("/envs")
    async def envs() -> dict[str, Any]:
        return {"env_ids": sorted(store.allowed) if store.allowed is not None else registration.list_envs()}

    @app.get("/envs/{env_id:path}/kwargs")
    async def env_kwargs(env_id: str) -> dict[str, Any]:
        """The JSON Schema of the kwargs a client may send for ``env_id`` (from its env's PARAMS)."""
        if store.allowed is not None and env_id not in store.allowed:
            raise ApiError("unknown_env", f"This server does not serve {env_id[:100]!r}.")
        try:
            env_spec = lookup_spec(env_id)
        except UnknownEnvError as exc:
            raise ApiError("unknown_env", str(exc), "UnknownEnvError") from exc
        return {"env_id": env_id, "kwargs": kwargs_json_schema(env_spec, store.client_kwargs)}

    @app.post("/sessions", status_code=201)
    async def make_session(request: Request) -> dict[str, Any]:
        body = await _json_object(request)
        env_id = body.get("env_id")
        if not isinstance(env_id, str):
            raise ApiError("bad_request", "The body needs 'env_id' (a string) and optionally 'kwargs' (an object).")
        session_id = await store.create(env_id, body.get("kwargs") or {}, _client(request))
        return {"session_id": session_id, "env_id": env_id}

    @app.post("/sessions/{session_id}/reset")
    async def reset(session_id: str, request: Request) -> dict[str, Any]:
        body = await _json_object(request)
        return await store.reset(session_id, body.get("seed"), _client(request))

    @app.post("/sessions/{session_id}/step")
    async def step(session_id: str, request: Request) -> dict[str, Any]:
        body = await _json_object(request)
        if "action" not in body:
            raise ApiError("bad_request", "The body needs 'action' (a string).")
        return await store.step(session_id, body["action"], _client(request))

    @app.post("/sessions/{session_id}/sample")
    async def sample(session_id: str, request: Request) -> dict[str, Any]:
        return await store.sample(session_id, _client(request))

    @app.delete("/sessions/{session_id}")
    async def delete(session_id: str, request: Request) -> dict[str, Any]:
        if not await store.close(session_id, client=_client(request)):
            store.get(None)  # raises unknown_session
        return {"closed": True}

    @app.websocket("/ws")
    async def websocket(ws: WebSocket) -> None:
        client = _client(ws)
        if not gate.take(client):
            await ws.accept()  # (closing before the handshake would answer a bare 403)
            await ws.close(code=1013, reason="too many open WebSockets; retry later")
            return
        session_id: Optional[str] = None
        clock = gate.clock()
        try:
            await ws.accept()
            while True:
                message = await receive_or_close(ws, clock, session_id is not None, "make")
                if message is None or message["type"] == "websocket.disconnect":
                    break
                try:
                    if message.get("text") is None:
                        raise ApiError("bad_request", "Send each message as JSON in a text frame, not a binary one.")
                    request = parse_json(message["text"])
                    reply, session_id = await _ws_op(store, request, session_id, client)
                    await ws.send_text(json.dumps({"ok": True, **reply}))  # ASCII: see AsciiJSONResponse
                except ApiError as exc:
                    if session_id not in store.sessions:  # a failed make closed it, or it expired
                        session_id = None
                    await ws.send_text(json.dumps({"ok": False, "status": exc.status, **exc.body()}))
        except WebSocketDisconnect:
            pass
        finally:
            gate.give(client)
            if session_id is not None:
                await store.close(session_id)

    return app


async def _ws_op(
    store: SessionStore, message: Any, session_id: Optional[str], client: str
) -> tuple[dict[str, Any], Optional[str]]:
    """Answer one WebSocket message; returns the reply and the connection's session id."""
    if not isinstance(message, dict):
        raise ApiError("bad_request", "Each message is a JSON object with an 'op'.")
    op = message.get("op")
    if op == "make":
        if session_id is not None:
            await store.close(session_id)
            session_id = None
        session_id = await store.create(message.get("env_id"), message.get("kwargs") or {}, client)
        return {"session_id": session_id}, session_id
    if op == "reset":
        return await store.reset(session_id, message.get("seed"), client), session_id
    if op == "step":
        return await store.step(session_id, message.get("action"), client), session_id
    if op == "sample":
        return await store.sample(session_id, client), session_id
    if op == "close":
        await store.close(session_id)
        return {"closed": True}, None
    raise ApiError("bad_request", f"Unknown op {str(op)[:40]!r}; use make, reset, step, sample or close.")
