"""THE episode loop: ``gem run``, ``gem eval``, ``gem play`` and the mock server's replay all use it.

One episode is ``reset``, the agent's ``reset``, then ``act``/``step`` until the env ends it
(``terminated``/``truncated``), the turn cap cuts it (``truncated``), or the agent stops it
(:class:`StopEpisode`). :class:`EpisodeRecorder` keeps the bookkeeping every caller shares: the
success decision, rewards split into the task part and tool bonuses (``info["tool_bonus"]``),
turns, infrastructure failures (``info["infra_error"]``), ungraded answers (``info["grading"]``),
errors, and one record per turn. :func:`run_episode` drives it synchronously and
:func:`arun_episode` inside an event loop (env calls in threads, the agent's ``aact``); both drive
the same generator, so the two cannot drift apart. A batched collector (``gem.rl``) can feed an
:class:`EpisodeRecorder` per env directly: ``start``, then ``begin_turn``/``add_turn`` per step,
``cut`` at its own turn cap, and ``finish``.

The reference answer (``gold``) is read from the env only in :meth:`EpisodeRecorder.finish`, after
the last step: the agent never sees it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Generator, Iterator, Optional

from gem.utils.constants import SUCCESS_REWARD
from gem.utils.text import preview

if TYPE_CHECKING:
    from gem.core import Agent, Env

# The info keys kept in a turn record (the rest of info can be large or not JSON).
INFO_KEYS = (
    "success", "correct", "use_tool", "tool_type", "tool_error", "tool_use_counter", "turn_counter",
    "grading", "grading_error", "infra_error", "tool_bonus", "formatted",
)
DEFAULT_MAX_STEPS = 100_000


class StopEpisode(Exception):
    """Raised by an agent to end the episode early (a person quit, a replay ran out of moves).

    The episode is returned with ``stopped=True``; it is not an error.
    """


@dataclass
class Episode:
    """What happened in one episode.

    ``steps`` holds one record per turn (``turn``, ``action``, ``observation``, ``reward``,
    ``tool_bonus``, ``terminated``, ``truncated``, ``info``, ``model_s``, ``env_s``, ``usage``,
    ``attempts``, ``finish_reason``); ``error`` is ``{stage, turn, type, message}`` when the
    episode could not finish (stage: ``reset``, ``agent``, ``model`` or ``env``).
    """

    env_id: Optional[str]
    seed: Optional[int]
    rewards: list[float] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    observations: list[str] = field(default_factory=list)
    terminated: bool = False
    truncated: bool = False
    success: bool = False
    seconds: float = 0.0
    steps: list[dict[str, Any]] = field(default_factory=list)
    tool_bonus: float = 0.0
    tool_calls: int = 0
    usage: dict[str, int] = field(default_factory=lambda: {"prompt_tokens": 0, "completion_tokens": 0})
    infra_error: Optional[dict[str, Any]] = None
    grading: Optional[dict[str, Any]] = None
    error: Optional[dict[str, Any]] = None
    stopped: bool = False
    gold: Any = None

    @property
    def total_reward(self) -> float:
        return float(sum(self.rewards))

    @property
    def task_reward(self) -> float:
        """The reward without tool bonuses: what solving the task earned."""
        return self.total_reward - self.tool_bonus

    @property
    def turns(self) -> int:
        return len(self.rewards)

    @property
    def ok(self) -> bool:
        """Whether the episode ran to its end (no error)."""
        return self.error is None


def episode_success(reward: float, info: dict[str, Any], env: Any = None) -> bool:
    """Whether a finished episode counts as solved.

    The env's word (``info["success"]``, or ``info["correct"]`` for single-turn tasks) wins;
    otherwise a final task reward at the env's success level counts.
    """
    for key in ("success", "correct"):
        if key in info:
            return bool(info[key])
    return reward >= float(getattr(env, "success_reward", SUCCESS_REWARD))


def jsonable(value: Any) -> Any:
    """``value`` if JSON can hold it, else a short ``repr``."""
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return preview(repr(value))


def small_info(info: dict[str, Any]) -> dict[str, Any]:
    """The part of a step's info worth keeping in a turn record."""
    return {k: jsonable(info[k]) for k in INFO_KEYS if k in info}


def env_gold(env: Any) -> Any:
    """The env's reference answer for the current episode, when it keeps one (``env.answer``)."""
    answer = getattr(getattr(env, "unwrapped", env), "answer", None)
    return None if answer is None else jsonable(answer)


