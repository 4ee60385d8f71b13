"""``gem eval`` and ``gem run`` say what went wrong: bad arguments, a server that is down or does not
serve the model, runs where every episode failed; and the summary table stays narrow."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

import pytest

from gem.cli import main
from gem.eval.runner import format_summary, read_episodes, summarize_dir
from tests.conftest import needs_extra

GAME = "game:GuessTheNumber-v0-easy"
MATH = "math:Arithmetic"


def _closed_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    return port


def _gem(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gem.cli", *args], capture_output=True, text=True, timeout=120)


# ------------------------------------------------------------------------------ bad arguments
@pytest.mark.parametrize("command", ["eval", "run"])
def test_an_unknown_wrapper_is_one_line_naming_the_valid_ones(command, tmp_path) -> None:
    proc = _gem(command, MATH, "--agent", "random", "--wrappers", "python_tools", "--out", str(tmp_path / "r"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    error = proc.stderr.strip().splitlines()[-1]
    assert "unknown wrapper 'python_tools'" in error and "did you mean 'python_tool'" in error
    assert "concat_chat" in error  # the valid names
    assert not (tmp_path / "r" / "episodes.jsonl").exists()


@pytest.mark.parametrize("value", ["0", "-3", "x"])
@pytest.mark.parametrize("command", ["eval", "run"])
def test_episodes_must_be_at_least_one(command, value, tmp_path) -> None:
    proc = _gem(command, GAME, "--agent", "random", "--episodes", value, "--out", str(tmp_path / "r"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "argument --episodes" in proc.stderr.strip().splitlines()[-1]


def test_run_and_eval_share_their_flag_names(tmp_path, capsys) -> None:
    # gem run: the new names and the old ones
    for flags in (["--max-turns", "2", "--no-progress"], ["--max-steps", "2", "--quiet"]):
        assert main(["run", GAME, "--agent", "random", "--episodes", "2", "--json", *flags]) == 0
        assert json.loads(capsys.readouterr().out)["mean_turns"] == 2.0  # cut after 2 steps
    # gem eval: the old names of gem run as aliases
    for n, flags in enumerate((["--max-turns", "2", "--no-progress"], ["--max-steps", "2", "--quiet"])):
        out = tmp_path / f"e{n}"
        assert main(["eval", GAME, "--agent", "random", "--episodes", "2", "--out", str(out), *flags]) == 0
        assert {r["num_turns"] for r in read_episodes(out)} == {2}
    capsys.readouterr()


def test_run_takes_wrappers_and_writes_out_for_view_and_plot(tmp_path, capsys) -> None:
    out = tmp_path / "run"
    assert main(["run", MATH, "--agent", "gold", "--episodes", "3", "--wrappers", "python_tool", "--out", str(out),
                 "--no-progress"]) == 0
    records = read_episodes(out)
    assert [r["key"] for r in records] == [f"{MATH}#{k}" for k in range(3)]
    assert all(r["success"] and r["wrappers"] == "python_tool" for r in records)
    assert "Use the python tool" in records[0]["observation0"] or "<python>" in records[0]["observation0"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["envs"][MATH]["success_rate"] == 1.0
    assert main(["run", MATH, "--agent", "gold", "--episodes", "1", "--out", str(out)]) == 2  # never overwrites
    assert "exists" in capsys.readouterr().err


# ----------------------------------------------------------------------- the server, checked once
def test_a_server_that_is_down_is_one_error_before_any_episode(tmp_path, capsys) -> None:
    needs_extra("eval")  # the OpenAI agent
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    start = time.monotonic()
    code = main(["eval", MATH, "--model", "m", "--base-url", url, "--out", str(tmp_path / "r"), "--no-progress",
                 "--episodes", "4", "--retries", "3", "--backoff", "1"])
    assert code == 2
    assert time.monotonic() - start < 15  # not 4 episodes x 4 tries with backoff
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "cannot reach the model server at " + url in err
    assert read_episodes(tmp_path / "r") == []


def test_an_unknown_model_is_named_before_any_request(mock_server, tmp_path, capsys) -> None:
    server = mock_server(env_ids=[MATH])
    code = main(["eval", MATH, "--model", "gpt-nope", "--base-url", server.base_url, "--out", str(tmp_path / "r"),
                 "--no-progress"])
    assert code == 2 and server.requests == 0
    err = capsys.readouterr().err
    assert "does not serve model 'gpt-nope'; it serves: " in err and "solver" in err


def test_when_every_episode_fails_the_first_error_of_each_kind_is_shown(mock_server, tmp_path, capsys) -> None:
    failing = mock_server(env_ids=[MATH], fail_seeds=[0, 1])
    code = main(["eval", MATH, "--model", "solver", "--base-url", failing.base_url, "--out", str(tmp_path / "r"),
                 "--no-progress", "--episodes", "2", "--retries", "0"])
    assert code == 1
    err = capsys.readouterr().err
    assert "The first error of each kind:" in err
    line = next(ln for ln in err.splitlines() if ln.startswith("  model ModelRequestError"))
    assert "(InternalServerError)" in line and "is set to fail" in line
    assert sum(ln.startswith("  ") for ln in err.splitlines()) == 1  # one kind, shown once


# ------------------------------------------------------------------------------ the table's width
def _summary(env_ids: list[str], **values) -> dict:
    base = {"episodes": 64, "errors": 0, "infra_errors": 0, "ungraded": 0, "success_rate": 0.5, "mean_reward": 0.5,
            "mean_task_reward": 0.5, "mean_tool_bonus": 0.0, "mean_turns": 1.0, "mean_tool_calls": 0.0,
            "cut_replies": 0, "completion_tokens": 0, "pass@1": 0.5}
    return {"envs": {e: {**base, **values} for e in env_ids}, "overall": {}}


def test_the_table_fits_100_columns_and_leaves_out_columns_that_are_zero() -> None:
    quiet = format_summary(_summary([MATH, GAME]))
    assert quiet.split("\n")[0].split() == ["env_id", "episodes", "success", "reward", "turns"]
    nothing = format_summary(_summary([MATH], success_rate=0.0, mean_reward=0.0, mean_task_reward=0.0,
                                      **{"pass@1": 0.0}))
    assert nothing.split("\n")[0].split() == ["env_id", "episodes", "success", "reward", "turns"]  # 0 is a score
    busy = _summary(
        ["rg:propositional_logic_with_a_long_name", "game:GuessTheNumber-v0-easy-with-a-long-variant", MATH],
        errors=12, infra_errors=3, ungraded=4, mean_task_reward=0.25, mean_tool_bonus=0.25, mean_tool_calls=2.5,
        cut_replies=130, completion_tokens=12345678, **{"pass@1": 0.4, "pass@2": 0.6, "pass@4": 0.7, "pass@8": 0.8},
    )
    table = format_summary(busy)
    lines = table.rstrip("\n").split("\n")
    assert max(map(len, lines)) <= 100, table
    # the columns that do not fit go on in a second table, with the env ids again
    first, second = table.rstrip("\n").split("\n\n")
    headings = first.split("\n")[0].split() + second.split("\n")[0].split()[1:]
    assert headings == ["env_id", "episodes", "errors", "infra", "ungraded", "success", "pass@1", "pass@2",
                        "pass@4", "pass@8", "reward", "task", "bonus", "turns", "tools", "cut", "out_tok"]
    rows = first.split("\n")[1:]
    assert rows[2].startswith(MATH + " ")  # a short id is never cut
    assert rows[0].startswith("rg:") and "~" in rows[0].split()[0]  # a long one is cut in the middle
    assert len(format_summary(busy, width=300).split("\n")[0]) > 100  # in one table when there is room


def test_the_printed_table_of_a_real_run_fits_100_columns(tmp_path, capsys) -> None:
    assert main(["eval", GAME, "game:Minesweeper-v0-easy", "game:Sudoku-v0-easy", "--agent", "solver", "--episodes", "3",
                 "--repeats", "2", "--out", str(tmp_path / "r"), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert max(len(line) for line in printed.splitlines()[:-1]) <= 100, printed
    assert "pass@2" in printed and GAME in printed
    assert summarize_dir(tmp_path / "r")["envs"][GAME]["episodes"] == 6


def test_a_bad_line_in_episodes_jsonl_is_named_and_the_rest_still_counts(tmp_path) -> None:
    assert main(["run", MATH, "--agent", "gold", "--episodes", "2", "--out", str(tmp_path), "--no-progress"]) == 0
    path = tmp_path / "episodes.jsonl"
    good = path.read_text().splitlines()
    hostile = [
        "{not json",
        "[1, 2]",
        json.dumps({"key": 5, "env_id": MATH}),
        json.dumps({**json.loads(good[0]), "key": "x#9", "index": 9, "total_reward": "1e9"}),
        json.dumps({**json.loads(good[0]), "key": "x#8", "index": 8, "turns": ["x"]}),
        "1" * 100 + "[" * 100_000,
    ]
    path.write_text("\n".join([good[0], *hostile, good[1]]) + "\n")
    summary = summarize_dir(tmp_path)
    assert summary["envs"][MATH]["episodes"] == 2 and summary["envs"][MATH]["success_rate"] == 1.0
    problems = summary["problems"]
    assert [p.split(": ", 1)[0] for p in problems] == [f"{path} line {n}" for n in range(2, 8)]
    assert "not a JSON object but list" in problems[1] and "field 'key' must be str" in problems[2]
    assert "field 'total_reward' must be int or float or null" in problems[3]
