"""Environments over the network: ``gem serve`` (FastAPI + uvicorn) and :class:`RemoteEnv`.

``create_app`` builds the server (imported lazily: FastAPI is only needed to serve);
``RemoteEnv(url, env_id, **kwargs)`` is a gem Env whose episodes run on a server (it lives in
:mod:`gem.http.client`, with the rest of the wire). See docs/scale.md.
"""

from __future__ import annotations

from typing import Any

__all__ = ["RemoteEnv", "create_app"]


def __getattr__(name: str) -> Any:
    if name == "RemoteEnv":
        from gem.http.client import RemoteEnv

        return RemoteEnv
    if name == "create_app":
        from gem.server.app import create_app

        return create_app
    raise AttributeError(f"module 'gem.server' has no attribute {name!r}")
