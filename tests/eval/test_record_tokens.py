"""``gem eval --record-tokens`` where the server returns no ids (the mock server), and how a chat
completion's JSON is read for ids (vLLM's shapes, llama.cpp's pieces, hostile replies)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gem.cli import main
from gem.eval.runner import read_episodes
from gem.eval.summary import format_tokens, token_stats
from gem.records.schema import record_problems
from tests.conftest import needs_extra

GAME = "game:GuessTheNumber-v0-easy"


def test_server_without_ids_says_none_in_records_and_summary(mock_server, tmp_path: Path, capsys) -> None:
    server = mock_server(env_ids=[GAME])
    out = tmp_path / "run"
    argv = ["eval", GAME, "--model", "solver", "--base-url", server.base_url, "--out", str(out), "--no-progress",
            "--episodes", "2", "--record-tokens"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    bodies = [r["body"] for r in server.requests_log]
    assert bodies and all(b.get("logprobs") is True and b.get("return_token_ids") is True for b in bodies)
    records = read_episodes(out)
    turns = [t for r in records for t in r["turns"]]
    assert turns and all(t["token_source"] == "none" and t["completion_token_ids"] is None for t in turns)
    assert all(t["token_note"] == "the server returned neither token ids nor logprobs" for t in turns)
    assert all(record_problems(r) == [] for r in records)
    summary = json.loads((out / "summary.json").read_text())["overall"]
    assert summary["token_sources"] == {"none": len(turns)} and summary["token_drift"] is None
    assert f"token ids: {len(turns)} turns none (none: the server returned neither token ids nor logprobs)" in printed


def _reply(choice: dict, **top) -> dict:
    return {"choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, **choice}], **top}


def _lp(*pairs) -> dict:
    return {"content": [{"token": t, "logprob": lp, "top_logprobs": []} for t, lp in pairs]}


def test_vllm_token_ids_and_prompt_ids_are_server_ids() -> None:
    needs_extra("eval")
    from gem.agents.openai_agent import server_token_fields

    got = server_token_fields(_reply({"token_ids": [5, 6], "logprobs": _lp(("h", -0.5), ("i", -0.25))},
                                     prompt_token_ids=[1, 2, 3]))
    assert got == {"token_source": "server", "prompt_token_ids": [1, 2, 3], "completion_token_ids": [5, 6],
                   "completion_logprobs": [-0.5, -0.25], "token_note": None}
    # return_tokens_as_token_ids: the logprob tokens are "token_id:N"
    got = server_token_fields(_reply({"logprobs": _lp(("token_id:7", -1.0), ("token_id:8", -2.0))}))
    assert got["token_source"] == "server" and got["completion_token_ids"] == [7, 8]
    assert got["completion_logprobs"] == [-1.0, -2.0] and got["prompt_token_ids"] is None
    # ids without matching logprobs keep the ids, not the logprobs
    got = server_token_fields(_reply({"token_ids": [5, 6], "logprobs": _lp(("h", -0.5))}))
    assert got["completion_token_ids"] == [5, 6] and got["completion_logprobs"] is None and got["token_note"]


def test_sglang_token_ids_and_prompt_ids_on_the_choice_are_server_ids() -> None:
    """SGLang's chat reply (return_token_ids, return_prompt_token_ids) puts both lists on the choice."""
    needs_extra("eval")
    from gem.agents.openai_agent import TOKEN_EXTRA_BODY, server_token_fields

    assert TOKEN_EXTRA_BODY["return_token_ids"] and TOKEN_EXTRA_BODY["return_prompt_token_ids"]
    got = server_token_fields(_reply({"token_ids": [9, 10], "prompt_token_ids": [1, 4],
                                      "logprobs": _lp(("h", -0.5), ("i", -0.125))}))
    assert got == {"token_source": "server", "prompt_token_ids": [1, 4], "completion_token_ids": [9, 10],
                   "completion_logprobs": [-0.5, -0.125], "token_note": None}
    # the response-level list (vLLM's place) wins when both are there
    got = server_token_fields(_reply({"token_ids": [9], "prompt_token_ids": [1]}, prompt_token_ids=[2]))
    assert got["prompt_token_ids"] == [2]


