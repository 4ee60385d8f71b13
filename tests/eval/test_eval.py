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

from gem.cli import main
from gem.eval.runner import (
    EvalConfig,
    EvalRunner,
    pass_at_k,
    read_episodes,
    summarize_records,
)

GAME = "game:GuessTheNumber-v0-easy"
MATH = "math:Arithmetic"


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
    server = mock_server()
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


def test_failed_request_is_recorded_and_run_goes_on(mock_server, tmp_path) -> None:
    server = mock_server(fail_seeds=[1])
    out = tmp_path / "run"
    assert _eval(server, out, GAME, extra=("--episodes", "3", "--retries", "1")) == 0
    by_key = {r["key"]: r for r in read_episodes(out)}
    bad = by_key[f"{GAME}#1"]
    assert bad["status"] == "error"
    assert bad["error"]["stage"] == "model" and bad["error"]["turn"] == 1 and "500" in bad["error"]["message"]
    assert by_key[f"{GAME}#0"]["status"] == by_key[f"{GAME}#2"]["status"] == "ok"
    s = json.loads((out / "summary.json").read_text())["envs"][GAME]
    assert s["errors"] == 1 and s["errors_by_stage"] == {"model": 1} and s["completed"] == 2


def test_resume_runs_only_missing_episodes(mock_server, tmp_path) -> None:
    server = mock_server()
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
    failing = mock_server(fail_seeds=[0])
    assert _eval(failing, out, MATH, extra=("--episodes", "2", "--retries", "0")) == 0
    working = mock_server()
    assert _eval(working, out, MATH, extra=("--episodes", "2", "--retries", "0")) == 0
    assert working.requests == 1
    s = json.loads((out / "summary.json").read_text())["envs"][MATH]
    assert s["errors"] == 0 and s["success_rate"] == 1.0 and s["episodes"] == 2


def test_killed_subprocess_then_rerun_finishes_missing(mock_server, tmp_path) -> None:
    server = mock_server(delay_s=0.15)
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
    cfg = EvalConfig(env_ids=[GAME], out=str(out), agent="random", episodes=8, repeats=4, progress=False)
    summary = EvalRunner(cfg).run()["envs"][GAME]
    records = read_episodes(out)
    assert {r["seed"] for r in records} == {0, 1}  # 8 episodes = 2 problems x 4 samples
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
