"""GEM and Gymnasium, both ways (``pip install -e ".[gymnasium]" in the GEM checkout``).

**GEM as Gymnasium.** :class:`GemGymnasiumEnv` is a ``gymnasium.Env`` around a GEM env, with text
spaces (:class:`UnicodeText`). :func:`register_envs` registers every GEM id in Gymnasium's registry
as ``gem/<family>.<name>`` (Gymnasium reads a ``:`` in an id as ``module:name``, so GEM's ``:`` becomes
a ``.``: ``game:Wordle-v0-easy`` is ``gem/game.Wordle-v0-easy``). Importing this module registers them,
so with Gymnasium 1.x either of these works::

    gymnasium.make("gem.interop.gymnasium:gem/game.Wordle-v0-easy")  # Gymnasium imports the module
    import gem.interop.gymnasium; gymnasium.make("gem/game.Wordle-v0-easy")

The package also advertises :func:`register_envs` in the ``gymnasium.envs`` entry-point group, which
Gymnasium 0.26-0.29 load on ``import gymnasium`` (Gymnasium 1.0 stopped loading plugins).

Seeds pass through unchanged: ``reset(seed=s)`` resets the GEM env with seed ``s``, so a Gymnasium
episode is the GEM episode of that seed. ``reset()`` without a seed draws the GEM seed from the
Gymnasium generator (``self.np_random``), so it is reproducible after a seeded reset, as Gymnasium
expects.

Rewards cross only as finite numbers, either way: a NaN, infinite or absurd reward (see
:mod:`gem.interop.border`) raises :class:`~gem.errors.InfrastructureError` instead. Going out, the
GEM env's ``info["success"]`` is GEM's own verdict and goes with it; coming in, the Gymnasium env's
``success``/``correct`` are kept only as ``remote_success``/``remote_correct``, and GEM decides
``info["success"]`` on the last step (terminated with a reward at the env's ``success_reward``).

**Gymnasium as GEM.** :class:`GymnasiumTextEnv` is a GEM env around any Gymnasium env whose spaces
are ``Text``; ``gem.make("gymnasium:<gymnasium id>")`` builds one from Gymnasium's registry, and
:func:`from_gymnasium` wraps an env object you already have.
"""

from __future__ import annotations

import copy
import logging
import string
from typing import Any, Optional

import gymnasium
from gymnasium import spaces

from gem.core import Env
from gem.errors import GemError, InfrastructureError
from gem.interop.border import finite_reward, gem_side_info, is_numpy_scalar

logger = logging.getLogger(__name__)

NAMESPACE = "gem"
DEFAULT_MAX_OBSERVATION_CHARS = 1 << 20
DEFAULT_MAX_ACTION_CHARS = 1 << 14
SAMPLE_CHARSET = string.printable  # what action_space.sample() draws from
_SEED_BOUND = 2**31 - 1
# GEM's single-turn tasks end with terminated and truncated both true.
# Gymnasium reads truncated as "cut by a limit before the task ended", so the bridge reports
# terminated only and keeps GEM's truncated flag under this info key (GymnasiumTextEnv restores it).
GEM_TRUNCATED_KEY = "gem_truncated"


class UnicodeText(spaces.Text):
    """A ``Text`` space whose members are any Unicode string of the allowed length.

    Gymnasium's ``Text`` only contains strings made of its ``charset``; an LLM environment's prompts
    and actions hold any character. ``charset`` here is only what ``sample()`` draws from.
    """

    def __init__(self, max_length: int, *, min_length: int = 0, charset: str = SAMPLE_CHARSET, seed: Any = None):
        super().__init__(max_length, min_length=min_length, charset=charset, seed=seed)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"UnicodeText({self.min_length}, {self.max_length})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, UnicodeText)
            and self.min_length == other.min_length
            and self.max_length == other.max_length
        )

    __hash__ = None  # type: ignore[assignment]  # mutable (seeded), as Gymnasium's spaces


def to_gymnasium_id(env_id: str) -> str:
    """``game:Wordle-v0-easy`` -> ``gem/game.Wordle-v0-easy`` (Gymnasium's id for a GEM id)."""
    if not isinstance(env_id, str) or ":" not in env_id:
        raise ValueError(f"A GEM id looks like 'family:Name', got {env_id!r}.")
    return f"{NAMESPACE}/{env_id.replace(':', '.', 1)}"


