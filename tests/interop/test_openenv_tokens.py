"""OpenEnv's capture of model calls carried into GEM's record (``token_source: "openenv"``): an
episode played with OpenEnv's own client against ``gem serve --protocol openenv``, joined with the
calls as OpenEnv's ``TrainingTrace`` holds them (validated by OpenEnv itself), re-plays; what OpenEnv
could not capture is said, never filled in."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("fastapi", reason="needs the server extra (pip install -e '.[server]' in the GEM checkout)")
pytest.importorskip("openenv.core.harness.training", reason="needs the openenv extra (pip install -e '.[openenv]' in the GEM checkout: openenv>=0.10)")

from openenv.core import GenericEnvClient  # noqa: E402
from openenv.core.harness.training import TrainingTrace  # noqa: E402

from gem.interop.tokens import openenv_calls, openenv_record  # noqa: E402
from gem.records.replay import play_run  # noqa: E402
from gem.records.schema import record_problems  # noqa: E402
from tests.interop.families import record  # noqa: E402

GAME = "game:GuessTheNumber-v0"


def _entry(n: int, prompt_len: int = 6, completion_len: int = 4, masked: bool = True) -> dict:
    prompt = [100 + n * 20 + k for k in range(prompt_len)]
    completion = [500 + n * 20 + k for k in range(completion_len)]
    return {
        "prompt_token_ids": prompt, "completion_token_ids": completion,
        "per_token_logps": [-0.5 - 0.1 * k for k in range(completion_len)],
        "loss_mask": [0] * prompt_len + [1 if masked else 0] * completion_len,
        "metadata": {"node_id": f"call-{n}"},
    }


def test_an_openenv_episode_with_openenvs_capture_is_a_record_with_its_ids(serve, tmp_path):
    url = serve([GAME]).url
    solved = record(GAME, 7)
    with GenericEnvClient(base_url=url).sync() as client:
        first = client.reset(seed=7)
        results = [(a, client.step({"text": a})) for a in solved.actions]
    episode = {
        "env_id": GAME, "seed": 7, "observation0": first.observation["text"],
        "steps": [{"action": a, "observation": r.observation["text"], "reward": r.reward,
                   "terminated": r.observation["metadata"]["terminated"],
                   "truncated": r.observation["metadata"]["truncated"]} for a, r in results],
    }
    capture = TrainingTrace.from_entries([_entry(n) for n in range(len(results))])  # OpenEnv validates it
    rec = openenv_record("openenv-7", episode, capture, model="policy")
    assert record_problems(rec) == []
    assert rec["policy"]["agent"] == "openenv" and rec["total_reward"] == 1.0 and rec["success"]
    for n, turn in enumerate(rec["turns"]):
        entry = capture.turns[n]
        assert turn["token_source"] == "openenv"
        assert turn["prompt_token_ids"] == entry.prompt_token_ids
        assert turn["completion_token_ids"] == entry.completion_token_ids
        assert turn["completion_logprobs"] == entry.per_token_logps
    (tmp_path / "episodes.jsonl").write_text(json.dumps(rec) + "\n")
    played, problems = play_run(tmp_path)
    assert problems == [] and [p.status for p in played] == ["identical"]
    with pytest.raises(ValueError, match="one call per step"):
        openenv_record("short", episode, capture.to_trace_entries()[:1])


def test_what_openenvs_capture_lacks_is_recorded_as_missing():
    as_strings = {"completion_tokens": ["token_id:11", "token_id:12"], "per_token_logps": [-0.1, -0.2]}
    text_only = {"completion_tokens": ["Hel", "lo"], "per_token_logps": [-0.1, -0.2]}
    nothing = {"response": {"choices": [{"message": {"content": "hi"}}]}}
    rejected = _entry(0, masked=False)  # OpenEnv rejected its logprobs: the mask is 0, logprobs zero-filled
    calls = openenv_calls([as_strings, text_only, nothing, rejected])
    assert calls[0]["token_source"] == "openenv" and calls[0]["completion_token_ids"] == [11, 12]
    assert calls[0]["completion_logprobs"] == [-0.1, -0.2] and calls[0]["prompt_token_ids"] is None
    assert calls[1]["token_source"] == "none" and "token strings but no ids" in calls[1]["token_note"]
    assert calls[2] == {"reply": "hi", "token_source": "none", "token_note": "the OpenEnv capture has no token ids for this call"}
    assert calls[3]["token_source"] == "openenv" and "completion_logprobs" not in calls[3]
    assert "rejected" in calls[3]["token_note"]
    with pytest.raises(ValueError, match="TrainingTrace"):
        openenv_calls("not a capture")
