"""The environment API: ``Env``, ``EnvWrapper`` and the ``Agent`` protocol.

An env is a text-in, text-out task. ``reset`` starts an episode and returns the first observation;
``step`` takes the agent's action (any string) and returns what happened. Randomness lives on the
env: ``reset(seed)`` seeds the env's own generators (``self.rng`` for Python's ``random`` API,
``self.np_random`` for NumPy's), so the same seed gives the same episode in any thread.
"""

from __future__ import annotations

import abc
import contextlib
import copy
import os
import random
import warnings
from typing import Any, Callable, Iterator, Optional, Protocol, SupportsFloat, TypeVar

from gem.compat.step_guard import EpisodeOver as _EpisodeOver, guard_subclass as _guard_subclass
from gem.errors import GemError, ResetNeeded, StepAfterEndWarning
from gem.utils import constants
from gem.utils.seeding import fresh_seed, make_np_rng

ObsType = TypeVar("ObsType")
ActType = TypeVar("ActType")
StepResult = tuple[str, float, bool, bool, dict[str, Any]]

STRICT_STEP_ENV_VAR = "GEM_STRICT_STEP"
EPISODE_OVER_OBSERVATION = "The episode has already ended; call reset() to start a new one."
_FLAG_TYPES = frozenset(("bool", "bool_"))  # Python's and NumPy's booleans
_DEPRECATED_CHECK = (
    "Env.{}() is deprecated: Env.step checks the episode and calls _step; implement _step(action) "
    "instead of step and leave the check to the base class."
)
_strict_step = os.environ.get(STRICT_STEP_ENV_VAR, "").strip().lower() in ("1", "true", "yes", "on")


def set_strict_step(strict: bool) -> bool:
    """Make ``step`` after the end of an episode raise :class:`ResetNeeded` (``True``) or warn once
    and return a terminal result (``False``, the default: code that steps past the end keeps running).

    Returns the previous setting. The environment variable ``GEM_STRICT_STEP=1`` turns strict mode
    on for a whole process (a test suite, say); an env's ``strict_step`` attribute overrides both.
    """
    global _strict_step
    previous, _strict_step = _strict_step, bool(strict)
    return previous


def is_strict_step() -> bool:
    """Whether stepping after the end raises (see :func:`set_strict_step`)."""
    return _strict_step


@contextlib.contextmanager
def strict_step(strict: bool = True) -> Iterator[None]:
    """``with strict_step():`` stepping after the end raises :class:`ResetNeeded` inside the block."""
    previous = set_strict_step(strict)
    try:
        yield
    finally:
        set_strict_step(previous)


# The reward levels every env holds (class defaults from gem.utils.constants, settable per
# instance with Env.set_reward_levels and through any spec's kwargs).
REWARD_LEVELS: tuple[str, ...] = (
    "success_reward",
    "fail_reward",
    "internal_step_reward",
    "invalid_action_reward",
    "format_error_reward",
)

