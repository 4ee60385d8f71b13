"""Vector envs: many envs stepped together (sync loop, threads, processes, Ray, servers).

``make_vec`` builds one (``VECTOR_BACKENDS`` names the class behind each ``backend=``);
``VectorEnv`` is the API every backend implements; ``EnvFactory`` is the picklable recipe for one
member env that ``make_vec`` hands to every backend. The classes load on first use, so
``import gem`` (which takes ``make_vec`` from here) stays light.
"""

from typing import Any

from gem.vector.backends import VECTOR_BACKENDS, make_vec

def __getattr__(name: str) -> Any:
    if name == "AsyncVectorEnv" or name == "ThreadVectorEnv":
        from gem.vector import thread_vector_env as module
    elif name == "EnvFactory":
        from gem.vector import env_factory as module
    elif name == "SyncVectorEnv":
        from gem.vector import sync_vector_env as module
    elif name in ("AutoresetMode", "LocalVectorEnv", "VectorEnv"):
        from gem.vector import vector_env as module
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(module, name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "VECTOR_BACKENDS",
    "AsyncVectorEnv",
    "AutoresetMode",
    "EnvFactory",
    "LocalVectorEnv",
    "SyncVectorEnv",
    "ThreadVectorEnv",
    "VectorEnv",
    "make_vec",
]
