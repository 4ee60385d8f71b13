"""Any OpenEnv server as a GEM env: ``gem.make("openenv:http://host:port")``.

:class:`OpenEnvEnv` speaks OpenEnv's WebSocket protocol (``/ws``: ``reset``, ``step``, ``close``)
with the ``websockets`` package (the ``server`` extra); openenv-core is not needed.

- **Actions.** GEM's action is text. The server's ``/schema`` says what its action is: a text action
  is one whose required fields are a single string (``text`` for GEM's own servers, ``message`` for
  OpenEnv's echo env, ...), and the text goes into that field. Any other action needs
  ``action_fn(text) -> dict``, the mapping hook; without it ``OpenEnvEnv`` raises ``ValueError``
  naming the server's action fields.
- **Observations.** The text is the observation's ``text`` field, else its only string field, else
  the observation as JSON; or whatever ``observation_fn(observation_dict) -> str`` returns.
- **Reward and end.** The result's ``reward`` (``None`` is 0.0) and ``done``. A GEM server also sends
  ``terminated``/``truncated`` in the observation's metadata: they are used as they are; for other
  servers ``done`` means terminated. ``info`` is the observation's metadata (without the two flags).
- **Seeds.** ``reset(seed=s)`` sends ``seed`` in the reset data; ``reset()`` sends a seed drawn from
  this env's generator, so a GEM env made with ``seed=`` stays reproducible.
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from typing import Any, Callable, Optional

from gem.core import Env
from gem.errors import GemError, InfrastructureError, missing_extra

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 60.0
_SEED_BOUND = 2**31 - 1
_END_FLAGS = ("terminated", "truncated")


class OpenEnvError(GemError, RuntimeError):
    """The OpenEnv server answered with an error (its ``code`` and ``message``)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"The OpenEnv server answered {code}: {message}")
        self.code, self.message = code, message


def text_field(action_schema: dict[str, Any]) -> Optional[str]:
    """The field a text goes into, if ``action_schema`` is a text action: its required fields are
    one string (``metadata`` aside); with no required field, a single string field. Else ``None``."""
    props = {k: v for k, v in (action_schema.get("properties") or {}).items() if k != "metadata"}
    required = [k for k in action_schema.get("required") or [] if k != "metadata"]
    candidates = required or list(props)
    if len(candidates) == 1 and _is_string(props.get(candidates[0], {})):
        return candidates[0]
    return None


def _is_string(prop: dict[str, Any]) -> bool:
    if prop.get("type") == "string":
        return True
    return any(option.get("type") == "string" for option in prop.get("anyOf", []) if isinstance(option, dict))


def observation_text(observation: dict[str, Any]) -> str:
    """An observation dict as text: its ``text``, else its only string field, else JSON."""
    fields = {k: v for k, v in observation.items() if k != "metadata"}
    if isinstance(fields.get("text"), str):
        return fields["text"]
    strings = [v for v in fields.values() if isinstance(v, str)]
    if len(strings) == 1 and len(fields) == 1:
        return strings[0]
    return json.dumps(fields, sort_keys=True, default=str)


def http_to_ws(base_url: str) -> str:
    base = base_url.rstrip("/")
    if base.startswith("https://"):
        return "wss://" + base[len("https://"):]
    if base.startswith("http://"):
        return "ws://" + base[len("http://"):]
    if base.startswith(("ws://", "wss://")):
        return base
    raise ValueError(f"An OpenEnv base URL starts with http://, https://, ws:// or wss://, got {base_url!r}.")


