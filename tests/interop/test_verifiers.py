"""GEM <-> verifiers, against the real verifiers package (the ``verifiers`` extra).

verifiers pins mcp==2.0.0, which the ``mcp`` extra's newer SDK excludes, so these tests run where
verifiers is installed on its own: ``pip install verifiers`` plus GEM's ``server`` packages (fastapi,
uvicorn, httpx, websockets) for the mock model server, with this checkout on ``PYTHONPATH``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("verifiers.v1", reason="needs the verifiers extra (pip install -e '.[verifiers]' in the GEM checkout)")

import gem  # noqa: E402
from gem.errors import DependencyNotInstalled  # noqa: E402
from gem.interop.verifiers.export import export_verifiers, taskset_id  # noqa: E402
from tests.conftest import extra_installed  # noqa: E402
from tests.envs.hub_fixtures import serve_hub  # noqa: E402
from tests.interop.families import FAMILY_IDS, record, replay  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
GAME = "game:GuessTheNumber-v0"


@pytest.fixture
def exported(tmp_path, monkeypatch):
    """``exported(env_id)``: write the package and put it on the path (as ``pip install`` would)."""

    def write(env_id: str) -> str:
        out = export_verifiers(env_id, tmp_path / taskset_id(env_id))
        monkeypatch.syspath_prepend(str(out))
        return taskset_id(env_id)

    return write


def test_export_writes_a_package_verifiers_loads(exported):
    from verifiers.v1.utils.loaders import environment_class, taskset_class, taskset_config_type

    tid = exported(GAME)
    assert tid == "gem-game-guessthenumber-v0"
    assert taskset_class(tid).__name__ == "GemTaskset"
    assert environment_class(tid).__name__ == "GemEnv"
    taskset = taskset_class(tid)(taskset_config_type(tid)(id=tid))
    first = next(iter(taskset))
    local = gem.make(GAME)
    obs, info = local.reset(seed=0)
    from gem.utils.prompting import user_content

    assert first.data.prompt == user_content(obs, info) and first.data.info == {"env_id": GAME, "seed": 0}


def test_export_is_an_installable_package(tmp_path):
    out = export_verifiers(GAME, tmp_path / "pkg")
    if not _has_build_tools():
        pytest.skip("building a wheel without the network needs setuptools and wheel installed")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp_path / "dist"), str(out)],
        capture_output=True, text=True, timeout=300,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    assert wheel.name.startswith("gem_game_guessthenumber_v0-0.1.0")
    import zipfile

    names = zipfile.ZipFile(wheel).namelist()
    assert "gem_game_guessthenumber_v0/taskset.py" in names and "gem_game_guessthenumber_v0/__init__.py" in names


def _has_build_tools() -> bool:
    try:
        import setuptools  # noqa: F401
        import wheel  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.slow  # about a minute and a half each: vf-eval starts its workers and the harness program
@pytest.mark.network  # uv fetches the null harness's chat program packages from PyPI (once; cached after)
@pytest.mark.parametrize("model", ["solver", "random"])
def test_verifiers_eval_runner_scores_gems_reward(tmp_path, model):
    """verifiers' own runner (vf-eval: the null harness in a subprocess runtime, its interception
    server) plays the exported id against GEM's mock OpenAI server; its reward is GEM's."""
    if shutil.which("vf-eval") is None or shutil.which("uv") is None:
        pytest.skip("needs verifiers' vf-eval and uv on PATH")
    from gem.eval.mock_server import MockServer
    from tests.interop.sse_proxy import SSEProxy

    out = export_verifiers(GAME, tmp_path / "pkg")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(out), str(REPO), os.environ.get("PYTHONPATH", "")]),
           "MOCK_KEY": "unused"}
    with MockServer(env_ids=[GAME]) as mock, SSEProxy(mock.base_url) as proxy:
        run = subprocess.run(
            ["vf-eval", taskset_id(GAME), "--model", model, "--client.base-url", proxy.base_url,
             "--client.api-key-var", "MOCK_KEY", "-n", "3", "--no-push", "--no-rich", "-o", str(tmp_path / "runs")],
            capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path,
        )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    (traces_file,) = (tmp_path / "runs").glob("*/traces.jsonl")
    episodes = [json.loads(line) for line in traces_file.read_text().splitlines()]
    assert len(episodes) == 3 and all(not e["errors"] and len(e["traces"]) == 1 for e in episodes)
    for trace in (e["traces"][0] for e in episodes):
        assert not trace["errors"]
        seed = trace["info"]["gem_seed"]
        replies = [n["message"]["content"] for n in trace["nodes"]
                   if n.get("sampled") and n["message"]["role"] == "assistant"]
        local = gem.make(GAME)
        local.reset(seed=seed)
        rewards = []
        for reply in replies:
            _, reward, terminated, truncated, _ = local.step(reply.strip())
            rewards.append(reward)
            if terminated or truncated:
                break
        assert trace["info"]["gem_rewards"] == rewards  # each step paid what GEM pays for that reply
        assert trace["rewards"]["gem_reward"]["score"] == sum(rewards)
        if model == "solver":
            assert sum(rewards) == 1.0 and trace["info"]["gem_terminated"] is True


@pytest.mark.parametrize("family", list(FAMILY_IDS))
def test_round_trip_gem_verifiers_gem_plays_the_local_episode(family, exported, monkeypatch):
    serve_hub(monkeypatch)
    env_id = FAMILY_IDS[family]
    try:
        local = record(env_id, 1)
    except DependencyNotInstalled:
        extra = gem.spec(env_id).extra
        if extra and not extra_installed(extra):
            pytest.skip(f"{env_id} needs the {extra} extra")
        raise
    env = gem.make(f"verifiers:{exported(env_id)}")
    try:
        through = replay(env, 1, [a.strip() for a in local.actions])  # verifiers strips a reply
    finally:
        env.close()
    expected = local.as_user_messages()
    assert through.first == expected.first
    assert through.steps == expected.steps


def test_a_reset_mid_episode_stops_the_run_and_starts_the_next(exported):
    env = gem.make(f"verifiers:{exported(GAME)}")
    env.reset(seed=2)
    env.step("\\boxed{10}")
    trace = record(GAME, 3)
    assert replay(env, 3, trace.actions).steps == trace.as_user_messages().steps
    env.close()


SINGLE_TURN = '''
import verifiers.v1 as vf


class SumData(vf.TaskData):
    answer: int


class SumTask(vf.Task[SumData]):
    @vf.reward
    async def exact(self, trace: vf.Trace) -> float:
        return float(trace.last_reply == str(self.data.answer))


class SumTaskset(vf.Taskset[SumTask, vf.TasksetConfig]):
    def load(self):
        return [SumTask(SumData(prompt=f"What is {i} + {i}?", answer=2 * i), self.config.task) for i in range(5)]


__all__ = ["SumTaskset"]
'''


def test_a_single_turn_verifiers_taskset_is_scored_by_its_own_rubric(tmp_path, monkeypatch):
    (tmp_path / "gem_sum_test.py").write_text(textwrap.dedent(SINGLE_TURN))
    monkeypatch.syspath_prepend(str(tmp_path))
    env = gem.make("verifiers:gem-sum-test")
    assert env.multi_turn is False
    obs, info = env.reset(seed=3)
    assert obs == "What is 3 + 3?" and info["task_idx"] == 3
    assert env.step("6")[1:4] == (1.0, True, False)
    env.reset(seed=8)  # 8 % 5 tasks
    obs, reward, terminated, truncated, info = env.step("7")
    assert (reward, terminated) == (0.0, True) and info["verifiers_rewards"] == {"exact": 0.0}
    env.close()


def test_an_unknown_verifiers_environment_is_a_clear_error():
    with pytest.raises(ValueError, match="not found"):
        gem.make("verifiers:no-such-taskset-anywhere")


def test_an_endless_exported_taskset_reaches_any_seed_at_once(exported):
    tid = exported(GAME)
    env = gem.make(f"verifiers:{tid}")
    local = gem.make(GAME)
    from gem.utils.prompting import user_content

    assert env.reset(seed=10**9)[0] == user_content(*local.reset(seed=10**9))
    first = gem.make(f"verifiers:{tid}", seed=7)
    again = gem.make(f"verifiers:{tid}", seed=7)
    assert first.reset()[0] == again.reset()[0]  # unseeded resets follow the env's seed
    for e in (env, first, again):
        e.close()


# ------------------------------------------------------------------ token ids across the bridge
def _played_trace(exported, seed: int):
    """A real verifiers trace of the exported GEM id: GEM's solver plays it through the bridge."""
    env = gem.make(f"verifiers:{exported(GAME)}")
    try:
        local = record(GAME, seed)
        through = replay(env, seed, [a.strip() for a in local.actions])
        trace = env._game.trace  # the trace the exported env's run() wrote
    finally:
        env.close()
    return trace, through


