"""The token fields that ``--record-tokens`` and ``gem proxy`` write: ``server_logprob_tokens``,
``token_note`` and ``token_drift``, in the writer and the schema (both checkers)."""

from __future__ import annotations

import pytest

from gem.records import schema as schema_mod
from gem.records.schema import record_problems
from gem.records.writer import turn_tokens


def test_writer_keeps_note_and_drift_and_checks_the_new_source() -> None:
    fields = turn_tokens({"token_source": "server_logprob_tokens", "completion_token_ids": [3, 4],
                          "completion_logprobs": [-1.0, -0.5], "token_note": "mapped", "token_drift": True})
    assert fields["token_source"] == "server_logprob_tokens" and fields["completion_token_ids"] == [3, 4]
    assert fields["token_note"] == "mapped" and fields["token_drift"] is True
    none = turn_tokens({"token_note": "the server returned neither token ids nor logprobs"})
    assert none["token_source"] == "none" and none["token_note"].startswith("the server")
    assert "token_drift" not in none
    with pytest.raises(ValueError, match="without completion_token_ids"):
        turn_tokens({"token_source": "server_logprob_tokens", "completion_logprobs": [-1.0]})


@pytest.mark.parametrize("use_jsonschema", [False, True])
def test_schema_accepts_the_new_fields_and_refuses_bad_values(use_jsonschema, monkeypatch) -> None:
    if use_jsonschema:
        pytest.importorskip("jsonschema")
    else:
        import builtins

        real = builtins.__import__

        def no_jsonschema(name, *args, **kwargs):
            if name == "jsonschema":
                raise ImportError(name)
            return real(name, *args, **kwargs)

        monkeypatch.setattr(builtins, "__import__", no_jsonschema)
    from tests.records.test_schema import _episode
    from gem.eval.records import episode_record

    episode = _episode()
    calls = [{"token_source": "server_logprob_tokens", "completion_token_ids": [1], "completion_logprobs": [-0.1],
              "token_note": "n", "token_drift": False} for _ in episode.steps]
    record = episode_record(episode, 0, agent="a", model="m", calls=calls)
    assert record_problems(record) == []
    record["turns"][0]["token_drift"] = "yes"
    assert any("token_drift" in p for p in record_problems(record))
    record["turns"][0]["token_drift"] = None
    record["turns"][0]["token_source"] = "guessed"
    assert any("token_source" in p for p in record_problems(record))
    assert "server_logprob_tokens" in schema_mod.TOKEN_SOURCES
