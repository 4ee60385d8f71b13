"""Plain HTTP and WebSocket calls, for speaking to servers without any client library."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any, Optional


def http(url: str, body: Any = None, headers: Optional[dict[str, str]] = None) -> tuple[int, Any]:
    """GET (``body`` None) or POST ``body`` (JSON, or raw bytes); ``(status, parsed JSON)``."""
    data = None if body is None else body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def ws_exchange(url: str, *messages: Any, headers: Optional[dict[str, str]] = None) -> list[dict[str, Any]]:
    """Send each message on one WebSocket to ``url``/ws and collect one reply per message."""
    from websockets.sync.client import connect

    replies = []
    with connect(url.replace("http://", "ws://") + "/ws", additional_headers=headers or {}) as ws:
        for message in messages:
            ws.send(message if isinstance(message, str) else json.dumps(message))
            replies.append(json.loads(ws.recv(timeout=30)))
    return replies
