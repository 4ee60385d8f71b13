"""Checks the word-game tests (Wordle, Hangman, WordSearch, Crosswords) share.

Each helper asserts one rule every word game follows through its text interface: a malformed answer
ends the episode with the format-error reward, an ordinary or invalid move costs the turn and nothing
else, the turn limit truncates, the solver wins, a snapshot replays the same step, bad constructor
arguments are refused by name.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator

import pytest

import gem
from gem.agents import SolverAgent, run_episode
from gem.core import Env
from gem.envs.game_env import words
from tests.conftest import needs_extra


def require_word_lists() -> None:
    """Skip the calling test module unless the word-list packages are installed."""
    needs_extra("games")  # the word lists (wordfreq, english-words)


def assert_format_error(env_id: str, action: str, says: str) -> None:
    """``action`` ends a fresh episode of ``env_id`` with the format-error reward and ``says`` why."""
    env = gem.make(env_id)
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(action)
    assert reward == -0.1 and terminated and not truncated and says in obs and info["success"] is False


def assert_goes_on(env: Env, action: str, says: str, reward: float = 0.0) -> str:
    """``action`` (a move that neither wins nor is malformed) spends the turn for ``reward`` (progress
    credit, else 0) and the episode goes on; the observation ``says`` what happened and is returned."""
    turn = env.turn_count
    obs, got, terminated, truncated, _ = env.step(action)
    assert says in obs and got == pytest.approx(reward) and not terminated and not truncated, (obs, got)
    assert env.turn_count == turn + 1
    return obs


def assert_truncates(env: Env, actions: Iterable[str]) -> str:
    """Only the last of ``actions`` reaches the turn limit: truncated, not terminated, not a success."""
    *before, last = actions
    for action in before:
        assert not any(env.step(action)[2:4])
    obs, reward, terminated, truncated, info = env.step(last)
    assert truncated and not terminated and info["success"] is False and reward == 0.0
    assert f"You have used all {env.max_turns} turns" in obs
    return obs


def first_secret_word_observation(env_id: str, length: int, turns: int) -> tuple[Env, str]:
    """(env, first observation) of Wordle/Hangman ``env_id`` with seed 0, checked to state the secret's
    length and the turns, and to draw a common word of that length."""
    env = gem.make(env_id)
    obs, info = env.reset(seed=0)
    assert (env.word_length, env.max_turns, len(env.secret)) == (length, turns, length)
    assert f"secret {length}-letter word" in obs and f"within {turns} turns" in obs
    assert env.secret.lower() in words.words(length, "common") and info["suffix"] == "Enter your first guess."
    return env, obs


def drawn(env_id: str, seeds: Iterable[int], key: Callable[[Env], Any]) -> set[Any]:
    """``key(env)`` after each of ``env_id``'s resets with ``seeds`` (what a -random preset draws)."""
    env = gem.make(env_id)
    seen = set()
    for seed in seeds:
        env.reset(seed=seed)
        seen.add(key(env))
    return seen


def solver_episodes(env_id: str, seeds: Iterable[int] = range(50)) -> Iterator[tuple[Env, Any]]:
    """(env, episode) for the env's solver agent on each seed; the env is left at the episode's end."""
    env = gem.make(env_id)
    agent = SolverAgent(env)
    for seed in seeds:
        yield env, run_episode(env, agent, seed=seed)


def solver_win_rate(env_id: str, episodes: int = 50) -> float:
    """The share of seeds ``0..episodes-1`` the solver wins."""
    return sum(e.success for _, e in solver_episodes(env_id, range(episodes))) / episodes


def assert_state_roundtrip(env: Env, action: str) -> None:
    """After ``set_state`` the env (mid-episode) replays the step it took from the snapshot."""
    state = env.get_state()
    first = env.step(action)[:4]
    env.set_state(state)
    assert env.step(action)[:4] == first


def assert_rejects(cls: type, **bad: Any) -> None:
    """Each ``name=value`` alone makes ``cls`` raise a ValueError naming ``name``."""
    for name, value in bad.items():
        with pytest.raises(ValueError, match=name):
            cls(**{name: value})
