"""gem.rl's collection writes GEM's trajectory records (sync and async), ``gem replay`` and ``gem
regrade`` read them, and the trainer's update trains on exactly the recorded token ids."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

import gem
from gem.cli import main as gem_main
from gem.records.schema import record_problems
from gem.rl.async_collect import AsyncCollector, requests_for
from gem.rl.collect import EnvPool, Generation, Trajectory, collect_episodes, sampling_seed
from gem.rl.records import TrajectoryRecorder, token_drift, trajectory_to_record

ENV_ID = "game:GuessTheNumber-v0-easy"


class Counting:
    """Guesses 1, 2, 3, ... (one guess per turn of every episode); ids are the text's code points."""

    def __init__(self) -> None:
        self.turns: dict[str, int] = {}

    def generate(self, prompts, seeds=None):
        gens = []
        for p in prompts:
            # the prompt is the last observation, "At turn k, you guessed ...": guess k + 1
            seen = re.search(r"At turn (\d+)", p)
            guess = int(seen.group(1)) + 1 if seen else 1
            text = f"\\boxed{{{guess}}}"
            gens.append(Generation([7, 8, 9], [ord(c) for c in text], [-0.25] * len(text), text))
        return gens


class ByCall:
    """Guesses the number of ``generate`` calls so far: turn k of a lock-step batch guesses k."""

    def __init__(self) -> None:
        self.calls = 0

    def generate(self, prompts, seeds=None):
        self.calls += 1
        text = f"\\boxed{{{self.calls}}}"
        return [Generation([7, 8, 9], [ord(c) for c in text], [-0.25] * len(text), text) for _ in prompts]


def _records(directory: Path) -> list[dict]:
    return [json.loads(line) for line in (directory / "episodes.jsonl").read_text().splitlines()]


def _check_replay_and_regrade(directory: Path, capsys) -> None:
    assert gem_main(["replay", str(directory)]) == 0
    out = capsys.readouterr().out
    assert "0 different, 0 skipped" in out
    assert gem_main(["regrade", str(directory)]) == 0
    assert "0 verdicts changed, 0 skipped" in capsys.readouterr().out


def test_sync_collection_records_multi_turn_episodes_that_replay(tmp_path, capsys):
    vec = gem.make_vec(ENV_ID, num_envs=3, seed=7)
    try:
        episodes = collect_episodes(vec, ByCall(), seeds=[3, 3, 11], max_turns=10)
    finally:
        vec.close()
    with TrajectoryRecorder(tmp_path, model="counting", sampling={"temperature": 0.5, "top_p": None}) as rec:
        written = rec.write(1, episodes, update_skipped=False)
    records = _records(tmp_path)
    assert records == json.loads(json.dumps(written))
    assert [r["key"] for r in records] == [f"{ENV_ID}#0", f"{ENV_ID}#1", f"{ENV_ID}#2"]
    for i, (record, ep) in enumerate(zip(records, episodes)):
        assert record_problems(record) == []
        assert record["kwargs"] == {"seed": 7 + i}  # what make_vec made env i with
        assert record["seed"] == [3, 3, 11][i] and record["step"] == 1 and record["update_skipped"] is False
        assert record["policy"] == {"agent": "gem.rl", "model": "counting", "sampling": {"temperature": 0.5}}
        assert record["rewards"] == ep.rewards and record["success"] == ep.success
        assert record["usage"] == {"prompt_tokens": 3 * len(ep), "completion_tokens": sum(len(t.response_ids)
                                                                                          for t in ep.transitions)}
        for turn, t in zip(record["turns"], ep.transitions):
            assert turn["token_source"] == "sampler"
            assert turn["prompt_token_ids"] == t.prompt_ids and turn["completion_token_ids"] == t.response_ids
            assert turn["completion_logprobs"] == t.logprobs
            assert turn["action"] == t.action and turn["sampling"] == {"temperature": 0.5}
            assert "token_drift" not in turn  # no tokenizer: not measured
    # seed 3's target is 4: four turns, the last one the env's own final words, not the next episode's
    assert len(records[0]["turns"]) == 4 and records[0]["success"] is True
    assert records[0]["turns"][-1]["observation"].startswith("Congratulations")
    assert records[0]["observation0"].startswith("You are playing Guess The Number")
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["overall"]["episodes"] == 3
    assert summary["overall"]["token_sources"] == {"sampler": sum(len(r["turns"]) for r in records)}
    assert summary["overall"]["token_drift"] is None
    _check_replay_and_regrade(tmp_path, capsys)