class Env(abc.ABC):
    """Base class of every GEM environment.

    Subclasses implement ``reset`` (calling ``super().reset(seed)`` first, which seeds the env's
    generators and opens the episode) and ``step``. ``step`` must accept every string: an action
    that cannot be parsed gets an observation saying what was wrong and ``format_error_reward``;
    it never raises. Calling ``step`` before ``reset`` raises :class:`gem.errors.ResetNeeded`.
    Calling it after the episode ended warns once (:class:`gem.errors.StepAfterEndWarning`) and
    returns a terminal result (the end's ``terminated``/``truncated`` flags, reward 0, an
    observation saying to call ``reset()``); in strict mode
    (:func:`set_strict_step`, ``GEM_STRICT_STEP=1`` or ``strict_step = True`` on the env) it raises
    ``ResetNeeded`` instead. ``step`` keeps this contract in one place and calls ``_step`` for the
    step itself, so a subclass implements ``_step`` and never checks the episode. A subclass
    written the original GEM's way (it overrides ``step`` itself) gets the same contract from a
    wrapper put on its ``step`` once, when the class is created (:mod:`gem.compat.step_guard`).

    Attributes:
        spec: the :class:`~gem.envs.registration.EnvSpec` it was made from (``None`` if built
            directly); ``spawn`` uses it.
        success_reward, fail_reward, internal_step_reward, invalid_action_reward,
            format_error_reward: the reward levels (:data:`REWARD_LEVELS`). The class holds the
            defaults (:mod:`gem.utils.constants`); ``set_reward_levels`` (and so any spec's kwargs:
            ``gem.make(id, success_reward=2.0)``) sets them on the instance, and the env pays what
            its instance holds.
        strict_step: ``None`` (follow :func:`set_strict_step`), or ``True``/``False`` for this env.
        reset_before_first_step: ``True`` for the games: a ``step`` before any ``reset`` then
            starts an episode with ``reset()`` (unseeded: the seed ``gem.make(id, seed=...)`` set,
            else a fresh one) and plays the action in it (strict mode raises instead); so does
            ``sample_random_action`` before any ``reset``.
        deterministic: ``True`` for an env whose episode does not depend on the seed (a fixed
            puzzle, an evaluation set taken in order); ``check_env`` then does not require
            different seeds to give different episodes.
        max_episode_steps: a bound on the steps of an episode, if the env declares one (an
            episode ends, terminated or truncated, by then whatever the actions).
    """

    spec: Optional["EnvSpecLike"] = None
    success_reward: float = constants.SUCCESS_REWARD
    fail_reward: float = constants.FAIL_REWARD
    internal_step_reward: float = constants.INTERNAL_STEP_REWARD
    invalid_action_reward: float = constants.INVALID_ACTION_REWARD
    format_error_reward: float = constants.FORMAT_ERROR_REWARD
    strict_step: Optional[bool] = None
    reset_before_first_step: bool = False
    deterministic: bool = False
    max_episode_steps: Optional[int] = None

    _seed: Optional[int] = None
    _rng: Optional[random.Random] = None
    _action_rng: Optional[random.Random] = None
    _np_random: Any = None
    _needs_reset: bool = True  # no episode is running (before the first reset, or after the end)
    _episode_started: bool = False  # set the first time an episode opens
    _end_flags: Optional[tuple[bool, bool]] = None  # (terminated, truncated) of the last end
    _warned_step_after_end: bool = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _guard_subclass(cls)  # a class that overrides step itself gets the step contract from a wrapper

    # ----------------------------------------------------------------- the API
    @abc.abstractmethod
    def reset(self, seed: Optional[int] = None, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        """Start a new episode and return ``(observation, info)``.

        With a ``seed`` the env's generators restart from it, so the episode is reproducible;
        without one they continue their stream (seeded from the OS on first use). The base
        implementation does the seeding and opens the episode; subclasses call it first.
        """
        if seed is not None or self._rng is None:
            self._seed_generators(seed)
        self._open_episode()
        return "", {}

    def _open_episode(self) -> None:
        """Mark an episode as running (``reset`` does this; so may envs that reset themselves)."""
        self._needs_reset = False
        self._episode_started = True

    def step(self, action: str, **kwargs: Any) -> StepResult:
        """Apply ``action`` and return ``(observation, reward, terminated, truncated, info)``.

        ``terminated``: the task ended (solved, failed, answered). ``truncated``: a limit outside
        the task (turn limit, tool-use limit) cut the episode. ``info`` is a fresh dict.

        Keeps the step contract (see the class docstring) and calls ``_step(action, **kwargs)``
        while an episode runs; an end that ``_step`` returns is remembered.
        """
        if self._needs_reset and (ended := self._no_episode_step()) is not None:
            return ended
        result = self._step(action, **kwargs) if kwargs else self._step(action)
        if type(result) is tuple and len(result) == 5 and (result[2] or result[3]) and not self._needs_reset:
            self._note_end(result[2], result[3])  # an end returned without self._result
        return result

    @abc.abstractmethod
    def _step(self, action: str) -> StepResult:
        """Play ``action`` in the running episode; what :meth:`step` returns (subclasses implement it).

        ``step`` calls it only while an episode runs, so it never checks the episode itself. An end
        is returned as ``terminated``/``truncated`` (``self._result(...)`` builds the tuple).
        """

    def sample_random_action(self) -> str:
        """A well-formed random action for the current state (drawn from the env's action rng)."""
        raise NotImplementedError(f"{type(self).__name__} does not sample random actions.")

    def make_solver(self) -> "Agent":
        """An agent that plays this env through its text interface and reaches the success reward.

        Games provide one; other envs raise ``NotImplementedError``.
        """
        raise NotImplementedError(f"{type(self).__name__} has no solver.")

    def close(self) -> None:
        """Release what the env holds (processes, sessions). Ordinary envs hold nothing."""

    def set_reward_levels(self, **levels: float) -> None:
        """Set reward levels on this env (``success_reward=2.0, format_error_reward=-1.0``...).

        Raises ``ValueError`` naming the valid levels for any other name, and for a value that
        is not a number.
        """
        unknown = set(levels) - set(REWARD_LEVELS)
        if unknown:
            raise ValueError(f"Unknown reward level(s) {sorted(unknown)}; valid: {', '.join(REWARD_LEVELS)}.")
        for name, value in levels.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"{name} must be a number, got {value!r}.")
            setattr(self, name, float(value))

    def reward_levels(self) -> dict[str, float]:
        """The reward levels this env pays, by name."""
        return {name: float(getattr(self, name)) for name in REWARD_LEVELS}

    # ------------------------------------------------------------- randomness
    def _seed_generators(self, seed: Optional[int]) -> None:
        seed = fresh_seed() if seed is None else int(seed)
        self._seed = seed
        self._rng = random.Random(seed)
        # Actions come from their own stream, so sampling one never changes the episode; it and
        # the NumPy generator are built from the seed on first use (most resets need neither).
        self._action_rng = None
        self._np_random = None

    @property
    def rng(self) -> random.Random:
        """The env's Python generator (``random.Random``), seeded by ``reset(seed)``."""
        if self._rng is None:
            self._seed_generators(None)
        return self._rng  # type: ignore[return-value]

    @property
    def action_rng(self) -> random.Random:
        """The generator ``sample_random_action`` draws from, separate from the episode's."""
        if self._action_rng is None:
            if self._seed is None:
                self._seed_generators(None)
            self._action_rng = random.Random(self._seed ^ 0x5DEECE66D)  # type: ignore[operator]
        return self._action_rng

    @property
    def np_random(self) -> Any:
        """The env's ``numpy.random.Generator``, created on first use from the episode seed."""
        if self._np_random is None:
            if self._seed is None:
                self._seed_generators(None)
            self._np_random = make_np_rng(self._seed)  # type: ignore[arg-type]
        return self._np_random

    def _set_default_seed(self, seed: int) -> None:
        """Seed the generators now, so a later ``reset()`` without a seed is reproducible.

        ``gem.make(id, seed=s)`` and ``make_vec`` use this: GEM passes a seed at construction.
        """
        self._seed_generators(seed)

    # ----------------------------------------------------------- episode state
    def _no_episode_step(self) -> Optional[Any]:
        """What ``step`` does when no episode runs (``self._needs_reset``).

        Before the first ``reset`` it raises :class:`ResetNeeded` (an env with
        ``reset_before_first_step`` resets instead and returns ``None``: the step goes on). After
        the episode ended it warns once and returns :meth:`_episode_over_result` (strict mode:
        raises ``ResetNeeded``).
        """
        name = type(self).__name__
        strict = _strict_step if self.strict_step is None else self.strict_step
        if not self._episode_started:
            if self.reset_before_first_step and not strict:
                self.reset()  # reset_before_first_step: play the step in a fresh episode
                return None
            raise ResetNeeded(f"{name}.step() was called before reset(); call env.reset() first.")
        message = f"{name}.step() was called after the episode ended; call env.reset() to start a new episode."
        if strict:
            raise ResetNeeded(message)
        if not self._warned_step_after_end:
            self._warned_step_after_end = True
            warnings.warn(
                message + " The step changes nothing and returns a terminal result (set GEM_STRICT_STEP=1 to raise instead).",
                StepAfterEndWarning,
                stacklevel=3,
            )
        return self._episode_over_result()

    def _step_without_episode(self) -> Optional[Any]:
        """Deprecated: ``step`` checks the episode itself; implement ``_step`` instead.

        Does what ``step`` does when no episode runs: ``None`` while one runs, else raises
        :class:`ResetNeeded` or returns the terminal result (see :meth:`_no_episode_step`).
        """
        warnings.warn(_DEPRECATED_CHECK.format("_step_without_episode"), DeprecationWarning, stacklevel=2)
        return self._no_episode_step() if self._needs_reset else None

    def _check_step(self) -> None:
        """Deprecated: ``step`` checks the episode itself; implement ``_step`` instead.

        The statement form of the check: after the end it raises an exception that the wrapper of
        a ``step`` written the original GEM's way turns into the terminal result.
        """
        warnings.warn(_DEPRECATED_CHECK.format("_check_step"), DeprecationWarning, stacklevel=2)
        if self._needs_reset and self._no_episode_step() is not None:
            raise _EpisodeOver(f"{type(self).__name__}.step() was called after the episode ended.")

    def _note_end(self, terminated: Any, truncated: Any) -> None:
        """Close the episode on an end ``step`` returned (flags that are bools, Python's or NumPy's)."""
        if type(terminated).__name__ in _FLAG_TYPES and type(truncated).__name__ in _FLAG_TYPES:
            self._needs_reset = True
            self._end_flags = (bool(terminated), bool(truncated))

    def _episode_over_result(self) -> Any:
        """What ``step`` returns after the end: reward 0 and the end's flags, nothing changes."""
        terminated, truncated = self._end_flags or (True, False)
        return EPISODE_OVER_OBSERVATION, 0.0, terminated, truncated, {"episode_over": True}

    def _result(
        self,
        observation: str,
        reward: SupportsFloat,
        terminated: bool = False,
        truncated: bool = False,
        info: Optional[dict[str, Any]] = None,
    ) -> StepResult:
        """Build ``step``'s return value and close the episode when it ended."""
        if terminated or truncated:
            self._needs_reset = True
            self._end_flags = (bool(terminated), bool(truncated))
        return observation, float(reward), terminated, truncated, {} if info is None else info

    # ---------------------------------------------------- copies and snapshots
    @property
    def unwrapped(self) -> "Env":
        """The innermost env (this one)."""
        return self

    def get_state(self) -> dict[str, Any]:
        """A snapshot of the env (board, counters, generators) that ``set_state`` restores."""
        return copy.deepcopy(self.__dict__)

    def set_state(self, state: dict[str, Any]) -> None:
        """Restore a snapshot taken by ``get_state``; the snapshot itself stays usable."""
        self.__dict__.update(copy.deepcopy(state))

    def spawn(self, same_state: bool = False, **kwargs: Any) -> "Env":
        """A new env of the same configuration (kwargs override it), or an exact copy.

        ``same_state=True`` copies the env mid-episode (generators included), so both continue
        identically; ``same_state=False`` builds a fresh env from ``spec`` with ``kwargs`` merged.
        """
        if same_state:
            if kwargs:
                raise ValueError("spawn(same_state=True) copies the env as it is; it takes no kwargs.")
            return copy.deepcopy(self)
        if self.spec is None:
            raise GemError(
                f"{type(self).__name__} was not made by gem.make, so it has no spec to spawn from; "
                "construct a new one directly."
            )
        return self.spec.make(**kwargs)  # the spec's kwargs, overridden by ``kwargs``

    # ------------------------------------------------------------- niceties
    @property
    def env_id(self) -> Optional[str]:
        """The registered id this env was made from (``None`` if built directly).

        Settable (``make`` and envs may set it).
        """
        if "_env_id" in self.__dict__:
            return self.__dict__["_env_id"]
        return None if self.spec is None else self.spec.id

    @env_id.setter
    def env_id(self, value: Optional[str]) -> None:
        self.__dict__["_env_id"] = value

    @property
    def entry_point(self) -> Any:
        """The entry point this env was made from (the original GEM's attribute; settable)."""
        if "_entry_point" in self.__dict__:
            return self.__dict__["_entry_point"]
        return None if self.spec is None else self.spec.entry_point

    @entry_point.setter
    def entry_point(self, value: Any) -> None:
        self.__dict__["_entry_point"] = value

    def __enter__(self) -> "Env":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __str__(self) -> str:
        return f"<{type(self).__name__}{'' if self.spec is None else ' ' + self.spec.id}>"


