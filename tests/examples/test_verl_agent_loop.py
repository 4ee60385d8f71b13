"""GEM's verl agent loop run through verl's own ``AgentLoopWorker``.

verl's trainer hands each rollout batch to ``AgentLoopWorker.generate_sequences``: it looks the
row's ``agent_name`` up in the registry that ``agent_loop_config_path`` fills, builds the loop with
hydra, runs it, pads and masks its output and writes ``rm_scores``. Here that worker is verl's own,
built from verl's ``ppo_trainer`` config with ``examples/verl/agent_loop.yaml``; the only thing in
place of verl's is the LLM server client (on a GPU machine, vLLM or SGLang behind Ray): a local
client with the same ``generate(request_id, *, prompt_ids, sampling_params)`` that runs the random
tiny GPT-2 (``gem.rl.hf``'s ``tiny`` model) in process, or writes chosen answers. The model and
its tokenizer are saved to a directory that verl's ``HFModelConfig`` loads, as it would a real one.

Needs the ``verl`` package (CI installs it in a virtual environment of its own).
"""

from __future__ import annotations

import asyncio
import math
import os
from pathlib import Path
from typing import Any

import pytest

verl = pytest.importorskip("verl", reason="needs verl (examples/verl/README.md)")
torch = pytest.importorskip("torch")

import numpy as np  # noqa: E402
from verl.protocol import DataProto  # noqa: E402
from verl.workers.rollout.replica import TokenOutput  # noqa: E402

import gem  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
ENV_ID = "game:GuessTheNumber-v0-easy"
PROMPT_LEN, RESPONSE_LEN = 512, 256


class TinyServer:
    """verl's LLM client interface, answered by the tiny model in process (greedy, with log-probs)."""

    def __init__(self, model: Any, tokenizer: Any, cap: int = 8) -> None:
        self.model, self.tokenizer, self.cap = model, tokenizer, cap
        self.calls: list[tuple[str, list[int], list[int]]] = []

    async def generate(self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any],
                       **kwargs: Any) -> TokenOutput:
        with torch.no_grad():
            out = self.model.generate(torch.tensor([prompt_ids]), max_new_tokens=self.cap, do_sample=False,
                                      attention_mask=torch.ones(1, len(prompt_ids), dtype=torch.long),
                                      output_scores=True, return_dict_in_generate=True,
                                      pad_token_id=self.tokenizer.pad_token_id)
        tokens = out.sequences[0, len(prompt_ids):].tolist()
        logps = [torch.log_softmax(s[0].float(), -1)[t].item() for s, t in zip(out.scores, tokens)]
        self.calls.append((request_id, list(prompt_ids), tokens))
        return TokenOutput(token_ids=tokens, log_probs=logps, stop_reason="completed")


class ScriptedServer:
    def __init__(self, tokenizer: Any, answers: list[str]) -> None:
        self.tokenizer, self.answers = tokenizer, list(answers)
        self.request_ids: list[str] = []

    async def generate(self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any],
                       **kwargs: Any) -> TokenOutput:
        self.request_ids.append(request_id)
        tokens = self.tokenizer.encode(self.answers.pop(0), add_special_tokens=False) + [self.tokenizer.eos_token_id]
        return TokenOutput(token_ids=tokens, log_probs=[-0.25] * len(tokens), stop_reason="completed")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from gem.rl.hf import load_model_and_tokenizer

    model, tokenizer = load_model_and_tokenizer("tiny", seed=0)
    model.eval()
    path = tmp_path_factory.mktemp("tiny-model")
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return model, tokenizer, str(path)


@pytest.fixture(scope="module")
def config(tiny):
    from hydra import compose, initialize_config_dir

    config_dir = os.path.join(os.path.dirname(verl.__file__), "trainer", "config")
    with initialize_config_dir(config_dir=config_dir, version_base=None):
        cfg = compose(config_name="ppo_trainer", overrides=[
            f"actor_rollout_ref.model.path={tiny[2]}",
            "actor_rollout_ref.rollout.name=vllm",  # the engine the server client would front; unused here
            f"actor_rollout_ref.rollout.prompt_length={PROMPT_LEN}",
            f"actor_rollout_ref.rollout.response_length={RESPONSE_LEN}",
            "actor_rollout_ref.rollout.calculate_log_probs=True",
            "actor_rollout_ref.rollout.multi_turn.max_assistant_turns=4",
            f"actor_rollout_ref.rollout.agent.agent_loop_config_path={ROOT / 'examples/verl/agent_loop.yaml'}",
        ])
    return cfg


