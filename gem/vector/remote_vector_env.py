"""The vector env of :class:`~gem.http.client.RemoteEnv` members: episodes run on env servers.

``make_vec(ids, backend="remote", url="http://host:8000")`` makes each env on that server
(``gem serve``); ``vec_kwargs=[{"url": ...}, ...]`` puts env ``i`` on its own server, so a batch
can be spread over several machines. ``token=`` (or ``$GEM_SERVER_TOKEN``) is the servers' bearer
token and ``transport="websocket"`` switches from HTTP to one WebSocket per env; without ``url``
the ``$GEM_SERVER_URL`` variable is used. The other kwargs and the per-env seed go to the server's
``gem.make``; wrappers run here, around each remote env. Calls overlap on threads (the base is
the thread backend), so a batch costs about one round trip, not one per env.

``step_timeout`` works as in the thread backend (a hung call is abandoned, its env rebuilt, which
opens a new server session). ``call``/``get_attr``/``set_attr`` reach the client-side objects (the
wrappers and the ``RemoteEnv``: ``url``, ``session_id``, a wrapper's settings...): the server
protocol carries only make/reset/step/sample/close, so a name the client side does not have
raises :class:`gem.errors.UnsupportedVectorOperation` instead of reaching the served env.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence, Union

from gem.core import Env
from gem.errors import UnsupportedVectorOperation
from gem.http.protocol import URL_ENV_VAR
from gem.vector.thread_vector_env import ThreadVectorEnv
from gem.vector.env_factory import EnvFactory
from gem.vector.vector_env import AutoresetMode

CLIENT_OPTIONS = ("url", "token", "timeout", "transport")  # RemoteEnv's own arguments


@dataclass(frozen=True)
class RemoteEnvFactory(EnvFactory):
    """An :class:`EnvFactory` whose env is made on a server: ``RemoteEnv(env_id, **client, **kwargs)``.

    Attributes:
        client: the ``RemoteEnv`` options (``url``, ``token``, ``timeout``, ``transport``).
    """

    client: dict[str, Any] = field(default_factory=dict)

    def make_env(self) -> Env:
        from gem.http.client import RemoteEnv

        seed = {} if self.seed is None else {"seed": self.seed}  # the server's make takes it by name
        return RemoteEnv(env_id=self.env_id, **self.client, **seed, **self.kwargs)

    @classmethod
    def from_factory(cls, factory: EnvFactory) -> "RemoteEnvFactory":
        """Move the client options out of ``factory.kwargs``; ``url`` defaults to ``$GEM_SERVER_URL``."""
        kwargs = dict(factory.kwargs)
        client = {k: kwargs.pop(k) for k in CLIENT_OPTIONS if k in kwargs}
        client.setdefault("url", os.environ.get(URL_ENV_VAR))
        if not client["url"]:
            raise ValueError(
                "backend='remote' needs the env server's address: make_vec(..., backend='remote', "
                f"url='http://host:8000'), a 'url' in each vec_kwargs entry, or ${URL_ENV_VAR}. "
                "Start a server with `gem serve`."
            )
        return cls(factory.env_id, kwargs, factory.wrappers, factory.seed, client)


class RemoteVectorEnv(ThreadVectorEnv):
    """Members are ``RemoteEnv``s (see the module docstring).

    ``env_fns`` are ``make_vec``'s :class:`EnvFactory` s: their kwargs may hold ``url``/``token``/
    ``timeout``/``transport``, which are taken out and given to ``RemoteEnv``. Other factories
    are used as they are (they should return remote envs themselves).
    """

    def __init__(
        self,
        env_ids: Sequence[str],
        env_fns: Sequence[Callable[[], Env]],
        autoreset_mode: Union[str, AutoresetMode] = AutoresetMode.SAME_STEP,
        max_workers: Optional[int] = None,
        step_timeout: Optional[float] = None,
    ) -> None:
        factories = [_remote_factory(fn) for fn in env_fns]
        super().__init__(env_ids, factories, autoreset_mode, max_workers, step_timeout=step_timeout)

    def _client_side(self, name: str, what: str) -> None:
        """Raise unless every member has ``name`` on the client side."""
        self._values(name, None)  # checks the name
        missing = [i for i, env in enumerate(self.envs) if not hasattr(env, name)]
        if missing:
            raise UnsupportedVectorOperation(
                f"{what}: env {missing[0]} ({self.env_ids[missing[0]]}) has no {name!r} on the client side "
                "(its wrappers and RemoteEnv), and the GEM server protocol does not reach the served env's "
                "attributes (only make, reset, step, sample and close travel). Use a local backend "
                "(sync, thread, process, ray) to call into the envs themselves."
            )

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        self._client_side(name, f"call({name!r})")
        return super().call(name, *args, **kwargs)

    def get_attr(self, name: str) -> tuple[Any, ...]:
        self._client_side(name, f"get_attr({name!r})")
        return super().get_attr(name)

    def set_attr(self, name: str, values: Any) -> None:
        self._client_side(name, f"set_attr({name!r})")
        super().set_attr(name, values)


def _remote_factory(fn: Callable[[], Env]) -> Callable[[], Env]:
    if isinstance(fn, EnvFactory) and not isinstance(fn, RemoteEnvFactory):
        return RemoteEnvFactory.from_factory(fn)
    return fn
