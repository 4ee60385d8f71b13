"""The one episode loop (gem.rollout): bookkeeping shared by run_episode and arun_episode."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Optional

import pytest

import gem
from gem.agents import Agent, HumanAgent, StopEpisode, arun_episode, check_agent, make_agent, run_episode
from gem.agents.simple import complete_move, move_format
from gem.core import Env
from gem.rollout import EpisodeRecorder


class CountEnv(Env):
    """Say the number ``3 + seed``: ``\\boxed{n}`` wins; ``tool`` earns a 0.25 tool bonus; ``boom`` raises;
    ``infra`` is graded as wrong with an infrastructure failure reported."""

    def __init__(self, turns: int = 5) -> None:
        self.turns = turns
        self.answer: Optional[str] = None
        self.t = 0

    def reset(self, seed: Optional[int] = None, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        super().reset(seed)
        self.answer, self.t = str(3 + (seed or 0)), 0
        return "Say the number.", {"suffix": "Answer in \\boxed{}."}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        self.t += 1
        if action == "boom":
            raise RuntimeError("the env broke")
        if action == "tool":
            return "tool output", 0.25, False, False, {"use_tool": True, "tool_bonus": 0.25}
        if action == "infra":
            info = {"correct": False, "infra_error": {"component": "grader", "type": "X", "message": "down"}}
            return "not graded", 0.0, True, False, info
        if action == f"\\boxed{{{self.answer}}}":
            return "right", 1.0, True, False, {"success": True}
        return "wrong", 0.0, False, self.t >= self.turns, {}


class Script(Agent):
    def __init__(self, moves: list[str]) -> None:
        self.moves, self.seen = moves, []

    def reset(self, observation: str, info: Optional[dict[str, Any]] = None) -> None:
        self.i = 0

    def act(self, observation: str, info: Optional[dict[str, Any]] = None) -> str:
        self.seen.append((observation, dict(info or {})))
        if self.i >= len(self.moves):
            raise StopEpisode
        self.i += 1
        return self.moves[self.i - 1]


def _comparable(ep: Any) -> dict[str, Any]:
    steps = [{k: v for k, v in s.items() if k not in ("model_s", "env_s")} for s in ep.steps]
    return {**vars(ep), "steps": steps, "seconds": None}


def test_sync_and_async_loops_keep_the_same_books() -> None:
    moves = ["tool", "\\boxed{1}", "\\boxed{5}"]
    sync = run_episode(CountEnv(), Script(moves), seed=2, record=True)
    async_ = asyncio.run(arun_episode(CountEnv(), Script(moves), seed=2, record=True))
    assert _comparable(sync) == _comparable(async_)
    assert sync.success and sync.terminated and not sync.truncated and sync.turns == 3
    assert sync.rewards == [0.25, 0.0, 1.0] and sync.tool_bonus == 0.25 and sync.task_reward == 1.0
    assert [s["tool_bonus"] for s in sync.steps] == [0.25, 0.0, 0.0] and sync.tool_calls == 1
    assert sync.gold == "5" and sync.observations == ["Say the number.", "tool output", "wrong", "right"]


def test_tool_bonus_never_makes_a_success() -> None:
    class BonusOnly(CountEnv):
        def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
            return "done", 1.0, True, False, {"tool_bonus": 0.5}  # task part 0.5 < success level 1

    ep = run_episode(BonusOnly(), Script(["x"]), seed=0)
    assert ep.total_reward == 1.0 and ep.task_reward == 0.5 and not ep.success


def test_turn_cap_truncates_and_is_not_a_success() -> None:
    ep = run_episode(CountEnv(turns=100), Script(["no"] * 10), seed=0, max_steps=4)
    assert ep.turns == 4 and ep.truncated and not ep.terminated and not ep.success


def test_agent_can_stop_the_episode() -> None:
    ep = run_episode(CountEnv(), Script(["no"]), seed=0)
    assert ep.stopped and ep.turns == 1 and not ep.success and ep.ok


def test_errors_raise_or_are_recorded() -> None:
    with pytest.raises(RuntimeError, match="the env broke"):
        run_episode(CountEnv(), Script(["no", "boom"]), seed=0)
    ep = run_episode(CountEnv(), Script(["no", "boom"]), seed=0, catch=True)
    assert ep.error == {"stage": "env", "turn": 2, "type": "RuntimeError", "message": "the env broke"}
    assert not ep.success and not ep.ok
    ep = asyncio.run(arun_episode(CountEnv(), Script([]), seed=0))  # stops at once: not an error
    assert ep.ok and ep.stopped and ep.turns == 0


def test_infra_failure_is_recorded() -> None:
    ep = run_episode(CountEnv(), Script(["infra"]), seed=0)
    assert ep.infra_error == {"component": "grader", "type": "X", "message": "down"} and not ep.success


def test_gold_is_read_after_the_episode_only() -> None:
    agent = Script(["\\boxed{9}"])
    ep = run_episode(CountEnv(), agent, seed=6)
    assert ep.gold == "9" and ep.success
    assert all("9" not in obs and "9" not in str(info) for obs, info in agent.seen)


def test_recorder_serves_a_batched_collector() -> None:
    rec = EpisodeRecorder(env_id="x", seed=1, max_steps=2, success_reward=1.0)
    rec.start("obs", {})
    for _ in range(2):
        rec.begin_turn()
        rec.add_turn("a", "o", 0.5, False, False, {"tool_bonus": 0.5})
    assert not rec.running
    ep = rec.finish()
    assert ep.truncated and not ep.success and ep.tool_bonus == 1.0 and ep.task_reward == 0.0


def test_default_aact_runs_act_in_a_thread() -> None:
    class WhereAmI(Agent):
        def act(self, observation: str, info: Optional[dict[str, Any]] = None) -> str:
            return threading.current_thread().name

    assert asyncio.run(WhereAmI().aact("o", {})) != threading.main_thread().name


def test_non_string_action_is_a_clear_error() -> None:
    class DictAgent(Agent):
        def act(self, observation: str, info: Optional[dict[str, Any]] = None) -> Any:
            return {"player_0": "1"}

    ep = run_episode(CountEnv(), DictAgent(), seed=0, catch=True)
    assert ep.error["stage"] == "model" and "single-agent view" in ep.error["message"]


# ------------------------------------------------------------------------- the agent table
def test_agent_table_says_who_can_play() -> None:
    math_env = gem.make("math:Arithmetic")
    with pytest.raises(ValueError, match=r"has no solver\. Agents that can: openai, random"):
        check_agent("solver", math_env)
    raw = gem.make("multi:TicTacToe-v0")
    with pytest.raises(ValueError, match=r"multi:TicTacToe-v0-vs-random, multi:TicTacToe-v0-vs-scripted"):
        check_agent("openai", raw)
    game = gem.make("game:GuessTheNumber-v0-easy")
    check_agent("solver", game)
    ep = run_episode(game, make_agent("solver", game), seed=3)
    assert ep.success
    with pytest.raises(KeyError, match="choose one of"):
        make_agent("gpt", game)


# ------------------------------------------------------------------------- a person's moves
def test_human_moves_are_put_in_the_format_the_env_asks_for() -> None:
    assert move_format("Put your guess inside \\boxed{}") == ("\\boxed{", "}")
    assert move_format("Reply as <answer>...</answer>") == ("<answer>", "</answer>")
    assert move_format("Type anything") is None
    assert complete_move("1 4 4", ("\\boxed{", "}")) == "\\boxed{1 4 4}"
    assert complete_move("\\boxed{5}", ("\\boxed{", "}")) == "\\boxed{5}"
    assert complete_move("5", None) == "5"
    lines, notes, shown = iter(["7", "  5 "]), [], []
    agent = HumanAgent(read=lambda prompt: next(lines), show=shown.append, tell=notes.append)
    env = gem.make("game:GuessTheNumber-v0-easy")
    ep = run_episode(env, agent, seed=2, max_steps=2, record=True)
    assert ep.actions == ["\\boxed{7}", "\\boxed{5}"]
    assert notes == ["(taken as \\boxed{7})", "(taken as \\boxed{5})"]
    assert "Enter your first guess." in shown[0]  # the env's instruction is shown with the observation


def test_human_moves_use_the_format_each_family_names() -> None:
    terminal = "Act with exactly one of these per turn:\n  <bash>COMMAND</bash>  run a command\n  <done/>  finish"
    assert move_format(terminal) == ("<bash>", "</bash>")
    assert complete_move("ls -la", ("<bash>", "</bash>")) == "<bash>ls -la</bash>"
    assert complete_move("<done/>", ("<bash>", "</bash>")) == "<done/>"  # another action of the env
    code = "Put the program in one ```python ... ``` block."
    assert move_format(code) == ("```python\n", "\n```")
    assert complete_move("print(1)", move_format(code)) == "```python\nprint(1)\n```"
    # the format the instructions name first wins (a game that mentions <answer> later keeps \boxed)
    assert move_format("Put your move in \\boxed{}. Do not write <answer>.") == ("\\boxed{", "}")


def test_human_help_and_quit() -> None:
    lines, notes = iter(["help", ":help", ":QUIT"]), []
    agent = HumanAgent(read=lambda prompt: next(lines), tell=notes.append)
    env = gem.make("game:GuessTheNumber-v0-easy")
    ep = run_episode(env, agent, seed=2, record=True)
    assert ep.stopped and ep.actions == [] and ep.error is None
    assert notes[0].startswith("(not sent:") and "\\boxed{help}" in notes[0]
    assert ":quit  end the episode now" in notes[1]
