"""A verl agent loop that plays GEM episodes (``actor_rollout_ref.rollout.agent.agent_loop_config_path``).

verl's extension point for multi-turn rollouts is ``AgentLoopBase`` (``verl.experimental.agent_loop``):
a class registered by name with ``@register`` whose async ``run`` generates with
``self.server_manager.generate`` (token in, token out) and returns an ``AgentLoopOutput`` with the
prompt ids, the response ids of all turns, and a ``response_mask`` that is 1 on model tokens and 0
on environment tokens. Each dataset row names its GEM task in ``extra_info``
(``{"env_id": .., "seed": ..}``); the loop's reward (the episode return) is put in ``reward_score``.
Written against verl 0.9.1 (see the README).
"""

from __future__ import annotations

from typing import Any
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopOutput, register

import gem

DEFAULT_ENV = "game:GuessTheNumber-v0"
# The env's reply, appended after the model's turn (which ends with its end-of-turn token) as the next
# user turn, in ChatML (as Qwen models use).
USER_TURN = "\n<|im_start|>user\n{observation}<|im_end|>\n<|im_start|>assistant\n"


def _token_ids(output: Any) -> list[int]:
    return list(getattr(output, "token_ids", output))


@register("gem_agent")
class GemAgentLoop(AgentLoopBase):
    """Plays one GEM episode: model turn -> env.step -> observation as the next user turn."""

    def _encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        extra = kwargs.get("extra_info") or {}
        env = gem.make(extra.get("env_id", DEFAULT_ENV))
        obs, _ = env.reset(seed=extra.get("seed"))
        rollout = self.config.actor_rollout_ref.rollout
        max_turns = int(getattr(rollout.multi_turn, "max_assistant_turns", None) or 20)
        response_length = int(rollout.response_length)
        prompt_ids = await self.loop.run_in_executor(None, lambda: self._encode(self.tokenizer.apply_chat_template(
            [{"role": "user", "content": obs}], add_generation_prompt=True, tokenize=False)))
        request_id = uuid4().hex
        ids = list(prompt_ids)
        response_ids: list[int] = []
        mask: list[int] = []
        logprobs: list[float] | None = []  # None once a turn comes back without log-probs
        total, turns = 0.0, 0
        while turns < max_turns and len(response_ids) < response_length:
            out = await self.server_manager.generate(request_id=request_id, prompt_ids=ids, sampling_params=sampling_params)
            new = _token_ids(out)
            response_ids += new
            mask += [1] * len(new)
            ids += new
            turn_logprobs = getattr(out, "log_probs", None)
            logprobs = logprobs + list(turn_logprobs) if logprobs is not None and turn_logprobs else None
            turns += 1
            obs, reward, terminated, truncated, _ = env.step(self.tokenizer.decode(new, skip_special_tokens=True))
            total += float(reward)
            if terminated or truncated:
                break
            user = self._encode(USER_TURN.format(observation=obs))
            response_ids += user
            mask += [0] * len(user)
            ids += user
            if logprobs is not None:
                logprobs += [0.0] * len(user)
        env.close()
        return AgentLoopOutput(
            prompt_ids=list(prompt_ids), response_ids=response_ids[:response_length],
            response_mask=mask[:response_length], num_turns=2 * turns, metrics={}, reward_score=total,
            response_logprobs=logprobs[:response_length] if logprobs is not None else None,
        )
