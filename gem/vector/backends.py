"""``make_vec`` and the backend table: which vector class each ``backend=`` name builds.

A backend is named by ``"module:Class"`` and imported only when asked for, so ``import gem`` loads
neither NumPy nor threads, and the process, Ray and remote backends cost nothing until used.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any, Callable, Optional, Sequence, Union

from gem.core import Env
from gem.envs.registration import interop_spec, spec
from gem.vector.env_factory import EnvFactory  # picklable; every backend reads its fields

__all__ = ["VECTOR_BACKENDS", "make_vec"]

VECTOR_BACKENDS: dict[str, str] = {
    "sync": "gem.vector.sync_vector_env:SyncVectorEnv",
    "thread": "gem.vector.thread_vector_env:ThreadVectorEnv",
    "process": "gem.vector.process_vector_env:ProcessVectorEnv",
    "ray": "gem.vector.ray_vector_env:RayVectorEnv",
    "remote": "gem.vector.remote_vector_env:RemoteVectorEnv",
}
_BACKEND_ALIASES = {"async": "thread", "threads": "thread", "processes": "process", "multiprocessing": "process"}


def make_vec(
    env_ids: Union[str, Sequence[str]],
    wrappers: Optional[Sequence[Callable[[Env], Env]]] = None,
    vec_kwargs: Optional[Sequence[dict[str, Any]]] = None,
    async_mode: bool = False,
    seed: int = 0,
    *,
    num_envs: Optional[int] = None,
    backend: Optional[str] = None,
    autoreset_mode: Any = "same_step",
    backend_kwargs: Optional[dict[str, Any]] = None,
    **kwargs: Any,
) -> Any:
    """A vector env of ``env_ids`` (one env per id; repeat an id to get copies).

    Args:
        env_ids: one id, or a list of ids (several ids make a multi-environment batch).
        wrappers: callables applied in order to each env (``WRAPPER_FACTORY`` values).
        vec_kwargs: per-env constructor kwargs, one dict per env.
        async_mode: GEM's switch for the thread backend (same as ``backend="thread"``).
        seed: env ``i`` is made with ``gem.make(id, seed=seed + i)`` (its factory's ``seed``) unless its
            ``vec_kwargs`` entry gives a ``seed``.
        num_envs: with a single id, how many copies (default 1).
        backend: ``"sync"`` or ``"thread"`` (see ``VECTOR_BACKENDS`` for what is installed).
        autoreset_mode: ``"same_step"`` (default, as GEM) or ``"next_step"`` (as Gymnasium).
        backend_kwargs: options for the vector class (``max_workers`` for threads,
            ``num_workers``/``context`` for processes, ...); unknown ones raise ``ValueError``.
        **kwargs: constructor kwargs for every env.
    """
    if isinstance(env_ids, str):
        env_ids = [env_ids] * (1 if num_envs is None else num_envs)
    elif num_envs is not None and num_envs != len(env_ids):
        raise ValueError(f"num_envs={num_envs} but {len(env_ids)} env ids were given.")
    env_ids = list(env_ids)
    if not env_ids:
        raise ValueError("make_vec needs at least one env id.")
    for env_id in dict.fromkeys(env_ids):
        if interop_spec(env_id) is None:
            spec(env_id)  # fail fast, with suggestions, before building anything
    if vec_kwargs is not None and len(vec_kwargs) != len(env_ids):
        raise ValueError(f"vec_kwargs has {len(vec_kwargs)} entries for {len(env_ids)} envs.")
    name = backend or ("thread" if async_mode else "sync")
    name = _BACKEND_ALIASES.get(name, name)
    if name not in VECTOR_BACKENDS:
        raise ValueError(f"Unknown vector backend {backend!r}; choose one of: {', '.join(VECTOR_BACKENDS)}.")
    env_fns = []
    for i, env_id in enumerate(env_ids):
        env_kwargs = {**(vec_kwargs[i] if vec_kwargs else {}), **kwargs}
        env_seed = env_kwargs.pop("seed", seed + i)  # a vec_kwargs entry may name its env's seed
        env_fns.append(EnvFactory(env_id, env_kwargs, tuple(wrappers or ()), seed=env_seed))
    module_name, _, cls_name = VECTOR_BACKENDS[name].partition(":")
    vector_cls = getattr(importlib.import_module(module_name), cls_name)
    options = dict(backend_kwargs or {})
    params = inspect.signature(vector_cls.__init__).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        accepted = [n for n in params if n not in ("self", "env_ids", "env_fns", "autoreset_mode")]
        unknown = [k for k in options if k not in accepted]
        if unknown:
            raise ValueError(
                f"The {name} backend does not take {', '.join(map(repr, unknown))}; "
                f"its options are: {', '.join(accepted) or 'none'}."
            )
    return vector_cls(env_ids=env_ids, env_fns=env_fns, autoreset_mode=autoreset_mode, **options)