def test_async_collection_records_pool_kwargs_and_turn_seeds(tmp_path, capsys):
    pool = EnvPool(seed=40)
    groups = requests_for([ENV_ID] * 4, [3, 3, 5, 5], run_seed=9, group_size=2)
    collector = AsyncCollector(pool, Counting(), groups, batch_size=4, slots=4, max_turns=10)
    try:
        episodes = collector.collect()
    finally:
        collector.close()
        pool.close()
    assert len(episodes) == 4 and max(len(ep) for ep in episodes) > 1
    with TrajectoryRecorder(tmp_path, sampling={"temperature": 1.0}) as rec:
        rec.write(1, episodes)
    records = _records(tmp_path)
    assert sorted(r["kwargs"]["seed"] for r in records) == [40, 41, 42, 43]  # the pool's build order
    for record, ep in zip(records, episodes):
        assert record_problems(record) == []
        assert record["seed"] == ep.seed and ep.sample_seed == sampling_seed(9, ep.env_index)
        for k, turn in enumerate(record["turns"]):
            assert turn["sampling"] == {"temperature": 1.0, "seed": sampling_seed(ep.sample_seed, k)}
            assert turn["policy_version"] == 0
    _check_replay_and_regrade(tmp_path, capsys)


def test_async_carry_over_records_the_policy_version_of_each_turn(tmp_path, capsys):
    pool = EnvPool()
    groups = requests_for([ENV_ID] * 8, [2, 1, 0, 5, 6, 7, 9, 10], run_seed=2, group_size=1)
    # counting up from 1, an episode lasts until its target (or its four turns): 1, 3, 4, 4, ... turns
    collector = AsyncCollector(pool, Counting(), groups, batch_size=2, slots=4, staleness=1, max_turns=10)
    try:
        with TrajectoryRecorder(tmp_path) as rec:
            for step in (1, 2, 3):
                rec.write(step, collector.collect())
                collector.policy_updated()
    finally:
        collector.close()
        pool.close()
    records = _records(tmp_path)
    assert len(records) == 6
    versions = [[t["policy_version"] for t in r["turns"]] for r in records]
    assert all(v == sorted(v) and v[-1] <= r["step"] - 1 for v, r in zip(versions, records))
    assert any(len(set(v)) > 1 for v in versions)  # an episode carried over an update: two versions in it
    _check_replay_and_regrade(tmp_path, capsys)


def test_a_record_refuses_logprobs_that_do_not_match_the_ids_and_unfinished_trajectories(tmp_path):
    vec = gem.make_vec(ENV_ID, num_envs=1)
    try:
        [ep] = collect_episodes(vec, ByCall(), seeds=[3], max_turns=2)
    finally:
        vec.close()
    ep.transitions[0].logprobs = ep.transitions[0].logprobs[:-1]
    with pytest.raises(ValueError, match="completion_logprobs"):
        trajectory_to_record(ep, 0)
    with pytest.raises(ValueError, match="no episode record"):
        trajectory_to_record(Trajectory(0, ENV_ID, 0), 0)
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="is a file"):
        TrajectoryRecorder(tmp_path / "file")


# ------------------------------------------------------------------ with the tiny model
torch_needed = pytest.mark.skipif(
    not all(__import__("importlib").util.find_spec(m) for m in ("torch", "transformers")),
    reason="needs the rl extra (torch, transformers)",
)


@torch_needed
def test_token_drift_compares_the_text_tokenised_again_with_the_sampled_ids():
    from gem.utils.tiny_tokenizer import get_tiny_tokenizer

    tok = get_tiny_tokenizer()
    ids = tok("The answer is 42", add_special_tokens=False)["input_ids"]
    assert token_drift(tok, "The answer is 42", ids, tok.eos_token_id) is False
    assert token_drift(tok, "The answer is 42", [*ids, tok.eos_token_id], tok.eos_token_id) is False  # EOS: not text
    # the same text from other ids (its longest token spelt one byte at a time): a re-tokenising
    # trainer would see other ids than the sampled ones
    tokens = tok.convert_ids_to_tokens(ids)
    k = max(range(len(tokens)), key=lambda i: len(tokens[i]))
    assert len(tokens[k]) > 1
    split = ids[:k] + [tok.convert_tokens_to_ids(c) for c in tokens[k]] + ids[k + 1:]
    assert tok.decode(split) == "The answer is 42" and split != ids
    assert token_drift(tok, "The answer is 42", split, tok.eos_token_id) is True
    assert token_drift(None, "x", [1]) is None


@torch_needed
@pytest.mark.parametrize("collect", ["sync", "async"])
def test_gem_train_records_and_its_update_trains_on_the_recorded_ids(tmp_path, monkeypatch, capsys, collect):
    import gem.rl.train as train_mod
    from gem.utils.tiny_tokenizer import get_tiny_tokenizer

    updates: list[list[tuple[int, ...]]] = []  # per update call: the unpadded rows the model was fed
    real_update = train_mod.update

    def spy(model, *args, **kwargs):
        rows: list[tuple[int, ...]] = []

        def hook(module, args_, kwargs_):
            ids, mask = kwargs_["input_ids"], kwargs_["attention_mask"]
            for row, keep in zip(ids.tolist(), mask.tolist()):
                rows.append(tuple(i for i, k in zip(row, keep) if k))

        handle = model.register_forward_pre_hook(hook, with_kwargs=True)
        try:
            return real_update(model, *args, **kwargs)
        finally:
            handle.remove()
            updates.append(rows)

    monkeypatch.setattr(train_mod, "update", spy)
    rec_dir = tmp_path / "records"
    code = train_mod.main([
        "--model", "tiny", "--env", ENV_ID, "--algo", "reinforce", "--steps", "2", "--num-envs", "4",
        "--group-size", "2", "--max-new-tokens", "8", "--max-turns", "4", "--save-every", "0", "--quiet",
        "--collect", collect, "--output-dir", str(tmp_path / "out"), "--trajectory-dir", str(rec_dir),
    ])
    assert code == 0
    records = _records(rec_dir)
    assert len(records) == 8 and sorted({r["step"] for r in records}) == [1, 2]
    for record in records:
        assert record_problems(record) == []
        assert record["env_version"] == gem.env_version(ENV_ID) and record["policy"]["model"] == "tiny"
        for turn in record["turns"]:
            assert turn["token_source"] == "sampler" and turn["sampling"]["temperature"] == 1.0
            assert len(turn["completion_logprobs"]) == len(turn["completion_token_ids"])
            assert all(lp <= 0.0 for lp in turn["completion_logprobs"])
    trained_steps = sorted({r["step"] for r in records if not r["update_skipped"]})
    assert len(updates) == len(trained_steps) >= 1
    tok = get_tiny_tokenizer()
    drifted = 0
    for step, fed in zip(trained_steps, updates):
        turns = [t for r in records if r["step"] == step for t in r["turns"] if t["completion_token_ids"]]
        recorded = Counter(tuple(t["prompt_token_ids"] + t["completion_token_ids"]) for t in turns)
        # the update's inputs are exactly the recorded prompt and completion ids (one epoch: each once)
        assert Counter(fed) == recorded
        # and re-tokenising the text would have fed other ids: the comparison above has teeth
        retokenised = Counter(tuple(t["prompt_token_ids"] + tok(t["action"], add_special_tokens=False)["input_ids"])
                              for t in turns)
        drifted += retokenised != recorded
    assert drifted, "no recorded turn re-tokenises otherwise; the test could not tell a re-tokenising trainer apart"
    summary = json.loads((rec_dir / "summary.json").read_text())
    turns = [t for r in records for t in r["turns"]]
    measured = [t["token_drift"] for t in turns if isinstance(t.get("token_drift"), bool)]
    assert summary["overall"]["token_drift_turns"] == [sum(measured), len(measured)] and sum(measured) > 0
    assert summary["overall"]["token_drift"] == pytest.approx(sum(measured) / len(measured))
    assert summary["trainer"]["collect"] == collect
    assert "trajectories in" in capsys.readouterr().out
    _check_replay_and_regrade(rec_dir, capsys)


def test_gem_train_refuses_a_trajectory_dir_that_is_a_file(tmp_path):
    from gem.rl.train import main

    (tmp_path / "taken").write_text("x")
    with pytest.raises(SystemExit, match="--trajectory-dir"):
        main(["--steps", "1", "--num-envs", "2", "--group-size", "2", "--output-dir", str(tmp_path / "o"),
              "--trajectory-dir", str(tmp_path / "taken")])