def _render_tokens(trace) -> None:
    """Fill the trace's nodes as verifiers' renderer client does: each node the tokens it adds
    (a scaffold, then its text), the assistant nodes' text masked as sampled, one logprob each."""
    for n, node in enumerate(trace.nodes):
        text = [1000 + n * 10 + k for k in range(3)]
        node.token_ids = [7, 8] + text  # two scaffold tokens (role tags), then the message's
        node.mask = [False, False] + [bool(node.sampled)] * len(text)
        node.logprobs = [-0.25 * (k + 1) for k in range(len(text))] if node.sampled else []


def test_a_verifiers_trace_of_an_exported_id_is_a_record_that_replays(exported, tmp_path):
    from gem.interop.tokens import verifiers_record
    from gem.records.replay import play_run
    from gem.records.schema import record_problems

    trace, through = _played_trace(exported, 3)
    plain = verifiers_record(trace)  # GEM's agent played: verifiers holds no ids for its replies
    assert record_problems(plain) == []
    assert plain["env_id"] == GAME and plain["seed"] == 3 and plain["rewards"] == [s[1] for s in through.steps]
    assert plain["total_reward"] == 1.0 and plain["policy"]["agent"] == "verifiers"
    assert {t["token_source"] for t in plain["turns"]} == {"none"}
    assert all("no token ids" in t["token_note"] for t in plain["turns"])
    (tmp_path / "episodes.jsonl").write_text(json.dumps(plain) + "\n")
    played, problems = play_run(tmp_path)
    assert problems == [] and [p.status for p in played] == ["identical"]


