"""``gem proxy``: a recording OpenAI-compatible endpoint in front of a real server (docs/records.md).

Any agent harness that speaks the OpenAI chat API (the OpenAI SDK, mini-swe-agent, a custom
loop) points its base URL at the proxy instead of the server. The proxy forwards each
``POST /v1/chat/completions`` to the upstream server with the token options added (the same as
``gem eval --record-tokens``: ``logprobs``, ``top_logprobs: 0``, and the token-id options of vLLM
and SGLang, ``return_token_ids``, ``return_tokens_as_token_ids`` and ``return_prompt_token_ids``),
takes them out of the reply again when the harness did not ask for them, and records the exchange with its token ids (:class:`gem.agents.openai_agent.TokenRecovery`
says how they were obtained: ``token_source``).

Episodes: a request names its episode in the ``X-GEM-Episode`` header (1 to 128 characters of
letters, digits and ``._:#-``). Each recorded call goes to ``OUT/calls.jsonl`` at once. When the
episode is over, the harness posts the env's side to ``POST /gem/episodes/{episode}`` (env id,
seed, the first observation and each step's action, observation, reward, terminated, truncated:
what ``gem serve`` or the env returned), and the proxy writes one trajectory record, its turns
joined one to one with the calls, to ``OUT/episodes.jsonl``. Requests without the header are
forwarded and logged in ``calls.jsonl`` with ``episode: null``; they join no episode.

Limits, for a hostile client or server: request bodies above ``max_body`` bytes get 413, bad JSON
400, ``stream: true`` 400 (not supported); the upstream gets ``timeout_s`` per request (then 504),
its redirects are not followed and a reply above ``max_reply`` bytes is a 502. The proxy binds
127.0.0.1 unless told otherwise.
"""

# No ``from __future__ import annotations``: FastAPI must see the real ``Request`` annotation.
import contextlib
import json
import logging
import re
import threading
import time
from pathlib import Path
from typing import Any, Optional

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from gem.agents.openai_agent import TOKEN_EXTRA_BODY, TOKEN_REQUEST, TokenRecovery
from gem.records.join import joined_record, steps_problem
from gem.records.writer import RecordWriter

logger = logging.getLogger(__name__)

EPISODE_HEADER = "x-gem-episode"
EPISODE_KEY = re.compile(r"^[A-Za-z0-9._:#-]{1,128}$")
CALLS_FILE = "calls.jsonl"
EPISODES_FILE = "episodes.jsonl"
DEFAULT_MAX_BODY = 8 << 20
DEFAULT_MAX_REPLY = 32 << 20
MAX_EPISODES = 10_000  # episodes whose calls are held until their end is posted
MAX_CALLS = 10_000  # calls held per episode
SAMPLING_KEYS = ("temperature", "top_p", "max_tokens", "max_completion_tokens", "seed", "stop", "top_k")


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": "gem_proxy_error", "code": status}}, status_code=status)


