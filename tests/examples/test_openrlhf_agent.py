"""GEM's OpenRLHF agent file run through OpenRLHF's own ``MultiTurnAgentExecutor``.

OpenRLHF loads ``--agent_func_path`` as a module, checks its ``AgentExecutor`` subclasses
``AgentExecutorBase`` and builds it with no arguments; each prompt then goes through
``executor.execute(prompt, label, sampling_params, max_length, hf_tokenizer, llm_engine)``, where the
engine is a vLLM ``AsyncLLMEngine``. Here the engine is local and in process: the random tiny GPT-2
(``gem.rl.hf``'s ``tiny`` model) answering with vLLM's output shape (token ids, text, finish reason,
per-token log-probs), or an engine that writes chosen answers. The executor, the turn loop, the token
bookkeeping (``action_ranges``) and the reward sums are OpenRLHF's.

Needs the ``openrlhf`` package. OpenRLHF 0.11.2 pins flash-attn and deepspeed, which do not build
without CUDA; CI installs it with ``--no-deps`` plus what ``openrlhf.utils.agent`` imports (see
examples/openrlhf/README.md).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import math
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

agent_module = pytest.importorskip("openrlhf.utils.agent", reason="needs openrlhf (examples/openrlhf/README.md)")
torch = pytest.importorskip("torch")

import gem  # noqa: E402

ADAPTER = Path(__file__).resolve().parents[2] / "examples/openrlhf/gem_agent_func.py"
ENV_ID = "game:GuessTheNumber-v0-easy"


@dataclass
class SamplingParams:
    """The fields of ``vllm.SamplingParams`` that OpenRLHF's executor reads and sets."""

    max_tokens: int = 16
    logprobs: int | None = 0


