"""``EpisodeTrackingWrapper``: per-episode statistics in ``info``.

Every step carries GEM's running totals ``step_counter`` and ``cumulative_rewards``; the step that
ends an episode also carries ``info["episode"]`` = ``{"return", "length", "tool_calls",
"tool_successes", "tool_bonus", "time"}`` (total reward, steps, tool calls, clean tool calls, the
part of the return that tool rewards gave, wall-clock seconds since reset), like Gymnasium's
``RecordEpisodeStatistics``. ``reset`` reports the previous episode's
totals as ``prev_ep_step_counter`` and ``prev_ep_cumulative_rewards``. Tool calls are the steps whose
``info["use_tool"]`` is true, so put this wrapper outside (after) ``ToolEnvWrapper``.
"""

from __future__ import annotations

import time
from typing import Any, Optional

from gem.core import Env, EnvWrapper, StepResult


class EpisodeTrackingWrapper(EnvWrapper):
    """Counts steps, reward, tool calls and time per episode (see the module doc)."""

    def __init__(self, env: Env) -> None:
        super().__init__(env)
        self.step_counter = 0
        self.cumulative_rewards = 0.0
        self.tool_calls = 0
        self.tool_successes = 0
        self.tool_bonus = 0.0
        self._start = time.perf_counter()

    def reset(self, seed: Optional[int] = None, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        previous = (self.step_counter, self.cumulative_rewards)
        obs, info = self.env.reset(seed=seed, **kwargs)
        self.step_counter, self.cumulative_rewards = 0, 0.0
        self.tool_calls = self.tool_successes = 0
        self.tool_bonus = 0.0
        self._start = time.perf_counter()
        info = dict(info)
        info.update(step_counter=0, cumulative_rewards=0.0,
                    prev_ep_step_counter=previous[0], prev_ep_cumulative_rewards=previous[1])
        return obs, info

    def step(self, action: str) -> StepResult:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.step_counter += 1
        self.cumulative_rewards += float(reward)
        self.tool_bonus += float(info.get("tool_bonus", 0.0))
        if info.get("use_tool"):
            self.tool_calls += 1
            self.tool_successes += not info.get("tool_error", False)
        info = dict(info)
        info.update(step_counter=self.step_counter, cumulative_rewards=self.cumulative_rewards)
        if terminated or truncated:
            info["episode"] = {
                "return": self.cumulative_rewards,
                "length": self.step_counter,
                "tool_calls": self.tool_calls,
                "tool_successes": self.tool_successes,
                "tool_bonus": self.tool_bonus,
                "time": time.perf_counter() - self._start,
            }
        return obs, reward, terminated, truncated, info