async def _read_body(request: Request, cap: int) -> Optional[bytes]:
    """The request's body, or ``None`` when it is larger than ``cap`` bytes (read no further)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > cap:
        return None
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > cap:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _strip(reply: dict[str, Any], asked: dict[str, Any]) -> dict[str, Any]:
    """``reply`` without what the proxy asked for and the harness did not."""
    prompt_ids_asked = asked.get("return_token_ids") or asked.get("return_prompt_token_ids")
    if not asked.get("return_token_ids"):
        reply.pop("prompt_token_ids", None)  # vLLM's place
    for choice in reply.get("choices") or []:
        if not isinstance(choice, dict):
            continue
        if not asked.get("logprobs"):
            choice.pop("logprobs", None)
        if not asked.get("return_token_ids"):
            choice.pop("token_ids", None)
        if not prompt_ids_asked:
            choice.pop("prompt_token_ids", None)  # SGLang's place
    return reply


class ProxyState:
    """The proxy's recorded calls, by episode, and its two JSONL writers."""

    def __init__(self, out: Path) -> None:
        self.out = Path(out)
        self.calls_writer = RecordWriter(self.out / CALLS_FILE)
        self.episodes_writer = RecordWriter(self.out / EPISODES_FILE)
        self.calls: dict[str, list[dict[str, Any]]] = {}
        self.lock = threading.Lock()

    def add_call(self, episode: Optional[str], call: dict[str, Any]) -> Optional[str]:
        """Record ``call``; a message when the episode cannot hold it (too many held)."""
        with self.lock:
            if episode is not None:
                held = self.calls.get(episode)
                if held is None:
                    if len(self.calls) >= MAX_EPISODES:
                        return f"{MAX_EPISODES} episodes are open; post the end of some (POST /gem/episodes/ID)"
                    held = self.calls[episode] = []
                if len(held) >= MAX_CALLS:
                    return f"episode {episode!r} already has {MAX_CALLS} calls"
                call["call"] = len(held) + 1
                held.append(call)
        self.calls_writer.write({"episode": episode, **call})
        return None

    def close(self) -> None:
        self.calls_writer.close()
        self.episodes_writer.close()


def episode_record_of(key: str, body: dict[str, Any], calls: list[dict[str, Any]], model: Optional[str]) -> dict[str, Any]:
    """The trajectory record of an episode: the env's steps (``body``) joined with its calls."""
    return joined_record(key, body, calls, agent="gem proxy", model=model)


