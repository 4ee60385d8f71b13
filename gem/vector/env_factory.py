"""``EnvFactory``: the picklable recipe for one member of a vector env.

``make_vec`` gives every backend a list of these. Calling one builds the env
(``gem.make(env_id, seed=seed, **kwargs)``, then each wrapper in order); its fields say what it
builds, so a backend can read them (the remote backend takes the client options out of
``kwargs``) instead of taking a ``functools.partial`` apart. It pickles as long as its wrappers do
(module-level functions and classes, or ``functools.partial`` of them), so the process backend can
send it to a worker; Ray ships it with cloudpickle.
"""

from __future__ import annotations

import dataclasses
import numbers
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from gem.core import Env
from gem.envs.registration import make

Wrapper = Callable[[Env], Env]


@dataclass(frozen=True)
class EnvFactory:
    """Builds one env: ``gem.make(env_id, seed=seed, **kwargs)`` wrapped by ``wrappers`` in order.

    Attributes:
        env_id: the registered id.
        kwargs: the env's constructor kwargs.
        wrappers: callables applied in order to the made env (``WRAPPER_FACTORY`` values).
        seed: ``gem.make``'s seed (``make_vec`` gives env ``i`` its own); ``None``: unseeded. A
            ``"seed"`` in ``kwargs`` is taken out into this field (``ValueError`` if both are given).
    """

    env_id: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    wrappers: tuple[Wrapper, ...] = ()
    seed: Optional[int] = None

    def __post_init__(self) -> None:
        if not isinstance(self.env_id, str) or not self.env_id:
            raise ValueError(f"EnvFactory needs an env id (a non-empty string), got {self.env_id!r}.")
        kwargs = dict(self.kwargs)
        if "seed" in kwargs:
            if self.seed is not None:
                raise ValueError(
                    f"EnvFactory({self.env_id!r}) got a seed twice: seed={self.seed!r} and "
                    f"kwargs['seed']={kwargs['seed']!r}; give it once, as seed=."
                )
            object.__setattr__(self, "seed", kwargs.pop("seed"))
        if self.seed is not None:
            if isinstance(self.seed, bool) or not isinstance(self.seed, numbers.Integral):
                raise ValueError(f"EnvFactory's seed must be an integer or None, got {self.seed!r}.")
            object.__setattr__(self, "seed", int(self.seed))
        object.__setattr__(self, "kwargs", kwargs)
        object.__setattr__(self, "wrappers", tuple(self.wrappers))

    def __call__(self) -> Env:
        """A new env, made and wrapped."""
        return self.wrap(self.make_env())

    def make_env(self) -> Env:
        """The unwrapped env (``gem.make``); subclasses change where it comes from."""
        return make(self.env_id, seed=self.seed, **self.kwargs)

    def wrap(self, env: Env) -> Env:
        """``env`` with ``wrappers`` applied in order."""
        for wrapper in self.wrappers:
            env = wrapper(env)
        return env

    def replace(self, **changes: Any) -> "EnvFactory":
        """A copy with some fields changed (``factory.replace(seed=3)``)."""
        return dataclasses.replace(self, **changes)
