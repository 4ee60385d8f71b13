"""GEM's Tinker adapter run through tinker-cookbook's own rollout and data-processing code.

The cookbook's RL loop asks a ``TokenCompleter`` for each turn's tokens (on Tinker's service, a
``TinkerTokenCompleter``). Here the completer is local and in process: a random tiny GPT-2
(``gem.rl.hf``'s ``tiny`` model) that samples the tokens with their log-probs, or a completer that
writes a chosen answer through the same tokenizer. Everything else is the cookbook's:
``do_group_rollout`` plays the group built by ``GemEnvGroupBuilder``, and ``trajectory_to_data``
turns a trajectory into the ``tinker.Datum`` the trainer would send (the env's tokens masked out).
Needs the ``tinker-cookbook`` package (CI installs it in a virtual environment of its own).
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest

tinker_cookbook = pytest.importorskip("tinker_cookbook", reason="needs tinker-cookbook (examples/tinker/README.md)")
torch = pytest.importorskip("torch")

import tinker  # noqa: E402
from tinker_cookbook import renderers  # noqa: E402
from tinker_cookbook.completers import TokenCompleter, TokensWithLogprobs  # noqa: E402
from tinker_cookbook.rl.data_processing import trajectory_to_data  # noqa: E402
from tinker_cookbook.rl.rollouts import do_group_rollout  # noqa: E402

import gem  # noqa: E402
from tests.examples.test_examples import _load  # noqa: E402

ENV_ID = "game:GuessTheNumber-v0-easy"


@pytest.fixture(scope="module")
def model_and_renderer():
    from gem.rl.hf import load_model_and_tokenizer

    model, tokenizer = load_model_and_tokenizer("tiny", seed=0)
    model.eval()
    return model, tokenizer, renderers.get_renderer("role_colon", tokenizer)


def _cut_at_stop(tokenizer: Any, tokens: list[int], stop: list) -> tuple[list[int], str]:
    """The tokens up to and including the one that completes a stop sequence (string or token id)."""
    for i in range(len(tokens)):
        if tokens[i] in [s for s in stop if isinstance(s, int)]:
            return tokens[: i + 1], "stop"
        text = tokenizer.decode(tokens[: i + 1])
        if any(isinstance(s, str) and s in text for s in stop):
            return tokens[: i + 1], "stop"
    return tokens, "length"


class TinyModelCompleter(TokenCompleter):
    """A local ``TokenCompleter``: greedy decoding with the tiny model, log-probs from its scores."""

    def __init__(self, model: Any, tokenizer: Any, max_tokens: int = 12) -> None:
        self.model, self.tokenizer, self.max_tokens = model, tokenizer, max_tokens
        self.prompts: list[list[int]] = []
        self.outputs: list[TokensWithLogprobs] = []

    async def __call__(self, model_input: tinker.ModelInput, stop: list, *, max_tokens: int | None = None
                       ) -> TokensWithLogprobs:
        prompt = model_input.to_ints()
        self.prompts.append(prompt)
        n = min(self.max_tokens, max_tokens or self.max_tokens)
        with torch.no_grad():
            out = self.model.generate(torch.tensor([prompt]), attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
                                      max_new_tokens=n, do_sample=False, output_scores=True,
                                      return_dict_in_generate=True, pad_token_id=self.tokenizer.pad_token_id)
        tokens = out.sequences[0, len(prompt):].tolist()
        logps = [torch.log_softmax(score[0].float(), -1)[t].item() for score, t in zip(out.scores, tokens)]
        tokens, reason = _cut_at_stop(self.tokenizer, tokens, stop)
        result = TokensWithLogprobs(tokens=tokens, maybe_logprobs=logps[: len(tokens)], stop_reason=reason)
        self.outputs.append(result)
        return result


class ScriptedCompleter(TokenCompleter):
    """Writes the next of ``answers`` (through the renderer's tokenizer, ended by the stop sequence)."""

    def __init__(self, tokenizer: Any, answers: list[str]) -> None:
        self.tokenizer, self.answers = tokenizer, list(answers)

    async def __call__(self, model_input: tinker.ModelInput, stop: list, *, max_tokens: int | None = None
                       ) -> TokensWithLogprobs:
        suffix = next(s for s in stop if isinstance(s, str))
        tokens = self.tokenizer.encode(self.answers.pop(0) + suffix, add_special_tokens=False)
        return TokensWithLogprobs(tokens=tokens, maybe_logprobs=[-1.0] * len(tokens), stop_reason="stop")


def test_tiny_model_plays_a_group_through_do_group_rollout(model_and_renderer):
    model, tokenizer, renderer = model_and_renderer
    tinker_example = _load("tinker/gem_tinker.py")
    builder = tinker_example.GemEnvGroupBuilder(ENV_ID, seed=4, group_size=2, renderer=renderer)
    policy = TinyModelCompleter(model, tokenizer)
    group = asyncio.run(do_group_rollout(builder, policy))

    env = gem.make(ENV_ID)
    first_obs, _ = env.reset(seed=4)
    expected_prompt = renderer.build_generation_prompt([{"role": "user", "content": first_obs}]).to_ints()
    assert len(group.trajectories_G) == 2 and len(policy.outputs) == 2
    assert policy.prompts == [expected_prompt, expected_prompt]  # both envs replay task seed 4
    for traj, sampled in zip(group.trajectories_G, policy.outputs):
        (transition,) = traj.transitions  # the random model writes no \boxed{}: the episode ends
        assert transition.ob.to_ints() == expected_prompt
        assert transition.ac.tokens == sampled.tokens and transition.ac.tokens
        assert len(transition.ac.logprobs) == len(transition.ac.tokens)
        assert all(math.isfinite(lp) and lp <= 0 for lp in transition.ac.logprobs)
        assert transition.reward == pytest.approx(-0.1) and transition.episode_done  # GEM's format-error reward
        assert transition.metrics == {"success": 0.0}
    assert group.get_total_rewards() == pytest.approx([-0.1, -0.1])
    assert builder.logging_tags() == ["gem", "game"]


def test_a_solved_episode_earns_its_reward_and_trains_only_on_action_tokens(model_and_renderer):
    _, tokenizer, renderer = model_and_renderer
    tinker_example = _load("tinker/gem_tinker.py")
    env = gem.make(ENV_ID)
    env.reset(seed=9)
    target, wrong = env.target, env.target % 10 + 1
    builder = tinker_example.GemEnvGroupBuilder(ENV_ID, seed=9, group_size=1, renderer=renderer)
    policy = ScriptedCompleter(tokenizer, [f"My guess is \\boxed{{{wrong}}}", f"\\boxed{{{target}}}"])
    group = asyncio.run(do_group_rollout(builder, policy))

    (traj,) = group.trajectories_G
    assert [t.reward for t in traj.transitions] == [0.0, 1.0]
    assert [t.episode_done for t in traj.transitions] == [False, True]
    assert traj.transitions[-1].metrics == {"success": 1.0}
    assert group.get_total_rewards() == [1.0]
    # the second observation carries the env's feedback on the first guess
    second_prompt = tokenizer.decode(traj.transitions[1].ob.to_ints())
    assert f"you guessed {wrong}" in second_prompt and f"My guess is \\boxed{{{wrong}}}" in second_prompt

    data = trajectory_to_data(traj, traj_advantage=1.0)
    actions = [tok for t in traj.transitions for tok in t.ac.tokens]
    trained = []
    for datum in data:
        targets = datum.loss_fn_inputs["target_tokens"].to_torch().tolist()
        mask = datum.loss_fn_inputs["mask"].to_torch().tolist()
        advantages = datum.loss_fn_inputs["advantages"].to_torch().tolist()
        assert len(targets) == len(mask) == datum.model_input.length
        trained += [tok for tok, m in zip(targets, mask) if m == 1.0]
        assert all(a == (1.0 if m else 0.0) for a, m in zip(advantages, mask))
    assert trained == actions  # exactly the model's tokens train; the env's (prompt, feedback) are masked
    assert sum(len(t.ob.to_ints()) for t in traj.transitions) > len(actions)


def test_dataset_batches_replay_consecutive_seeds(model_and_renderer):
    _, _, renderer = model_and_renderer
    tinker_example = _load("tinker/gem_tinker.py")
    dataset = tinker_example.GemRLDataset(ENV_ID, batch_size=3, group_size=2, renderer=renderer, n_batches=5, seed=10)
    assert len(dataset) == 5
    batch = dataset.get_batch(2)
    assert [b.seed for b in batch] == [16, 17, 18] and all(b.group_size == 2 for b in batch)
    envs = asyncio.run(batch[0].make_envs())
    assert len(envs) == 2 and all(isinstance(e, tinker_cookbook.rl.types.Env) for e in envs)
