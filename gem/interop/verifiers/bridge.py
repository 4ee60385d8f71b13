"""A verifiers environment as a GEM env: ``gem.make("verifiers:<taskset id or module>")``.

The environment is found as verifiers' own loader finds it (an installed package named after the
taskset id, exporting a ``Taskset`` and optionally an ``Env`` through ``__all__``). ``reset(seed)``
picks task ``seed`` (modulo the number of tasks for a finite taskset); the observation is the
task's prompt. What the agent's replies earn is decided by the environment itself:

- **Single-turn** (the taskset's tasks, played by verifiers' ``SingleAgentEnv``): the first action
  is the reply; the task's own reward functions (``@vf.reward``) score it, offline, on a trace
  holding that reply. The episode then ends (terminated).
- **Multi-turn** (a package ``Env`` whose ``run()`` drives ``agents.<role>.interaction(task)``):
  the env's ``run`` is played with GEM's agent in the role: each ``interaction.turn(message)`` is an
  observation, each action the reply. ``run`` runs in a worker thread with its own event loop, and
  a step waits for it (``step_timeout`` seconds). When ``run`` returns, the trace's reward (its
  rubric's sum) is paid on the last step. Packages written by ``gem export verifiers`` also report
  each step's reward, the end flags and the last observation in ``trace.info``; they are used when
  present, so a GEM -> verifiers -> GEM round trip is exact.

Only ``verifiers`` is needed (in its own environment, if its pins clash with yours).

The environment is someone else's code (:mod:`gem.interop.border`): a reward that is not a finite
number raises :class:`~gem.errors.InfrastructureError`, and ``info["success"]`` on the last step is
GEM's (terminated with a reward at ``success_reward``). The threads that play ``run()`` are daemon
threads, and an env that is dropped without ``close()`` stops its game when it is collected, so a
script that forgets ``close()`` still ends.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import queue
import threading
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from gem.core import Env
from gem.errors import GemError, missing_extra
from gem.interop.border import finite_reward, gem_side_info, random_text

logger = logging.getLogger(__name__)

DEFAULT_STEP_TIMEOUT = 600.0
STOP_TIMEOUT = 30.0  # seconds reset/close wait for an abandoned run() to finish
ENDLESS_DRAW = 10_000  # reset() without a seed on an endless taskset draws a task among the first this many


@dataclass
class _Reply:
    """One reply handed to a verifiers ``interaction.turn``: the agent's text, or the end."""

    text: str
    terminated: bool = False
    messages: list = field(default_factory=list)

    @property
    def last_reply(self) -> str:
        return self.text.strip()  # as verifiers' Segment.last_reply


class _Interaction:
    """``agents.<role>.interaction(task)``: the turns go to GEM's agent through two queues."""

    def __init__(self, game: "_Game", task: Any, role: str) -> None:
        self._game, self.task, self._role = game, task, role
        self.trace: Any = None

    async def __aenter__(self) -> "_Interaction":
        self.trace = _new_trace(self.task, self._role)
        self._game.trace = self.trace
        return self

    async def __aexit__(self, *exc: Any) -> None:
        return None

    async def turn(self, message: Optional[str] = None) -> _Reply:
        text = self.task.data.prompt_text if message is None else str(message)
        action = await _in_daemon_thread(self._game.exchange, text)
        if action is None:
            return _Reply("", terminated=True)
        _record_reply(self.trace, action)
        return _Reply(action)


class _Seat:
    def __init__(self, game: "_Game", role: str) -> None:
        self._game, self._role = game, role

    def interaction(self, task: Any) -> _Interaction:
        return _Interaction(self._game, task, self._role)


class _Agents:
    """Every role of the env is GEM's one agent."""

    def __init__(self, game: "_Game") -> None:
        self._game = game

    def __getattr__(self, name: str) -> _Seat:
        if name.startswith("_"):
            raise AttributeError(name)
        return _Seat(self._game, name)


class _Game:
    """One run of a verifiers env's ``run()`` in a thread, exchanging turns with GEM's step."""

    def __init__(self, env: Any, task: Any, timeout: float) -> None:
        self.env, self.task, self.timeout = env, task, timeout
        self.to_agent: queue.Queue = queue.Queue()  # ("turn", text) | ("end", None) | ("error", exc)
        self.to_env: queue.Queue = queue.Queue()  # the action, or None to stop
        self.trace: Any = None
        self.finished = False
        self.thread = threading.Thread(target=self._main, daemon=True, name="verifiers-run")
        self.thread.start()

    def _main(self) -> None:
        try:
            asyncio.run(self.env.run(self.task, _Agents(self)))
            self.to_agent.put(("end", None))
        except BaseException as exc:  # noqa: BLE001 - handed to the GEM side, which raises it
            self.to_agent.put(("error", exc))

    def exchange(self, text: str) -> Optional[str]:
        """In the env's thread: show ``text`` to the agent, wait for its action (None: stop)."""
        self.to_agent.put(("turn", text))
        return self.to_env.get()

    def next_event(self) -> tuple[str, Any]:
        try:
            kind, value = self.to_agent.get(timeout=self.timeout)
        except queue.Empty:
            self.stop()
            raise GemError(f"The verifiers env did not answer within {self.timeout:g} s.") from None
        if kind == "error":
            self.finished = True
            raise GemError(f"The verifiers env's run() raised {type(value).__name__}: {value}") from value
        if kind == "end":
            self.finished = True
        return kind, value

    def stop(self) -> None:
        if not self.finished:
            self.to_env.put(None)
            self.finished = True


