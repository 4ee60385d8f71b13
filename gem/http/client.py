"""``RemoteEnv``: a gem Env whose episodes run on a ``gem serve`` server.

Over HTTP (default; ``httpx`` with a kept-alive connection) or one WebSocket per env
(``transport="websocket"``, lower latency per step). A server that cannot be reached raises
:class:`gem.errors.ResourceUnavailable` naming the URL; errors the env raised on the server come
back with their type and message.
"""

from __future__ import annotations

import json
import logging
import os
from typing import Any, Optional

from gem.core import Env, StepResult
from gem.errors import GemError, ResetNeeded, ResourceUnavailable, UnknownEnvError, install_hint, missing_extra
from gem.http.protocol import DEFAULT_CLIENT_TIMEOUT, TOKEN_ENV_VAR

logger = logging.getLogger(__name__)

TRANSPORTS = ("http", "websocket")
_JSON_HEADERS = {"Content-Type": "application/json"}


class RemoteEnvError(GemError, RuntimeError):
    """The env on the server raised; ``remote_type`` is the name of its exception class."""

    def __init__(self, message: str, remote_type: str) -> None:
        super().__init__(message)
        self.remote_type = remote_type


class RemoteEnv(Env):
    """An env served by ``gem serve`` at ``url``; ``kwargs`` are the env's constructor arguments.

    Args:
        url: the server, e.g. ``"http://10.0.0.5:8000"``.
        env_id: a registered id the server serves.
        token: the server's bearer token (default: ``$GEM_SERVER_TOKEN``).
        timeout: seconds to wait for one call.
        transport: ``"http"`` or ``"websocket"``.

    The server session is made at construction (so a bad id or kwargs fail here); if the server
    closed it for idling, ``reset`` makes a new one, while ``step`` raises ``ResetNeeded``.
    """

    def __init__(
        self,
        url: str,
        env_id: str,
        token: Optional[str] = None,
        timeout: float = DEFAULT_CLIENT_TIMEOUT,
        transport: str = "http",
        **kwargs: Any,
    ) -> None:
        if transport not in TRANSPORTS:
            raise ValueError(f"Unknown transport {transport!r}; choose one of: {', '.join(TRANSPORTS)}.")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ValueError(f"url must start with http:// or https://, got {url!r}.")
        try:
            import httpx
        except ImportError as exc:
            raise missing_extra("RemoteEnv", "server", "httpx") from exc
        self._httpx = httpx
        self.url = url.rstrip("/")
        self.remote_id = env_id
        self.kwargs = kwargs
        self.transport = transport
        self.timeout = timeout
        token = token if token is not None else os.environ.get(TOKEN_ENV_VAR)
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._client: Any = None
        self._ws: Any = None
        self.session_id: Optional[str] = None
        self._open_session()

    # ------------------------------------------------------------ transport
    def _unreachable(self, exc: BaseException) -> ResourceUnavailable:
        return ResourceUnavailable(
            f"The GEM server at {self.url} is unreachable ({type(exc).__name__}: {exc}). Start it with "
            f"`gem serve {self.remote_id}` ({install_hint('server')}) or check the URL and network."
        )

    def _http(self, method: str, path: str, body: Optional[dict[str, Any]] = None) -> dict[str, Any]:
        if self._client is None:
            self._client = self._httpx.Client(base_url=self.url, headers=self._headers, timeout=self.timeout)
        try:
            # ASCII JSON (json.dumps' default): lone surrogates in an action are escaped, not fatal.
            content = None if body is None else json.dumps(body).encode("ascii")
            response = self._client.request(method, path, content=content, headers=_JSON_HEADERS)
        except self._httpx.TransportError as exc:
            raise self._unreachable(exc) from exc
        try:
            payload = response.json()
        except ValueError:
            payload = {"error": {"kind": "bad_response", "type": "HTTPError", "message": response.text[:200]}}
        if response.status_code >= 400:
            self._raise(payload.get("error") or {}, response.status_code)
        return payload

    def _websocket(self, message: dict[str, Any]) -> dict[str, Any]:
        try:
            from websockets.exceptions import WebSocketException
            from websockets.sync.client import connect
        except ImportError as exc:
            raise missing_extra("transport='websocket'", "server", "websockets") from exc
        try:
            if self._ws is None:
                ws_url = "ws" + self.url[len("http"):] + "/ws"
                # Held open across calls (closed in close()): enter it as the library asks.
                self._ws = connect(ws_url, additional_headers=self._headers, open_timeout=self.timeout).__enter__()
            self._ws.send(json.dumps(message))
            reply = json.loads(self._ws.recv(timeout=self.timeout))
        except (OSError, TimeoutError, WebSocketException) as exc:
            self._ws = None
            raise self._unreachable(exc) from exc
        if not reply.get("ok"):
            self._raise(reply.get("error") or {}, int(reply.get("status", 500)))
        return reply

    def _request(self, op: str, body: Optional[dict[str, Any]] = None) -> dict[str, Any]:
        if self.transport == "websocket":
            return self._websocket({"op": op, **(body or {})})
        if op == "make":
            return self._http("POST", "/sessions", body)
        return self._http("POST", f"/sessions/{self.session_id}/{op}", body)

    def _raise(self, error: dict[str, Any], status: int) -> None:
        kind, message = error.get("kind", ""), error.get("message", f"HTTP status {status}")
        where = f"GEM server {self.url}"
        if kind == "unknown_env":
            raise UnknownEnvError(f"{where}: {message}")
        if kind == "bad_request":
            raise ValueError(f"{where}: {message}")
        if kind in ("reset_needed", "unknown_session"):
            raise ResetNeeded(f"{where}: {message}")
        if kind == "unauthorized":
            raise ResourceUnavailable(f"{where} refused the token: {message} Pass token= or set ${TOKEN_ENV_VAR}.")
        if kind == "too_many_sessions":
            raise ResourceUnavailable(f"{where}: {message}")
        raise RemoteEnvError(f"{where}: {message}", error.get("type", "Exception"))

    def _open_session(self) -> None:
        reply = self._request("make", {"env_id": self.remote_id, "kwargs": self.kwargs})
        self.session_id = reply["session_id"]

    # -------------------------------------------------------------- the API
    def reset(self, seed: Optional[int] = None, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        super().reset(seed)
        try:
            reply = self._request("reset", {"seed": seed})
        except ResetNeeded:  # the server expired our session: open a new one and go on
            logger.info("Session on %s expired; opening a new one", self.url)
            self._open_session()
            reply = self._request("reset", {"seed": seed})
        return reply["observation"], reply["info"]

    def _step(self, action: str) -> StepResult:
        reply = self._request("step", {"action": action})
        return self._result(reply["observation"], reply["reward"], reply["terminated"], reply["truncated"], reply["info"])

    def sample_random_action(self) -> str:
        return self._request("sample")["action"]

    def close(self) -> None:
        """Close the server session (best effort) and the connection."""
        try:
            if self.transport == "websocket" and self._ws is not None:
                self._ws.close()  # the server closes the session with the socket
            elif self.session_id is not None:
                self._http("DELETE", f"/sessions/{self.session_id}")
        except GemError:
            pass
        finally:
            self.session_id, self._ws = None, None
            if self._client is not None:
                self._client.close()
                self._client = None

    @property
    def env_id(self) -> Optional[str]:
        return self.remote_id

    def __str__(self) -> str:
        return f"<RemoteEnv {self.remote_id} at {self.url}>"
