"""GEM ids over OpenEnv's server protocol (``gem serve --protocol openenv``).

The routes and messages are OpenEnv's (``openenv-core``'s ``HTTPEnvServer``), so OpenEnv's clients
(``GenericEnvClient``, typed ``EnvClient`` subclasses, trainers built on them) play GEM envs:

- WebSocket ``/ws``, one session per connection: ``{"type": "reset", "data": {"seed", "episode_id",
  "env_id", "kwargs"}}``, ``{"type": "step", "data": {"text": ...}}``, ``{"type": "state"}``,
  ``{"type": "close"}``; answered ``{"type": "observation", "data": {"observation", "reward", "done"}}``,
  ``{"type": "state", "data": {...}}`` or ``{"type": "error", "data": {"message", "code"}}`` with
  OpenEnv's codes (``INVALID_JSON``, ``UNKNOWN_TYPE``, ``VALIDATION_ERROR``, ``EXECUTION_ERROR``,
  ``CAPACITY_REACHED``, ``FACTORY_ERROR``, ``SESSION_ERROR``).
- Stateless HTTP, as OpenEnv: ``POST /reset`` and ``POST /step`` each build a fresh env, use it once
  and close it (``/step`` resets it with the body's ``seed`` first, so it answers for the episode
  ``/reset`` with that seed shows); ``GET /state`` is a fresh env's state.
- ``GET /health``, ``/metadata``, ``/schema``.

The observation is ``{"text", "metadata"}`` with the reward and ``done`` beside it; ``metadata`` is
GEM's info plus ``terminated`` and ``truncated``. ``env_id`` in the reset data picks the id when the
server serves several (with one, it may be left out).

Everything ``gem serve`` enforces holds here too, through the same code: tokens, origin and host
checks, body and time limits (:class:`gem.http.limits.GuardMiddleware`), kwargs checked against
each env's declared schema, session quotas in total and per client, and the fair scheduler with its
per-call time limit (:class:`gem.server.app.SessionStore`), WebSocket caps in total and per client
(:class:`gem.server.app.WebSocketGate`). A WebSocket that has not reset within ``session_grace``
seconds of opening is closed (1008), so sockets that never ask for anything cannot hold the
server's capacity. openenv-core itself is not needed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
from typing import Any, Optional, Sequence, Union

from fastapi import FastAPI, Request, WebSocket, WebSocketDisconnect
from pydantic import BaseModel, ValidationError

from gem.envs.registration import spec as lookup_spec
from gem.interop.openenv import models
from gem.server.app import (
    SHUTDOWN_CLOSE_TIMEOUT,
    ApiError,
    AsciiJSONResponse,
    SessionStore,
    WebSocketGate,
    parse_json,
    per_client_sessions,
    receive_or_close,
)
from gem.http.limits import CLIENT_SCOPE_KEY, GuardMiddleware, ServerLimits
from gem.http.protocol import (
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_MAX_SESSIONS,
    DEFAULT_SESSION_GRACE,
    DEFAULT_SESSION_TTL,
    DEFAULT_WORKERS,
    jsonable,
)
from gem.server.quotas import DEFAULT_TEST_THREADS_PER_CLIENT, install as install_quotas
from gem.server.quotas import check_numbers as check_quota_numbers
from gem.server.scheduler import FairScheduler
from gem.server.schema import ClientKwargs
from gem.version import __version__

logger = logging.getLogger(__name__)

# GEM's error kinds -> OpenEnv's WebSocket codes (making a session vs. using one).
_MAKE_CODES = {"too_many_sessions": models.CAPACITY_REACHED, "timeout": models.EXECUTION_ERROR}


def _ws_code(exc: ApiError, making: bool) -> str:
    if making:
        return _MAKE_CODES.get(exc.kind, models.FACTORY_ERROR)
    return models.VALIDATION_ERROR if exc.kind == "bad_request" else models.EXECUTION_ERROR


def _errors(exc: ValidationError) -> list[dict[str, Any]]:
    return jsonable(exc.errors(include_url=False))


class _Connection:
    """One WebSocket's session: which id, which episode, how many steps."""

    def __init__(self) -> None:
        self.session_id: Optional[str] = None
        self.made_with: Optional[tuple[str, str]] = None  # (env_id, kwargs as JSON)
        self.episode_id: Optional[str] = None
        self.step_count = 0
        self.seed: Optional[int] = None

    def state(self) -> dict[str, Any]:
        env_id = self.made_with[0] if self.made_with else None
        return models.TextState(
            episode_id=self.episode_id, step_count=self.step_count, env_id=env_id, seed=self.seed
        ).model_dump()


