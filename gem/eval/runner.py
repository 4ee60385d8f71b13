"""Run evaluation episodes concurrently and record them (the engine of ``gem eval``).

An env runs ``episodes`` problems times ``repeats`` samples; episode ``i`` uses seed
``seed + i // repeats``. Episodes run as asyncio tasks, at most ``concurrency`` at once, through the
one episode loop (:func:`gem.rollout.arun_episode`): env ``reset``/``step`` in a thread pool as big as
``concurrency``, model calls async on one shared client whose connection pool is as big too, so a
request never waits for a connection and its timeout counts its own time only. Each finished
episode is appended to ``OUT/episodes.jsonl`` (flushed at once), so an interrupted run loses at
most the episodes in flight. Rerunning with the same ``OUT`` skips every episode already recorded
with ``status == "ok"`` (key: ``env_id#index``) and reruns errored ones; the summary uses the last
record of each key. A failed model request or env step is data: the episode is recorded with
``status == "error"`` and ``error = {stage, turn, type, message}``, and the run goes on.

The pieces live in :mod:`gem.eval.config`, :mod:`gem.eval.records` and :mod:`gem.eval.summary`;
their public names are importable from here as before.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Optional

from gem.eval.config import (
    AGENTS,
    CONFIG_FILE,
    DEFAULT_MAX_TURNS,
    EPISODES_FILE,
    RESUME_KEYS,
    SUMMARY_FILE,
    EvalConfig,
)
from gem.eval.records import ends_with_newline, episode_key, episode_record, latest_records, read_episodes
from gem.eval.summary import format_summary, is_scored, pass_at_k, summarize_dir, summarize_records
from gem.rollout import INFO_KEYS, EpisodeRecorder, arun_episode

__all__ = [
    "AGENTS", "CONFIG_FILE", "DEFAULT_MAX_TURNS", "EPISODES_FILE", "INFO_KEYS", "RESUME_KEYS", "SUMMARY_FILE",
    "EvalConfig", "EvalRunner", "episode_key", "format_summary", "latest_records", "pass_at_k", "read_episodes",
    "summarize_dir", "summarize_records",
]

logger = logging.getLogger(__name__)


class _EnvPool:
    """Idle envs per id, made on demand (each env serves one episode at a time), and the threads
    their blocking calls run in."""

    def __init__(self, config: EvalConfig) -> None:
        self.config = config
        self.idle: dict[str, list[Any]] = {}
        self.all: list[Any] = []
        self._wrapper_fns: Optional[list[Any]] = None
        self.executor = ThreadPoolExecutor(max_workers=config.concurrency + 1, thread_name_prefix="gem-eval")

    async def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run a blocking env or agent call in the pool's threads."""
        return await asyncio.get_running_loop().run_in_executor(self.executor, functools.partial(fn, *args))

    def _wrappers(self) -> list[Any]:
        if self._wrapper_fns is None:
            from gem.wrappers.wrapper_factory import get_wrapper_fns

            tokenizer = None
            if self.config.tokenizer:
                from transformers import AutoTokenizer

                tokenizer = AutoTokenizer.from_pretrained(self.config.tokenizer)
            self._wrapper_fns = get_wrapper_fns(self.config.wrappers, tokenizer=tokenizer)
        return self._wrapper_fns

    def make(self, env_id: str) -> Any:
        from gem.envs import registration

        env = registration.make(env_id, **self.config.env_kwargs)
        for wrap in self._wrappers():
            env = wrap(env)
        self.all.append(env)
        return env

    async def get(self, env_id: str) -> Any:
        idle = self.idle.setdefault(env_id, [])
        if idle:
            return idle.pop()
        return await self.call(self.make, env_id)

    def put(self, env_id: str, env: Any) -> None:
        self.idle.setdefault(env_id, []).append(env)

    async def discard(self, env: Any) -> None:
        """Close an env that may be in a bad state (it failed mid-step) instead of reusing it."""
        if env in self.all:
            self.all.remove(env)
        await self.call(env.close)

    def close(self) -> None:
        for env in self.all:
            try:
                env.close()
            except Exception:  # noqa: BLE001 -- closing goes on with the others
                logger.exception("closing an env failed")
        self.executor.shutdown(wait=False)