def from_gymnasium_id(gym_id: str) -> str:
    """``gem/game.Wordle-v0-easy`` -> ``game:Wordle-v0-easy`` (the inverse of :func:`to_gymnasium_id`)."""
    prefix = f"{NAMESPACE}/"
    if not isinstance(gym_id, str) or not gym_id.startswith(prefix) or "." not in gym_id:
        raise ValueError(f"A GEM id in Gymnasium looks like 'gem/family.Name', got {gym_id!r}.")
    return gym_id[len(prefix):].replace(".", ":", 1)


class GemGymnasiumEnv(gymnasium.Env):
    """A GEM env as a ``gymnasium.Env``: text in, text out.

    Args:
        env_id: the GEM id to make (``gem.make(env_id, **kwargs)``); or
        env: a GEM env you already have (the wrapper closes it on ``close``).
        render_mode: ``None`` or ``"ansi"`` (``render()`` returns the last observation).
        max_observation_chars, max_action_chars: the spaces' ``max_length``.
        **kwargs: the GEM env's constructor kwargs.

    ``info`` is the GEM env's info (a copy, so nothing returned is shared between calls). Where GEM
    ends an episode with both flags set (its single-turn tasks do), Gymnasium gets ``terminated``
    only and ``info["gem_truncated"] = True`` (Gymnasium's ``truncated`` means cut short). A raw
    multi-agent id (whose step takes a dict) has no single-agent text interface: make its
    ``-vs-scripted``/``-vs-random`` view instead.
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(
        self,
        env_id: Optional[str] = None,
        *,
        env: Optional[Env] = None,
        render_mode: Optional[str] = None,
        max_observation_chars: int = DEFAULT_MAX_OBSERVATION_CHARS,
        max_action_chars: int = DEFAULT_MAX_ACTION_CHARS,
        **kwargs: Any,
    ) -> None:
        if (env_id is None) == (env is None):
            raise ValueError("Give GemGymnasiumEnv either env_id (a GEM id) or env (a GEM env), not both.")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or one of {self.metadata['render_modes']}, got {render_mode!r}.")
        if env is None:
            from gem.envs.registration import make

            env = make(env_id, **kwargs)
        elif kwargs:
            raise ValueError("kwargs are for gem.make; pass them with env_id, not with an env you built.")
        self._check_single_agent(env)
        self.gem_env = env
        self.render_mode = render_mode
        self.observation_space = UnicodeText(max_observation_chars)
        self.action_space = UnicodeText(max_action_chars, min_length=1)
        self._last_observation: Optional[str] = None
        self._closed = False

    @staticmethod
    def _check_single_agent(env: Env) -> None:
        from gem.envs.multiagent.base import MultiAgentEnv

        if isinstance(env.unwrapped, MultiAgentEnv) and env.unwrapped is env:
            raise ValueError(
                f"{env.env_id or type(env).__name__} is a multi-agent env (its step takes a dict of actions); "
                "Gymnasium's Env is single-agent. Make its single-agent view instead (the id's -vs-scripted "
                "or -vs-random variant)."
            )

    def reset(
        self, *, seed: Optional[int] = None, options: Optional[dict[str, Any]] = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        gem_seed = seed if seed is not None else int(self.np_random.integers(_SEED_BOUND))
        observation, info = self.gem_env.reset(seed=gem_seed, **(options or {}))
        self._last_observation = self._text(observation, "reset")
        return self._last_observation, copy.deepcopy(info)

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.gem_env.step(action)
        reward = finite_reward(reward, f"{self.gem_env.env_id or type(self.gem_env).__name__}")
        self._last_observation = self._text(observation, "step")
        info = copy.deepcopy(info)
        if terminated and truncated:  # GEM's single-turn tasks set both; Gymnasium: truncated only if not ended
            info[GEM_TRUNCATED_KEY] = True
            truncated = False
        return self._last_observation, reward, bool(terminated), bool(truncated), info

    def _text(self, observation: Any, where: str) -> str:
        if not isinstance(observation, str):
            raise GemError(
                f"{self.gem_env.env_id}: {where} returned a {type(observation).__name__}, not text; "
                "only text envs have a Gymnasium text interface."
            )
        return observation

    def render(self) -> Optional[str]:  # type: ignore[override]
        if self.render_mode == "ansi":
            return self._last_observation or ""
        return None

    def sample_random_action(self) -> str:
        """The GEM env's own well-formed random action (``action_space.sample()`` is random text)."""
        return self.gem_env.sample_random_action()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.gem_env.close()