async def _in_daemon_thread(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` in a daemon thread, awaited. Not the loop's default executor: its threads are
    joined when Python exits, and one blocked waiting for GEM's next action would keep a script
    that never called ``close()`` alive for ever."""
    loop = asyncio.get_running_loop()
    future = loop.create_future()

    def settle(ok: bool, value: Any) -> None:
        if not future.done():
            future.set_result(value) if ok else future.set_exception(value)

    def run() -> None:
        try:
            ok, value = True, fn(*args)
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting coroutine
            ok, value = False, exc
        try:
            loop.call_soon_threadsafe(settle, ok, value)
        except RuntimeError:  # the loop is closed: nobody awaits it any more
            pass

    threading.Thread(target=run, daemon=True, name="verifiers-turn").start()
    return await future


def _new_trace(task: Any, role: str = "agent") -> Any:
    """An empty verifiers trace of ``task``, played by GEM's agent in ``role``."""
    import verifiers.v1 as vf
    from verifiers.v1.trace import AgentInfo, TraceTask

    return vf.Trace(
        task=TraceTask(type=type(task).__name__, data=task.data),
        agent=AgentInfo(config=vf.AgentConfig(model="gem-agent"), name=role),
    )


def _record_reply(trace: Any, text: str) -> None:
    """Put an assistant reply on a verifiers trace, as a sampled message node."""
    from verifiers.v1.graph import MessageNode
    from verifiers.v1.types import AssistantMessage

    parent = len(trace.nodes) - 1 if trace.nodes else None
    trace.nodes.append(MessageNode(message=AssistantMessage(content=text), parent=parent, sampled=True))
    trace.root_reply = text


class VerifiersEnv(Env):
    """A verifiers environment played through GEM's API (``reset(seed)`` plays task ``seed``).

    Args:
        environment: the taskset id or module (``gem.make("verifiers:<it>")`` passes it).
        taskset_kwargs: the taskset config's fields (``TasksetConfig``: ``seed_offset=...``).
        step_timeout: seconds a multi-turn step waits for the env's ``run()``.
    """

    # check_env's checks this bridge cannot pass, and why (check_env reports them as declared
    # limits; tests/interop/test_bridge_limits.py keeps the set exact).
    declared_limits: dict[str, str] = {
        "check_random_action_is_well_formed": (
            "A verifiers environment does not say what a valid move looks like, so sampled actions are "
            "random text, which the env may score as a format error"
        ),
        "check_seed_sensitivity": (
            "sampled actions are random text (see above): an env that shows nothing of its seed before a "
            "valid move plays the same episode for every seed under them"
        ),
        "check_state_roundtrip": "the episode runs in the env's run() coroutine, whose state cannot be copied",
    }

    def __init__(
        self, environment: str, *, taskset_kwargs: Optional[dict[str, Any]] = None,
        step_timeout: float = DEFAULT_STEP_TIMEOUT,
    ) -> None:
        try:
            import verifiers.v1 as vf
            from verifiers.v1.utils.loaders import environment_class, taskset_class, taskset_config_type
        except ImportError as exc:
            raise missing_extra("verifiers: ids", "verifiers", "verifiers") from exc
        try:
            cls = taskset_class(environment)
            config = taskset_config_type(environment)(id=environment, **(taskset_kwargs or {}))
            env_cls = environment_class(environment)
        except (ModuleNotFoundError, AttributeError, TypeError) as exc:
            raise ValueError(f"verifiers:{environment}: {exc}") from exc
        self.environment = environment
        self.taskset = cls(config)
        self.multi_turn = env_cls is not vf.SingleAgentEnv
        self._env_cls = env_cls
        self.step_timeout = step_timeout
        self._tasks: Optional[list[Any]] = list(self.taskset) if self.taskset.bounded else None
        if self._tasks is not None and not self._tasks:
            raise ValueError(f"verifiers:{environment}: the taskset has no tasks.")
        self._task: Any = None
        self._box: dict[str, Optional[_Game]] = {"game": None}
        self._finalizer = weakref.finalize(self, _stop_game, self._box, min(step_timeout, STOP_TIMEOUT))
        self._finalizer.atexit = False  # at exit its threads, all daemons, just end
        self._paid = 0.0

    @property
    def _game(self) -> Optional[_Game]:
        return self._box["game"]

    @_game.setter
    def _game(self, game: Optional[_Game]) -> None:
        self._box["game"] = game

    def _pick(self, index: int) -> Any:
        if self._tasks is not None:
            return self._tasks[index % len(self._tasks)]
        config = self.taskset.config
        if isinstance(getattr(config, "seed_offset", None), int):  # `gem export verifiers`: task i is a seed
            shifted = type(self.taskset)(config.model_copy(update={"seed_offset": config.seed_offset + index}))
            return next(iter(shifted)).with_data(idx=index)
        return next(itertools.islice(iter(self.taskset), index, None))

    def reset(self, seed: Optional[int] = None, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        self._stop_game()
        if seed is not None:
            index = seed
        else:
            index = self.rng.randrange(len(self._tasks) if self._tasks is not None else ENDLESS_DRAW)
        self._task = self._pick(index)
        self._paid = 0.0
        info = {"task_name": self._task.data.name, "task_idx": self._task.data.idx}
        if not self.multi_turn:
            return self._task.data.prompt_text, info
        self._game = _Game(self._make_env(), self._task, self.step_timeout)
        kind, text = self._game.next_event()
        if kind != "turn":
            raise GemError(f"verifiers:{self.environment}: the env's run() ended before its first turn.")
        return text, info

    def _make_env(self) -> Any:
        from verifiers.v1.utils.loaders import env_config_type

        config = env_config_type(self.environment)(taskset=self.taskset.config)
        return self._env_cls(config)

    def _step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if not self.multi_turn:
            return self._score_single_turn(action)
        assert self._game is not None
        self._game.to_env.put(action)
        kind, text = self._game.next_event()
        trace = self._game.trace
        info = dict(getattr(trace, "info", {}) or {})
        source = f"verifiers:{self.environment}"
        if kind == "turn":
            rewards = info.get("gem_rewards")
            if isinstance(rewards, list):
                total = sum(finite_reward(r, source) for r in rewards)
                reward = finite_reward(total - self._paid, source)
            else:
                reward = 0.0
            self._paid += reward
            return self._result(text, reward, False, False, {})
        total = finite_reward(trace.reward if trace is not None else 0.0, source, none_is=0.0)
        reward = finite_reward(total - self._paid, source)
        terminated = bool(info.get("gem_terminated", True))
        truncated = bool(info.get("gem_truncated", False))
        if not (terminated or truncated):
            terminated = True
        observation = str(info.get("gem_last_observation", ""))
        end_info = gem_side_info({"verifiers_rewards": _rewards(trace)}, source, reward=reward, terminated=terminated,
                                 truncated=truncated, success_reward=self.success_reward)
        return self._result(observation, reward, terminated, truncated, end_info)

    def _score_single_turn(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        trace = _new_trace(self._task)
        _record_reply(trace, action)
        _run_coroutine(self._task.score(trace))
        source = f"verifiers:{self.environment}"
        reward = finite_reward(trace.reward, source, none_is=0.0)
        info = gem_side_info({"verifiers_rewards": _rewards(trace)}, source, reward=reward, terminated=True,
                             truncated=False, success_reward=self.success_reward)
        return self._result("", reward, True, False, info)

    def sample_random_action(self) -> str:
        """Random text from this env's action generator (verifiers does not say what a valid reply
        looks like)."""
        return random_text(self.action_rng)

    def get_state(self) -> dict[str, Any]:
        raise NotImplementedError(
            "A verifiers env's episode runs in its run() coroutine, whose state cannot be copied; play it "
            "again from its seed instead."
        )

    def set_state(self, state: dict[str, Any]) -> None:
        self.get_state()

    def _stop_game(self) -> None:
        _stop_game(self._box, min(self.step_timeout, STOP_TIMEOUT))

    def close(self) -> None:
        self._stop_game()


def _stop_game(box: dict[str, Optional[_Game]], wait: float) -> None:
    """Stop the game in ``box`` (if any) and wait up to ``wait`` seconds for its thread."""
    game, box["game"] = box.get("game"), None
    if game is not None:
        game.stop()
        if game.thread is not threading.current_thread():
            game.thread.join(timeout=wait)


def _run_coroutine(coroutine: Any) -> Any:
    """Run ``coroutine`` to its end, also when called from inside a running event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    result: dict[str, Any] = {}

    def run() -> None:
        try:
            result["value"] = asyncio.run(coroutine)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            result["error"] = exc

    thread = threading.Thread(target=run, daemon=True, name="verifiers-score")
    thread.start()
    thread.join()
    if "error" in result:
        raise result["error"]
    return result.get("value")


def _rewards(trace: Any) -> dict[str, Optional[float]]:
    return {name: (None if r is None else float(r.value)) for name, r in (getattr(trace, "rewards", {}) or {}).items()}
