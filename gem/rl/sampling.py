"""Batched sampling from a ``transformers`` causal LM: ``generate`` (the baseline) and a static-cache loop.

* :func:`sample_plain` calls ``model.generate``. ``generate`` samples from torch's *global* random
  stream, so it runs inside ``torch.random.fork_rng`` seeded from the caller's ``torch.Generator``:
  the caller's global state is restored afterwards and runs are reproducible.
* :func:`sample_static` is a hand-written decoding loop over a preallocated
  ``transformers.StaticCache``: every decode step has the same shapes (one token per row, a
  full-length attention mask, one cache position), so ``torch.compile`` (``compile=True``; on CUDA
  with CUDA graphs) compiles it once and reuses it. It samples with the caller's
  ``torch.Generator``, records the tempered log-probs of the sampled tokens as it goes (no second
  forward pass) and reuses its cache between calls of the same size. Prompt widths are rounded up to
  a multiple of ``pad_multiple`` so that batches of different widths share compiled graphs.

* :func:`sample_prefix` is a decoding loop over a ``transformers.DynamicCache`` that runs the
  prompt pass once per *distinct* prompt and copies its cache to every row that shares it (many
  GEM first turns are the same prompt: a game's rules without its hidden target), then decodes all
  rows together, recording the sampled tokens' log-probs as it goes (no second forward pass). On a
  CPU the prompt pass dominates a step, so for a batch of identical prompts this cuts most of it.

Greedy decoding (``greedy=True``) gives the same tokens with all three (tested on the tiny model).
All take left-padded prompts and return, per row, the response ids up to and including the first
EOS.

Per-row random streams: ``generator`` may also be a list with one ``torch.Generator`` per row. Each
row then draws its tokens from its own stream only, so a row's tokens do not depend on which other
rows share its batch (the async collector relies on it: an episode's tokens are the same in any
batch). The two decoding loops draw each row's token with ``torch.multinomial`` on its own
generator; :func:`sample_plain` adds Gumbel noise from each row's generator to the tempered logits
and decodes greedily, which samples from the same distribution (the Gumbel-max trick).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

SAMPLERS = ("plain", "static", "prefix")

Generators = torch.Generator | Sequence[torch.Generator] | None


def left_pad(prompt_ids: Sequence[Sequence[int]], pad_id: int, multiple: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    """Left-pad prompts to a ``(B, W)`` id tensor and its mask; ``W`` is rounded up to ``multiple``."""
    width = max(len(p) for p in prompt_ids)
    width = -(-width // multiple) * multiple
    ids = torch.full((len(prompt_ids), width), pad_id, dtype=torch.long)
    attn = torch.zeros_like(ids)
    for i, p in enumerate(prompt_ids):
        if p:
            ids[i, width - len(p):] = torch.tensor(list(p), dtype=torch.long)
            attn[i, width - len(p):] = 1
    return ids, attn


def _row_generators(generator: Generators, batch: int) -> list[torch.Generator] | None:
    """``generator`` as a list of one generator per row, or ``None`` for a single (or no) generator."""
    if generator is None or isinstance(generator, torch.Generator):
        return None
    rows = list(generator)
    if len(rows) != batch:
        raise ValueError(f"Got {len(rows)} generators for {batch} prompts; give one per prompt or a single one.")
    return rows


class _GumbelRows:
    """A ``generate`` logits processor: tempered log-probs plus Gumbel noise drawn from each row's
    own generator, so that greedy decoding samples each row from its own stream."""

    def __init__(self, generators: list[torch.Generator], temperature: float) -> None:
        self.generators = generators
        self.temperature = temperature

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        logp = torch.log_softmax(scores.float() / self.temperature, dim=-1)
        noise = torch.stack([_gumbel(logp.shape[-1], g, logp.device) for g in self.generators])
        return logp + noise


def _gumbel(n: int, generator: torch.Generator, device: torch.device) -> torch.Tensor:
    u = torch.rand(n, generator=generator, device=generator.device).to(device)
    return -torch.log(-torch.log(u.clamp(min=1e-20, max=1.0 - 1e-7)))


def _trim(rows: list[list[int]], eos_id: int | None) -> list[list[int]]:
    out = []
    for row in rows:
        if eos_id is not None and eos_id in row:
            row = row[:row.index(eos_id) + 1]
        out.append(row)
    return out


def sample_plain(
    model: Any,
    prompt_ids: Sequence[Sequence[int]],
    *,
    max_new_tokens: int,
    pad_id: int,
    eos_id: int | None,
    temperature: float = 1.0,
    greedy: bool = False,
    min_new_tokens: int = 0,
    generator: Generators = None,
) -> list[list[int]]:
    """Response ids from ``model.generate`` (global RNG forked and seeded from ``generator``; with
    one generator per row, Gumbel-max sampling from each row's own stream)."""
    device = next(model.parameters()).device
    ids, attn = left_pad(prompt_ids, pad_id)
    kwargs: dict[str, Any] = {"do_sample": False} if greedy else {
        "do_sample": True, "temperature": temperature, "top_k": 0, "top_p": 1.0}
    rows = _row_generators(generator, len(prompt_ids))
    if rows is not None and not greedy:
        from transformers import LogitsProcessorList

        kwargs = {"do_sample": False, "logits_processor": LogitsProcessorList([_GumbelRows(rows, temperature)])}
        generator = None
    if min_new_tokens:
        kwargs["min_new_tokens"] = min_new_tokens
    seed = None
    if generator is not None:  # drawn on the generator's own device: a CUDA generator cannot fill a CPU tensor
        seed = int(torch.randint(0, 2**62, (1,), generator=generator, device=generator.device))
    devices = [device.index or 0] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        if seed is not None:
            torch.manual_seed(seed)
        out = model.generate(
            input_ids=ids.to(device), attention_mask=attn.to(device), max_new_tokens=max_new_tokens,
            pad_token_id=pad_id, eos_token_id=eos_id, **kwargs,
        )
    return _trim(out[:, ids.shape[1]:].tolist(), eos_id)


class StaticSampler:
    """Decoding with a preallocated static KV cache (optionally ``torch.compile``-d).

    Args:
        model: a ``transformers`` causal LM whose architecture supports ``StaticCache``.
        compile: compile the one-token decode step (``mode="reduce-overhead"`` on CUDA, default
            mode elsewhere). The first call of each batch shape pays the compilation.
        pad_multiple: prompt widths are rounded up to this, so batch shapes repeat.
    """

    def __init__(self, model: Any, compile: bool = False, pad_multiple: int = 32) -> None:
        if pad_multiple < 1:
            raise ValueError(f"pad_multiple must be at least 1, got {pad_multiple!r}.")
        self.model = model
        self.pad_multiple = pad_multiple
        self.compile = compile
        self._caches: dict[tuple[int, int, Any, Any], Any] = {}
        self._step: Any = None

    def _cache(self, batch: int, length: int, device: torch.device, dtype: torch.dtype) -> Any:
        from transformers import StaticCache

        key = (batch, length, device, dtype)
        cache = self._caches.get(key)
        if cache is None:
            self._caches.clear()  # one live cache: memory stays bounded
            cache = StaticCache(config=self.model.config, max_cache_len=length)
            self._caches[key] = cache
        else:
            cache.reset()
        return cache

    def _decode_fn(self) -> Any:
        if self._step is None:
            def step(ids: torch.Tensor, mask: torch.Tensor, pos: torch.Tensor, cache_pos: torch.Tensor,
                     cache: Any) -> torch.Tensor:
                out = self.model(input_ids=ids, attention_mask=mask, position_ids=pos, cache_position=cache_pos,
                                 past_key_values=cache, use_cache=True)
                return out.logits[:, -1, :].float()

            if self.compile:
                cuda = next(self.model.parameters()).device.type == "cuda"
                self._step = torch.compile(step, mode="reduce-overhead" if cuda else None, dynamic=False)
            else:
                self._step = step
        return self._step

    @torch.no_grad()
    def sample(
        self,
        prompt_ids: Sequence[Sequence[int]],
        *,
        max_new_tokens: int,
        pad_id: int,
        eos_id: int | None,
        temperature: float = 1.0,
        greedy: bool = False,
        min_new_tokens: int = 0,
        generator: Generators = None,
    ) -> tuple[list[list[int]], list[list[float]]]:
        """Response ids and the tempered log-probs of each sampled token."""
        model = self.model
        param = next(model.parameters())
        device = param.device
        _row_generators(generator, len(prompt_ids))  # a wrong count fails before any work
        ids, attn = left_pad(prompt_ids, pad_id, self.pad_multiple)
        ids, attn = ids.to(device), attn.to(device)
        batch, width = ids.shape
        total = width + max_new_tokens
        # the cache holds keys and values in the dtype the forward computes in (autocast's, when on)
        dtype = torch.get_autocast_dtype(device.type) if torch.is_autocast_enabled(device.type) else param.dtype
        cache = self._cache(batch, total, device, dtype)
        mask = torch.zeros((batch, total), dtype=torch.long, device=device)
        mask[:, :width] = attn
        pos = (attn.cumsum(-1) - 1).clamp(min=0)
        out = model(input_ids=ids, attention_mask=mask[:, :width], position_ids=pos,
                    cache_position=torch.arange(width, device=device), past_key_values=cache, use_cache=True)
        logits = out.logits[:, -1, :].float()
        next_pos = pos[:, -1:] + 1
        tokens = torch.full((batch, max_new_tokens), pad_id, dtype=torch.long, device=device)
        logps = torch.zeros((batch, max_new_tokens), dtype=torch.float32, device=device)
        done = torch.zeros(batch, dtype=torch.bool, device=device)
        step_fn = self._decode_fn()
        cache_pos = torch.tensor([width], dtype=torch.long, device=device)
        for t in range(max_new_tokens):
            tok, logps[:, t] = _pick_token(logits, t, done, min_new_tokens, eos_id, temperature, greedy, generator, pad_id)
            tokens[:, t] = tok
            if eos_id is not None:
                done = done | (tok == eos_id)
            if t == max_new_tokens - 1 or (t % 8 == 7 and bool(done.all())):
                break
            mask[:, width + t] = 1
            cache_pos.fill_(width + t)
            logits = step_fn(tok.unsqueeze(-1), mask, next_pos + t, cache_pos, cache).clone()
        rows = _trim(tokens.tolist(), eos_id)
        lp = logps.tolist()
        return rows, [lp[i][:len(r)] for i, r in enumerate(rows)]


def shared_prompt_pass(
    model: Any, prompt_ids: Sequence[Sequence[int]], pad_id: int
) -> tuple[torch.Tensor, Any, torch.Tensor, torch.Tensor]:
    """One forward pass per distinct prompt (left-padded), its key/value cache indexed out to every
    row that shares the prompt. Returns each row's last-position logits, the cache, each row's
    attention mask and the position of its next token. Gradients flow through it when enabled."""
    from transformers import DynamicCache

    device = next(model.parameters()).device
    keys = [tuple(p) for p in prompt_ids]
    unique = list(dict.fromkeys(keys))
    index = {k: i for i, k in enumerate(unique)}
    rows = torch.tensor([index[k] for k in keys], dtype=torch.long, device=device)
    ids, attn = left_pad([list(u) for u in unique], pad_id)
    ids, attn = ids.to(device), attn.to(device)
    pos = (attn.cumsum(-1) - 1).clamp(min=0)
    out = model(input_ids=ids, attention_mask=attn, position_ids=pos, past_key_values=DynamicCache(),
                use_cache=True, logits_to_keep=1)
    cache = out.past_key_values
    if len(unique) != len(keys):
        cache.batch_select_indices(rows)
    return out.logits[:, -1, :][rows], cache, attn[rows], pos[rows, -1:] + 1


@torch.no_grad()
def sample_prefix(
    model: Any,
    prompt_ids: Sequence[Sequence[int]],
    *,
    max_new_tokens: int,
    pad_id: int,
    eos_id: int | None,
    temperature: float = 1.0,
    greedy: bool = False,
    min_new_tokens: int = 0,
    generator: Generators = None,
) -> tuple[list[list[int]], list[list[float]]]:
    """Response ids and tempered log-probs; one prompt pass per distinct prompt (see module doc)."""
    device = next(model.parameters()).device
    _row_generators(generator, len(prompt_ids))  # a wrong count fails before any work
    first, cache, mask, next_pos = shared_prompt_pass(model, prompt_ids, pad_id)
    logits = first.float()
    batch = len(prompt_ids)
    tokens = torch.full((batch, max_new_tokens), pad_id, dtype=torch.long, device=device)
    logps = torch.zeros((batch, max_new_tokens), dtype=torch.float32, device=device)
    done = torch.zeros(batch, dtype=torch.bool, device=device)
    for t in range(max_new_tokens):
        tok, logps[:, t] = _pick_token(logits, t, done, min_new_tokens, eos_id, temperature, greedy, generator, pad_id)
        tokens[:, t] = tok
        if eos_id is not None:
            done = done | (tok == eos_id)
        if t == max_new_tokens - 1 or bool(done.all()):
            break
        mask = torch.cat([mask, torch.ones((batch, 1), dtype=mask.dtype, device=device)], dim=1)
        out = model(input_ids=tok.unsqueeze(-1), attention_mask=mask, position_ids=next_pos + t,
                    past_key_values=cache, use_cache=True)
        cache = out.past_key_values
        logits = out.logits[:, -1, :].float()
    result = _trim(tokens.tolist(), eos_id)
    lp = logps.tolist()
    return result, [lp[i][:len(r)] for i, r in enumerate(result)]


def _pick_token(
    logits: torch.Tensor, t: int, done: torch.Tensor, min_new_tokens: int, eos_id: int | None,
    temperature: float, greedy: bool, generator: Generators, pad_id: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One decoding step's token per row (``pad_id`` for finished rows) and its log-probability; EOS
    is masked before ``min_new_tokens``. Shared by the static-cache and prefix samplers. With one
    generator per row, each row draws from its own stream."""
    if t < min_new_tokens and eos_id is not None:
        logits[:, eos_id] = float("-inf")
    logp = torch.log_softmax(logits / temperature, dim=-1)
    rows = _row_generators(generator, logits.shape[0])
    if greedy:
        tok = logits.argmax(-1)
    elif rows is not None:
        probs = logp.exp()
        tok = torch.cat([torch.multinomial(probs[i], 1, generator=g) for i, g in enumerate(rows)])
    else:
        tok = torch.multinomial(logp.exp(), 1, generator=generator).squeeze(-1)
    tok = torch.where(done, torch.full_like(tok, pad_id), tok)
    return tok, logp.gather(1, tok.unsqueeze(-1)).squeeze(-1)