def create_openenv_app(
    env_ids: Optional[Sequence[str]] = None,
    *,
    session_ttl: float = DEFAULT_SESSION_TTL,
    max_sessions: int = DEFAULT_MAX_SESSIONS,
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
    """An OpenEnv server for GEM ids (run it with uvicorn, or ``gem serve --protocol openenv``).

    The arguments are :func:`gem.server.app.create_app`'s, with the same meaning and defaults.
    """
    if env_ids is not None:
        env_ids = list(env_ids)
        if not env_ids:
            raise ValueError("env_ids is empty; give the ids to serve, or None for every registered id.")
        for env_id in env_ids:
            lookup_spec(env_id)  # an unknown id fails now, with suggestions
    for name, value in (("session_ttl", session_ttl), ("call_timeout", call_timeout)):
        if not value > 0:
            raise ValueError(f"{name} must be positive seconds, got {value!r}.")
    asked_per_client = max_sessions_per_client
    max_sessions_per_client = per_client_sessions(max_sessions, max_sessions_per_client)
    check_quota_numbers(shells_per_client, test_threads_per_client)
    limits = limits or ServerLimits()
    from gem.server.app import open_session_log

    store = SessionStore(
        env_ids, session_ttl, max_sessions, max_sessions_per_client, client_kwargs,
        FairScheduler(workers, per_client_workers), call_timeout, open_session_log(record_dir, record_limits),
    )
    default_id = env_ids[0] if env_ids and len(env_ids) == 1 else None
    gate = WebSocketGate(limits.max_connections, session_ttl, session_grace, asked_per_client)

    def pick_id(env_id: Optional[str]) -> str:
        if env_id is None:
            if default_id is None:
                served = ", ".join(env_ids) if env_ids else "every registered id (gem list)"
                raise ApiError("bad_request", f"This server serves several ids; put 'env_id' in the reset data: {served}.")
            return default_id
        return env_id

    async def make(env_id: Optional[str], kwargs: Optional[dict[str, Any]], client: str) -> str:
        return await store.create(pick_id(env_id), kwargs or {}, client)

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
            try:
                await asyncio.wait_for(store.close_all(), SHUTDOWN_CLOSE_TIMEOUT)
            except asyncio.TimeoutError:
                logger.warning("Shutting down with %d session(s) still busy", len(store.sessions))
            store.scheduler.shutdown()
            if store.session_log is not None:
                store.session_log.close()

    app = FastAPI(  # /openapi.json as OpenEnv's servers have it: `openenv validate` reads its paths
        title="GEM (OpenEnv protocol)", version=__version__, lifespan=lifespan,
        default_response_class=AsciiJSONResponse, docs_url=None, redoc_url=None, openapi_url="/openapi.json",
    )
    app.state.store = store
    app.add_middleware(
        GuardMiddleware, limits=limits, tokens=list(tokens), allow_origins=allow_origins,
        open_paths=("/health",), allowed_hosts=allowed_hosts,
    )

    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> AsciiJSONResponse:
        return AsciiJSONResponse({"detail": exc.message}, status_code=exc.status)

    async def body_of(request: Request, model: type[BaseModel]) -> Any:
        raw = await request.body()
        data = parse_json(raw) if raw.strip() else {}
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            raise _Invalid(_errors(exc)) from None

    @app.exception_handler(_Invalid)
    async def invalid(request: Request, exc: _Invalid) -> AsciiJSONResponse:
        return AsciiJSONResponse({"detail": exc.errors}, status_code=422)

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {"status": "healthy"}

    @app.get("/metadata")
    async def metadata() -> dict[str, Any]:
        if default_id is not None:
            spec = lookup_spec(default_id)
            name, description = default_id, spec.description or f"GEM env {default_id}"
        else:
            name = "GEM"
            served = ", ".join(env_ids) if env_ids else "every registered GEM id"
            description = f"GEM envs ({served}); pick one with env_id in the reset data."
        return {
            "name": name, "description": description, "readme_content": None,
            "version": __version__, "author": None, "documentation_url": None,
        }

    @app.get("/schema")
    async def schema() -> dict[str, Any]:
        return {
            "action": models.TextAction.model_json_schema(),
            "observation": models.TextObservation.model_json_schema(),
            "state": models.TextState.model_json_schema(),
        }

    @app.post("/mcp")
    async def mcp(request: Request) -> dict[str, Any]:
        """OpenEnv's JSON-RPC endpoint: GEM envs expose no MCP tools here (their tools are in the text)."""
        raw = await request.body()
        try:
            call = json.loads(raw) if raw.strip() else None
        except (ValueError, RecursionError):
            return _rpc_error(None, -32700, "Parse error")
        if not isinstance(call, dict) or call.get("jsonrpc") != "2.0" or not isinstance(call.get("method"), str):
            return _rpc_error(call.get("id") if isinstance(call, dict) else None, -32600, "Invalid Request")
        if call["method"] == "tools/list":
            return {"jsonrpc": "2.0", "id": call.get("id"), "result": {"tools": []}}
        return _rpc_error(call.get("id"), -32601, f"Method not found: {call['method'][:60]} (GEM serves no MCP tools)")

    @app.get("/state")
    async def state() -> dict[str, Any]:
        return _Connection().state()  # a fresh env's state: OpenEnv's HTTP /state builds a new env

    @app.post("/reset")
    async def reset(request: Request) -> dict[str, Any]:
        data: models.ResetData = await body_of(request, models.ResetData)
        client = request.scope.get(CLIENT_SCOPE_KEY, "local")
        session_id = await make(data.env_id, data.kwargs, client)
        try:
            out = await store.reset(session_id, data.seed, client)
        finally:
            await store.close(session_id)
        return models.observation_payload(out["observation"], None, False, out["info"])

    @app.post("/step")
    async def step(request: Request) -> dict[str, Any]:
        data: models.StepData = await body_of(request, models.StepData)
        try:
            action = models.TextAction.model_validate(data.action)
        except ValidationError as exc:
            raise _Invalid(_errors(exc)) from None
        client = request.scope.get(CLIENT_SCOPE_KEY, "local")
        session_id = await make(data.env_id, data.kwargs, client)
        try:
            await store.reset(session_id, data.seed, client)
            out = await store.step(session_id, action.text, client)
        finally:
            await store.close(session_id)
        return _step_payload(out)

    @app.websocket("/ws")
    async def websocket(ws: WebSocket) -> None:
        client = ws.scope.get(CLIENT_SCOPE_KEY, "local")
        if not gate.take(client):
            await ws.accept()
            await ws.send_text(_error(models.CAPACITY_REACHED, "Too many open WebSockets; retry later."))
            await ws.close()  # as OpenEnv: the error, then a normal close
            return
        conn = _Connection()
        clock = gate.clock()
        try:
            await ws.accept()
            while True:
                message = await receive_or_close(ws, clock, conn.session_id is not None, "a reset")
                if message is None or message["type"] == "websocket.disconnect":
                    break
                text = message.get("text")
                if text is None:
                    await ws.send_text(_error(models.INVALID_JSON, "Send each message as JSON in a text frame."))
                    continue
                try:
                    request = json.loads(text)
                except (ValueError, RecursionError) as exc:
                    await ws.send_text(_error(models.INVALID_JSON, f"Invalid JSON: {str(exc)[:200]}"))
                    continue
                if not isinstance(request, dict):
                    await ws.send_text(_error(models.VALIDATION_ERROR, "Each message is a JSON object with a 'type'."))
                    continue
                kind = request.get("type", "")
                if kind == "close":
                    break
                reply = await _ws_message(kind, request, conn, client)
                await ws.send_text(json.dumps(reply))  # ASCII: see AsciiJSONResponse
        except WebSocketDisconnect:
            pass
        finally:
            gate.give(client)
            if conn.session_id is not None:
                await store.close(conn.session_id)

    async def _ws_message(kind: Any, request: dict[str, Any], conn: _Connection, client: str) -> dict[str, Any]:
        data = request.get("data", {})
        if kind == "reset":
            try:
                reset_data = models.ResetData.model_validate(data if data is not None else {})
            except ValidationError as exc:
                return _error_reply(models.VALIDATION_ERROR, "Invalid message", errors=_errors(exc))
            try:
                env_id = pick_id(reset_data.env_id)
                made_with = (env_id, json.dumps(reset_data.kwargs or {}, sort_keys=True, default=str))
                if conn.session_id is None or conn.made_with != made_with:
                    if conn.session_id is not None:
                        await store.close(conn.session_id)
                        conn.session_id = conn.made_with = None
                    conn.session_id = await make(env_id, reset_data.kwargs, client)
                    conn.made_with = made_with
            except ApiError as exc:
                return _error_reply(_ws_code(exc, making=True), exc.message)
            try:
                out = await store.reset(conn.session_id, reset_data.seed, client)
            except ApiError as exc:
                if conn.session_id not in store.sessions:  # closed after a timed-out call
                    conn.session_id = conn.made_with = None
                return _error_reply(_ws_code(exc, making=False), exc.message)
            conn.episode_id = reset_data.episode_id or secrets.token_hex(8)
            conn.step_count, conn.seed = 0, reset_data.seed
            return {"type": "observation", "data": models.observation_payload(out["observation"], None, False, out["info"])}
        if kind == "step":
            try:
                action = models.TextAction.model_validate(data)
            except ValidationError as exc:
                return _error_reply(models.VALIDATION_ERROR, "Invalid message", errors=_errors(exc))
            if conn.session_id is None:
                return _error_reply(models.EXECUTION_ERROR, "No episode is running: send a reset first.")
            try:
                out = await store.step(conn.session_id, action.text, client)
            except ApiError as exc:
                if conn.session_id not in store.sessions:  # expired, or closed after a timed-out call
                    conn.session_id = conn.made_with = None
                return _error_reply(_ws_code(exc, making=False), exc.message)
            conn.step_count += 1
            return {"type": "observation", "data": _step_payload(out)}
        if kind == "state":
            return {"type": "state", "data": conn.state()}
        return _error_reply(
            models.UNKNOWN_TYPE, f"Unknown message type: {str(kind)[:40]} (this server answers reset, step, state, close)"
        )

    return app


class _Invalid(Exception):
    """A body that does not match its model: answered 422 with pydantic's errors, as FastAPI does."""

    def __init__(self, errors: list[dict[str, Any]]) -> None:
        super().__init__("invalid body")
        self.errors = errors


def _step_payload(out: dict[str, Any]) -> dict[str, Any]:
    terminated, truncated = out["terminated"], out["truncated"]
    metadata = {**out["info"], "terminated": terminated, "truncated": truncated}
    return models.observation_payload(out["observation"], out["reward"], terminated or truncated, metadata)


def _rpc_error(call_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": call_id if isinstance(call_id, (str, int)) else None,
            "error": {"code": code, "message": message}}


def _error_reply(code: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"type": "error", "data": {"message": message, "code": code, **extra}}


def _error(code: str, message: str) -> str:
    return json.dumps(_error_reply(code, message))

