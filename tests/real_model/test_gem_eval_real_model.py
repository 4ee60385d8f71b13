"""``gem eval`` against a real model: SmolLM2-135M-Instruct on llama-cpp-python's OpenAI-compatible server.

Every test runs the ``gem eval`` command (``--agent openai``, so the real ``openai`` client) through
a recording proxy, on one env of a family, and checks the protocol, not the model's skill:

* every episode completes (``status == "ok"``) and no request got an HTTP error;
* the transcript in ``episodes.jsonl`` is exactly what the server answered: each turn's action is
  the text of the server's reply to that turn's request, each request holds the conversation so
  far, and the recorded messages are the last request plus the last reply;
* the first request's first user message holds the env's observation and its instruction
  (``info["suffix"]``), without which a model cannot know the answer format.

A 135M model seldom calls a tool on its own, so for the tool envs the proxy adds a llama.cpp GBNF
``grammar`` to the episode's first request: the model still writes the call (its code, its query),
but in the tool's syntax, and the tool's output really goes back to the server on the next turn.
Greedy decoding (temperature 0) and small ``max_tokens`` keep the module short.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Optional

import pytest

pytest.importorskip(
    "llama_cpp",
    reason="llama-cpp-python is not installed (a package outside GEM): pip install -e '.[llm]' in the GEM checkout",
)

import gem  # noqa: E402
from gem.cli import main  # noqa: E402
from gem.eval.runner import read_episodes  # noqa: E402
from gem.wrappers.wrapper_factory import get_wrapper_fns  # noqa: E402

from .conftest import Exchange, LlamaServer, RecordingProxy, get_json, llama_server  # noqa: E402

PYTHON_GRAMMAR = r'''root ::= "<python>\nprint(" expr ")\n</python>"
expr ::= [0-9 +*/().-]{1,40}'''
SEARCH_GRAMMAR = r'''root ::= "<search>" [A-Za-z ]{2,40} "</search>"'''


def run_eval(
    proxy: RecordingProxy,
    model: str,
    out: Path,
    env_id: str,
    *,
    wrappers: str = "",
    max_turns: int = 2,
    max_tokens: int = 48,
    episodes: int = 1,
) -> int:
    """``gem eval ENV_ID --agent openai`` through the proxy, greedy, one episode at a time."""
    argv = [
        "eval", env_id,
        "--agent", "openai",
        "--model", model,
        "--base-url", proxy.base_url,
        "--out", str(out),
        "--episodes", str(episodes),
        "--max-turns", str(max_turns),
        "--max-tokens", str(max_tokens),
        "--temperature", "0",
        "--concurrency", "1",
        "--retries", "0",
        "--timeout", "300",
        "--no-progress",
    ]  # fmt: skip
    if wrappers:
        argv += ["--wrappers", wrappers]
    return main(argv)


def reset_info(env_id: str, wrappers: str, seed: int) -> tuple[str, dict[str, Any]]:
    """The first observation and info of ``env_id`` (with ``wrappers``) at ``seed``, made afresh."""
    env = gem.make(env_id)
    for wrap in get_wrapper_fns(wrappers):
        env = wrap(env)
    try:
        return env.reset(seed=seed)
    finally:
        env.close()


def chat_exchanges(exchanges: list[Exchange]) -> list[Exchange]:
    return [e for e in exchanges if e.path.rstrip("/").endswith("/chat/completions")]


def reply_text(exchange: Exchange) -> str:
    return exchange.response["choices"][0]["message"]["content"] or ""


def check_run(
    out: Path, exchanges: list[Exchange], env_id: str, model: str, wrappers: str = "", instruction: bool = True
) -> dict[str, Any]:
    """The protocol checks of the module docstring on a one-episode run; returns its record."""
    records = [r for r in read_episodes(out) if r["env_id"] == env_id]
    assert len(records) == 1, f"expected the one episode of {env_id}, got {len(records)}"
    (record,) = records
    bad = [(e.status, str(e.response)[:600]) for e in exchanges if e.status >= 400]
    assert not bad, f"the server answered HTTP errors: {bad}"
    assert record["status"] == "ok" and record["error"] is None, record["error"]
    # One episode at a time (run_eval): the run's chat requests are that episode's turns, in order.
    chats = chat_exchanges(exchanges)
    assert len(chats) == record["num_turns"] >= 1, "one request per turn"
    for exchange, turn in zip(chats, record["turns"]):
        assert exchange.request["model"] == model and exchange.response["model"] == model
        # The action the env got is the server's reply, character for character; so are the token counts.
        assert turn["action"] == reply_text(exchange)
        usage = exchange.response["usage"]
        assert turn["usage"]["prompt_tokens"] == usage["prompt_tokens"]
        assert turn["usage"]["completion_tokens"] == usage["completion_tokens"]
        # Every request carries the whole conversation so far, as recorded, in text.
        sent = exchange.request["messages"]
        assert all(isinstance(m["content"], str) for m in sent), "message content must be text"
        assert record["messages"][: len(sent)] == sent
        assert record["messages"][len(sent)] == {"role": "assistant", "content": turn["action"]}
    last = {"role": "assistant", "content": record["turns"][-1]["action"]}
    assert record["messages"] == chats[-1].request["messages"] + [last]
    if instruction:  # the first user message holds the observation and the env's instruction
        observation, info = reset_info(env_id, wrappers, record["seed"])
        assert observation == record["observation0"]
        first_user = next(m for m in chats[0].request["messages"] if m["role"] == "user")["content"]
        assert observation.strip() in first_user
        suffix = info.get("suffix")
        assert suffix, f"{env_id} gives no instruction in info['suffix']"
        assert suffix.strip() in first_user, (
            f"the env's instruction {suffix!r} is not in the first user message {first_user!r}"
        )
    return record


def check_tool_turn(record: dict[str, Any], exchanges: list[Exchange]) -> None:
    """The tool ran on turn 1 and its output went back to the server, which answered it."""
    first = record["turns"][0]
    assert first["info"]["use_tool"] is True and record["tool_calls"] >= 1
    assert record["num_turns"] >= 2, "the episode ended before the tool's output reached the model"
    second = chat_exchanges(exchanges)[1]
    assert second.status == 200
    last_input = second.request["messages"][-1]
    assert last_input["role"] != "assistant"
    assert first["observation"].strip() and first["observation"].strip() in last_input["content"]


# ----------------------------------------------------------------------------------------- the server
def test_server_serves_the_model_and_stops_with_its_whole_process_group() -> None:
    with llama_server() as server:
        models = get_json(f"{server.base_url}/models", timeout=10)
        assert [m["id"] for m in models["data"]] == [server.model]
        process = server.process
        assert process.poll() is None
        pgid = os.getpgid(process.pid)
        assert pgid == process.pid != os.getpgid(0), "the server must lead its own process group"
    assert process.poll() is not None, "the server is still running"
    with pytest.raises(ProcessLookupError):
        os.killpg(pgid, 0)  # nothing of its process group is left
    with pytest.raises(OSError):  # and nothing listens on its port
        get_json(f"{server.base_url}/models", timeout=2)


# ------------------------------------------------------------------------------------------- families
SIMPLE = [
    # (env id, max turns, max tokens)
    ("game:GuessTheNumber-v0", 3, 24),
    ("code:Bundled", 1, 96),
    ("rg:basic_arithmetic", 1, 32),
    ("logic:RuleReasoning-d0", 1, 32),
    ("multi:TicTacToe-v0-vs-scripted", 2, 16),  # a multi-agent game through its single-agent view
]


@pytest.mark.parametrize(("env_id", "max_turns", "max_tokens"), SIMPLE, ids=[s[0] for s in SIMPLE])
def test_gem_eval_plays_each_family_against_a_real_model(
    smollm2_server: LlamaServer, proxy: RecordingProxy, tmp_path: Path, env_id: str, max_turns: int,
    max_tokens: int,
) -> None:
    rc = run_eval(proxy, smollm2_server.model, tmp_path, env_id, max_turns=max_turns, max_tokens=max_tokens)
    assert rc == 0
    record = check_run(tmp_path, proxy.take(), env_id, smollm2_server.model)
    assert record["terminated"] or record["truncated"]
    summary = json.loads((tmp_path / "summary.json").read_text())["envs"][env_id]
    assert summary["episodes"] == 1 and summary["errors"] == 0 and summary["completion_tokens"] > 0


def _first_request_grammar(grammar: str):
    """Add ``grammar`` to an episode's first request (no assistant turn yet), to no other."""

    def extra(body: dict[str, Any], headers: dict[str, str]) -> Optional[dict[str, Any]]:
        first = not any(m.get("role") == "assistant" for m in body.get("messages", []))
        return {"grammar": grammar} if first else None

    return extra


