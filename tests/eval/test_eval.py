"""``gem eval`` end to end against the mock server through the real openai client."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

import gem

from gem.cli import main
from gem.eval.runner import (
    EvalConfig,
    EvalRunner,
    format_summary,
    pass_at_k,
    read_episodes,
    summarize_dir,
    summarize_records,
)
from tests.conftest import needs_extra

GAME = "game:GuessTheNumber-v0-easy"
MATH = "math:Arithmetic"
ENVS = [GAME, MATH]


def _eval(server, out: Path, *env_ids: str, extra: tuple = ()) -> int:
    return main(
        [
            "eval",
            *env_ids,
            "--agent",
            "openai",
            "--model",
            "solver",
            "--base-url",
            server.base_url,
            "--out",
            str(out),
            "--no-progress",
            "--backoff",
            "0.01",
            *extra,
        ]
    )


def test_game_math_and_tool_env_end_to_end(mock_server, tmp_path, capsys) -> None:
    server = mock_server(env_ids=ENVS)
    out = tmp_path / "run"
    assert _eval(server, out, GAME, MATH, extra=("--episodes", "4", "--concurrency", "4")) == 0
    printed = capsys.readouterr().out
    assert GAME in printed and MATH in printed
    summary = json.loads((out / "summary.json").read_text())
    for env_id in (GAME, MATH):
        s = summary["envs"][env_id]
        assert s["episodes"] == 4 and s["errors"] == 0
        assert s["success_rate"] == 1.0 and s["mean_reward"] == 1.0 and s["pass@1"] == 1.0
        assert s["completion_tokens"] > 0 and s["prompt_tokens"] > s["completion_tokens"]
    assert summary["envs"][MATH]["mean_turns"] == 1.0
    assert summary["envs"][GAME]["mean_turns"] > 1.0  # binary search needs several guesses
    records = read_episodes(out)
    assert sorted(r["key"] for r in records) == sorted(f"{e}#{i}" for e in (GAME, MATH) for i in range(4))
    game = next(r for r in records if r["env_id"] == GAME and r["num_turns"] > 1)
    assert [m["role"] for m in game["messages"]][:3] == ["user", "assistant", "user"]
    assert game["turns"][-1]["reward"] == 1.0 and game["turns"][-1]["info"]["success"] is True
    assert all(t["usage"]["completion_tokens"] >= 1 and t["model_s"] >= 0 for t in game["turns"])

    tool_out = tmp_path / "tool"
    assert _eval(server, tool_out, MATH, extra=("--episodes", "2", "--wrappers", "python_tool")) == 0
    tool = json.loads((tool_out / "summary.json").read_text())["envs"][MATH]
    assert tool["success_rate"] == 1.0 and tool["mean_tool_calls"] == 1.0 and tool["mean_turns"] == 2.0
    rec = read_episodes(tool_out)[0]
    # text-tag tool calling: the tool's output is a user message (a tool message needs a tool_call_id)
    assert [m["role"] for m in rec["messages"]] == ["user", "assistant", "user", "assistant"]
    assert "42" in rec["messages"][2]["content"]  # the tool really ran the code
    assert rec["turns"][0]["info"]["use_tool"] is True and rec["total_reward"] > 1.0
    # Nothing about the episode leaves the client: no X-Gem header, only standard chat fields.
    assert server.requests_log and all(
        not any(h.startswith("x-gem") for h in req["headers"]) for req in server.requests_log
    )
    assert all(set(req["body"]) <= {"model", "messages", "temperature", "top_p", "max_tokens"} for req in server.requests_log)


def test_failed_request_is_recorded_and_run_goes_on(mock_server, tmp_path) -> None:
    server = mock_server(env_ids=ENVS, fail_seeds=[1])
    out = tmp_path / "run"
    assert _eval(server, out, MATH, extra=("--episodes", "3", "--retries", "1")) == 0
    by_key = {r["key"]: r for r in read_episodes(out)}
    bad = by_key[f"{MATH}#1"]
    assert bad["status"] == "error"
    assert bad["error"]["stage"] == "model" and bad["error"]["turn"] == 1 and "500" in bad["error"]["message"]
    assert by_key[f"{MATH}#0"]["status"] == by_key[f"{MATH}#2"]["status"] == "ok"
    s = json.loads((out / "summary.json").read_text())["envs"][MATH]
    assert s["errors"] == 1 and s["errors_by_stage"] == {"model": 1} and s["completed"] == 2


def test_resume_runs_only_missing_episodes(mock_server, tmp_path) -> None:
    server = mock_server(env_ids=ENVS)
    out = tmp_path / "run"
    assert _eval(server, out, MATH, extra=("--episodes", "6", "--limit", "2")) == 0
    assert len(read_episodes(out)) == 2
    assert server.requests == 2
    with (out / "episodes.jsonl").open("a") as fh:  # a torn line, as from a killed writer
        fh.write('{"key": "math:Arithmetic#5", "sta')
    assert _eval(server, out, MATH, extra=("--episodes", "6")) == 0
    assert server.requests == 6  # 4 more, one request each: nothing redone
    keys = Counter(r["key"] for r in read_episodes(out))
    assert keys == Counter({f"{MATH}#{i}": 1 for i in range(6)})
    # Different settings in the same directory are refused.
    assert _eval(server, out, MATH, extra=("--episodes", "6", "--seed", "9")) == 2


def test_errored_episodes_are_retried_on_resume(mock_server, tmp_path) -> None:
    out = tmp_path / "run"
    failing = mock_server(env_ids=ENVS, fail_seeds=[0])
    assert _eval(failing, out, MATH, extra=("--episodes", "2", "--retries", "0")) == 0
    working = mock_server(env_ids=ENVS)
    assert _eval(working, out, MATH, extra=("--episodes", "2", "--retries", "0")) == 0
    assert working.requests == 1
    s = json.loads((out / "summary.json").read_text())["envs"][MATH]
    assert s["errors"] == 0 and s["success_rate"] == 1.0 and s["episodes"] == 2


def test_killed_subprocess_then_rerun_finishes_missing(mock_server, tmp_path) -> None:
    server = mock_server(env_ids=ENVS, delay_s=0.15)
    out = tmp_path / "run"
    args = [
        "eval",
        MATH,
        "--model",
        "solver",
        "--base-url",
        server.base_url,
        "--episodes",
        "12",
        "--concurrency",
        "1",
        "--out",
        str(out),
        "--no-progress",
    ]
    code = f"import sys; from gem.cli import main; sys.exit(main({args!r}))"
    proc = subprocess.Popen([sys.executable, "-c", code], env={**os.environ, "OPENAI_API_KEY": "x"})
    try:
        deadline = time.monotonic() + 30
        while len(read_episodes(out)) < 2:
            assert proc.poll() is None, "the eval ended before it could be interrupted"
            assert time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        proc.kill()
        proc.wait(timeout=10)
    first = {r["key"] for r in read_episodes(out)}
    assert 2 <= len(first) < 12
    before = server.requests
    assert main(args) == 0
    records = read_episodes(out)
    assert Counter(r["key"] for r in records) == Counter({f"{MATH}#{i}": 1 for i in range(12)})
    # At most the one request in flight when it was killed is repeated.
    assert server.requests - before <= 12 - len(first)


def test_offline_agents_and_pass_at_k(tmp_path) -> None:
    out = tmp_path / "random"
    cfg = EvalConfig(env_ids=[GAME], out=str(out), agent="random", episodes=2, repeats=4, progress=False)
    summary = EvalRunner(cfg).run()["envs"][GAME]
    records = read_episodes(out)
    assert len(records) == 8 and summary["episodes"] == 8  # 2 problems x 4 samples
    assert Counter((r["seed"], r["sample"]) for r in records) == Counter((s, k) for s in (0, 1) for k in range(4))
    assert summary["problems"] == 2 and "pass@4" in summary and "pass@2" in summary
    assert summary["pass@4"] >= summary["pass@2"] >= summary["pass@1"]
    solved = EvalRunner(
        EvalConfig(env_ids=[GAME], out=str(tmp_path / "s"), agent="solver", episodes=3, progress=False)
    ).run()["envs"][GAME]
    assert solved["success_rate"] == 1.0 and solved["prompt_tokens"] == 0


def test_pass_at_k_values() -> None:
    assert pass_at_k(4, 0, 1) == 0.0 and pass_at_k(4, 4, 2) == 1.0
    assert pass_at_k(4, 1, 1) == pytest.approx(0.25)
    assert pass_at_k(4, 1, 2) == pytest.approx(0.5)  # 1 - C(3,2)/C(4,2)
    recs = [
        {"status": "ok", "seed": s, "success": ok, "total_reward": float(ok), "num_turns": 1}
        for s, ok in [(0, True), (0, False), (1, False), (1, False)]
    ]
    s = summarize_records(recs)
    assert s["pass@1"] == pytest.approx(0.25) and s["pass@2"] == pytest.approx(0.5)
    assert s["success_rate"] == 0.25


def test_bad_config_is_refused(tmp_path) -> None:
    with pytest.raises(ValueError, match="--model"):
        EvalRunner(EvalConfig(env_ids=[GAME], out=str(tmp_path), agent="openai"))
    with pytest.raises(ValueError, match="agent must be one of"):
        EvalRunner(EvalConfig(env_ids=[GAME], out=str(tmp_path), agent="gpt"))
    with pytest.raises(ValueError, match="concurrency"):
        EvalRunner(EvalConfig(env_ids=[GAME], out=str(tmp_path), agent="random", concurrency=0))


def test_unknown_env_id_fails_fast(tmp_path, capsys) -> None:
    assert (
        main(
            ["eval", "game:NoSuchGame-v0", "--agent", "random", "--out", str(tmp_path / "r"), "--no-progress"]
        )
        == 2
    )
    assert "Unknown env id" in capsys.readouterr().err
    assert read_episodes(tmp_path / "r") == []


def test_pass_at_k_groups_by_env_and_seed() -> None:
    def rec(env_id: str, seed: int, ok: bool) -> dict:
        return {"env_id": env_id, "status": "ok", "seed": seed, "success": ok, "total_reward": float(ok), "num_turns": 1}

    # Two envs share seed 0: problem A is always solved, problem B never. Grouped by seed alone,
    # the four samples would give pass@2 = 1 - C(2,2)/C(4,2) = 0.833.
    recs = [rec("a", 0, True), rec("a", 0, True), rec("b", 0, False), rec("b", 0, False)]
    s = summarize_records(recs)
    assert s["problems"] == 2 and s["pass@1"] == 0.5 and s["pass@2"] == 0.5


def _write(out: Path, records: list) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with (out / "episodes.jsonl").open("w") as fh:
        for r in records:
            fh.write(json.dumps(r) + "\n")


def test_summary_counts_failures_apart_and_splits_tool_bonus(tmp_path) -> None:
    def rec(i: int, env_id: str = MATH, **kw) -> dict:
        base = {"key": f"{env_id}#{i}", "env_id": env_id, "index": i, "seed": i, "status": "ok", "success": False,
                "total_reward": 0.0, "task_reward": 0.0, "tool_bonus": 0.0, "num_turns": 1, "turns": []}
        return {**base, **kw}

    records = [
        rec(0, success=True, total_reward=1.5, task_reward=1.0, tool_bonus=0.5,
            turns=[{"finish_reason": "stop", "tool_bonus": 0.5}, {"finish_reason": "length", "tool_bonus": 0.0}]),
        rec(1, infra_error={"component": "grader", "type": "Timeout", "message": "slow"}),
        rec(2, grading={"status": "timeout", "component": "grader"}),
        rec(3, status="error", error={"stage": "model", "turn": 1, "type": "ModelRequestError", "message": "500"}),
        rec(4, total_reward=0.25, task_reward=0.0, tool_bonus=0.25),
        rec(0, env_id=GAME, success=True, total_reward=1.0, task_reward=1.0),
    ]
    _write(tmp_path, records)
    summary = summarize_dir(tmp_path, [MATH, GAME])
    s = summary["envs"][MATH]
    assert (s["episodes"], s["completed"], s["scored"], s["errors"]) == (5, 4, 2, 1)
    assert s["infra_errors"] == 1 and s["infra_errors_by_component"] == {"grader": 1}
    assert s["ungraded"] == 1 and s["ungraded_by_status"] == {"timeout": 1}
    assert s["errors_by_stage"] == {"model": 1}
    # Rates over every episode: the infra failure, the ungraded answer and the error count as not
    # solved (they are also counted apart above); the tool bonus is reported apart.
    assert s["unscored"] == 3 and s["solved"] == 1
    assert s["success_rate"] == 0.2 and s["pass@1"] == 0.2
    assert s["mean_reward"] == 0.35 and s["mean_task_reward"] == 0.2 and s["mean_tool_bonus"] == 0.15
    assert set(s["first_errors"]) == {"infra grader", "ungraded timeout", "model ModelRequestError"}
    assert s["cut_replies"] == 1
    assert summary["envs"][GAME]["success_rate"] == 1.0
    assert summary["overall"]["episodes"] == 6 and summary["overall"]["infra_errors"] == 1
    table = format_summary(summary)
    assert table.split()[:9] == ["env_id", "episodes", "errors", "infra", "ungraded", "success", "reward", "task",
                                 "bonus"]


def test_an_ungraded_episode_counts_as_not_solved(tmp_path) -> None:
    # A model that gets its wrong answers left ungraded (a grader timeout, an infrastructure
    # failure) must not raise its score: those episodes count as failures in the success rate and
    # pass@k, and are still reported apart.
    def rec(i: int, seed: int, **kw) -> dict:
        base = {"key": f"{MATH}#{i}", "env_id": MATH, "index": i, "seed": seed, "status": "ok", "success": False,
                "total_reward": 0.0, "num_turns": 1, "turns": []}
        return {**base, **kw}

    records = [
        rec(0, 0, success=True, total_reward=1.0),
        rec(1, 0, grading={"status": "timeout", "component": "grader"}),
        rec(2, 1, infra_error={"component": "grader", "type": "TimeoutError", "message": "hung"}),
        rec(3, 1, infra_error={"component": "grader", "type": "TimeoutError", "message": "hung"}),
    ]
    _write(tmp_path, records)
    s = summarize_dir(tmp_path)["envs"][MATH]
    assert s["success_rate"] == 0.25 and s["pass@1"] == 0.25 and s["pass@2"] == 0.5
    assert (s["scored"], s["unscored"], s["ungraded"], s["infra_errors"]) == (1, 3, 1, 2)
    assert summarize_records(records[:1])["success_rate"] == 1.0
    table = format_summary(summarize_dir(tmp_path))
    assert "ungraded" in table and "infra" in table and "0.250" in table


def test_episodes_count_problems_and_repeats_samples(mock_server, tmp_path) -> None:
    server = mock_server(env_ids=ENVS)
    out = tmp_path / "run"
    assert _eval(server, out, MATH, extra=("--episodes", "3", "--repeats", "2", "--concurrency", "3")) == 0
    records = read_episodes(out)
    assert sorted((r["seed"], r["sample"]) for r in records) == [(s, k) for s in range(3) for k in range(2)]
    s = json.loads((out / "summary.json").read_text())["envs"][MATH]
    assert s["episodes"] == 6 and s["problems"] == 3 and s["pass@1"] == s["pass@2"] == 1.0
    env = gem.make(MATH)
    for r in records:  # the reference answer, recorded after the episode
        env.reset(seed=r["seed"])
        assert r["gold"] == env.answer and r["task_reward"] == 1.0 and r["tool_bonus"] == 0.0


def test_reply_cut_by_max_tokens_is_marked(mock_server, tmp_path) -> None:
    server = mock_server(script=["I guess \\boxed{5}"])
    out = tmp_path / "run"
    args = ["eval", GAME, "--model", "script", "--base-url", server.base_url, "--out", str(out), "--no-progress",
            "--episodes", "1", "--max-tokens", "2"]
    main(args)
    rec = read_episodes(out)[0]
    assert rec["turns"][0]["finish_reason"] == "length" and rec["turns"][0]["action"] == "I guess"
    assert not rec["success"]  # the cut reply lost its answer
    assert json.loads((out / "summary.json").read_text())["envs"][GAME]["cut_replies"] == rec["num_turns"] >= 1
    full = mock_server(script=["I guess \\boxed{5}"])
    main(args[:4] + ["--base-url", full.base_url, "--out", str(tmp_path / "full"), "--no-progress", "--episodes", "1"])
    assert read_episodes(tmp_path / "full")[0]["turns"][0]["finish_reason"] == "stop"


def test_exit_status_is_1_when_no_episode_could_be_scored(mock_server, tmp_path, capsys) -> None:
    failing = mock_server(env_ids=ENVS, fail_seeds=[0, 1])
    assert _eval(failing, tmp_path / "bad", MATH, extra=("--episodes", "2", "--retries", "0")) == 1
    assert "no episode could be scored (2 errors" in capsys.readouterr().err
    # Completed episodes with no success are a score (0.0), not a failure of the run.
    wrong = mock_server(script=["\\boxed{nothing}"])
    args = ["eval", MATH, "--model", "script", "--base-url", wrong.base_url, "--out", str(tmp_path / "zero"),
            "--no-progress", "--episodes", "2"]
    assert main(args) == 0
    assert json.loads((tmp_path / "zero" / "summary.json").read_text())["envs"][MATH]["success_rate"] == 0.0


def test_raw_multiagent_id_is_refused_before_any_request(mock_server, tmp_path, capsys) -> None:
    server = mock_server(script=["1"])
    out = tmp_path / "run"
    args = ["eval", "multi:TicTacToe-v0", "--model", "script", "--base-url", server.base_url, "--out", str(out),
            "--no-progress", "--episodes", "1"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "multi-agent" in err and "multi:TicTacToe-v0-vs-scripted" in err
    assert server.requests == 0 and read_episodes(out) == []
    view = ["eval", "multi:TicTacToe-v0-vs-scripted", "--agent", "solver", "--out", str(tmp_path / "view"),
            "--no-progress", "--episodes", "2"]
    assert main(view) == 0


def test_random_model_and_seed_identification_without_headers(mock_server, tmp_path) -> None:
    server = mock_server(env_ids=ENVS)
    out = tmp_path / "run"
    args = ["eval", GAME, "--model", "random", "--base-url", server.base_url, "--out", str(out), "--no-progress",
            "--episodes", "3"]
    assert main(args) == 0
    assert all(r["status"] == "ok" and r["num_turns"] >= 1 for r in read_episodes(out))
    # The solver model reads the secret through the env of the episode it identified: every seed wins.
    assert _eval(server, tmp_path / "s", GAME, extra=("--episodes", "6", "--concurrency", "3")) == 0
    assert json.loads((tmp_path / "s" / "summary.json").read_text())["envs"][GAME]["success_rate"] == 1.0


def test_tool_calling_setting(tmp_path) -> None:
    import inspect

    from gem.agents.openai_agent import OpenAIAgent

    with pytest.raises(ValueError, match="tool_calling must be one of"):
        EvalRunner(EvalConfig(env_ids=[MATH], out=str(tmp_path), model="m", tool_calling="json"))
    native = EvalRunner(EvalConfig(env_ids=[MATH], out=str(tmp_path), model="m", tool_calling="native"))
    if "tool_calling" in inspect.signature(OpenAIAgent.__init__).parameters:
        assert native.agent_options()["tool_calling"] == "native"
    else:
        with pytest.raises(ValueError, match="native tool calling"):
            native.agent_options()
    text = EvalRunner(EvalConfig(env_ids=[MATH], out=str(tmp_path), model="m")).agent_options()
    assert text.get("tool_calling", "text") == "text"


def test_requests_carry_no_episode_and_time_only_themselves() -> None:
    needs_extra("eval")  # openai, httpx
    import asyncio

    import httpx
    import openai

    from gem.agents.openai_agent import OpenAIAgent

    sent: list[httpx.Request] = []

    class Recording(httpx.AsyncBaseTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            sent.append(request)
            body = {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": "\\boxed{1}"},
                                 "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
            return httpx.Response(200, json=body)

    async def play() -> None:
        client = openai.AsyncOpenAI(base_url="http://model.invalid/v1", api_key="k", max_retries=0,
                                    http_client=httpx.AsyncClient(transport=Recording()))
        env = gem.make(MATH)
        agent = OpenAIAgent("m", timeout_s=7.0, client=client)
        from gem.agents import arun_episode

        episode = await arun_episode(env, agent, seed=0)
        assert episode.ok and episode.steps[0]["finish_reason"] == "stop"
        await client.close()

    asyncio.run(play())
    assert len(sent) == 1
    request = sent[0]
    assert not [h for h in request.headers if h.lower().startswith("x-gem")]
    assert set(json.loads(request.content)) == {"model", "messages"}
    # The limit covers connecting, sending and reading; waiting for a pooled connection is not counted.
    assert request.extensions["timeout"] == {"connect": 7.0, "read": 7.0, "write": 7.0, "pool": None}


def test_the_mock_servers_request_log_is_bounded(monkeypatch) -> None:
    needs_extra("eval")  # fastapi
    from fastapi.testclient import TestClient

    from gem.eval import mock_server

    monkeypatch.setattr(mock_server, "REQUEST_LOG_SIZE", 3)
    client = TestClient(mock_server.create_app())
    for i in range(5):
        body = {"model": "echo", "messages": [{"role": "user", "content": f"hello {i}"}]}
        assert client.post("/v1/chat/completions", json=body).status_code == 200
    log = client.app.state.stats["log"]
    assert [entry["body"]["messages"][0]["content"] for entry in log] == ["hello 2", "hello 3", "hello 4"]


def test_every_episode_gem_eval_writes_follows_the_trajectory_schema(mock_server, tmp_path) -> None:
    from gem.records.schema import SCHEMA_VERSION, record_problems

    server = mock_server(env_ids=ENVS, fail_seeds=[1])
    out = tmp_path / "run"
    assert _eval(
        server, out, GAME, MATH,
        extra=("--episodes", "3", "--retries", "0", "--temperature", "0.5", "--kwarg", "max_turns=12"),
    ) == 0
    records = read_episodes(out)
    assert len(records) == 6 and any(r["status"] == "error" for r in records)  # an errored one is a record too
    for rec in records:
        assert record_problems(rec) == [], rec["key"]
        assert rec["schema_version"] == SCHEMA_VERSION
        assert rec["env_version"] == gem.env_version(rec["env_id"])
        assert rec["kwargs"] == {"max_turns": 12} and rec["wrappers"] == ""
        assert rec["policy"] == {"agent": "openai", "model": "solver", "sampling": {"temperature": 0.5}}
        assert rec["rewards"] == [t["reward"] for t in rec["turns"]]
        # The mock server returns text only: no turn claims token ids.
        assert all(t["token_source"] == "none" and t["completion_token_ids"] is None for t in rec["turns"])
        assert all(t["sampling"] == {"temperature": 0.5} for t in rec["turns"])
    math_ok = [r for r in records if r["env_id"] == MATH and r["status"] == "ok"]
    assert math_ok and all(r["grading_status"] == "ok" for r in math_ok)
    assert all(r["grading_status"] is None for r in records if r["env_id"] == GAME)  # games do not grade
    # A record that drops a field or claims ids without saying where they came from is caught.
    bad = dict(math_ok[0], env_version=None)
    del bad["seed"]
    assert any("seed" in p for p in record_problems(bad))
    forged = json.loads(json.dumps(math_ok[0]))
    forged["turns"][0]["completion_token_ids"] = [1, 2, 3]
    assert any("token_source 'none'" in p for p in record_problems(forged))
