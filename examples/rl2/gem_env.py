"""An RL2 environment file for GEM envs (``rollout.env_path=examples/rl2/gem_env.py``).

RL2's extension point is a Python file with an async ``generate(config, tokenizer, router_url,
sample)`` that drives the rollout of one ``RL2.datasets.Sample``: RL2 calls it per sample; it asks
the inference router for tokens, records them with ``add_llm_response``, steps the env and records
the env's reply with ``add_env_response``. Here every sample gets its own GEM env (id and seed from
``sample.sample`` when the dataset gives them, else ``ENV_ID`` and a fresh seed).
"""

from __future__ import annotations

from typing import Any

from omegaconf import OmegaConf
from RL2.datasets import Sample, add_env_response, add_llm_response, initialize_state_dict
from RL2.utils.communication import async_request

import gem

ENV_ID = "game:GuessTheNumber-v0"


def _render(tokenizer: Any, observation: str) -> str:
    return tokenizer.apply_chat_template([{"role": "user", "content": observation}],
                                         add_generation_prompt=True, tokenize=False)


async def generate(config: Any, tokenizer: Any, router_url: str, sample: Any) -> None:
    """Play (or resume) one GEM episode for ``sample``."""
    params = OmegaConf.to_container(config.sampling_params)
    if sample.status == Sample.Status.DONE:
        return
    if sample.status == Sample.Status.ABORTED:
        sample.status = Sample.Status.RUNNING
    if "gem_env" not in sample.sample:
        env = gem.make(sample.sample.get("env_id", ENV_ID))
        obs, _ = env.reset(seed=sample.sample.get("seed"))
        sample.sample["gem_env"] = env
        sample.state_text = _render(tokenizer, obs)
        sample.state_dict = initialize_state_dict(tokenizer, sample.state_text)
    env = sample.sample["gem_env"]
    while True:
        response = await async_request(router_url, "generate", json={
            "input_ids": sample.state_dict["states"],
            "sampling_params": {**params, "max_new_tokens": params["max_new_tokens"] - sample.previous_response_length,
                                "no_stop_trim": True},
            "return_logprob": True,
        })
        add_llm_response(sample, response)
        if sample.status == Sample.Status.ABORTED:
            return
        obs, reward, terminated, truncated, _ = env.step(sample.action_text)
        done = bool(terminated or truncated)
        add_env_response(tokenizer, sample, {"next_state": _render(tokenizer, obs), "reward": float(reward), "done": done})
        if done or sample.status == Sample.Status.DONE:
            env.close()
            sample.sample.pop("gem_env", None)
            return
