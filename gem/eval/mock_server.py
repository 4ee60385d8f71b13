"""A small OpenAI-compatible chat server for tests and demos (no model needed).

It answers ``POST /v1/chat/completions`` (and ``GET /v1/models``) like vLLM or SGLang would, so
``gem eval`` and :class:`gem.agents.openai_agent.OpenAIAgent` can be tested end to end through the
real ``openai`` client. What it replies depends on the requested model name:

* ``solver``: plays the env's own moves. The server is built with the env ids it serves (and the
  wrapper sets, default ``""`` and ``python_tool``); it finds the episode from the conversation alone,
  as any server would see it: the first user message is matched against the first observations of
  the seeds it indexes (lazily, cached), and the conversation's moves are replayed through
  :func:`gem.rollout.run_episode` on each candidate until the env says what the conversation says.
  The env's solver (``env.make_solver()``) is fed the replayed observations and gives the next move;
  single-turn tasks without a solver get ``\\boxed{answer}`` (the env's reference answer). With a
  tool wrapper, the first reply of an episode is a Python tool call.
* ``random``: the env's random action in the replayed state.
* ``script``: the replies given to :func:`create_app` in order; reply ``i`` answers the request
  whose history holds ``i`` assistant messages (the last one repeats).
* ``echo``: repeats the last message's content.

A conversation that fits several seeds (a game whose first observation does not depend on the
seed, before its answers tell them apart) is taken as the lowest seed that fits; the replay checks
every observation the conversation holds, so later requests of the episode narrow it down.

Failures for tests: ``fail_seeds`` (a 500 for every request of an episode identified as one of
those seeds) and ``fail_first`` (the first N requests get a 503, to exercise client retries).
``requests_log`` keeps the headers and body of the last ``REQUEST_LOG_SIZE`` requests, so tests can
check what a client sent (bounded: a long-running mock must not grow without end).
"""

# No ``from __future__ import annotations``: FastAPI must see the real ``Request`` annotation.
import collections
import itertools
import logging
import socket
import threading
import time
from typing import Any, Callable, Optional, Sequence

from gem.agents.base import Agent
from gem.rollout import StopEpisode, run_episode
from gem.utils.prompting import user_content

logger = logging.getLogger(__name__)

TOOL_CALL = "<python>print(6 * 7)</python>"
MODELS = ("solver", "random", "script", "echo")
DEFAULT_WRAPPER_SETS = ("", "python_tool")
INDEX_CHUNK = 64  # seeds indexed at a time
DEFAULT_MAX_SEED = 4096
REQUEST_LOG_SIZE = 1000  # requests_log keeps this many (the newest)


def _tokens(text: str) -> int:
    return len(text.split())


def _content(message: dict[str, Any]) -> str:
    content = message.get("content") or ""
    if isinstance(content, list):  # content parts
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content)


def _norm(text: str) -> str:
    return " ".join(str(text).split())


def _says(message: str, observation: str, info: Optional[dict[str, Any]]) -> bool:
    """Whether a chat message is the text a client builds from ``observation`` (and its info)."""
    said, obs = _norm(message), _norm(observation)
    return said in (obs, _norm(user_content(observation, info))) or bool(obs and obs in said)


def _uses_tools(wrappers: str) -> bool:
    return any(w.strip().endswith("_tool") for w in wrappers.split(","))


class ReplayAgent(Agent):
    """Plays the assistant moves of a conversation and checks the env answers as it did.

    Raises :class:`StopEpisode` when the env says something else (``consistent`` becomes False) or
    when every move is replayed (``exhausted``). A follower (the env's solver, made by
    ``make_follower`` after reset) is fed the env's observations after each non-tool move, so it is
    ready to give the next one.
    """

    def __init__(
        self, history: Sequence[dict[str, Any]], make_follower: Optional[Callable[[], Agent]] = None
    ) -> None:
        # (assistant move, the message that answered it)
        self.moves: list[tuple[str, Optional[str]]] = []
        for i, message in enumerate(history):
            if message.get("role") == "assistant":
                following = history[i + 1] if i + 1 < len(history) else None
                self.moves.append((_content(message), None if following is None else _content(following)))
        self.make_follower = make_follower
        self.follower: Optional[Agent] = None
        self.played = 0
        self.consistent = True
        self.exhausted = False
        self.env_view: tuple[str, dict[str, Any]] = ("", {})

    def reset(self, observation: str, info: Optional[dict[str, Any]] = None) -> None:
        self.env_view = (observation, info or {})
        self.follower = None
        if self.make_follower is not None:
            try:  # made after reset: a solver may read the episode's state
                self.follower = self.make_follower()
            except NotImplementedError:  # no solver: the reply comes from the reference answer
                return
            self.follower.reset(observation, info)

    def act(self, observation: str, info: Optional[dict[str, Any]] = None) -> str:
        info = info or {}
        if self.played:
            expected = self.moves[self.played - 1][1]
            if expected is None or not _says(expected, observation, info):
                self.consistent = False
                raise StopEpisode
            if not info.get("use_tool"):  # the move stepped the env: the follower makes it too
                if self.follower is not None:
                    self.follower.act(*self.env_view)
                self.env_view = (observation, info)
        if self.played == len(self.moves):
            self.exhausted = True
            raise StopEpisode
        self.played += 1
        return self.moves[self.played - 1][0]