class EnvWrapper(Env):
    """Wraps an env to change what goes in or comes out; stacks to any depth.

    Attributes that the wrapper does not define are looked up on the wrapped env at access time
    (never copied at construction, so they are never stale). Private names (``_x``) are not
    forwarded. ``unwrapped`` is the innermost env.
    """

    _delegates_step = True  # the wrapped env keeps the step contract: no wrapper (gem.compat.step_guard)

    def __init__(self, env: Env) -> None:
        if not isinstance(env, Env):
            raise TypeError(f"{type(self).__name__} wraps a gem.Env, got {type(env).__name__}.")
        self.env = env

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name == "env":
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return getattr(self.env, name)

    def reset(self, seed: Optional[int] = None, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        return self.env.reset(seed=seed, **kwargs)

    def step(self, action: str) -> StepResult:
        return self.env.step(action)  # the wrapped env keeps the step contract

    _step = step

    def sample_random_action(self) -> str:
        return self.env.sample_random_action()

    def make_solver(self) -> "Agent":
        return self.env.make_solver()

    def close(self) -> None:
        self.env.close()

    @property
    def unwrapped(self) -> Env:
        return self.env.unwrapped

    # Env defines these as class attributes, so __getattr__ would never see them: forward them.
    @property  # type: ignore[override]
    def spec(self) -> Optional["EnvSpecLike"]:
        return self.env.spec

    @property  # type: ignore[override]
    def format_error_reward(self) -> float:
        return self.env.format_error_reward

    @property  # type: ignore[override]
    def success_reward(self) -> float:
        return self.env.success_reward

    @property  # type: ignore[override]
    def fail_reward(self) -> float:
        return self.env.fail_reward

    @property  # type: ignore[override]
    def internal_step_reward(self) -> float:
        return self.env.internal_step_reward

    @property  # type: ignore[override]
    def invalid_action_reward(self) -> float:
        return self.env.invalid_action_reward

    @property  # type: ignore[override]
    def deterministic(self) -> bool:
        return self.env.deterministic

    @property  # type: ignore[override]
    def max_episode_steps(self) -> Optional[int]:
        return self.env.max_episode_steps

    def set_reward_levels(self, **levels: float) -> None:
        self.env.set_reward_levels(**levels)

    def reward_levels(self) -> dict[str, float]:
        return self.env.reward_levels()

    @property
    def rng(self) -> random.Random:
        return self.env.rng

    @property
    def action_rng(self) -> random.Random:
        return self.env.action_rng

    @property
    def np_random(self) -> Any:
        return self.env.np_random

    @property
    def env_id(self) -> Optional[str]:
        return self.__dict__["_env_id"] if "_env_id" in self.__dict__ else self.env.env_id

    @env_id.setter
    def env_id(self, value: Optional[str]) -> None:
        self.__dict__["_env_id"] = value

    @property
    def entry_point(self) -> Any:
        return self.__dict__["_entry_point"] if "_entry_point" in self.__dict__ else self.env.entry_point

    @entry_point.setter
    def entry_point(self, value: Any) -> None:
        self.__dict__["_entry_point"] = value

    def get_state(self) -> dict[str, Any]:
        own = {k: v for k, v in self.__dict__.items() if k != "env"}
        return {"env": self.env.get_state(), "wrapper": copy.deepcopy(own)}

    def set_state(self, state: dict[str, Any]) -> None:
        self.env.set_state(state["env"])
        self.__dict__.update(copy.deepcopy(state["wrapper"]))

    def spawn(self, same_state: bool = False, **kwargs: Any) -> "EnvWrapper":
        """The same wrapper stack around ``self.env.spawn(...)``."""
        new = copy.copy(self)
        new.__dict__ = {k: copy.deepcopy(v) for k, v in self.__dict__.items() if k != "env"}
        new.env = self.env.spawn(same_state=same_state, **kwargs)
        return new

    def __str__(self) -> str:
        return f"<{type(self).__name__}{self.env}>"


# ------------------------------------------------ what an env refers to
class EnvSpecLike(Protocol):
    """What an env keeps of the spec it was made from (:class:`gem.envs.registration.EnvSpec` is
    one): its id, its kwargs and a way to build another env from it (``spawn`` uses ``make``)."""

    id: str
    kwargs: dict[str, Any]

    def make(self, **kwargs: Any) -> "Env":
        """A new env of this spec, ``kwargs`` overriding the spec's."""


class Agent(abc.ABC):
    """Produces an action for each observation of an episode.

    ``reset`` receives the episode's first observation; ``act`` is then called with the latest
    observation (the first one included) and returns the action string. ``aact`` is the same for
    code inside an event loop; by default it runs ``act`` in a thread, and agents that wait on the
    network (:class:`~gem.agents.openai_agent.OpenAIAgent`) override it. An agent may raise
    :class:`~gem.rollout.StopEpisode` to end the episode early. The episode loop is
    :mod:`gem.rollout`; the agents are in :mod:`gem.agents` (which re-exports this class).
    """

    def reset(self, observation: str, info: Optional[dict[str, Any]] = None) -> None:
        """Start a new episode (stateless agents need nothing here)."""

    @abc.abstractmethod
    def act(self, observation: str, info: Optional[dict[str, Any]] = None) -> str:
        """The action for ``observation``."""

    async def aact(self, observation: str, info: Optional[dict[str, Any]] = None) -> str:
        """:meth:`act` without blocking the event loop (in a worker thread)."""
        import asyncio  # here, so that ``import gem`` does not load asyncio

        return await asyncio.to_thread(self.act, observation, info)
