"""gem replay: recorded episodes re-play identically against today's envs; a changed record is
named at its first difference."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import gem
from gem.agents import make_agent, run_episode
from gem.agents.registry import check_agent
from gem.cli import main
from gem.eval.records import episode_record
from gem.records.replay import replay_report
from tests.conftest import needs_env
from gem.records.writer import RecordWriter

MAX_TURNS = 40  # enough turns to go deep into every game; a cut episode is re-played as far as it went


def record_run(out: Path, env_ids, agent: str = "solver", seeds=(0, 1), kwargs=None, wrappers: str = "") -> None:
    """Play and record episodes as gem run --out does (a directory gem replay reads)."""
    from gem.wrappers.wrapper_factory import get_wrapper_fns

    with RecordWriter(out / "episodes.jsonl", mode="w") as writer:
        for env_id in env_ids:
            env = gem.make(env_id, **(kwargs or {}))
            for wrap in get_wrapper_fns(wrappers) if wrappers else ():
                env = wrap(env)
            name = agent
            for name in (agent, "solver", "random"):
                try:
                    check_agent(name, env, names=["solver", "random", "gold"])
                    break
                except (ValueError, TypeError):
                    continue
            try:
                for k, seed in enumerate(seeds):
                    player = make_agent(name, env)
                    episode = run_episode(env, player, seed=seed, max_steps=MAX_TURNS, record=True)
                    assert episode.ok, (env_id, episode.error)
                    writer.write(episode_record(episode, k, agent=name, wrappers=wrappers, env_kwargs=kwargs))
            finally:
                env.close()


def _records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]


def _write(out: Path, records: list[dict]) -> None:
    (out / "episodes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


FAMILIES = ["game", "math", "code", "qa", "logic", "rg", "eval", "multi", "webshop", "terminal", "swe"]


def _replayable(env_id: str) -> bool:
    """A single-agent id (a raw multi-agent env takes a dict of actions: gem eval plays its
    -vs-scripted / -vs-random views) whose data is here (a hub dataset needs the network)."""
    from gem.errors import DependencyNotInstalled, ResourceUnavailable

    try:
        env = gem.make(env_id)
    except (ResourceUnavailable, DependencyNotInstalled):
        return False
    try:
        from gem.envs.multiagent.base import MultiAgentEnv

        return not isinstance(getattr(env, "unwrapped", env), MultiAgentEnv)
    finally:
        env.close()


@pytest.mark.parametrize("family", FAMILIES)
def test_every_bundled_id_of_a_family_replays_identically(family, tmp_path, capsys) -> None:
    """Each id is played by its solver (else the gold answer, else random actions) and re-played."""
    ids = [i for i in gem.list_envs(family) if _replayable(i)]
    if not ids:
        pytest.skip(f"no {family} id has its data offline here (hub datasets need the network)")
    seeds = (0, 1) if family == "game" else (0,)
    record_run(tmp_path, ids, seeds=seeds)
    capsys.readouterr()  # what the envs printed while recording (reasoning-gym prints)
    assert main(["replay", str(tmp_path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    n = len(ids) * len(seeds)
    assert (report["episodes"], report["identical"], report["different"], report["skipped"]) == (n, n, 0, 0)
    assert {r["env_id"] for r in report["results"]} == set(ids)


@pytest.mark.parametrize(
    "env_ids, agent, wrappers",
    [
        (["math:Arithmetic"], "gold", "python_tool"),
        (["game:Wordle-v0-easy"], "random", "concat"),
    ],
)
def test_wrapped_ids_replay_identically(tmp_path, env_ids, agent, wrappers, capsys) -> None:
    for env_id in env_ids:
        needs_env(env_id)
    record_run(tmp_path, env_ids, agent=agent, seeds=(0, 1, 2), wrappers=wrappers)
    assert all(r["wrappers"] == wrappers for r in _records(tmp_path))
    assert main(["replay", str(tmp_path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["identical"] == 3 * len(env_ids) and report["different"] == report["skipped"] == 0


def test_a_tampered_reward_is_the_first_difference_named(tmp_path, capsys) -> None:
    env_id = "game:FifteenPuzzle-v0-easy"
    record_run(tmp_path, [env_id], seeds=(4, 5))
    records = _records(tmp_path)
    victim = records[1]
    assert len(victim["turns"]) >= 3
    victim["turns"][1]["reward"] = 0.75
    victim["turns"][2]["observation"] = "changed later: never reached"
    _write(tmp_path, records)
    assert main(["replay", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert f"{env_id}#1 (seed 5): turn 2 reward: recorded 0.75, replayed" in out
    assert "1 identical, 1 different" in out

    assert main(["replay", str(tmp_path), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    diff = next(r for r in report["results"] if r["status"] == "different")
    assert diff["key"] == f"{env_id}#1" and diff["difference"]["turn"] == 2
    assert diff["difference"]["field"] == "reward" and diff["difference"]["recorded"] == 0.75


@pytest.mark.parametrize("field, value, expected", [
    ("observation", "a board nobody saw", "turn 1 observation differs at character 0"),
    ("terminated", True, "turn 1 terminated: recorded True, replayed False"),
])
def test_observations_and_end_flags_are_compared(tmp_path, capsys, field, value, expected) -> None:
    record_run(tmp_path, ["game:Sudoku-v0-easy"], seeds=(2,))
    records = _records(tmp_path)
    records[0]["turns"][0][field] = value
    _write(tmp_path, records)
    assert main(["replay", str(tmp_path)]) == 1
    assert expected in capsys.readouterr().out


def test_a_changed_first_observation_and_extra_turns_are_differences(tmp_path) -> None:
    record_run(tmp_path, ["game:GuessTheNumber-v0-easy"], seeds=(1, 2))
    records = _records(tmp_path)
    records[0]["observation0"] = records[0]["observation0"] + " "
    records[1]["turns"].append(dict(records[1]["turns"][-1], turn=len(records[1]["turns"]) + 1))
    records[1]["rewards"].append(0.0)
    _write(tmp_path, records)
    report = replay_report(tmp_path)
    first, second = report["results"]
    assert first["difference"]["turn"] == 0 and first["difference"]["field"] == "observation"
    assert second["difference"]["field"] == "end"


def test_version_warnings_skips_and_bad_lines(tmp_path, capsys) -> None:
    needs_env("game:Hangman-v0-easy")
    record_run(tmp_path, ["game:Hangman-v0-easy"], seeds=(0, 1, 2))
    records = _records(tmp_path)
    records[0]["env_version"] = "0123456789ab"
    records[1]["seed"] = None
    _write(tmp_path, records)
    with (tmp_path / "episodes.jsonl").open("a") as fh:
        fh.write('{"env_id": "game:Hangman-v0-ea')
    assert main(["replay", str(tmp_path)]) == 0  # what could be re-played is identical
    captured = capsys.readouterr()
    assert "the records were made at 0123456789ab" in captured.err
    assert "line 4: not complete JSON" in captured.err
    assert "game:Hangman-v0-easy#1: skipped: the record has no seed" in captured.out
    assert "3 episodes: 2 identical, 0 different, 1 skipped." in captured.out


def test_a_missing_run_or_an_unknown_env_is_reported_not_raised(tmp_path, capsys) -> None:
    assert main(["replay", str(tmp_path / "nothing")]) == 2
    assert "no records" in capsys.readouterr().err
    record_run(tmp_path, ["game:GuessTheNumber-v0-easy"], seeds=(1,))
    records = _records(tmp_path)
    records[0]["env_id"] = "game:NoSuchGame-v9"
    records[0]["key"] = "game:NoSuchGame-v9#0"
    _write(tmp_path, records)
    assert main(["replay", str(tmp_path)]) == 2  # nothing re-played
    assert "cannot make game:NoSuchGame-v9 today: UnknownEnvError" in capsys.readouterr().out