class EvalRunner:
    """Runs the episodes of an :class:`EvalConfig` and writes ``OUT``.

    After :meth:`run`, ``ran`` is the number of episodes this call played and ``failed`` how many
    of them could not be scored (error, infrastructure failure or ungraded answer).
    """

    def __init__(self, config: EvalConfig) -> None:
        config.validate()
        self.config = config
        self.out = Path(config.out)
        self._client: Any = None
        self._options: Optional[dict[str, Any]] = None
        self.ran = 0
        self.failed = 0

    # --------------------------------------------------------------------- plan
    def plan(self) -> tuple[list[tuple[str, int]], dict[str, dict[str, Any]]]:
        """The ``(env_id, index)`` still to run, and the records already in ``OUT``."""
        latest = latest_records(read_episodes(self.out))
        todo = [
            (env_id, i)
            for env_id in self.config.env_ids
            for i in range(self.config.episodes_per_env)
            if latest.get(episode_key(env_id, i), {}).get("status") != "ok"
        ]
        if self.config.limit is not None:
            todo = todo[: self.config.limit]
        return todo, latest

    def _check_resume(self) -> None:
        path = self.out / CONFIG_FILE
        current = {k: getattr(self.config, k) for k in RESUME_KEYS}
        if path.exists():
            previous = json.loads(path.read_text(encoding="utf-8"))
            diff = {
                k: (previous.get(k), v) for k, v in current.items() if k in previous and previous.get(k) != v
            }
            if diff:
                detail = "; ".join(f"{k}: {a!r} before, {b!r} now" for k, (a, b) in diff.items())
                raise ValueError(
                    f"{self.out} holds a run with other settings ({detail}); use another --out directory "
                    "or the same settings to resume it."
                )
        saved = asdict(self.config)
        saved.pop("api_key", None)
        path.write_text(json.dumps(saved, indent=2), encoding="utf-8")

    # ------------------------------------------------------------------ agents
    def agent_options(self) -> dict[str, Any]:
        """The constructor arguments of the configured agent (checked before any episode runs)."""
        cfg = self.config
        if cfg.agent != "openai":
            return {}
        options: dict[str, Any] = dict(
            model=cfg.model or "",
            base_url=cfg.base_url,
            api_key=cfg.api_key,
            system_prompt=cfg.system_prompt,
            temperature=cfg.temperature,
            top_p=cfg.top_p,
            max_tokens=cfg.max_tokens,
            timeout_s=cfg.timeout_s,
            max_retries=cfg.max_retries,
            backoff_s=cfg.backoff_s,
            tool_role=cfg.tool_role,
            tool_calling=cfg.tool_calling,
            record_tokens=cfg.record_tokens,
        )
        return options

    def _shared_client(self) -> Any:
        """One async client for every episode, its connection pool sized to ``concurrency``."""
        if self._client is None:
            import httpx
            import openai

            cfg = self.config
            size = cfg.concurrency + 8
            self._client = openai.AsyncOpenAI(
                base_url=cfg.base_url,
                api_key=cfg.api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY",
                max_retries=0,
                http_client=openai.DefaultAsyncHttpxClient(
                    limits=httpx.Limits(max_connections=size, max_keepalive_connections=size)
                ),
            )
        return self._client

    def _make_agent(self, env: Any) -> Any:
        from gem.agents.registry import make_agent

        options = dict(self._options if self._options is not None else self.agent_options())
        if self.config.agent == "openai":
            options["client"] = self._shared_client()
        return make_agent(self.config.agent, env, **options)

    # ------------------------------------------------------------------ episode
    async def run_episode(self, pool: _EnvPool, env_id: str, index: int) -> dict[str, Any]:
        """Play episode ``index`` of ``env_id``; never raises (failures are recorded)."""
        cfg = self.config
        seed = cfg.seed_of(index)
        env = agent = None
        try:
            env = await pool.get(env_id)
            agent = self._make_agent(env)
        except Exception as exc:  # noqa: BLE001 -- a bad rollout is data, not a crash
            rec = EpisodeRecorder(None, seed, env_id=env_id)
            rec.stage = "make" if env is None else "agent"
            rec.fail(exc)
            episode = rec.finish()
            if env is not None:
                pool.put(env_id, env)
        else:
            episode = await arun_episode(
                env, agent, seed, max_steps=cfg.max_turns, record=True, catch=True, env_call=pool.call
            )
            if episode.error is not None and episode.error["stage"] in ("env", "reset"):
                await pool.discard(env)  # it may be mid-step in a bad state: do not reuse it
            else:
                pool.put(env_id, env)
        if episode.error is not None:
            logger.warning("episode %s#%d failed: %s", env_id, index, episode.error)
        calls = getattr(agent, "calls", None) if cfg.agent == "openai" else None
        return episode_record(
            episode,
            index,
            sample=index % cfg.repeats,
            messages=getattr(agent, "messages", None),
            env_kwargs=cfg.env_kwargs,
            sampling=self.sampling() if cfg.agent == "openai" else None,
            calls=calls if isinstance(calls, list) else ([] if cfg.agent == "openai" else None),
            agent=cfg.agent,
            model=cfg.model,
            wrappers=cfg.wrappers,
        )

    def sampling(self) -> dict[str, Any]:
        """The sampling settings each model request carries (unset ones are the server's defaults)."""
        cfg = self.config
        return {"temperature": cfg.temperature, "top_p": cfg.top_p, "max_tokens": cfg.max_tokens}

    # --------------------------------------------------------------------- run
    async def _prepare(self, pool: _EnvPool, env_ids: list[str]) -> None:
        """One env per id and the agent's settings, before any request: a bad id, a missing dataset,
        an agent that cannot play an env (a raw multi-agent game), a server that is down or does not
        serve the model fail the run at once, clearly."""
        from gem.agents.registry import check_agent

        self._options = self.agent_options()
        for env_id in env_ids:
            env = await pool.call(pool.make, env_id)
            pool.put(env_id, env)
            check_agent(self.config.agent, env, names=list(AGENTS))
        if self.config.agent == "openai" and env_ids:
            await self.check_server()

    async def check_server(self) -> None:
        """Ask the server for its models once (``GET /models``), before any episode: a server that
        cannot be reached, refuses the key or does not serve ``model`` is one clear error instead of
        every episode failing after its retries. A server without ``/models`` is not checked."""
        import openai

        from gem.errors import ResourceUnavailable

        cfg = self.config
        where = cfg.base_url or "the default endpoint"
        try:
            page = await self._shared_client().models.list(timeout=min(cfg.timeout_s, 30.0))
        except (openai.APIConnectionError, openai.APITimeoutError) as exc:
            raise ResourceUnavailable(
                f"cannot reach the model server at {where} ({type(exc).__name__}: {exc}); is it running, "
                "and is --base-url its /v1 URL?"
            ) from exc
        except openai.AuthenticationError as exc:
            raise ResourceUnavailable(
                f"the model server at {where} refused the API key (HTTP 401); give --api-key or $OPENAI_API_KEY."
            ) from exc
        except openai.APIStatusError as exc:  # no /models (404) or another answer: the episodes will tell
            logger.info("GET %s/models answered HTTP %s; the model name is not checked", where, exc.status_code)
            return
        served = [m.id for m in getattr(page, "data", None) or [] if getattr(m, "id", None)]
        if served and cfg.model not in served:
            raise ValueError(
                f"the model server at {where} does not serve model {cfg.model!r}; it serves: "
                f"{', '.join(served[:20])}{' ...' if len(served) > 20 else ''} (--model)."
            )

    async def arun(self) -> dict[str, Any]:
        """Run the missing episodes, write the JSONL and ``summary.json``; return the summary."""
        from gem.eval.progress import progress_bar

        self.out.mkdir(parents=True, exist_ok=True)
        todo, _ = self.plan()
        pool = _EnvPool(self.config)
        try:
            await self._prepare(pool, list(dict.fromkeys(env_id for env_id, _ in todo)))
        except BaseException:
            await asyncio.to_thread(pool.close)
            raise
        self._check_resume()
        logger.info("%d episode(s) to run in %s", len(todo), self.out)
        semaphore = asyncio.Semaphore(self.config.concurrency)
        path = self.out / EPISODES_FILE
        self.ran = self.failed = 0
        try:
            with progress_bar(len(todo), "gem eval", disable=not self.config.progress) as advance, path.open(
                "a", encoding="utf-8"
            ) as fh:
                if path.stat().st_size and not ends_with_newline(path):
                    fh.write("\n")  # end a line torn by a killed run, so the next record stays whole

                async def one(env_id: str, index: int) -> None:
                    async with semaphore:
                        record = await self.run_episode(pool, env_id, index)
                    fh.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
                    fh.flush()
                    self.ran += 1
                    self.failed += not is_scored(record)
                    advance(self.failed)

                await asyncio.gather(*(one(env_id, i) for env_id, i in todo))
        finally:
            await asyncio.to_thread(pool.close)
            if self._client is not None:
                await self._client.close()
                self._client = None
        summary = summarize_dir(self.out, self.config.env_ids)
        (self.out / SUMMARY_FILE).write_text(json.dumps(summary, indent=2), encoding="utf-8")
        return summary

    def run(self) -> dict[str, Any]:
        """:meth:`arun` on a new event loop."""
        return asyncio.run(self.arun())