@pytest.mark.parametrize(
    "reply, note",
    [
        (_reply({}), "neither token ids nor logprobs"),
        (_reply({"token_ids": [-1, 2]}), "neither token ids nor logprobs"),
        (_reply({"token_ids": "12"}), "neither token ids nor logprobs"),
        (_reply({"logprobs": _lp(("a", float("nan")))}), "malformed"),
        (_reply({"logprobs": _lp(("a", "x"))}), "malformed"),
        ({"choices": "nope"}, "neither token ids nor logprobs"),
        ({}, "neither token ids nor logprobs"),
    ],
)
def test_hostile_or_empty_replies_give_none_with_a_note(reply: dict, note: str) -> None:
    needs_extra("eval")
    from gem.agents.openai_agent import server_token_fields

    got = server_token_fields(reply)
    assert got["token_source"] == "none" and got["completion_token_ids"] is None and note in got["token_note"]


def test_pieces_are_handed_back_for_exact_mapping_not_ids() -> None:
    needs_extra("eval")
    from gem.agents.openai_agent import server_token_fields

    got = server_token_fields(_reply({"logprobs": _lp(("h", -0.5), ("i", -0.25))}))
    assert got["token_source"] == "none" and got["completion_token_ids"] is None
    assert got["pieces"] == ["h", "i"] and got["logprob_values"] == [-0.5, -0.25]


def test_token_stats_and_line() -> None:
    turns = [
        {"token_source": "server", "token_drift": False},
        {"token_source": "server", "token_drift": True},
        {"token_source": "server", "token_drift": None},
        {"token_source": "none", "token_note": "a piece split a character"},
    ]
    stats = token_stats(turns)
    assert stats["token_sources"] == {"server": 3, "none": 1}
    assert stats["token_drift"] == 0.5 and stats["token_drift_turns"] == [1, 2]
    line = format_tokens(stats)
    assert "3 turns server" in line and "none: a piece split a character" in line and "token_drift 0.500" in line
    assert format_tokens(token_stats([{"token_source": "none"}])) == ""  # not asked: nothing to say


def test_a_strict_server_gets_the_standard_options_and_text_pieces_stay_none() -> None:
    """OpenAI's own API refuses vLLM's fields: the agent asks again with logprobs only, and
    logprob token text without a vocabulary endpoint gives ``none``, never guessed ids."""
    needs_extra("eval")
    import httpx
    import openai

    from gem.agents.openai_agent import OpenAIAgent

    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append(body)
        if "return_token_ids" in body:
            return httpx.Response(400, json={"error": {"message": "Unrecognized request argument supplied: return_token_ids"}})
        return httpx.Response(200, json={
            "id": "x", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Hi!"},
                         "logprobs": {"content": [{"token": "Hi", "logprob": -0.1, "bytes": None, "top_logprobs": []},
                                                  {"token": "!", "logprob": -0.2, "bytes": None, "top_logprobs": []}]}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
        })

    base = "http://127.0.0.1:9/v1"  # the tokenizer endpoints beside it cannot be reached
    agent = OpenAIAgent("m", base_url=base, record_tokens=True, max_retries=0, timeout_s=5)
    agent._client = openai.AsyncOpenAI(base_url=base, api_key="k", max_retries=0,
                                       http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)))
    import asyncio

    text, call = asyncio.run(agent.complete([{"role": "user", "content": "hello"}]))
    assert text == "Hi!" and len(seen) == 2
    assert seen[0]["return_token_ids"] is True and "return_token_ids" not in seen[1]
    assert seen[1]["logprobs"] is True and seen[1]["top_logprobs"] == 0
    assert call["token_source"] == "none" and call["completion_token_ids"] is None
    assert "no vocabulary endpoint" in call["token_note"]