class EpisodeRecorder:
    """The bookkeeping of one episode, shared by every loop (and by batched collectors).

    Args:
        env: the env (for its id, success level and, after the episode, its gold answer); a
            batched collector may pass ``None`` with ``env_id``/``success_reward``.
        seed: the reset seed.
        max_steps: the turn cap; an episode still running after it is ``truncated``.
        record: keep the action and observation texts.
        on_turn: called with each turn record as it is added.
    """

    def __init__(
        self,
        env: Any = None,
        seed: Optional[int] = None,
        max_steps: int = DEFAULT_MAX_STEPS,
        record: bool = True,
        env_id: Optional[str] = None,
        success_reward: Optional[float] = None,
        on_turn: Optional[Callable[[dict[str, Any]], None]] = None,
    ) -> None:
        if max_steps < 1:
            raise ValueError(f"max_steps must be at least 1, got {max_steps!r}.")
        self.env = env
        self.max_steps = int(max_steps)
        self.record = record
        self.on_turn = on_turn
        self.success_reward = (
            float(success_reward)
            if success_reward is not None
            else float(getattr(env, "success_reward", SUCCESS_REWARD))
        )
        self.episode = Episode(env_id=env_id if env_id is not None else getattr(env, "env_id", None), seed=seed)
        self.stage = "reset"
        self.turn = 0
        self.last_info: dict[str, Any] = {}
        self.last_task_reward = 0.0
        self.ended = False  # by the env
        self._start = time.perf_counter()

    # ---------------------------------------------------------------- the turns
    @property
    def running(self) -> bool:
        """Whether another turn is due (the env has not ended it and the cap is not reached)."""
        return not self.ended and not self.episode.stopped and self.turn < self.max_steps

    def start(self, observation: str, info: dict[str, Any]) -> None:
        """The episode's first observation."""
        self.last_info = info or {}
        if self.record:
            self.episode.observations.append(observation)

    def begin_turn(self) -> int:
        """A new turn starts (the agent is asked for an action); returns its number (from 1)."""
        self.stage = "model"
        self.turn += 1
        return self.turn

    def add_turn(
        self,
        action: str,
        observation: str,
        reward: float,
        terminated: bool,
        truncated: bool,
        info: dict[str, Any],
        model_s: Optional[float] = None,
        env_s: Optional[float] = None,
        call: Optional[dict[str, Any]] = None,
    ) -> dict[str, Any]:
        """The result of the turn's step; ``call`` is the model call record, if any."""
        ep, info = self.episode, info or {}
        reward = float(reward)
        bonus = float(info.get("tool_bonus") or 0.0)
        call = call or {}
        usage = call.get("usage")
        step = {
            "turn": self.turn,
            "action": action if self.record else None,
            "observation": observation if self.record else None,
            "reward": reward,
            "tool_bonus": bonus,
            "terminated": bool(terminated),
            "truncated": bool(truncated),
            "info": small_info(info),
            "model_s": call.get("latency_s", None if model_s is None else round(model_s, 4)),
            "env_s": None if env_s is None else round(env_s, 4),
            "usage": usage,
            "attempts": call.get("attempts"),
            "finish_reason": call.get("finish_reason"),
        }
        ep.steps.append(step)
        ep.rewards.append(reward)
        ep.actions.append(action if self.record else "")
        if self.record:
            ep.observations.append(observation)
        ep.tool_bonus += bonus
        if info.get("use_tool"):
            ep.tool_calls += 1
        if usage:
            for k in ("prompt_tokens", "completion_tokens"):
                ep.usage[k] += int(usage.get(k) or 0)
        if info.get("infra_error") and ep.infra_error is None:
            ep.infra_error = jsonable(info["infra_error"])
        self.last_info = info
        self.last_task_reward = reward - bonus
        if terminated or truncated:
            self.ended = True
            ep.terminated, ep.truncated = bool(terminated), bool(truncated)
        if self.on_turn is not None:
            self.on_turn(step)
        return step

    def stop(self) -> None:
        """The agent ended the episode (:class:`StopEpisode`)."""
        self.episode.stopped = True

    def fail(self, exc: BaseException) -> None:
        """The episode could not go on: record where and why."""
        self.episode.error = {
            "stage": self.stage,
            "turn": self.turn,
            "type": type(exc).__name__,
            "message": preview(str(exc), 2000),
        }

    def finish(self) -> Episode:
        """Decide success, mark a cut episode truncated, read the gold answer; return the episode."""
        ep, info = self.episode, self.last_info
        if not self.ended and not ep.stopped and ep.error is None and self.turn >= self.max_steps:
            ep.truncated = True  # cut by the turn cap
        if ep.error is not None or not ep.rewards:
            ep.success = False
        elif self.ended:
            ep.success = episode_success(self.last_task_reward, info, self)
        else:  # cut or stopped: only the env's explicit word counts
            ep.success = bool(info.get("success") or info.get("correct"))
        if info.get("grading") not in (None, "ok"):  # the env could not grade the answer
            ep.grading = {"status": info["grading"], **jsonable(info.get("grading_error") or {})}
        if ep.infra_error is None and (ep.error or {}).get("type") == "InfrastructureError":
            ep.infra_error = {"component": "env", "type": "InfrastructureError", "message": ep.error["message"]}
        if self.env is not None:
            ep.gold = env_gold(self.env)
        ep.seconds = time.perf_counter() - self._start
        return ep

    @contextlib.contextmanager
    def guard(self, catch: bool) -> Iterator[None]:
        """Turn :class:`StopEpisode` into ``stopped`` and, with ``catch``, any error into ``error``."""
        try:
            yield
        except StopEpisode:
            self.stop()
        except Exception as exc:  # noqa: BLE001 -- a bad rollout is data when the caller asks
            if not catch:
                raise
            self.fail(exc)

    # ---------------------------------------------------------------- the loop
    def steps(self, agent: "Agent", seed: Optional[int]) -> Generator[tuple[str, tuple], Any, None]:
        """The episode as requests ``(what, args)`` for a driver to execute and answer."""
        self.stage = "reset"
        observation, info = yield ("reset", (seed,))
        self.start(observation, info)
        self.stage = "agent"
        yield ("agent_reset", (observation, info))
        calls = getattr(agent, "calls", None)
        while self.running:
            self.begin_turn()
            before = len(calls) if isinstance(calls, list) else 0
            t0 = time.perf_counter()
            action = yield ("act", (observation, info))
            model_s = time.perf_counter() - t0
            calls = getattr(agent, "calls", None)
            call = calls[-1] if isinstance(calls, list) and len(calls) > before else None
            self.stage = "env"
            t1 = time.perf_counter()
            observation, reward, terminated, truncated, info = yield ("step", (action,))
            self.add_turn(
                action, observation, reward, terminated, truncated, info,
                model_s=model_s, env_s=time.perf_counter() - t1, call=call,
            )