def test_math_with_the_python_tool_sends_the_tool_output_back(
    smollm2_server: LlamaServer, proxy: RecordingProxy, tmp_path: Path
) -> None:
    env_id, wrappers = "math:Arithmetic", "python_tool"
    proxy.extra_fields = _first_request_grammar(PYTHON_GRAMMAR)
    rc = run_eval(proxy, smollm2_server.model, tmp_path, env_id, wrappers=wrappers, max_turns=2, max_tokens=48)
    assert rc == 0
    exchanges = proxy.take()
    record = check_run(tmp_path, exchanges, env_id, smollm2_server.model, wrappers)
    assert record["turns"][0]["action"].startswith("<python>\nprint(")
    assert "Code execution result" in record["turns"][0]["observation"]  # the sandbox really ran it
    check_tool_turn(record, exchanges)


def test_qa_with_search_on_a_local_retrieval_server(
    smollm2_server: LlamaServer, proxy: RecordingProxy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gem.envs.qa_search.world import get_world
    from gem.tools.search_engine.launch import serve_app_in_thread
    from gem.tools.search_engine.retrieval_server import create_retrieval_app
    from gem.tools.search_engine.retrievers import BM25Retriever

    queries: list[str] = []

    class CountingRetriever(BM25Retriever):
        def search(self, batch, topk):  # noqa: ANN001 -- the retriever's signature
            queries.extend(batch)
            return super().search(batch, topk)

    env_id, wrappers = "qa:FictionalSearch", "search_tool"
    app = create_retrieval_app(CountingRetriever(get_world().documents()), default_topk=3)
    with serve_app_in_thread(app) as search:
        monkeypatch.setenv("SEARCH_URL", search.url)
        proxy.extra_fields = _first_request_grammar(SEARCH_GRAMMAR)
        rc = run_eval(proxy, smollm2_server.model, tmp_path, env_id, wrappers=wrappers, max_turns=2, max_tokens=48)
    assert rc == 0
    exchanges = proxy.take()
    record = check_run(tmp_path, exchanges, env_id, smollm2_server.model, wrappers)
    action = record["turns"][0]["action"]
    assert action.startswith("<search>") and action.endswith("</search>")
    assert queries == [action[len("<search>") : -len("</search>")].strip()]  # the server got the model's query
    check_tool_turn(record, exchanges)


def test_a_multi_agent_id_is_refused_before_any_request_or_played_with_text(
    smollm2_server: LlamaServer, proxy: RecordingProxy, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    env_id = "multi:TicTacToe-v0"  # the multi-agent API: observations are dicts keyed by agent
    rc = run_eval(proxy, smollm2_server.model, tmp_path, env_id, max_turns=2, max_tokens=16)
    exchanges = proxy.take()
    if rc != 0:  # refused: a clear message, and not one request reached the server
        assert exchanges == []
        assert "multi" in capsys.readouterr().err.lower()
        return
    # Played: through a single-agent view, so every message the server got is text.
    check_run(tmp_path, exchanges, env_id, smollm2_server.model, instruction=False)
