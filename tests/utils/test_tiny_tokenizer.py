"""The tiny offline tokenizer: round trips, the chat template's roles, the cache."""

from __future__ import annotations

import pytest

from tests.conftest import needs_extra

needs_extra("rl")  # transformers and tokenizers

from gem.utils.tiny_tokenizer import (  # noqa: E402
    IM_END,
    IM_START,
    TOKENIZER_NAME,
    build_tiny_tokenizer,
    get_tiny_tokenizer,
)


@pytest.fixture(scope="module")
def tok(tmp_path_factory):
    return get_tiny_tokenizer(tmp_path_factory.mktemp("tok"))


@pytest.mark.parametrize("text", ["", "What is 2 + 3? \\boxed{5}", "héllo 世界 😀\n\ttabs", "<python>print(1)</python>"])
def test_round_trip(tok, text):
    assert tok.decode(tok.encode(text)) == text


def test_special_tokens_are_single_ids(tok):
    assert tok.convert_ids_to_tokens(tok.encode(IM_START)) == [IM_START]
    assert tok.eos_token == IM_END and tok.pad_token is not None and tok.eos_token_id != tok.pad_token_id
    assert 300 < len(tok) <= 1024


def test_chat_template_roles(tok):
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is 2 + 3?"},
        {"role": "assistant", "content": "<python>print(2 + 3)</python>"},
        {"role": "tool", "content": "5"},
    ]
    text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert text == (
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nWhat is 2 + 3?<|im_end|>\n"
        "<|im_start|>assistant\n<python>print(2 + 3)</python><|im_end|>\n<|im_start|>tool\n5<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    assert not tok.apply_chat_template(messages[:2], tokenize=False).endswith("<|im_start|>assistant\n")
    ids = tok.apply_chat_template(messages, tokenize=True, add_generation_prompt=True)
    ids = ids["input_ids"] if hasattr(ids, "keys") else ids
    assert tok.decode(ids) == text


def test_unknown_role_is_refused(tok):
    with pytest.raises(Exception, match="Unknown role"):
        tok.apply_chat_template([{"role": "narrator", "content": "x"}], tokenize=False)


def test_cached_on_disk_and_deterministic(tmp_path, tok):
    first = get_tiny_tokenizer(tmp_path)
    assert (tmp_path / TOKENIZER_NAME / "tokenizer.json").is_file()
    again = get_tiny_tokenizer(tmp_path)
    sample = "Guess a number between 1 and 20: \\boxed{10}"
    assert first.encode(sample) == again.encode(sample) == tok.encode(sample)
    assert build_tiny_tokenizer().get_vocab() == first.get_vocab()


def test_env_var_cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("GEM_CACHE_DIR", str(tmp_path))
    get_tiny_tokenizer()
    assert (tmp_path / TOKENIZER_NAME / "tokenizer.json").is_file()


def test_bad_vocab_size():
    with pytest.raises(ValueError):
        build_tiny_tokenizer(vocab_size=10)
