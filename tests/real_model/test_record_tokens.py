"""``gem eval --record-tokens`` against SmolLM2-135M-Instruct on llama-cpp-python's server.

llama.cpp returns one text piece and one logprob per sampled token, not ids; GEM maps each piece
to the one vocabulary id with that text through the server's own tokenizer endpoints, checks
that the ids decode to the reply, and records ``token_source: "server_logprob_tokens"``. The test
checks that against the server itself: the recorded ids decode (``/extras/detokenize``) to the
recorded action, one logprob per id, every record conforms to the schema, and the requests asked
for logprobs. Sampling at temperature 0.8 with fixed seeds makes varied text (word pieces,
punctuation) in a few short episodes.
"""

from __future__ import annotations

import json
import math
import urllib.request
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "llama_cpp",
    reason="llama-cpp-python is not installed (a package outside GEM): pip install -e '.[llm]' in the GEM checkout",
)

from gem.cli import main  # noqa: E402
from gem.eval.runner import read_episodes  # noqa: E402
from gem.records.schema import record_problems  # noqa: E402

from .conftest import LlamaServer, RecordingProxy  # noqa: E402


def _post(url: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as reply:  # noqa: S310 -- loopback
        return json.loads(reply.read())


def test_record_tokens_llama_cpp(
    smollm2_server: LlamaServer, proxy: RecordingProxy, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    out = tmp_path / "run"
    argv = [
        "eval", "game:GuessTheNumber-v0-easy", "--agent", "openai", "--model", smollm2_server.model,
        "--base-url", proxy.base_url, "--out", str(out), "--episodes", "2", "--max-turns", "2",
        "--max-tokens", "24", "--temperature", "0.8", "--concurrency", "1", "--retries", "0",
        "--timeout", "300", "--no-progress", "--record-tokens", "--json",
    ]  # fmt: skip
    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    chats = [e for e in proxy.take() if e.path.endswith("/chat/completions")]
    assert chats and all(e.request.get("logprobs") is True and e.status == 200 for e in chats)
    records = read_episodes(out)
    assert len(records) == 2
    root = smollm2_server.base_url.rsplit("/v1", 1)[0]
    recovered = 0
    for record in records:
        assert record_problems(record) == []
        for turn in record["turns"]:
            if turn["token_source"] == "none":  # only for a reply that split a UTF-8 character
                assert "cannot be recovered" in turn["token_note"]
                continue
            assert turn["token_source"] == "server_logprob_tokens"
            ids, logprobs = turn["completion_token_ids"], turn["completion_logprobs"]
            assert ids and len(ids) == len(logprobs) == turn["usage"]["completion_tokens"]
            assert all(lp <= 0.0 and math.isfinite(lp) for lp in logprobs)
            assert _post(root + "/extras/detokenize", {"tokens": ids})["text"] == turn["action"]
            assert turn["prompt_token_ids"] is None  # llama.cpp does not return the prompt's ids
            assert isinstance(turn["token_drift"], bool)
            recovered += 1
    assert recovered >= 2
    overall = summary["overall"]
    assert overall["token_sources"].get("server_logprob_tokens") == recovered
    assert overall["token_drift"] is not None and overall["token_drift_turns"][1] == recovered


def test_record_tokens_off_asks_nothing(smollm2_server: LlamaServer, proxy: RecordingProxy, tmp_path: Path) -> None:
    out = tmp_path / "run"
    argv = [
        "eval", "game:GuessTheNumber-v0-easy", "--agent", "openai", "--model", smollm2_server.model,
        "--base-url", proxy.base_url, "--out", str(out), "--episodes", "1", "--max-turns", "1",
        "--max-tokens", "8", "--temperature", "0", "--concurrency", "1", "--retries", "0", "--no-progress",
    ]  # fmt: skip
    assert main(argv) == 0
    chats = [e for e in proxy.take() if e.path.endswith("/chat/completions")]
    assert chats and all("logprobs" not in e.request for e in chats)
    (record,) = read_episodes(out)
    assert [t["token_source"] for t in record["turns"]] == ["none"]
    assert "token_note" not in record["turns"][0]
