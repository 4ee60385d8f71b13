"""Fixtures of the interop tests: an OpenEnv-protocol GEM server on 127.0.0.1, always stopped."""

from __future__ import annotations

from typing import Any, Optional

import pytest


@pytest.fixture
def serve():
    """``serve(env_ids, **create_openenv_app_kwargs)`` starts ``gem serve --protocol openenv``'s app."""
    from tests.conftest import needs_extra

    needs_extra("server")  # fastapi, uvicorn, websockets
    from gem.interop.openenv.server import create_openenv_app
    from tests.server.conftest import ServerThread

    started: list[Any] = []

    def start(env_ids: Optional[list[str]] = None, **kwargs: Any) -> Any:
        server = ServerThread(create_openenv_app(env_ids, **kwargs), kwargs.get("limits")).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
