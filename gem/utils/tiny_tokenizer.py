"""A tiny ``transformers`` tokenizer, built offline, for tests, smoke runs and examples.

``get_tiny_tokenizer()`` returns a ``PreTrainedTokenizerFast``: a byte-level BPE (so any text, in any
script, encodes and decodes back exactly) trained in about a second on a small text written here,
with a ChatML-style chat template for the ``system``, ``user``, ``assistant`` and ``tool`` roles::

    <|im_start|>user
    What is 2 + 3?<|im_end|>
    <|im_start|>assistant

It is saved under a cache directory the first time (``$GEM_CACHE_DIR``, else ``~/.cache/gem``,
else the system temp dir) and loaded from there afterwards. Needs ``transformers`` and
``tokenizers`` (the ``rl`` extra). It is a stand-in with a real tokenizer's interface, not a
tokenizer for a real model.
"""

from __future__ import annotations

import logging
import os
import tempfile
import uuid
from pathlib import Path
from typing import Any, Optional, Union

from gem.errors import missing_extra

logger = logging.getLogger(__name__)

TOKENIZER_NAME = "gem-tiny-bpe-v1"
VOCAB_SIZE = 1024
PAD, EOS, IM_START, IM_END = "<|pad|>", "<|endoftext|>", "<|im_start|>", "<|im_end|>"
SPECIAL_TOKENS = [PAD, EOS, IM_START, IM_END]
ROLES = ("system", "user", "assistant", "tool")

CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{%- if message['role'] not in ['system', 'user', 'assistant', 'tool'] -%}"
    "{{ raise_exception('Unknown role ' ~ message['role'] ~ '; use system, user, assistant or tool.') }}"
    "{%- endif -%}"
    "{{ '<|im_start|>' ~ message['role'] ~ '\\n' ~ message['content'] ~ '<|im_end|>\\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<|im_start|>assistant\\n' }}{%- endif -%}"
)

# The training text: the kinds of strings GEM's envs and agents exchange (instructions, numbers,
# answers in \boxed{}, tool tags, code), so common pieces become single tokens.
CORPUS = r"""
You are playing Guess The Number. Guess a whole number between 1 and 20. After each guess you are
told whether the number is higher or lower. Put your guess in \boxed{}, for example \boxed{10}.
At turn 3, you guessed 12, and the target number is lower than 12. Your guess is correct!
Solve the problem step by step and put the final answer within \boxed{}. The answer is \boxed{42}.
What is 2 + 3? 2 + 3 = 5. What is 17 * 23? 17 * 23 = 391. Compute 1024 / 8 - 7 = 121.
Question: Who wrote the book? Answer: the author wrote it in 1999. <answer>Paris</answer>
<python>
import math
def solve(n):
    return sum(i * i for i in range(n))
print(solve(10))
</python>
Code execution result: 285
<search>capital of France</search> <information>Doc 1: Paris is the capital of France.</information>
<tool_call>{"name": "calculate", "arguments": {"expression": "2 + 3"}}</tool_call>
<tool_response>5</tool_response>
The quick brown fox jumps over the lazy dog. A wizard's job is to vex chumps quickly in fog.
Wordle: guess the five letter word. Green means right letter, right place; yellow, wrong place.
Mastermind, Minesweeper, Sudoku, Tower of Hanoi, Twenty Questions, Hangman, Crosswords.
The environment returns an observation, a reward, and whether the episode terminated or was truncated.
0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 100 1000 0.5 -1 3.14 1e-3
system user assistant tool: the roles of a chat. The user asks, the assistant answers, the tool returns.
def main() -> None:
    x = [1, 2, 3]
    if len(x) > 2 and x[0] == 1:
        print("yes", x)
    else:
        raise ValueError("no")
"""


def _require() -> tuple[Any, Any]:
    try:
        import tokenizers
        import transformers
    except ImportError as exc:
        raise missing_extra("The tiny tokenizer", "rl", "transformers and tokenizers") from exc
    return tokenizers, transformers


def default_cache_dir() -> Path:
    """Where the tokenizer is saved: ``$GEM_CACHE_DIR``, else ``~/.cache/gem``, else a temp dir."""
    env = os.environ.get("GEM_CACHE_DIR")
    if env:
        return Path(env)
    home = Path.home() / ".cache" / "gem"
    try:
        home.mkdir(parents=True, exist_ok=True)
        if os.access(home, os.W_OK):
            return home
    except OSError:
        pass
    return Path(tempfile.gettempdir()) / "gem-cache"


def build_tiny_tokenizer(vocab_size: int = VOCAB_SIZE) -> Any:
    """Train the byte-level BPE on ``CORPUS`` and wrap it as a ``PreTrainedTokenizerFast``."""
    if not isinstance(vocab_size, int) or vocab_size < 300:
        raise ValueError(f"vocab_size must be an int of at least 300 (256 bytes + merges), got {vocab_size!r}.")
    tokenizers, transformers = _require()
    from tokenizers import decoders, models, pre_tokenizers, trainers

    tok = tokenizers.Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS.splitlines(keepends=True), trainer=trainer)
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token=IM_END,
        pad_token=PAD,
        unk_token=None,
        model_max_length=32768,
        clean_up_tokenization_spaces=False,
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.name_or_path = TOKENIZER_NAME
    return fast


def save_tiny_tokenizer(path: Union[str, Path], vocab_size: int = VOCAB_SIZE) -> Path:
    """Build the tokenizer and save it to ``path`` (atomically: written aside, then renamed)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = path.parent / f".{path.name}.{uuid.uuid4().hex}"
    build_tiny_tokenizer(vocab_size).save_pretrained(str(staging))
    try:
        os.replace(staging, path)
    except OSError:  # another process saved it first: keep theirs
        import shutil

        shutil.rmtree(staging, ignore_errors=True)
    return path


def get_tiny_tokenizer(cache_dir: Optional[Union[str, Path]] = None) -> Any:
    """The tiny tokenizer, loaded from the cache (built and saved there on first use)."""
    _, transformers = _require()
    path = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    path = path / TOKENIZER_NAME
    if not (path / "tokenizer.json").is_file():
        logger.info("building the tiny tokenizer in %s", path)
        save_tiny_tokenizer(path)
    tokenizer = transformers.PreTrainedTokenizerFast.from_pretrained(str(path))
    if not getattr(tokenizer, "chat_template", None):  # older transformers keep it in a separate file
        tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer
