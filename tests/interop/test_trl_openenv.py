"""examples/interop/trl_openenv.py: TRL's trainer on an env reached through OpenEnv's protocol."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="needs the server extra")

import gem  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "interop" / "trl_openenv.py"
ENV_ID = "game:GuessTheNumber-v0-easy"


def _load():
    spec = importlib.util.spec_from_file_location("trl_openenv", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_reward_function_pays_through_openenv_what_gem_pays():
    pytest.importorskip("datasets")
    example = _load()
    trl_example = example._trl_example()
    with example.openenv_server(ENV_ID) as url:
        remote_id = f"openenv:{url}"
        ds = trl_example.build_dataset(remote_id, 3, seed=5)
        assert ds["prompt"][0][0]["content"] == gem.make(ENV_ID).reset(seed=5)[0]
        completions = [[{"role": "assistant", "content": c}] for c in ("\\boxed{3}", "no answer", "\\boxed{8}")]
        remote = trl_example.gem_reward(ds["prompt"], completions, env_id=ds["env_id"], seed=ds["seed"])
    local = trl_example.gem_reward(ds["prompt"], completions, env_id=[ENV_ID] * 3, seed=ds["seed"])
    assert remote == local and -0.1 in remote


@pytest.mark.slow  # about a minute on 2 cores: a tiny random GPT-2 and two GRPO steps
def test_grpo_trains_two_steps_through_openenv_on_cpu(tmp_path):
    pytest.importorskip("trl")
    pytest.importorskip("torch")
    from unittest import mock

    import trl

    seen = {}
    original = trl.GRPOTrainer.train

    def train(self, *a, **k):
        out = original(self, *a, **k)
        seen["history"] = list(self.state.log_history)
        return out

    with mock.patch.object(trl.GRPOTrainer, "train", train):
        assert _load().main(["--steps", "2", "--cpu", "--max-completion-length", "4", "--dataset-size", "4",
                             "--output-dir", str(tmp_path)]) == 0
    rewards = [h["reward"] for h in seen["history"] if "reward" in h]
    assert len(rewards) == 2 and all(r == pytest.approx(-0.1) for r in rewards)  # no \boxed{}: format error
