"""Oat actor that collects GEM episodes and trains with ReBN returns.

Oat's extension point is the actor/learner pair: subclass ``oat.algorithms.ppo.PPOActor`` and
override ``step`` (the actor's experience collection) to play episodes in a GEM vector env with
oat's vLLM sampler (``self.generate``), then hand back ``oat.types.TransitionData`` items (one per
turn) whose reward is the turn's ReBN-normalized discounted return (:mod:`gem.rl.estimators`).
Launch with oat's ``get_program`` and the ``PPOLearner``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import vllm
from oat.algorithms.ppo import PPOActor, PPOArgs, PPOLearner
from oat.args import default_args_validation, get_default_args
from oat.interface import get_program, lp
from oat.types import TransitionData

import gem
from gem.rl.collect import Generation, assign_advantages, collect_episodes
from gem.wrappers.wrapper_factory import get_wrapper_fns


@dataclass
class Args(PPOArgs):
    env_id: str = "game:GuessTheNumber-v0"
    num_env: int = 16
    wrappers: str = ""
    gamma: float = 0.9
    algorithm: str = "rebn"  # any of gem.rl.ALGORITHMS but ppo (oat's learner has its own critic)


class _OatSampler:
    """gem.rl policy protocol over oat's vLLM generate."""

    def __init__(self, actor: GemActor) -> None:
        self.actor = actor

    def generate(self, prompts: list[str]) -> list[Generation]:
        tok = self.actor.tokenizer
        texts = [tok.apply_chat_template([{"role": "user", "content": p}], tokenize=False, add_generation_prompt=True)
                 for p in prompts]
        outs = self.actor.generate(texts, self.actor.sampling_params)
        gens = []
        for out in outs:
            comp = out.outputs[0]
            ids = list(comp.token_ids)
            lps = [entry[t].logprob for t, entry in zip(ids, comp.logprobs or [])]
            gens.append(Generation(list(out.prompt_token_ids), ids, lps, comp.text))
        return gens


class GemActor(PPOActor):
    def init(self, actor_id: int, save_path: str) -> None:
        super().init(actor_id, save_path)
        args: Args = self.args
        self.sampling_params = vllm.SamplingParams(temperature=args.temperature, top_p=args.top_p,
                                                   max_tokens=args.generate_max_length, n=1, logprobs=True)
        self.vec = gem.make_vec(args.env_id, num_envs=args.num_env,
                                wrappers=get_wrapper_fns(args.wrappers, tokenizer=self.tokenizer),
                                seed=args.seed + 1000 * actor_id)
        self.sampler = _OatSampler(self)

    def step(self, prompts: Any = None, formatted_prompts: Any = None, references: Any = None) -> Any:
        del prompts, formatted_prompts, references  # episodes come from the envs
        args: Args = self.args
        episodes = collect_episodes(self.vec, self.sampler)
        assign_advantages(episodes, args.algorithm, gamma=args.gamma)
        data = []
        for ep in episodes:
            for t in ep.transitions:
                data.append(TransitionData(
                    prompt=t.observation, response=t.action, rewards=[t.advantage],
                    prompt_ids=t.prompt_ids, response_ids=t.response_ids, response_logprobs=t.logprobs,
                    loss_mask=True, info={"actor/episode_return": ep.total_reward},
                ))
        return self.ipc_client.serialize_ipc(data)


def main() -> None:
    args = default_args_validation(get_default_args(Args))
    program, local_resources = get_program(args, learner_cls=PPOLearner, actor_cls=GemActor)
    lp.launch(program, launch_type="local_mp", local_resources=local_resources, terminal="current_terminal")


if __name__ == "__main__":
    main()