def _check_action(action: Any) -> str:
    if not isinstance(action, str):
        raise TypeError(
            f"the agent returned {type(action).__name__}, not a string action; a multi-agent env needs "
            "its single-agent view (an id ending in -vs-scripted or -vs-random)."
        )
    return action


def run_episode(
    env: "Env",
    agent: "Agent",
    seed: Optional[int] = None,
    max_steps: int = DEFAULT_MAX_STEPS,
    record: bool = False,
    *,
    catch: bool = False,
    on_turn: Optional[Callable[[dict[str, Any]], None]] = None,
) -> Episode:
    """Play one episode of ``env`` with ``agent``; ``record`` keeps actions and observations.

    ``catch=True`` records an exception as ``episode.error`` instead of raising it.
    """
    rec = EpisodeRecorder(env, seed, max_steps, record=record, on_turn=on_turn)

    def execute(what: str, args: tuple) -> Any:
        if what == "reset":
            return env.reset(seed=args[0])
        if what == "agent_reset":
            return agent.reset(*args)
        if what == "act":
            return _check_action(agent.act(*args))
        return env.step(args[0])

    with rec.guard(catch):
        gen = rec.steps(agent, seed)
        request = next(gen)
        with contextlib.suppress(StopIteration):
            while True:
                request = gen.send(execute(*request))
    return rec.finish()


async def arun_episode(
    env: "Env",
    agent: "Agent",
    seed: Optional[int] = None,
    max_steps: int = DEFAULT_MAX_STEPS,
    record: bool = True,
    *,
    catch: bool = True,
    on_turn: Optional[Callable[[dict[str, Any]], None]] = None,
    env_call: Optional[Callable[..., Awaitable[Any]]] = None,
) -> Episode:
    """:func:`run_episode` inside an event loop: ``await agent.aact``, env calls in threads.

    ``env_call(fn, *args)`` runs a blocking call (default ``asyncio.to_thread``).
    """
    call_env = env_call or asyncio.to_thread
    rec = EpisodeRecorder(env, seed, max_steps, record=record, on_turn=on_turn)

    async def execute(what: str, args: tuple) -> Any:
        if what == "reset":
            return await call_env(lambda: env.reset(seed=args[0]))
        if what == "agent_reset":
            return await call_env(agent.reset, *args)
        if what == "act":
            return _check_action(await agent.aact(*args))
        return await call_env(env.step, args[0])

    with rec.guard(catch):
        gen = rec.steps(agent, seed)
        request = next(gen)
        with contextlib.suppress(StopIteration):
            while True:
                request = gen.send(await execute(*request))
    return rec.finish()