def create_app(
    upstream: str,
    out: str | Path,
    *,
    timeout_s: float = 120.0,
    max_body: int = DEFAULT_MAX_BODY,
    max_reply: int = DEFAULT_MAX_REPLY,
    api_key: Optional[str] = None,
) -> FastAPI:
    """The proxy's app: forwards to ``upstream`` (a ``/v1`` URL) and records into ``out``."""
    import httpx

    if not upstream.startswith(("http://", "https://")):
        raise ValueError(f"upstream must be an http(s) URL of the server's /v1, got {upstream!r}.")
    if not timeout_s > 0:
        raise ValueError(f"timeout_s must be positive seconds, got {timeout_s!r}.")
    upstream = upstream.rstrip("/")
    state = ProxyState(Path(out))
    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> Any:
        yield
        state.close()

    app = FastAPI(title="gem proxy", lifespan=lifespan)
    app.state.proxy = state
    recoveries: dict[str, TokenRecovery] = {}

    async def forward(path: str, body: dict[str, Any], auth: Optional[str]) -> tuple[int, Any, float]:
        headers = {"Content-Type": "application/json"}
        key = api_key or (auth.split(" ", 1)[1] if auth and " " in auth else None)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        start = time.perf_counter()
        async with httpx.AsyncClient(timeout=timeout_s, follow_redirects=False) as http:
            async with http.stream("POST", upstream + path, json=body, headers=headers) as reply:
                chunks, size = [], 0
                async for chunk in reply.aiter_bytes():
                    size += len(chunk)
                    if size > max_reply:
                        return 502, f"the upstream reply is larger than {max_reply} bytes", 0.0
                    chunks.append(chunk)
                status = reply.status_code
        raw = b"".join(chunks)
        try:
            payload: Any = json.loads(raw) if raw else None
        except ValueError:
            payload = raw.decode(errors="replace")[:2000]
        return status, payload, time.perf_counter() - start

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {"ok": True, "upstream": upstream}

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Any:
        raw = await _read_body(request, max_body)
        if raw is None:
            return _error(413, f"the request body is larger than {max_body} bytes")
        try:
            asked = json.loads(raw)
        except (ValueError, RecursionError):
            return _error(400, "the request body is not JSON")
        if not isinstance(asked, dict) or not isinstance(asked.get("messages"), list):
            return _error(400, "a chat request is a JSON object with a messages list")
        if asked.get("stream"):
            return _error(400, "gem proxy does not stream; send stream: false (or leave it out)")
        episode = request.headers.get(EPISODE_HEADER)
        if episode is not None and not EPISODE_KEY.match(episode):
            return _error(400, "X-GEM-Episode must be 1 to 128 characters of letters, digits and ._:#-")
        sent = {**asked, **TOKEN_REQUEST, **{k: v for k, v in TOKEN_EXTRA_BODY.items() if k not in asked}}
        if isinstance(asked.get("top_logprobs"), int) and asked.get("logprobs"):
            sent["top_logprobs"] = asked["top_logprobs"]
        try:
            status, reply, seconds = await forward("/chat/completions", sent, request.headers.get("authorization"))
        except httpx.TimeoutException:
            return _error(504, f"the upstream server did not answer within {timeout_s}s")
        except httpx.HTTPError as exc:
            return _error(502, f"the upstream server could not be reached: {type(exc).__name__}")
        if status != 200 or not isinstance(reply, dict):
            if status == 200:
                return _error(502, "the upstream reply is not a JSON object")
            return JSONResponse(reply if isinstance(reply, (dict, list)) else {"error": {"message": str(reply)}},
                                status_code=status if 400 <= status < 600 else 502)
        choices = reply.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
        message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
        text = message.get("content") if isinstance(message.get("content"), str) else ""
        model = str(asked.get("model") or reply.get("model") or "")
        recovery = recoveries.get(model)
        if recovery is None:
            recovery = TokenRecovery(upstream, model, api_key or "EMPTY", timeout_s)
            if len(recoveries) < 64:
                recoveries[model] = recovery
        tokens = await recovery.fields(dict(reply), text)
        usage = reply.get("usage") if isinstance(reply.get("usage"), dict) else {}
        call = {
            "time": round(time.time(), 3),
            "model": model,
            "latency_s": round(seconds, 4),
            "messages": asked["messages"],
            "reply": text,
            "finish_reason": choice.get("finish_reason"),
            "usage": {k: int(usage.get(k) or 0) for k in ("prompt_tokens", "completion_tokens")
                      if isinstance(usage.get(k, 0), int)},
            "sampling": {k: asked[k] for k in SAMPLING_KEYS if k in asked} or None,
            **tokens,
        }
        problem = state.add_call(episode, call)
        if problem is not None:
            return _error(429, problem)
        return JSONResponse(_strip(reply, asked))

    @app.post("/gem/episodes/{key}")
    async def end_episode(key: str, request: Request) -> Any:
        if not EPISODE_KEY.match(key):
            return _error(400, "an episode id is 1 to 128 characters of letters, digits and ._:#-")
        raw = await _read_body(request, max_body)
        if raw is None:
            return _error(413, f"the request body is larger than {max_body} bytes")
        try:
            body = json.loads(raw)
        except (ValueError, RecursionError):
            return _error(400, "the request body is not JSON")
        why = steps_problem(body)
        if why is not None:
            return _error(400, why)
        with state.lock:
            calls = state.calls.get(key)
            if calls is None:
                return _error(404, f"no model call was recorded for episode {key!r} (X-GEM-Episode header)")
            if len(calls) != len(body["steps"]):
                return _error(409, f"episode {key!r} has {len(calls)} model calls but {len(body['steps'])} steps: "
                                   "one call per step")
            state.calls.pop(key)
        record = episode_record_of(key, body, calls, calls[0].get("model"))
        state.episodes_writer.write(record)
        return {"episode": key, "turns": len(calls), "token_sources": sorted({t["token_source"] for t in record["turns"]})}

    return app


def serve(upstream: str, out: str | Path, host: str = "127.0.0.1", port: int = 8001, **kwargs: Any) -> None:
    """Run the proxy with uvicorn until interrupted."""
    import uvicorn

    app = create_app(upstream, out, **kwargs)
    logger.info("gem proxy on http://%s:%d/v1 -> %s, recording into %s", host, port, upstream, out)
    uvicorn.run(app, host=host, port=port, log_level="warning")
