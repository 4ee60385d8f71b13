"""EpisodeTrackingWrapper: running totals every step, info["episode"] at the end."""

from __future__ import annotations

import pytest

from gem.tools.tool_env_wrapper import ToolEnvWrapper
from gem.wrappers.episode_tracking_wrapper import EpisodeTrackingWrapper
from tests.conftest import CountEnv
from tests.wrappers.fake_tools import EchoTool

PLUS = "\\boxed{+}"


def test_episode_stats():
    env = EpisodeTrackingWrapper(ToolEnvWrapper(CountEnv(target=2), tools=[EchoTool], tool_reward=0.5))
    obs, info = env.reset(seed=0)
    assert info["step_counter"] == 0 and info["prev_ep_step_counter"] == 0
    *_, info = env.step("<echo>x</echo>")
    assert info["step_counter"] == 1 and info["cumulative_rewards"] == 0.5 and "episode" not in info
    env.step("<echo>fail</echo>")
    env.step(PLUS)
    obs, reward, terminated, truncated, info = env.step(PLUS)
    assert terminated
    episode = info["episode"]
    assert episode["return"] == pytest.approx(2.0) and episode["length"] == 4
    assert episode["tool_calls"] == 2 and episode["tool_successes"] == 1
    assert episode["tool_bonus"] == pytest.approx(1.0)  # the task itself gave the other 1.0
    assert 0 <= episode["time"] < 60
    _, info = env.reset(seed=1)
    assert info["prev_ep_step_counter"] == 4 and info["prev_ep_cumulative_rewards"] == pytest.approx(2.0)
    assert info["step_counter"] == 0 and info["cumulative_rewards"] == 0.0


def test_truncation_also_reports_the_episode():
    env = EpisodeTrackingWrapper(ToolEnvWrapper(CountEnv(), tools=[EchoTool], max_tool_uses=None, max_turns=2))
    env.reset(seed=0)
    env.step("<echo>x</echo>")
    *_, truncated, info = env.step("<echo>x</echo>")
    assert truncated and info["episode"]["length"] == 2 and info["episode"]["tool_calls"] == 2