class EpisodeIndex:
    """Finds an episode ``(env_id, wrappers, seed)`` from a conversation, and plays its next move.

    First observations are indexed ``INDEX_CHUNK`` seeds at a time (up to ``max_seed``) and cached;
    a conversation's candidates are replayed in seed order until one matches it.
    """

    def __init__(
        self,
        env_ids: Sequence[str],
        wrapper_sets: Sequence[str] = DEFAULT_WRAPPER_SETS,
        env_kwargs: Optional[dict[str, Any]] = None,
        max_seed: int = DEFAULT_MAX_SEED,
    ) -> None:
        self.variants = [(env_id, w) for env_id in env_ids for w in dict.fromkeys(wrapper_sets)]
        self.env_kwargs = dict(env_kwargs or {})
        self.max_seed = max_seed
        self.first: dict[str, list[tuple[str, str, int]]] = {}
        self.entries: list[tuple[str, tuple[str, str, int]]] = []
        self.indexed = 0
        self._lock = threading.Lock()
        self._index_lock = threading.Lock()  # one chunk indexed at a time
        self._idle: dict[tuple[str, str], list[Any]] = {}

    # ----------------------------------------------------------------- envs
    def _make(self, env_id: str, wrappers: str) -> Any:
        from gem.envs.registration import make
        from gem.wrappers.wrapper_factory import get_wrapper_fns

        env = make(env_id, **self.env_kwargs)
        for wrap in get_wrapper_fns(wrappers) if wrappers else []:
            env = wrap(env)
        return env

    def _borrow(self, variant: tuple[str, str]) -> Any:
        with self._lock:
            idle = self._idle.setdefault(variant, [])
            if idle:
                return idle.pop()
        return self._make(*variant)

    def _give_back(self, variant: tuple[str, str], env: Any) -> None:
        with self._lock:
            self._idle.setdefault(variant, []).append(env)

    # ---------------------------------------------------------------- index
    def _extend(self) -> bool:
        """Index the next chunk of seeds; False when ``max_seed`` is reached."""
        with self._index_lock:
            lo = self.indexed
            if lo >= self.max_seed:
                return False
            hi = min(self.max_seed, lo + INDEX_CHUNK)
            self._index(lo, hi)
            self.indexed = hi
        return True

    def _index(self, lo: int, hi: int) -> None:
        for variant in self.variants:
            env = self._borrow(variant)
            try:
                for seed in range(lo, hi):
                    observation, info = env.reset(seed=seed)
                    entry = (*variant, seed)
                    with self._lock:
                        self.entries.append((_norm(observation), entry))
                        for key in dict.fromkeys((_norm(observation), _norm(user_content(observation, info)))):
                            self.first.setdefault(key, []).append(entry)
            finally:
                self._give_back(variant, env)

    def _candidates(self, first_message: str) -> list[tuple[str, str, int]]:
        said = _norm(first_message)
        with self._lock:
            found = list(self.first.get(said, []))
            if not found:  # a client that wraps the observation in more text
                found = [entry for obs, entry in self.entries if obs and obs in said]
        return sorted(found, key=lambda e: (e[2], self.variants.index((e[0], e[1]))))

    def replay(self, messages: Sequence[dict[str, Any]], model: str = "solver") -> Optional[tuple[tuple[str, str, int], str]]:
        """``((env_id, wrappers, seed), reply)`` for the conversation, or None if no episode fits."""
        history = [m for m in messages if m.get("role") != "system"]
        if not history or history[0].get("role") != "user":
            return None
        checked: set[tuple[str, str, int]] = set()
        while True:
            for entry in self._candidates(_content(history[0])):
                if entry in checked:
                    continue
                checked.add(entry)
                reply = self._try(entry, history, model)
                if reply is not None:
                    return entry, reply
            if not self._extend():
                return None

    def _try(self, entry: tuple[str, str, int], history: Sequence[dict[str, Any]], model: str) -> Optional[str]:
        env_id, wrappers, seed = entry
        variant = (env_id, wrappers)
        env = self._borrow(variant)
        try:
            agent = ReplayAgent(history, env.make_solver if model == "solver" else None)
            episode = run_episode(env, agent, seed=seed, max_steps=len(agent.moves) + 1)
            if not (agent.consistent and agent.exhausted):
                return None
            return self._next_move(env, agent, episode.gold, wrappers, model)
        finally:
            self._give_back(variant, env)

    @staticmethod
    def _next_move(env: Any, agent: ReplayAgent, gold: Any, wrappers: str, model: str) -> str:
        if model == "random":
            return env.sample_random_action()
        if _uses_tools(wrappers) and not any("<python>" in move for move, _ in agent.moves):
            return TOOL_CALL
        if agent.follower is not None:
            return agent.follower.act(*agent.env_view)
        if isinstance(gold, (list, tuple)) and gold:
            gold = gold[0]
        if gold is None:
            raise NotImplementedError(f"{env.env_id} has neither a solver nor a reference answer.")
        return f"\\boxed{{{gold}}}"


