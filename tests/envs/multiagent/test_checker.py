"""check_multiagent_env: deliberately broken envs get the named check and the fix in the message."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from gem.envs.multiagent.checker import CHECKS, check_multiagent_env
from gem.envs.multiagent.tictactoe import TicTacToeEnv
from gem.utils.env_checker import EnvCheckError
from gem.utils.parsing import extract_last_boxed_answer


_resets = itertools.count()


class GlobalRandomTicTacToe(TicTacToeEnv):
    """Puts an O on the board from module-global state (a counter, so two resets always differ;
    a global random draw would repeat its cell one time in nine and make the test flaky)."""

    def _reset_game(self, **kwargs: Any) -> None:
        super()._reset_game()
        self.board[next(_resets) % 9] = "O"


class ActorOnlyKeys(TicTacToeEnv):
    """Returns results only for the agents that acted."""

    def step(self, actions):  # type: ignore[override]
        result = super().step(actions)
        return tuple({a: v for a, v in part.items() if a in actions} for part in result)


class NoResetNeeded(TicTacToeEnv):
    """Lets step() run after the game ended."""

    def _no_episode_step(self) -> None:  # the base class's check, skipped
        return None

    def _apply(self, moves: dict[str, Any]) -> None:
        if moves:
            super()._apply(moves)


class CrashOnGarbage(TicTacToeEnv):
    """Parses with int(), which raises on anything that is not a number."""

    def parse_action(self, agent: str, text: str) -> Any:
        return int(extract_last_boxed_answer(text) or text)


class DropsMessages(TicTacToeEnv):
    """Builds observations without the base class, losing the inbox."""

    def _observation(self, agent: str) -> str:
        return self.observe(agent)


@pytest.mark.parametrize(
    "env_cls, check, fix",
    [
        (GlobalRandomTicTacToe, "check_seed_determinism", "never from the random module"),
        (ActorOnlyKeys, "check_step", "key every returned dict by those agents"),
        (NoResetNeeded, "check_step_after_end", "was not handled; implement _step() rather than step()"),
        (CrashOnGarbage, "check_hostile_actions", "raised ValueError"),
        (DropsMessages, "check_message_delivery", "next observation does not show it"),
    ],
)
def test_broken_env_is_reported_with_a_fix(env_cls, check, fix):
    with pytest.raises(EnvCheckError) as caught:
        check_multiagent_env(env_cls())
    message = str(caught.value)
    assert f"[{check}]" in message and fix in message
    CHECKS[check]  # the named check exists


def test_crash_message_tells_how_to_fix():
    with pytest.raises(EnvCheckError, match="score it as a format error instead"):
        CHECKS["check_hostile_actions"](CrashOnGarbage())


def test_working_env_passes_and_skip_is_validated():
    check_multiagent_env(TicTacToeEnv())
    check_multiagent_env(DropsMessages(), skip=["check_message_delivery"])
    with pytest.raises(ValueError, match="valid:"):
        check_multiagent_env(TicTacToeEnv(), skip=["check_nothing"])


def test_single_agent_env_is_refused(count_env_cls):
    with pytest.raises(TypeError, match="check_env"):
        check_multiagent_env(count_env_cls())