def _load_executor() -> Any:
    """As OpenRLHF's ``_load_agent_executor`` does (``openrlhf/trainer/ray/vllm_engine.py``)."""
    spec = importlib.util.spec_from_file_location("agent_module", ADAPTER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert issubclass(module.AgentExecutor, agent_module.AgentExecutorBase)
    return module.AgentExecutor()


@pytest.fixture(scope="module")
def tiny():
    from gem.rl.hf import load_model_and_tokenizer

    model, tokenizer = load_model_and_tokenizer("tiny", seed=0)
    model.eval()
    return model, tokenizer


def _request_output(tokenizer: Any, tokens: list[int], logps: list[float], finish: str) -> Any:
    logprobs = [{t: SimpleNamespace(logprob=lp)} for t, lp in zip(tokens, logps)]
    return SimpleNamespace(outputs=[SimpleNamespace(token_ids=tokens, text=tokenizer.decode(tokens, skip_special_tokens=True),
                                                    finish_reason=finish, logprobs=logprobs)])


class TinyEngine:
    """``generate(prompt_token_ids, sampling_params, multi_modal_data=None)`` with the tiny model, greedy."""

    def __init__(self, model: Any, tokenizer: Any, cap: int = 10) -> None:
        self.model, self.tokenizer, self.cap = model, tokenizer, cap
        self.calls: list[tuple[list[int], list[int]]] = []

    async def generate(self, prompt_token_ids: list[int], sampling_params: Any, multi_modal_data: Any = None) -> Any:
        n = min(self.cap, sampling_params.max_tokens)
        with torch.no_grad():
            out = self.model.generate(torch.tensor([prompt_token_ids]), max_new_tokens=n, do_sample=False,
                                      attention_mask=torch.ones(1, len(prompt_token_ids), dtype=torch.long),
                                      output_scores=True, return_dict_in_generate=True,
                                      pad_token_id=self.tokenizer.pad_token_id)
        tokens = out.sequences[0, len(prompt_token_ids):].tolist()
        logps = [torch.log_softmax(s[0].float(), -1)[t].item() for s, t in zip(out.scores, tokens)]
        self.calls.append((list(prompt_token_ids), tokens))
        return _request_output(self.tokenizer, tokens, logps, "stop" if tokens[-1] == self.tokenizer.eos_token_id else "length")


class ScriptedEngine:
    def __init__(self, tokenizer: Any, answers: list[str]) -> None:
        self.tokenizer, self.answers = tokenizer, list(answers)

    async def generate(self, prompt_token_ids: list[int], sampling_params: Any, multi_modal_data: Any = None) -> Any:
        tokens = self.tokenizer.encode(self.answers.pop(0), add_special_tokens=False) + [self.tokenizer.eos_token_id]
        return _request_output(self.tokenizer, tokens, [-0.5] * len(tokens), "stop")


def _prompt(tokenizer: Any, seed: int) -> tuple[str, str]:
    env = gem.make(ENV_ID)
    obs, _ = env.reset(seed=seed)
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": obs}], add_generation_prompt=True, tokenize=False)
    return prompt, json.dumps({"env_id": ENV_ID, "seed": seed})


def test_tiny_model_episode_through_openrlhfs_executor(tiny):
    model, tokenizer = tiny
    prompt, label = _prompt(tokenizer, 5)
    engine = TinyEngine(model, tokenizer)
    result = asyncio.run(_load_executor().execute(prompt, label, SamplingParams(), 512, tokenizer, engine))

    prompt_ids = tokenizer(text=prompt, add_special_tokens=False)["input_ids"]
    ((sent, generated),) = engine.calls  # a random model writes no \boxed{}: one turn, then the episode ends
    assert sent == prompt_ids
    assert result["action_ranges"] == [(len(prompt_ids), len(prompt_ids) + len(generated))]
    assert result["observation_tokens"] == prompt_ids + generated
    assert result["reward"] == pytest.approx(-0.1) and float(result["scores"]) == pytest.approx(-0.1)
    logps = result["rollout_log_probs"]
    assert len(logps) == len(result["observation_tokens"]) and logps[: len(prompt_ids)] == [0.0] * len(prompt_ids)
    assert all(math.isfinite(lp) and lp <= 0 for lp in logps[len(prompt_ids):])
    assert float(result["extra_logs"]["success"]) == 0.0 and int(result["extra_logs"]["turns"]) == 1


def test_solved_episode_earns_the_reward_and_marks_only_model_tokens(tiny):
    _, tokenizer = tiny
    prompt, label = _prompt(tokenizer, 8)
    env = gem.make(ENV_ID)
    env.reset(seed=8)
    target, wrong = env.target, env.target % 10 + 1
    engine = ScriptedEngine(tokenizer, [f"\\boxed{{{wrong}}}", f"\\boxed{{{target}}}"])
    result = asyncio.run(_load_executor().execute(prompt, label, SamplingParams(), 512, tokenizer, engine))

    assert result["reward"] == 1.0 and float(result["extra_logs"]["success"]) == 1.0
    tokens, ranges = result["observation_tokens"], result["action_ranges"]
    assert len(ranges) == 2
    actions = [tokenizer.decode(tokens[a:b], skip_special_tokens=True) for a, b in ranges]
    assert actions == [f"\\boxed{{{wrong}}}", f"\\boxed{{{target}}}"]
    feedback = tokenizer.decode(tokens[ranges[0][1]:ranges[1][0]])  # the env's turn, between the two actions
    assert f"you guessed {wrong}" in feedback and "<|im_start|>user" in feedback
    assert ranges[1][1] == len(tokens)  # the episode ended on the winning turn: no feedback after it


def test_executor_stops_when_the_length_budget_is_spent(tiny):
    _, tokenizer = tiny
    prompt, label = _prompt(tokenizer, 2)
    prompt_len = len(tokenizer(text=prompt, add_special_tokens=False)["input_ids"])
    env = gem.make(ENV_ID)
    env.reset(seed=2)
    wrong = f"\\boxed{{{env.target % 10 + 1}}}"
    engine = ScriptedEngine(tokenizer, [wrong] * 4)
    result = asyncio.run(_load_executor().execute(prompt, label, SamplingParams(), prompt_len + 8, tokenizer, engine))
    # a wrong guess does not end the episode, but the env's reply used the rest of max_length
    assert len(result["action_ranges"]) == 1 and len(engine.answers) == 3 and result["reward"] == 0.0
    assert len(result["observation_tokens"]) > prompt_len + 8
