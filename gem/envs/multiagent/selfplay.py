"""Self-play: run many multi-agent games at once with every seat driven by a policy.

:func:`play_games` steps ``num_games`` games in lockstep. Each round it gathers, from every
unfinished game, the observations of the agents that must act, hands each policy *one batch* with
all of its requests (so an LLM policy answers a whole round with one batched generation), and
steps every game. A seat's policy is either

- a :class:`BatchPolicy` (``act_batch(observations, infos) -> actions``), shared by all games
  (and, if given for several seats, by those seats: true self-play with one model), or
- a player spec (``"scripted"``, ``"random"``, an Agent factory ``(env, agent_id) -> Agent``,
  or an ``Agent``, which is then shared by every game, so give stateful agents as a factory):
  one agent per game and seat, seeded from the game's seed.

Game ``i`` is reset with ``seed + i``, so a run is reproducible and game ``i`` plays exactly as it
would alone. Returns one :class:`GameRecord` per game, with every turn when ``record=True`` (the
trajectories a trainer needs).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Protocol, Sequence, Union, runtime_checkable

from gem.core import Agent
from gem.envs.multiagent.base import MultiAgentEnv
from gem.envs.multiagent.players import PlayerSpec, make_player, seed_player
from gem.errors import GemError


@runtime_checkable
class BatchPolicy(Protocol):
    """Answers a batch of observations at once (an LLM behind a batched generate call)."""

    def act_batch(self, observations: list[str], infos: list[dict[str, Any]]) -> list[str]:
        """One action per observation, in order."""
        ...


SeatPolicy = Union[BatchPolicy, PlayerSpec]


@dataclass
class Turn:
    """One action in a game: who acted, on what, and the reward that step gave it."""

    agent: str
    observation: str
    action: str
    reward: float


@dataclass
class GameRecord:
    """What happened in one game."""

    index: int
    seed: int
    returns: dict[str, float] = field(default_factory=dict)
    success: dict[str, bool] = field(default_factory=dict)
    steps: int = 0
    final_infos: dict[str, dict[str, Any]] = field(default_factory=dict)
    turns: list[Turn] = field(default_factory=list)


def _make_game(game: Union[str, Callable[[], MultiAgentEnv]], game_kwargs: dict[str, Any]) -> MultiAgentEnv:
    if isinstance(game, str):
        from gem.envs.registration import make

        env = make(game, **game_kwargs)
    else:
        env = game(**game_kwargs)
    if not isinstance(env, MultiAgentEnv):
        raise TypeError(f"Self-play needs MultiAgentEnv games; {game!r} made {type(env).__name__}.")
    return env


def play_games(
    game: Union[str, Callable[..., MultiAgentEnv]],
    num_games: int,
    players: Union[SeatPolicy, Mapping[str, SeatPolicy]],
    seed: int = 0,
    record: bool = False,
    max_rounds: int = 10_000,
    game_kwargs: Optional[dict[str, Any]] = None,
) -> list[GameRecord]:
    """Play ``num_games`` games of ``game`` (a ``multi:`` id or a factory) in lockstep.

    ``players`` is one policy for every seat or ``{agent_id: policy}`` (see the module docstring).
    """
    if not isinstance(num_games, int) or num_games < 1:
        raise ValueError(f"num_games must be a positive int, got {num_games!r}.")
    envs = [_make_game(game, dict(game_kwargs or {})) for _ in range(num_games)]
    seats = envs[0].possible_agents
    if isinstance(players, Mapping):
        missing = [a for a in seats if a not in players]
        if missing:
            raise ValueError(f"players must give a policy for every seat {seats}; missing {missing}.")
        policies = {a: players[a] for a in seats}
    else:
        policies = {a: players for a in seats}

    records = [GameRecord(index=i, seed=seed + i) for i in range(num_games)]
    observations: list[dict[str, str]] = []
    infos: list[dict[str, dict[str, Any]]] = []
    agents: list[dict[str, Agent]] = []
    for i, env in enumerate(envs):
        obs, info = env.reset(seed=seed + i)
        observations.append(obs)
        infos.append(info)
        own: dict[str, Agent] = {}
        for k, agent in enumerate(seats):
            policy = policies[agent]
            if not isinstance(policy, BatchPolicy):
                player = make_player(policy, env, agent)
                seed_player(player, (seed + i) * 1_000_003 + k)
                player.reset(obs[agent], info[agent])
                own[agent] = player
        agents.append(own)
        records[i].returns = {a: 0.0 for a in seats}

    live = list(range(num_games))
    for _ in range(max_rounds):
        if not live:
            break
        actions: dict[int, dict[str, str]] = {i: {} for i in live}
        batches: dict[int, tuple[BatchPolicy, list[tuple[int, str]]]] = {}
        for i in live:
            for agent in envs[i].active_agents():
                policy = policies[agent]
                if isinstance(policy, BatchPolicy):
                    batches.setdefault(id(policy), (policy, []))[1].append((i, agent))
                else:
                    actions[i][agent] = agents[i][agent].act(observations[i][agent], infos[i][agent])
        for policy, requests in batches.values():
            answers = policy.act_batch(
                [observations[i][a] for i, a in requests], [infos[i][a] for i, a in requests]
            )
            if len(answers) != len(requests):
                raise GemError(
                    f"{type(policy).__name__}.act_batch returned {len(answers)} actions for "
                    f"{len(requests)} observations; return one per observation."
                )
            for (i, agent), answer in zip(requests, answers):
                actions[i][agent] = answer
        for i in live:
            _step_game(envs[i], records[i], actions[i], observations[i], infos[i], record)
        live = [i for i in live if envs[i].agents]
    else:
        if live:
            raise GemError(
                f"{len(live)} games were still running after {max_rounds} rounds; raise max_rounds."
            )
    for env in envs:
        env.close()
    return records


def _step_game(
    env: MultiAgentEnv,
    rec: GameRecord,
    actions: dict[str, str],
    observations: dict[str, str],
    infos: dict[str, dict[str, Any]],
    record: bool,
) -> None:
    obs, rewards, _, _, step_infos = env.step(actions)
    rec.steps += 1
    for agent, reward in rewards.items():
        rec.returns[agent] = rec.returns.get(agent, 0.0) + reward
    if record:
        rec.turns.extend(
            Turn(a, observations[a], str(act), rewards.get(a, 0.0)) for a, act in actions.items()
        )
    observations.update(obs)
    infos.update(step_infos)
    for agent in rewards:
        if agent not in env.agents:  # it finished in this step
            rec.final_infos[agent] = step_infos[agent]
            rec.success[agent] = bool(step_infos[agent].get("success", False))


def win_rate(records: Sequence[GameRecord], agent: str) -> float:
    """The share of ``records`` that ``agent`` won (``success``); draws and losses count as not won."""
    if not records:
        raise ValueError("win_rate needs at least one game record.")
    return statistics.fmean(float(r.success.get(agent, False)) for r in records)


def mean_return(records: Sequence[GameRecord], agent: str) -> float:
    """``agent``'s mean total reward per game."""
    if not records:
        raise ValueError("mean_return needs at least one game record.")
    return statistics.fmean(r.returns.get(agent, 0.0) for r in records)