def create_app(
    script: Optional[Sequence[str]] = None,
    fail_seeds: Sequence[int] = (),
    fail_first: int = 0,
    delay_s: float = 0.0,
    env_ids: Sequence[str] = (),
    wrapper_sets: Sequence[str] = DEFAULT_WRAPPER_SETS,
    env_kwargs: Optional[dict[str, Any]] = None,
    max_seed: int = DEFAULT_MAX_SEED,
) -> Any:
    """The FastAPI app (see the module doc for what each model name replies).

    ``env_ids`` (with each of ``wrapper_sets``, comma-separated ``WRAPPER_FACTORY`` names) are the
    episodes the ``solver`` and ``random`` models can play, seeds ``0 .. max_seed - 1``.
    """
    import asyncio

    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse

    app = FastAPI(title="gem mock OpenAI server")
    counter = itertools.count()
    state: dict[str, Any] = {"requests": 0, "log": collections.deque(maxlen=REQUEST_LOG_SIZE)}
    app.state.stats = state
    replies = list(script or [])
    index = EpisodeIndex(env_ids, wrapper_sets, env_kwargs, max_seed) if env_ids else None
    failing = set(fail_seeds)

    def error(message: str, status: int) -> Any:
        return JSONResponse({"error": {"message": f"mock server: {message}"}}, status_code=status)

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [{"id": m, "object": "model", "owned_by": "gem"} for m in MODELS]}

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Any:
        n = next(counter)
        state["requests"] += 1
        body = await request.json()
        state["log"].append({"headers": dict(request.headers), "body": body})
        messages = body.get("messages") or []
        model = str(body.get("model", ""))
        if delay_s:
            await asyncio.sleep(delay_s)
        if n < fail_first:
            return error("temporarily unavailable", 503)
        if model not in MODELS:
            return error(f"unknown model {model!r}; valid: {', '.join(MODELS)}", 404)
        found = None
        if model in ("solver", "random") or failing:
            if index is None:
                return error("started without env ids: create_app(env_ids=[...]) names the envs it plays", 400)
            try:
                found = await asyncio.to_thread(index.replay, messages, model if model == "random" else "solver")
            except Exception as exc:  # noqa: BLE001 -- reported to the client as a server error
                logger.exception("replay failed")
                return error(f"replay failed: {type(exc).__name__}: {exc}", 500)
            if found is not None and found[0][2] in failing:
                return error(f"seed {found[0][2]} is set to fail", 500)
        if model in ("solver", "random"):
            if found is None:
                return error("no episode of the envs it serves matches this conversation", 400)
            text = found[1]
        elif model == "script":
            if not replies:
                return error("no script was given", 400)
            done = sum(1 for m in messages if m.get("role") == "assistant")
            text = replies[min(done, len(replies) - 1)]
        else:  # echo
            text = _content(messages[-1]) if messages else ""
        finish_reason = "stop"
        limit = body.get("max_tokens") or body.get("max_completion_tokens")
        if isinstance(limit, int) and limit > 0 and _tokens(text) > limit:  # cut, as a real server would
            text, finish_reason = " ".join(text.split()[:limit]), "length"
        prompt_tokens = sum(_tokens(_content(m)) for m in messages)
        completion_tokens = _tokens(text)
        return {
            "id": f"chatcmpl-mock-{n}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": finish_reason,
                    "logprobs": None,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    return app


class MockServer:
    """Runs :func:`create_app` with uvicorn in a thread on ``127.0.0.1`` and a free port.

    Use as a context manager; ``base_url`` is the ``/v1`` URL to give the OpenAI client.
    """

    def __init__(self, **app_kwargs: Any) -> None:
        self.app = create_app(**app_kwargs)
        self._server: Any = None
        self._thread: Optional[threading.Thread] = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def requests(self) -> int:
        """How many chat requests the server has answered."""
        return int(self.app.state.stats["requests"])

    @property
    def requests_log(self) -> list[dict[str, Any]]:
        """Every chat request received: ``{"headers": {...}, "body": {...}}`` (headers lower-case)."""
        return list(self.app.state.stats["log"])

    def start(self, timeout_s: float = 10.0) -> "MockServer":
        import uvicorn

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(self.app, log_level="warning", lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                self.stop()
                raise RuntimeError(f"mock server did not start on 127.0.0.1:{self.port} within {timeout_s} s")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._server = self._thread = None

    def __enter__(self) -> "MockServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m gem.eval.mock_server [--port P] [--env ID ...]``: serve until interrupted."""
    import argparse

    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--script", nargs="*", default=None, help="replies of the 'script' model")
    parser.add_argument("--env", action="append", default=[], help="an env id the solver/random models play")
    parser.add_argument(
        "--wrappers", action="append", default=None, help="a wrapper set they may be wrapped in (repeatable)"
    )
    args = parser.parse_args(argv)
    app = create_app(
        script=args.script, env_ids=args.env, wrapper_sets=args.wrappers or DEFAULT_WRAPPER_SETS
    )
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="info")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
