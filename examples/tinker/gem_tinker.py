"""GEM envs as Tinker cookbook RL envs (``tinker_cookbook.rl.types``).

Tinker's RL extension point is a set of small classes: an ``Env`` with async
``initial_observation() -> (ModelInput, StopCondition)`` and ``step(tokens, *, extra) -> StepResult``, an
``EnvGroupBuilder`` whose ``make_envs()`` returns a group of envs on the same task (the group is what
the cookbook centres advantages over), and an ``RLDataset`` whose ``get_batch(i)`` returns builders.
Prompts are rendered with a cookbook ``renderer`` (the model's chat format); each model turn is
parsed back to text and sent to ``gem`` ``env.step``. Written against tinker-cookbook 0.5.8 with
tinker 0.38.0 (see the README).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tinker_cookbook.renderers import get_text_content
from tinker_cookbook.rl.types import ActionExtra, Env, EnvGroupBuilder, RLDataset, StepResult

import gem

DEFAULT_ENV = "game:GuessTheNumber-v0"


class GemTinkerEnv(Env):
    """One GEM episode; the conversation so far is re-rendered every turn."""

    def __init__(self, env_id: str, seed: int, renderer: Any) -> None:
        self.env = gem.make(env_id)
        self.seed = seed
        self.renderer = renderer
        self.messages: list[dict[str, str]] = []

    @property
    def stop_condition(self) -> Any:
        return self.renderer.get_stop_sequences()

    async def initial_observation(self) -> tuple[Any, Any]:
        obs, _ = self.env.reset(seed=self.seed)
        self.messages = [{"role": "user", "content": obs}]
        return self.renderer.build_generation_prompt(self.messages), self.stop_condition

    async def step(self, action: list[int], *, extra: ActionExtra | None = None) -> StepResult:
        message, _ = self.renderer.parse_response(action)
        text = get_text_content(message)
        obs, reward, terminated, truncated, info = self.env.step(text)
        done = bool(terminated or truncated)
        self.messages += [{"role": "assistant", "content": text}, {"role": "user", "content": obs}]
        return StepResult(
            reward=float(reward), episode_done=done,
            next_observation=self.renderer.build_generation_prompt(self.messages),
            next_stop_condition=self.stop_condition,
            metrics={"success": float(bool(info.get("success")))} if done else {},
        )


class GemEnvGroupBuilder(EnvGroupBuilder):
    """``group_size`` envs replaying the task ``(env_id, seed)``."""

    def __init__(self, env_id: str, seed: int, group_size: int, renderer: Any) -> None:
        self.env_id, self.seed, self.group_size, self.renderer = env_id, seed, group_size, renderer

    async def make_envs(self) -> Sequence[Env]:
        return [GemTinkerEnv(self.env_id, self.seed, self.renderer) for _ in range(self.group_size)]

    def logging_tags(self) -> list[str]:
        return ["gem", self.env_id.split(":")[0]]


class GemRLDataset(RLDataset):
    """Batch ``i`` holds ``batch_size`` tasks with seeds ``seed + i * batch_size + j``."""

    def __init__(self, env_id: str, batch_size: int, group_size: int, renderer: Any, n_batches: int = 1000,
                 seed: int = 0) -> None:
        self.env_id, self.batch_size, self.group_size = env_id, batch_size, group_size
        self.renderer, self.n_batches, self.seed = renderer, n_batches, seed

    def get_batch(self, index: int) -> Sequence[EnvGroupBuilder]:
        first = self.seed + index * self.batch_size
        return [GemEnvGroupBuilder(self.env_id, first + j, self.group_size, self.renderer) for j in range(self.batch_size)]

    def __len__(self) -> int:
        return self.n_batches
