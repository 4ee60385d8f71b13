"""The trajectory schema and its writer: token ids only with their source, logprobs per id."""

from __future__ import annotations

import json

import pytest

import gem
from gem.agents import make_agent, run_episode
from gem.eval.records import episode_record
from gem.records import schema as schema_mod
from gem.records.schema import SCHEMA_FILE, record_problems
from gem.records.writer import RecordWriter, trajectory_record, turn_tokens

GAME = "game:GuessTheNumber-v0-easy"


def _episode(env_id: str = GAME, seed: int = 3):
    env = gem.make(env_id)
    try:
        return run_episode(env, make_agent("solver", env), seed=seed, record=True)
    finally:
        env.close()


def test_the_schema_file_is_draft_2020_12_and_names_the_fields() -> None:
    doc = json.loads(SCHEMA_FILE.read_text())
    assert doc["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert doc["properties"]["schema_version"] == {"const": schema_mod.SCHEMA_VERSION, "description": "The version of this schema."}
    for name in ("env_id", "env_version", "seed", "kwargs", "wrappers", "rewards", "success", "grading_status",
                 "usage", "seconds", "tool_calls", "turns"):
        assert name in doc["required"]
    turn = doc["$defs"]["turn"]["properties"]
    assert set(turn["token_source"]["enum"]) == set(schema_mod.TOKEN_SOURCES)


def test_a_policy_with_exact_ids_is_recorded_with_them() -> None:
    episode = _episode()
    n = len(episode.steps)
    calls = [
        {"token_source": "server", "prompt_token_ids": [1, 2, 3 + k], "completion_token_ids": [7, 8],
         "completion_logprobs": [-0.5, -0.25], "sampling": {"temperature": 1.0}}
        for k in range(n)
    ]
    record = episode_record(episode, 0, agent="test", model="m", wrappers="", env_kwargs={"max_turns": 9},
                            sampling={"temperature": 1.0}, calls=calls)
    assert record_problems(record) == []
    assert record["turns"][0]["token_source"] == "server"
    assert record["turns"][-1]["prompt_token_ids"] == [1, 2, 3 + n - 1]
    assert record["turns"][0]["completion_logprobs"] == [-0.5, -0.25]
    assert record["kwargs"] == {"max_turns": 9} and record["env_version"] == gem.env_version(GAME)
    assert record["rewards"] == episode.rewards and record["success"] is True


def test_ids_without_a_source_or_with_the_wrong_number_of_logprobs_are_refused() -> None:
    with pytest.raises(ValueError, match="token_source"):
        turn_tokens({"completion_token_ids": [1, 2]})
    with pytest.raises(ValueError, match="1 completion_logprobs for 2"):
        turn_tokens({"token_source": "server", "completion_token_ids": [1, 2], "completion_logprobs": [-1.0]})
    with pytest.raises(ValueError, match="tokenizer"):
        turn_tokens({"token_source": "retokenized", "completion_token_ids": [1]})
    assert turn_tokens(None)["token_source"] == "none"
    retok = turn_tokens({"token_source": "retokenized", "completion_token_ids": [5], "tokenizer": "gpt2"})
    assert retok["token_source"] == "retokenized" and retok["tokenizer"] == "gpt2"


@pytest.mark.parametrize("use_jsonschema", [False, True])
def test_the_checker_catches_what_the_schema_forbids(use_jsonschema, monkeypatch) -> None:
    if use_jsonschema:
        pytest.importorskip("jsonschema")
    else:
        import builtins

        real_import = builtins.__import__

        def no_jsonschema(name, *args, **kwargs):
            if name == "jsonschema":
                raise ImportError(name)
            return real_import(name, *args, **kwargs)

        monkeypatch.setattr(builtins, "__import__", no_jsonschema)
    record = json.loads(json.dumps(episode_record(_episode(), 0, agent="solver", wrappers="")))
    assert record_problems(record) == []
    cases = {
        "schema_version": 2,
        "env_version": "not-a-hash",
        "seed": "3",
        "success": 1,
        "rewards": [1.0],  # not one per turn
    }
    for name, value in cases.items():
        broken = dict(record, **{name: value})
        assert record_problems(broken), name
    turn_broken = json.loads(json.dumps(record))
    turn_broken["turns"][0]["token_source"] = "guessed"
    assert record_problems(turn_broken)
    turn_broken["turns"][0]["token_source"] = "none"
    turn_broken["turns"][0]["completion_logprobs"] = [-1.0]
    assert any("token_source 'none'" in p for p in record_problems(turn_broken))
    missing = dict(record)
    del missing["turns"]
    assert any("turns" in p for p in record_problems(missing))


def test_a_record_of_a_non_model_policy_has_no_sampling_and_no_ids() -> None:
    fields = trajectory_record(_episode(), agent="solver", env_version="0" * 12)
    assert fields["policy"] == {"agent": "solver", "model": None, "sampling": None}
    assert all(t["sampling"] is None and t["token_source"] == "none" for t in fields["turns"])
    assert fields["env_version"] == "0" * 12


def test_the_writer_appends_whole_lines_after_a_torn_one(tmp_path) -> None:
    path = tmp_path / "episodes.jsonl"
    path.write_text('{"env_id": "x", "tor')
    with RecordWriter(path) as writer:
        writer.write({"env_id": GAME, "n": 1})
    lines = path.read_text().splitlines()
    assert lines[0] == '{"env_id": "x", "tor' and json.loads(lines[1]) == {"env_id": GAME, "n": 1}
    with pytest.raises(ValueError, match="closed"):
        writer.write({})
    with pytest.raises(ValueError, match="mode"):
        RecordWriter(path, mode="r")