class OpenEnvEnv(Env):
    """A GEM env played on an OpenEnv server.

    Args:
        base_url: the server (``http://host:port``; ``gem.make("openenv:<base_url>")`` passes it).
        remote_env_id: for a GEM server that serves several ids, which one (sent as ``env_id`` in
            the reset data).
        env_kwargs: for a GEM server, the env's constructor kwargs (sent as ``kwargs`` in reset).
        action_fn: ``text -> action dict``, for servers whose action is not a text action.
        observation_fn: ``observation dict -> text`` (default :func:`observation_text`).
        token: sent as ``Authorization: Bearer <token>`` (a GEM server started with a token).
        timeout: seconds to wait for the server's answer to one message.
    """

    def __init__(
        self,
        base_url: str,
        *,
        remote_env_id: Optional[str] = None,
        env_kwargs: Optional[dict[str, Any]] = None,
        action_fn: Optional[Callable[[str], dict[str, Any]]] = None,
        observation_fn: Optional[Callable[[dict[str, Any]], str]] = None,
        token: Optional[str] = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        try:
            from websockets.sync.client import connect  # noqa: F401 - checked now, used on reset
        except ImportError as exc:
            raise missing_extra("openenv: ids", "server", "websockets") from exc
        self.base_url = base_url.rstrip("/")
        self._ws_url = http_to_ws(self.base_url) + "/ws"
        self.remote_env_id = remote_env_id
        self.env_kwargs = dict(env_kwargs or {})
        self.observation_fn = observation_fn or observation_text
        self.timeout = timeout
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._ws: Any = None
        if action_fn is None:
            action_schema = self._schema().get("action") or {}
            field = text_field(action_schema)
            if field is None:
                fields = ", ".join(
                    f"{k}: {v.get('type', v.get('anyOf', '?'))}" for k, v in (action_schema.get("properties") or {}).items()
                ) or "none declared"
                raise ValueError(
                    f"The OpenEnv server at {self.base_url} does not take a text action (its action fields: "
                    f"{fields}). Pass action_fn=lambda text: {{...}} to gem.make to map GEM's text action onto it."
                )
            self.action_fn: Callable[[str], dict[str, Any]] = lambda text: {field: text}
            self.action_field: Optional[str] = field
        else:
            self.action_fn, self.action_field = action_fn, None

    # ------------------------------------------------------------------ wire
    def _schema(self) -> dict[str, Any]:
        request = urllib.request.Request(self.base_url + "/schema", headers=self._headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310 - the user's URL
                return json.loads(response.read())
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise InfrastructureError(f"Could not read {self.base_url}/schema: {exc}") from exc

    def _connect(self) -> Any:
        if self._ws is None:
            from websockets.sync.client import connect

            try:
                # Entered as a context manager (what newer websockets ask for); left by _drop's close().
                self._ws = connect(
                    self._ws_url, additional_headers=self._headers, open_timeout=self.timeout, max_size=None
                ).__enter__()
            except (OSError, Exception) as exc:  # websockets raises its own errors for refused handshakes
                raise InfrastructureError(f"Could not connect to {self._ws_url}: {exc}") from exc
        return self._ws

    def _send(self, message: dict[str, Any]) -> dict[str, Any]:
        ws = self._connect()
        try:
            ws.send(json.dumps(message))
            reply = json.loads(ws.recv(timeout=self.timeout))
        except Exception as exc:
            self._drop()
            raise InfrastructureError(f"The OpenEnv server at {self.base_url} did not answer: {exc}") from exc
        if reply.get("type") == "error":
            data = reply.get("data") or {}
            raise OpenEnvError(str(data.get("code", "UNKNOWN")), str(data.get("message", "")))
        return reply.get("data") or {}

    def _drop(self) -> None:
        if self._ws is not None:
            try:
                self._ws.close()
            except Exception:  # noqa: BLE001 - the socket is being thrown away
                pass
            self._ws = None

    # ------------------------------------------------------------------- API
    def reset(self, seed: Optional[int] = None, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        data: dict[str, Any] = {"seed": seed if seed is not None else self.rng.randrange(_SEED_BOUND), **kwargs}
        if self.remote_env_id is not None:
            data["env_id"] = self.remote_env_id
        if self.env_kwargs:
            data["kwargs"] = self.env_kwargs
        result = self._send({"type": "reset", "data": data})
        observation = result.get("observation") or {}
        info = dict(observation.get("metadata") or {})
        for flag in _END_FLAGS:
            info.pop(flag, None)
        return self.observation_fn(observation), info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._needs_reset and (ended := self._step_without_episode()) is not None:
            return ended
        result = self._send({"type": "step", "data": self.action_fn(action)})
        observation = result.get("observation") or {}
        info = dict(observation.get("metadata") or {})
        done = bool(result.get("done", False))
        if all(isinstance(info.get(flag), bool) for flag in _END_FLAGS):
            terminated, truncated = info.pop("terminated"), info.pop("truncated")
        else:
            terminated, truncated = done, False
        reward = result.get("reward")
        return self._result(self.observation_fn(observation), 0.0 if reward is None else float(reward),
                            terminated, truncated, info)

    def state(self) -> dict[str, Any]:
        """The server's state of this session (OpenEnv's ``state`` message)."""
        return self._send({"type": "state"})

    def close(self) -> None:
        if self._ws is not None:
            try:
                self._ws.send(json.dumps({"type": "close"}))
            except Exception:  # noqa: BLE001 - best effort, as OpenEnv's own client
                pass
            self._drop()
