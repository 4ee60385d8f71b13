"""OpenRLHF agent function driving a GEM env (``--agent_func_path examples/openrlhf/gem_agent_func.py``).

OpenRLHF's multi-turn extension point is a Python file defining ``AgentExecutor``, an
``openrlhf.utils.agent.AgentExecutorBase`` that OpenRLHF builds with no arguments; here it is the
framework's ``MultiTurnAgentExecutor`` with ``AgentInstance`` (an ``AgentInstanceBase`` with async
``reset`` and ``step``). Written against OpenRLHF 0.11.2 (see the README). Each prompt's ``label``
is a JSON string ``{"env_id": .., "seed": ..}`` naming the GEM task (write the dataset with :func:`write_prompts`); the first
observation of that task is the prompt. Every model turn is one ``env.step``; the env's
observation goes back as the next user turn and its reward is the turn's reward.
"""

from __future__ import annotations

import json
from typing import Any

import torch
from openrlhf.utils.agent import AgentInstanceBase, MultiTurnAgentExecutor

import gem

DEFAULT_ENV = "game:GuessTheNumber-v0"
# The env's reply, appended after the model's turn (which ends with its end-of-turn token) as the next
# user turn, in ChatML (as Qwen models use).
USER_TURN = "\n<|im_start|>user\n{observation}<|im_end|>\n<|im_start|>assistant\n"


def write_prompts(path: str, env_id: str = DEFAULT_ENV, n: int = 1024, seed: int = 0) -> None:
    """A JSONL prompt file for OpenRLHF (``--input_key prompt --label_key label``)."""
    with open(path, "w") as f:
        for i in range(n):
            env = gem.make(env_id)
            obs, _ = env.reset(seed=seed + i)
            f.write(json.dumps({"prompt": obs, "label": json.dumps({"env_id": env_id, "seed": seed + i})}) + "\n")


class AgentInstance(AgentInstanceBase):
    """One GEM episode per OpenRLHF sample (OpenRLHF makes one instance per prompt)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.env: Any = None
        self.turns = 0

    async def reset(self, states: dict, **kwargs: Any) -> dict:
        """Start the task named by the label; the prompt (already rendered by OpenRLHF) stays the observation."""
        task = json.loads(states["label"]) if states.get("label") else {"env_id": DEFAULT_ENV, "seed": None}
        self.env = gem.make(task["env_id"])
        self.env.reset(seed=task.get("seed"))
        self.turns = 0
        return {"observation": states["observation"]}

    async def step(self, states: dict, **kwargs: Any) -> dict:
        obs, reward, terminated, truncated, info = self.env.step(states["action_text"])
        self.turns += 1
        done = bool(terminated or truncated)
        feedback = "" if done else USER_TURN.format(observation=obs)
        if done:
            self.env.close()
        return {
            "rewards": torch.tensor(float(reward)),
            "scores": torch.tensor(float(reward)),
            "environment_feedback": feedback,
            "done": done,
            "sampling_params": states.get("sampling_params"),
            "extra_logs": {"turns": torch.tensor(self.turns), "success": torch.tensor(float(bool(info.get("success"))))},
        }


class AgentExecutor(MultiTurnAgentExecutor):
    """OpenRLHF's multi-turn executor with the GEM ``AgentInstance`` (OpenRLHF builds it with no arguments)."""

    def __init__(self) -> None:
        super().__init__(AgentInstance)