def test_token_ids_in_a_verifiers_trace_are_carried_into_the_record(exported):
    from gem.interop.tokens import VERIFIERS_LOGPROB_NOTE, verifiers_record
    from gem.records.schema import record_problems

    trace, through = _played_trace(exported, 4)
    _render_tokens(trace)
    rec = verifiers_record(trace)
    assert record_problems(rec) == []
    turns = rec["turns"]
    assert len(turns) == len(through.steps) and {t["token_source"] for t in turns} == {"verifiers"}
    (branch,) = trace.branches  # one conversation: one branch, verifiers' training sample
    sequence, mask, logprobs = branch.token_ids, branch.sampled_mask, branch.logprobs
    sampled = [i for i, node in enumerate(branch.nodes) if node.sampled]
    for turn, index in zip(turns, sampled):
        node = branch.nodes[index]
        end = sum(len(n.token_ids) for n in branch.nodes[:index + 1])
        # prompt + completion is the branch's sequence up to this node; the completion is what the
        # branch masks as sampled there, with the branch's logprobs
        assert turn["prompt_token_ids"] + turn["completion_token_ids"] == sequence[:end]
        start = end - len(turn["completion_token_ids"])
        assert all(mask[start:end]) and not mask[start - 1]
        assert turn["completion_logprobs"] == logprobs[start:end] == node.logprobs
    # read back from verifiers' JSON (a traces.jsonl line): the same ids, logprobs as rounded there
    line = json.loads(trace.model_dump_json())
    again = verifiers_record(line)
    assert [t["completion_token_ids"] for t in again["turns"]] == [t["completion_token_ids"] for t in turns]
    assert all(t["token_note"] == VERIFIERS_LOGPROB_NOTE for t in again["turns"])


def test_a_trace_without_a_gem_episode_is_refused(exported):
    from gem.interop.tokens import verifiers_record

    trace, _ = _played_trace(exported, 5)
    trace.info.pop("gem_steps")
    with pytest.raises(ValueError, match="no GEM episode"):
        verifiers_record(trace)
