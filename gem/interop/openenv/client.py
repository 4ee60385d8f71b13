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
- **The server is untrusted** (:mod:`gem.interop.border`). Each call (the ``/schema`` fetch, a
  reset, a step) has one total deadline, ``timeout`` seconds, connecting included; a reply over
  ``max_reply_bytes`` is refused before it is read; redirects stay within the origin of
  ``base_url``, so the token never goes elsewhere. A reward must be a finite number (``None`` is
  0.0) and the reply must have OpenEnv's shape; anything else raises
  :class:`~gem.errors.InfrastructureError` with the cause, and the connection is dropped. The
  server's ``success``/``correct`` are kept as ``info["remote_success"]``/``["remote_correct"]``;
  ``info["success"]`` on the last step is GEM's: terminated with a reward at ``success_reward``.
"""

from __future__ import annotations

import json
import logging
import socket
import time
import weakref
from typing import Any, Callable, Optional

from gem.core import Env
from gem.errors import InfrastructureError, missing_extra
from gem.interop.border import (
    DEFAULT_MAX_REPLY_BYTES,
    fetch_json,
    finite_reward,
    gem_side_info,
    origin,
    parse_json,
    random_text,
)

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 60.0
_SEED_BOUND = 2**31 - 1
_END_FLAGS = ("terminated", "truncated")


class OpenEnvError(InfrastructureError):
    """The OpenEnv server answered with an error (its ``code`` and ``message``): the remote env failed,
    which is an infrastructure error on GEM's side."""

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
        token: sent as ``Authorization: Bearer <token>`` to ``base_url``'s origin only.
        timeout: seconds one call may take in all (the schema fetch; a reset or step, connecting
            and the whole reply included).
        max_reply_bytes: the largest reply read (the schema, one WebSocket message).
    """

    # check_env's checks a remote env cannot pass, and why (check_env reports them as declared
    # limits, not failures; tests/interop/test_bridge_limits.py keeps this set exact).
    declared_limits: dict[str, str] = {
        "check_hostile_actions": (
            "the server's message size limit applies: a 10 MB action is refused by the server "
            "(an InfrastructureError here), not scored as a format error"
        ),
        "check_random_action_is_well_formed": (
            "OpenEnv's protocol does not say what a valid move looks like, so sampled actions are "
            "random text, which the env may score as a format error"
        ),
        "check_seed_sensitivity": (
            "sampled actions are random text (see above): an env that shows nothing of its seed before a "
            "valid move plays the same episode for every seed under them"
        ),
        "check_state_roundtrip": (
            "the episode's state lives on the server; OpenEnv's protocol has no message to restore it"
        ),
    }

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
        max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
    ) -> None:
        try:
            from websockets.sync.client import connect  # noqa: F401 - checked now, used on reset
        except ImportError as exc:
            raise missing_extra("openenv: ids", "server", "websockets") from exc
        if not isinstance(timeout, (int, float)) or not 0 < timeout < float("inf"):
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}.")
        if not isinstance(max_reply_bytes, int) or max_reply_bytes < 1024:
            raise ValueError(f"max_reply_bytes must be an int of at least 1024, got {max_reply_bytes!r}.")
        self.base_url = base_url.rstrip("/")
        self._ws_url = http_to_ws(self.base_url) + "/ws"
        self.remote_env_id = remote_env_id
        self.env_kwargs = dict(env_kwargs or {})
        self.observation_fn = observation_fn or observation_text
        self.timeout = float(timeout)
        self.max_reply_bytes = max_reply_bytes
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        # The connection, in a holder a finalizer can close: an env dropped without close() still
        # tells the server and lets the script end.
        self._conn: dict[str, Any] = {"ws": None}
        self._finalizer = weakref.finalize(self, _close_connection, self._conn)
        if action_fn is None:
            schema = self._schema()
            action_schema = schema.get("action") if isinstance(schema, dict) else None
            if not isinstance(action_schema, dict):
                raise InfrastructureError(f"{self.base_url}/schema has no action schema (an object under 'action').")
            field = text_field(action_schema)
            if field is None:
                props = action_schema.get("properties")
                props = props if isinstance(props, dict) else {}
                fields = ", ".join(
                    f"{k}: {v.get('type', v.get('anyOf', '?')) if isinstance(v, dict) else '?'}"
                    for k, v in props.items()
                ) or "none declared"
                raise ValueError(
                    f"The OpenEnv server at {self.base_url} does not take a text action (its action fields: "
                    f"{fields}). Pass action_fn=lambda text: {{...}} to gem.make to map GEM's text action onto it."
                )
            self.action_fn: Callable[[str], dict[str, Any]] = lambda text: {field: text}
            self.action_field: Optional[str] = field
        else:
            self.action_fn, self.action_field = action_fn, None

    @property
    def _ws(self) -> Any:
        return self._conn["ws"]

    # ------------------------------------------------------------------ wire
    def _schema(self) -> dict[str, Any]:
        return fetch_json(self.base_url + "/schema", headers=self._headers, timeout=self.timeout,
                          max_bytes=self.max_reply_bytes)

    def _connect(self, deadline: float) -> Any:
        if self._conn["ws"] is None:
            from websockets.sync.client import connect

            sock = None
            try:
                # Our own socket: websockets then follows no redirect (newer versions follow them to
                # any origin), so the handshake and its token go to base_url's origin only.
                _, host, port = origin(self._ws_url)
                sock = socket.create_connection((host, port), timeout=max(0.001, deadline - time.monotonic()))
                # Entered as a context manager (what newer websockets ask for); left by _drop's close().
                # max_size: a frame announcing more is refused before its payload is read.
                self._conn["ws"] = connect(
                    self._ws_url, sock=sock, additional_headers=self._headers,
                    open_timeout=max(0.001, deadline - time.monotonic()), close_timeout=1,
                    max_size=self.max_reply_bytes,
                ).__enter__()
            except Exception as exc:  # websockets raises its own errors for refused handshakes
                if sock is not None:
                    sock.close()
                raise InfrastructureError(f"Could not connect to {self._ws_url}: {type(exc).__name__}: {exc}") from exc
        return self._conn["ws"]

    def _send(self, message: dict[str, Any]) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout
        ws = self._connect(deadline)
        try:
            ws.send(json.dumps(message))
            raw = ws.recv(timeout=max(0.001, deadline - time.monotonic()))
        except Exception as exc:
            self._drop()
            if isinstance(exc, TimeoutError):
                raise InfrastructureError(
                    f"The OpenEnv server at {self.base_url} did not answer within {self.timeout:g} s."
                ) from exc
            raise InfrastructureError(
                f"The OpenEnv server at {self.base_url} did not answer: {type(exc).__name__}: {exc}"
            ) from exc
        try:
            reply = parse_json(raw, f"The OpenEnv server at {self.base_url}")
            if not isinstance(reply, dict):
                raise InfrastructureError(
                    f"The OpenEnv server at {self.base_url} sent a {type(reply).__name__}, not a message object.")
            data = reply.get("data")
            if reply.get("type") != "error" and data is not None and not isinstance(data, dict):
                raise InfrastructureError(
                    f"The OpenEnv server at {self.base_url} sent data that is a {type(data).__name__}, not an object.")
        except InfrastructureError:
            self._drop()  # a malformed reply: nothing more from this session is trusted
            raise
        if reply.get("type") == "error":  # a well-formed error: the session stays usable
            data = data if isinstance(data, dict) else {}
            raise OpenEnvError(str(data.get("code", "UNKNOWN"))[:100], str(data.get("message", ""))[:2000])
        return data or {}

    def _observation(self, result: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """The result's observation and its metadata, checked to be objects."""
        observation = result.get("observation")
        observation = {} if observation is None else observation
        metadata = observation.get("metadata") if isinstance(observation, dict) else None
        metadata = {} if metadata is None else metadata
        if not isinstance(observation, dict) or not isinstance(metadata, dict):
            self._drop()
            raise InfrastructureError(
                f"The OpenEnv server at {self.base_url} sent an observation that is not an object with an object "
                f"as metadata: {type(observation).__name__}."
            )
        return observation, dict(metadata)

    def _text(self, observation: dict[str, Any]) -> str:
        text = self.observation_fn(observation)
        if not isinstance(text, str):
            raise InfrastructureError(f"observation_fn returned a {type(text).__name__}, not text.")
        return text

    def _drop(self) -> None:
        _close_connection(self._conn, say_goodbye=False)

    # ------------------------------------------------------------------- API
    def reset(self, seed: Optional[int] = None, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        data: dict[str, Any] = {"seed": seed if seed is not None else self.rng.randrange(_SEED_BOUND), **kwargs}
        if self.remote_env_id is not None:
            data["env_id"] = self.remote_env_id
        if self.env_kwargs:
            data["kwargs"] = self.env_kwargs
        result = self._send({"type": "reset", "data": data})
        observation, info = self._observation(result)
        for flag in _END_FLAGS:
            info.pop(flag, None)
        info = gem_side_info(info, self.base_url, reward=0.0, terminated=False, truncated=False,
                             success_reward=self.success_reward)
        return self._text(observation), info

    def _step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        result = self._send({"type": "step", "data": self.action_fn(action)})
        observation, info = self._observation(result)
        done = result.get("done", False)
        flags = [info.pop(flag, None) for flag in _END_FLAGS]
        try:
            if not isinstance(done, bool):
                raise InfrastructureError(f"The OpenEnv server at {self.base_url} sent done={done!r}, not a bool.")
            if all(isinstance(flag, bool) for flag in flags):
                terminated, truncated = flags
            elif all(flag is None for flag in flags):
                terminated, truncated = done, False
            else:
                raise InfrastructureError(
                    f"The OpenEnv server at {self.base_url} sent end flags that are not bools: {flags!r}."
                )
            reward = finite_reward(result.get("reward"), f"The OpenEnv server at {self.base_url}", none_is=0.0)
        except InfrastructureError:
            self._drop()
            raise
        info = gem_side_info(info, self.base_url, reward=reward, terminated=terminated, truncated=truncated,
                             success_reward=self.success_reward)
        return self._result(self._text(observation), reward, terminated, truncated, info)

    def state(self) -> dict[str, Any]:
        """The server's state of this session (OpenEnv's ``state`` message)."""
        return self._send({"type": "state"})

    def sample_random_action(self) -> str:
        """Random text from this env's action generator: OpenEnv does not say what a valid move
        looks like, so the action is well-formed for the schema (a string), not a valid move."""
        return random_text(self.action_rng)

    def get_state(self) -> dict[str, Any]:
        raise NotImplementedError(
            "An OpenEnv env's episode state lives on its server, and OpenEnv's protocol has no message to "
            "restore one; play it again from its seed instead."
        )

    def set_state(self, state: dict[str, Any]) -> None:
        self.get_state()

    def close(self) -> None:
        _close_connection(self._conn)


def _close_connection(conn: dict[str, Any], say_goodbye: bool = True) -> None:
    """Close the connection in ``conn`` (telling the server first, as OpenEnv's own client does)."""
    ws, conn["ws"] = conn.get("ws"), None
    if ws is None:
        return
    if say_goodbye:
        try:
            ws.send(json.dumps({"type": "close"}))
        except Exception:  # noqa: BLE001 - best effort, as OpenEnv's own client
            pass
    try:
        ws.close()
    except Exception:  # noqa: BLE001 - the socket is being thrown away
        pass