def register_envs() -> int:
    """Register every GEM id in Gymnasium's registry (``gem/<family>.<name>``); returns how many.

    The ``gymnasium.envs`` entry point of the package (Gymnasium 0.26-0.29 call it on import) and
    importing this module both call it; ``import gem`` imports this module once Gymnasium is imported
    (at once if it already is; see ``gem/__init__.py``), without importing Gymnasium itself. Ids already
    registered are left as they are.
    """
    from gem.envs.registration import list_envs

    added = 0
    for env_id in list_envs():
        gym_id = to_gymnasium_id(env_id)
        if gym_id in gymnasium.registry:
            continue
        # The module-path entry point (not the class) keeps the spec picklable and printable.
        gymnasium.register(
            id=gym_id, entry_point=f"{__name__}:GemGymnasiumEnv", kwargs={"env_id": env_id}, disable_env_checker=False
        )
        added += 1
    logger.debug("Registered %d GEM ids with Gymnasium", added)
    return added


# ---------------------------------------------------------------- Gymnasium -> GEM
class GymnasiumTextEnv(Env):
    """A Gymnasium env with ``Text`` spaces as a GEM env.

    Args:
        gym_id: a Gymnasium id (``gymnasium.make(gym_id, **kwargs)``); or
        env: a ``gymnasium.Env`` you already have (closed with this env).

    Observations and actions must be strings (the spaces ``Text``); other spaces raise ``ValueError``.
    ``reset(seed=s)`` resets the Gymnasium env with seed ``s``; without a seed, with one drawn from
    this env's generator (so a seeded GEM env stays reproducible).
    """

    # check_env's checks this bridge cannot pass, and why (check_env reports them as declared
    # limits; tests/interop/test_bridge_limits.py keeps the set exact).
    declared_limits: dict[str, str] = {}

    def __init__(self, gym_id: Optional[str] = None, *, env: Optional[gymnasium.Env] = None, **kwargs: Any) -> None:
        if (gym_id is None) == (env is None):
            raise ValueError("Give GymnasiumTextEnv either gym_id (a Gymnasium id) or env (a gymnasium.Env).")
        if env is None:
            env = gymnasium.make(gym_id, **kwargs)
        elif kwargs:
            raise ValueError("kwargs are for gymnasium.make; pass them with gym_id, not with an env you built.")
        for name in ("observation_space", "action_space"):
            space = getattr(env, name, None)
            if not isinstance(space, spaces.Text):
                env.close()
                raise ValueError(
                    f"{gym_id or type(env).__name__}: its {name} is {space!r}, not gymnasium.spaces.Text; "
                    "GEM envs speak text, so only Gymnasium envs with Text spaces can be wrapped."
                )
        self.gym_env = env
        self.gym_id = gym_id
        self._closed = False

    def reset(self, seed: Optional[int] = None, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        gym_seed = seed if seed is not None else self.rng.randrange(_SEED_BOUND)
        observation, info = self.gym_env.reset(seed=gym_seed, options=kwargs or None)
        info = gem_side_info(info, self._name, reward=0.0, terminated=False, truncated=False,
                             success_reward=self.success_reward)
        return self._text(observation), info

    def _step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.gym_env.step(action)
        reward = finite_reward(reward, self._name)
        if not isinstance(info, dict):
            raise InfrastructureError(f"{self._name} returned an info that is a {type(info).__name__}, not a dict.")
        info = dict(info)
        truncated = info.pop(GEM_TRUNCATED_KEY, truncated)
        terminated, truncated = self._flag(terminated, "terminated"), self._flag(truncated, "truncated")
        info = gem_side_info(info, self._name, reward=reward, terminated=terminated, truncated=truncated,
                             success_reward=self.success_reward)
        return self._result(self._text(observation), reward, terminated, truncated, info)

    @property
    def _name(self) -> str:
        return self.gym_id or type(self.gym_env).__name__

    def _flag(self, value: Any, name: str) -> bool:
        if isinstance(value, bool) or is_numpy_scalar(value, "b"):  # numpy's bool too
            return bool(value)
        raise InfrastructureError(f"{self._name} returned {name}={value!r}, not a bool.")

    def _text(self, observation: Any) -> str:
        if not isinstance(observation, str):
            raise InfrastructureError(f"{self._name} returned a {type(observation).__name__}, not text.")
        return observation

    def sample_random_action(self) -> str:
        inner = getattr(self.gym_env, "unwrapped", self.gym_env)
        if isinstance(inner, GemGymnasiumEnv):  # a GEM env inside: its well-formed actions
            return inner.sample_random_action()
        self.gym_env.action_space.seed(self.action_rng.randrange(_SEED_BOUND))
        return self.gym_env.action_space.sample()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.gym_env.close()


def from_gymnasium(env: gymnasium.Env) -> GymnasiumTextEnv:
    """A GEM env around a Gymnasium env object with Text spaces (``gem.make`` takes ids only)."""
    return GymnasiumTextEnv(env=env)


register_envs()