@pytest.fixture
def worker_for(config, monkeypatch):
    """verl's ``AgentLoopWorker`` with a given LLM client; the agent-loop yaml names ``examples.verl...``."""
    monkeypatch.syspath_prepend(str(ROOT))
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker

    return lambda client: AgentLoopWorker(config, llm_client=client)


def _batch(tokenizer: Any, seeds: list[int]) -> DataProto:
    rows = []
    for seed in seeds:
        env = gem.make(ENV_ID)
        obs, _ = env.reset(seed=seed)
        rows.append([{"role": "user", "content": obs}])
    return DataProto.from_dict(non_tensors={
        "agent_name": np.array(["gem_agent"] * len(seeds), dtype=object),
        "raw_prompt": np.array(rows + [None], dtype=object)[:-1],
        "extra_info": np.array([{"env_id": ENV_ID, "seed": s} for s in seeds], dtype=object),
        "index": np.arange(len(seeds)),
    })


def test_tiny_model_episodes_through_verls_agent_loop_worker(tiny, worker_for):
    model, tokenizer, _ = tiny
    server = TinyServer(model, tokenizer)
    out = asyncio.run(worker_for(server).generate_sequences(_batch(tokenizer, [3, 4])))

    assert out.batch["responses"].shape == (2, RESPONSE_LEN) and out.batch["prompts"].shape == (2, PROMPT_LEN)
    assert len(server.calls) == 2  # a random model writes no \boxed{}: one turn per episode, then it ends
    for row, (_, prompt_ids, tokens) in enumerate(server.calls):
        prompt = out.batch["prompts"][row]
        assert prompt[-len(prompt_ids):].tolist() == prompt_ids  # left-padded prompt
        assert out.batch["responses"][row, :len(tokens)].tolist() == tokens
        assert out.batch["response_mask"][row].tolist() == [1] * len(tokens) + [0] * (RESPONSE_LEN - len(tokens))
        # GEM's format-error reward, on the last response token
        scores = out.batch["rm_scores"][row]
        assert scores[len(tokens) - 1].item() == pytest.approx(-0.1) and scores.abs().sum().item() == pytest.approx(0.1)
        logps = out.batch["rollout_log_probs"][row, :len(tokens)].tolist()
        assert all(math.isfinite(lp) and lp <= 0 for lp in logps)
    first_obs = gem.make(ENV_ID)
    obs, _ = first_obs.reset(seed=3)
    assert obs in tokenizer.decode(server.calls[0][1])
    assert out.non_tensor_batch["__num_turns__"].tolist() == [2, 2]


def test_solved_episode_masks_the_envs_tokens_and_scores_the_return(tiny, worker_for):
    _, tokenizer, _ = tiny
    env = gem.make(ENV_ID)
    env.reset(seed=6)
    target, wrong = env.target, env.target % 10 + 1
    server = ScriptedServer(tokenizer, [f"\\boxed{{{wrong}}}", f"\\boxed{{{target}}}"])
    out = asyncio.run(worker_for(server).generate_sequences(_batch(tokenizer, [6])))

    assert len(set(server.request_ids)) == 1  # one sticky session per episode
    responses = out.batch["responses"][0].tolist()
    mask = out.batch["response_mask"][0].tolist()
    n = int(out.batch["attention_mask"][0, PROMPT_LEN:].sum())
    model_tokens = [t for t, m in zip(responses[:n], mask[:n]) if m == 1]
    env_tokens = [t for t, m in zip(responses[:n], mask[:n]) if m == 0]
    assert tokenizer.decode(model_tokens, skip_special_tokens=True) == f"\\boxed{{{wrong}}}\\boxed{{{target}}}"
    assert f"you guessed {wrong}" in tokenizer.decode(env_tokens)  # the env's reply is in, masked out
    assert mask[n - 1] == 1 and sum(mask[n:]) == 0  # ends on the model's winning turn; padding masked
    scores = out.batch["rm_scores"][0]
    assert scores[n - 1].item() == 1.0 and scores.sum().item() == 1.0  # the episode return (0 + 1)
    # verl's rollout log-probs: the server's on model tokens, 0 on the env's
    logps = out.batch["rollout_log_probs"][0, :n].tolist()
    assert [lp for lp, m in zip(logps, mask[:n]) if m == 1] == [-0.25] * len(model_tokens)
    assert all(lp == 0.0 for lp, m in zip(logps, mask[:n]) if m == 0)
    assert out.non_tensor_batch["__num_turns__"].tolist() == [4]
