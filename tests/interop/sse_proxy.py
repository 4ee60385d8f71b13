"""A streaming front for GEM's mock OpenAI server (which answers whole replies only).

verifiers' runner asks for streamed chat completions (server-sent events) as vLLM and llama.cpp
serve them; this proxy asks the mock server for the whole reply and sends it back as OpenAI's
stream: one chunk with the content, one with the finish reason and usage, then ``[DONE]``.
"""

# No ``from __future__ import annotations``: FastAPI must see the real ``Request`` annotation.

import json
import threading
import time
from typing import Any

import httpx


def create_app(upstream: str) -> Any:
    """``upstream``: the mock server's ``/v1`` URL."""
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse, StreamingResponse

    app = FastAPI()

    @app.get("/v1/models")
    async def models() -> Any:
        async with httpx.AsyncClient() as client:
            return JSONResponse((await client.get(upstream + "/models")).json())

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Any:
        body = await request.json()
        stream = bool(body.pop("stream", False))
        body.pop("stream_options", None)
        async with httpx.AsyncClient(timeout=120) as client:
            reply = await client.post(upstream + "/chat/completions", json=body)
        if reply.status_code >= 400 or not stream:
            return JSONResponse(reply.json(), status_code=reply.status_code)
        whole = reply.json()
        message = whole["choices"][0]["message"]
        base = {"id": whole.get("id", "mock"), "object": "chat.completion.chunk", "created": int(time.time()),
                "model": whole.get("model", body.get("model"))}

        def events() -> Any:
            delta = {"role": "assistant", "content": message.get("content") or ""}
            yield _event({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
            yield _event({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                          "usage": whole.get("usage")})
            yield "data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    return app


def _event(payload: dict[str, Any]) -> str:
    return f"data: {json.dumps(payload)}\n\n"


class SSEProxy:
    """``with SSEProxy(upstream) as proxy: proxy.base_url`` (uvicorn in a thread, a free port)."""

    def __init__(self, upstream: str) -> None:
        import uvicorn

        self.server = uvicorn.Server(uvicorn.Config(create_app(upstream), host="127.0.0.1", port=0, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> "SSEProxy":
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the SSE proxy did not start")
            time.sleep(0.02)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.base_url = f"http://127.0.0.1:{port}/v1"
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=20)
