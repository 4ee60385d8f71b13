"""Fixtures for the eval tests: the mock OpenAI-compatible server on 127.0.0.1 (always stopped)."""

from __future__ import annotations

from typing import Any, Callable, Iterator

import pytest

from tests.conftest import needs_extra


@pytest.fixture
def mock_server() -> Iterator[Callable[..., Any]]:
    """A factory: ``mock_server(**create_app_kwargs)`` starts a server; all are stopped at teardown.
    A test that uses it skips without the eval extra (openai, fastapi, uvicorn)."""
    needs_extra("eval")
    from gem.eval.mock_server import MockServer

    started: list[MockServer] = []

    def start(**kwargs: Any) -> MockServer:
        server = MockServer(**kwargs).start()
        started.append(server)
        return server

    try:
        yield start
    finally:
        for server in started:
            server.stop()
