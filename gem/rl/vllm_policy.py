"""A vLLM engine as a GEM policy (GPU). Needs ``vllm``; raises DependencyNotInstalled without it.

Sampling uses vLLM; the trainer recomputes log-probs with its own model for the loss, so the
log-probs recorded here (vLLM's, for the sampled tokens) are for logging and importance checks.
Weights are synced from the trainer's model with :meth:`VLLMPolicy.load_weights`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gem.errors import DependencyNotInstalled
from gem.rl.collect import Generation


def vllm_available() -> bool:
    """True when vllm imports and a CUDA GPU is visible."""
    try:
        import torch
        import vllm  # noqa: F401
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


class VLLMPolicy:
    """Samples responses with ``vllm.LLM``; prompts rendered with the model's chat template."""

    def __init__(self, model: str, max_new_tokens: int = 256, temperature: float = 1.0,
                 apply_chat_template: bool = True, gpu_memory_utilization: float = 0.4,
                 seed: int = 0, **llm_kwargs: Any) -> None:
        try:
            from vllm import LLM, SamplingParams
        except ImportError as exc:
            raise DependencyNotInstalled("VLLMPolicy needs vllm and a GPU: pip install vllm.") from exc
        self.llm = LLM(model=model, gpu_memory_utilization=gpu_memory_utilization, seed=seed, **llm_kwargs)
        self.tokenizer = self.llm.get_tokenizer()
        self.params = SamplingParams(temperature=temperature, max_tokens=max_new_tokens, logprobs=0, seed=seed)
        self.apply_chat_template = apply_chat_template

    def _prompt(self, observation: str) -> list[int]:
        if self.apply_chat_template:
            return self.tokenizer.apply_chat_template(
                [{"role": "user", "content": observation}], tokenize=True, add_generation_prompt=True)
        return self.tokenizer(observation, add_special_tokens=False)["input_ids"]

    def generate(self, prompts: Sequence[str], seeds: Sequence[int] | None = None) -> list[Generation]:
        """One :class:`Generation` per prompt; ``seeds`` (one per prompt) gives each request its own
        sampling seed (vLLM's per-request ``SamplingParams.seed``)."""
        from vllm import TokensPrompt

        if seeds is not None and len(seeds) != len(prompts):
            raise ValueError(f"Got {len(seeds)} seeds for {len(prompts)} prompts.")
        ids = [self._prompt(p) for p in prompts]
        params: Any = self.params
        if seeds is not None:
            params = []
            for s in seeds:
                one = self.params.clone()
                one.seed = int(s)
                params.append(one)
        outs = self.llm.generate([TokensPrompt(prompt_token_ids=p) for p in ids], params, use_tqdm=False)
        gens = []
        for p, out in zip(ids, outs):
            comp = out.outputs[0]
            resp = list(comp.token_ids)
            lps: list[float] = []
            for tok, entry in zip(resp, comp.logprobs or []):
                lps.append(float(entry[tok].logprob) if tok in entry else 0.0)
            gens.append(Generation(list(p), resp, lps, comp.text))
        return gens

    def load_weights(self, model: Any, value_head: Any | None = None) -> None:
        """Copy a torch model's weights into the engine (same architecture)."""
        engine_model = self.llm.llm_engine.model_executor.driver_worker.model_runner.model
        engine_model.load_weights(model.state_dict().items())
