"""A multi-agent game seen from one seat: an ordinary single-agent :class:`gem.Env`.

:class:`SingleAgentView` fixes every other seat to a player (``"scripted"``, ``"random"``, any
:class:`gem.agents.base.Agent` such as an LLM agent, or a factory ``(env, agent_id) -> Agent``)
and plays their turns inside ``reset``/``step``, so the learner sees one observation per own turn
and the reward it earned since its last action. Every single-agent tool (``gem run``, vector
envs, wrappers, the env checker) works on it. Registered views end in ``-vs-scripted`` and
``-vs-random``; their solver (``make_solver``) is the game's scripted player in the learner's seat.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional, Union

from gem.core import Agent, Env, StepResult
from gem.envs.multiagent.base import MultiAgentEnv
from gem.envs.multiagent.players import PlayerSpec, make_player, seed_player
from gem.errors import GemError

DEFAULT_MAX_OPPONENT_MOVES = 10_000


class SingleAgentView(Env):
    """Play ``learner``'s seat of a multi-agent game against fixed ``opponents``.

    Args:
        game: a ``multi:`` id (made with ``game_kwargs``) or a :class:`MultiAgentEnv`.
        learner: the seat the agent plays (one of the game's ``possible_agents``).
        opponents: one player spec for every other seat, or ``{agent_id: spec}``.
        game_kwargs: constructor arguments when ``game`` is an id.
        max_opponent_moves: a guard against opponents that never let the learner move.
    """

    PARAMS = ()  # the game, players and their kwargs are the operator's

    def __init__(
        self,
        game: Union[str, MultiAgentEnv] = "multi:TicTacToe-v0",
        learner: str = "player_0",
        opponents: Union[PlayerSpec, Mapping[str, PlayerSpec]] = "scripted",
        game_kwargs: Optional[dict[str, Any]] = None,
        max_opponent_moves: int = DEFAULT_MAX_OPPONENT_MOVES,
    ) -> None:
        if isinstance(game, str):
            from gem.envs.registration import make

            game = make(game, **(game_kwargs or {}))
        elif game_kwargs:
            raise ValueError("game_kwargs only applies when game is an env id.")
        if not isinstance(game, MultiAgentEnv):
            raise TypeError(f"SingleAgentView needs a MultiAgentEnv, got {type(game).__name__}.")
        if learner not in game.possible_agents:
            raise ValueError(
                f"Unknown learner seat {learner!r}; choose one of: {', '.join(game.possible_agents)}."
            )
        others = [a for a in game.possible_agents if a != learner]
        if isinstance(opponents, Mapping):
            missing = [a for a in others if a not in opponents]
            extra = [a for a in opponents if a not in others]
            if missing or extra:
                raise ValueError(
                    f"opponents must name exactly the seats {others}; missing {missing}, unexpected {extra}."
                )
            self.opponent_specs = dict(opponents)
        else:
            self.opponent_specs = {a: opponents for a in others}
        for agent, spec in self.opponent_specs.items():
            if isinstance(spec, str):
                make_player(spec, game, agent)  # validate names now, not at the first reset
        self.game = game
        self.learner = learner
        # A game without chance against scripted players plays the same episode from every seed.
        self.deterministic = bool(game.deterministic) and all(s == "scripted" for s in self.opponent_specs.values())
        self.max_opponent_moves = max_opponent_moves
        self.players: dict[str, Agent] = {}
        self._obs: dict[str, str] = {}
        self._infos: dict[str, dict[str, Any]] = {}
        self._episode_seed = 0

    def set_reward_levels(self, **levels: float) -> None:
        """Set the levels on the view and on the game, which pays them."""
        super().set_reward_levels(**levels)
        self.game.set_reward_levels(**levels)

    # ------------------------------------------------------------------ the API
    def reset(self, seed: Optional[int] = None, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        super().reset(seed)
        self._episode_seed = self.rng.getrandbits(63)
        self._obs, self._infos = self.game.reset(seed=self._episode_seed, **kwargs)
        self.players = {}
        for k, (agent, spec) in enumerate(self.opponent_specs.items()):
            player = make_player(spec, self.game, agent)
            seed_player(player, self._episode_seed + k + 1)
            player.reset(self._obs[agent], self._infos[agent])
            self.players[agent] = player
        self._play_until_learner(None)
        if self.learner not in self.game.agents:
            self._needs_reset = True  # an opponent ended the game before the learner moved
        return self._obs[self.learner], self._learner_info()

    def _step(self, action: str) -> StepResult:
        reward = self._play_until_learner(action)
        ended = self.learner not in self.game.agents
        terminated = ended and bool(self.game.terminations.get(self.learner))
        truncated = ended and not terminated
        return self._result(self._obs[self.learner], reward, terminated, truncated, self._learner_info())

    def _play_until_learner(self, action: Optional[str]) -> float:
        """Step the game (with ``action`` for the learner's first move, if given) until the learner
        must act again or has left; return the learner's reward over those steps."""
        reward = 0.0
        moves = 0
        game = self.game
        while self.learner in game.agents:
            active = game.active_agents()
            if self.learner in active and action is None:
                break
            actions = {
                a: self.players[a].act(self._obs[a], self._infos[a]) for a in active if a != self.learner
            }
            if self.learner in active:
                actions[self.learner], action = action, None
            obs, rewards, _, _, infos = game.step(actions)
            self._obs.update(obs)
            self._infos.update(infos)
            reward += rewards.get(self.learner, 0.0)
            moves += 1
            if moves > self.max_opponent_moves:
                raise GemError(
                    f"The opponents made {moves} moves without the learner's turn coming; "
                    "check the game's turn order or raise max_opponent_moves."
                )
        return reward

    def _learner_info(self) -> dict[str, Any]:
        return dict(self._infos.get(self.learner, {}))

    def sample_random_action(self) -> str:
        return self.game.sample_random_action(self.learner)

    def make_solver(self) -> Agent:
        """The game's scripted player in the learner's seat."""
        player = self.game.make_scripted_player(self.learner)
        seed_player(player, self._episode_seed ^ 0x5EED)
        return player

    def close(self) -> None:
        self.game.close()

    @property
    def possible_agents(self) -> list[str]:
        return self.game.possible_agents

    def __str__(self) -> str:
        name = self.spec.id if self.spec is not None else f"{self.game} as {self.learner}"
        return f"<SingleAgentView {name}>"
