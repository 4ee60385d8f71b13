"""A ``transformers`` causal LM as a GEM policy (sampling, log-probs, an optional turn-level critic).

Imports torch and transformers; ``import gem`` never imports this module.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from typing import Any

import torch

from gem.errors import ResourceUnavailable
from gem.rl.losses import token_logprobs
from gem.rl.models import resolve_model
from gem.rl.collect import Generation
from gem.rl.sampling import SAMPLERS, StaticSampler, sample_plain, sample_prefix

logger = logging.getLogger(__name__)

TINY_MODEL = "tiny"


def build_tiny_model(tokenizer: Any, seed: int = 0, n_layer: int = 2, n_embd: int = 64, n_positions: int = 1024) -> Any:
    """A randomly initialised 2-layer GPT-2 sized to ``tokenizer`` (for smoke tests on CPU).

    The weights depend only on ``seed``; torch's global random state is restored afterwards.
    """
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(
        vocab_size=len(tokenizer), n_positions=n_positions, n_embd=n_embd, n_layer=n_layer, n_head=2,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,  # no dropout: RL losses compare log-probs
        bos_token_id=tokenizer.eos_token_id, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return GPT2LMHeadModel(config)


DTYPES = ("auto", "float32", "float16", "bfloat16")


def torch_dtype(name: str | None) -> Any:
    """The ``torch.dtype`` named ``name`` (``float32``, ``float16``, ``bfloat16``, or any floating
    dtype's torch name); ``None`` and ``"auto"`` return ``None`` (the checkpoint's own dtype)."""
    if name is None or name == "auto":
        return None
    value = getattr(torch, str(name), None)
    if not isinstance(value, torch.dtype) or not value.is_floating_point:
        raise ValueError(f"Unknown dtype {name!r}; choose one of: {', '.join(DTYPES)}.")
    return value


AUTOCAST_DTYPES = ("float16", "bfloat16")


def autocast_dtype(dtype: Any) -> Any:
    """The dtype forward passes are autocast to for ``dtype`` (a name or a ``torch.dtype``):
    ``float16`` or ``bfloat16``; ``None`` for ``None`` and ``float32`` (no autocast). Any other
    dtype raises ``ValueError`` naming the choices."""
    if isinstance(dtype, str):
        dtype = torch_dtype(dtype)
    if dtype is None or dtype == torch.float32:
        return None
    if dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(f"Cannot compute in {dtype}; choose one of: float32, {', '.join(AUTOCAST_DTYPES)}.")
    return dtype


def compute_context(device: Any, dtype: Any) -> Any:
    """The context that runs forward passes on ``device`` in ``dtype``: ``torch.autocast`` for
    ``float16`` and ``bfloat16`` (matrix products in that dtype, the parameters untouched); for
    ``None`` or ``float32`` a no-op (the parameters' own dtype)."""
    dtype = autocast_dtype(dtype)
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(torch.device(device).type, dtype=dtype)


def load_model_and_tokenizer(model: str, seed: int = 0, dtype: str | None = None) -> tuple[Any, Any]:
    """``"tiny"``: the random tiny GPT-2 with :mod:`gem.utils.tiny_tokenizer`; else a GGUF file, a
    directory (a checkpoint or one GGUF file) or a hub id (see :func:`gem.rl.models.resolve_model`).

    ``dtype`` (see :func:`torch_dtype`) is the model's parameter dtype, the tiny model's too."""
    torch_type = torch_dtype(dtype)
    if model == TINY_MODEL:
        from gem.utils.tiny_tokenizer import get_tiny_tokenizer

        tokenizer = get_tiny_tokenizer()
        tiny = build_tiny_model(tokenizer, seed=seed)
        return (tiny if torch_type is None else tiny.to(torch_type)), tokenizer
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        source = resolve_model(model)
        tokenizer = AutoTokenizer.from_pretrained(source)
        kwargs: dict[str, Any] = {}
        if dtype:
            kwargs["dtype"] = torch_type if torch_type is not None else "auto"
        lm = AutoModelForCausalLM.from_pretrained(source, **kwargs)
    except OSError as exc:
        raise ResourceUnavailable(
            f"Could not load model {model!r} ({exc}). Pass a GGUF file, a local directory with the model "
            f"and tokenizer (--model /path/to/model), or --model tiny for a random tiny model."
        ) from exc
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return lm, tokenizer


def pad_batch(seqs: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad ``seqs`` to a ``(B, T)`` id tensor and its attention mask."""
    width = max((len(s) for s in seqs), default=0)
    ids = torch.full((len(seqs), max(width, 1)), pad_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, s in enumerate(seqs):
        ids[i, :len(s)] = torch.tensor(list(s), dtype=torch.long)
        mask[i, :len(s)] = 1
    return ids, mask


def sequence_forward(
    model: Any,
    prompt_ids: Sequence[Sequence[int]],
    response_ids: Sequence[Sequence[int]],
    pad_id: int,
    temperature: float = 1.0,
    value_head: Any = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """Log-probs of each response token given its prompt, the response mask, and ``V(prompt)``.

    Returns ``(logprobs, mask, values)``: ``(B, R)`` log-probs (``R`` the longest response), the
    ``(B, R)`` mask of real response tokens, and ``(B,)`` values from ``value_head`` applied to the
    last prompt token's final hidden state (``None`` without a head).
    """
    device = next(model.parameters()).device
    seqs = [list(p) + list(r) for p, r in zip(prompt_ids, response_ids)]
    ids, attn = pad_batch(seqs, pad_id)
    ids, attn = ids.to(device), attn.to(device)
    out = model(input_ids=ids, attention_mask=attn, output_hidden_states=value_head is not None)
    logits = out.logits
    width = max((len(r) for r in response_ids), default=0)
    width = max(width, 1)
    b = len(seqs)
    resp = torch.full((b, width), pad_id, dtype=torch.long, device=device)
    mask = torch.zeros((b, width), device=device)
    gather_pos = torch.zeros((b, width), dtype=torch.long, device=device)
    for i, (p, r) in enumerate(zip(prompt_ids, response_ids)):
        n = len(r)
        if n:
            resp[i, :n] = torch.tensor(list(r), dtype=torch.long, device=device)
            mask[i, :n] = 1.0
            gather_pos[i, :n] = torch.arange(len(p) - 1, len(p) - 1 + n, device=device)
    picked = logits.gather(1, gather_pos.unsqueeze(-1).expand(-1, -1, logits.shape[-1]))
    logprobs = token_logprobs(picked.float() / temperature, resp) * mask  # float32 under autocast too
    values = None
    if value_head is not None:
        hidden = out.hidden_states[-1]
        last = torch.tensor([len(p) - 1 for p in prompt_ids], device=device)
        with torch.autocast(device.type, enabled=False):  # the critic's head in its own (float32) dtype
            values = value_head(hidden[torch.arange(b, device=device), last].float()).squeeze(-1)
    return logprobs, mask, values


def sequence_forward_prefix(
    model: Any,
    prompt_ids: Sequence[Sequence[int]],
    response_ids: Sequence[Sequence[int]],
    pad_id: int,
    temperature: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`sequence_forward`'s log-probs and mask, with one prompt pass per distinct prompt.

    The distinct prompts run once (left-padded); their key/value cache is indexed out to every row
    that shares the prompt, and the responses run on top of it. Gradients flow through the shared
    cache, so the result and its gradient equal :func:`sequence_forward`'s (tested), at a fraction
    of the cost when many transitions share a long prompt (a GEM batch's first turns).
    """
    from gem.rl.sampling import shared_prompt_pass

    device = next(model.parameters()).device
    first, cache, prompt_mask, next_pos = shared_prompt_pass(model, prompt_ids, pad_id)
    b = len(prompt_ids)
    width = max(max((len(r) for r in response_ids), default=0), 1)
    resp = torch.full((b, width), pad_id, dtype=torch.long, device=device)
    mask = torch.zeros((b, width), device=device)
    for i, r in enumerate(response_ids):
        if len(r):
            resp[i, :len(r)] = torch.tensor(list(r), dtype=torch.long, device=device)
            mask[i, :len(r)] = 1.0
    if width > 1:
        full_mask = torch.cat([prompt_mask, mask[:, :width - 1].long()], dim=1)
        rpos = next_pos + torch.arange(width - 1, device=device)
        rest = model(input_ids=resp[:, :width - 1], attention_mask=full_mask, position_ids=rpos,
                     past_key_values=cache, use_cache=True).logits
        logits = torch.cat([first.unsqueeze(1), rest], dim=1)
    else:
        logits = first.unsqueeze(1)
    logprobs = token_logprobs(logits.float() / temperature, resp) * mask
    return logprobs, mask


class HFPolicy:
    """Samples actions from a causal LM; records prompt/response ids and sampling log-probs.

    Args:
        model, tokenizer: a ``transformers`` causal LM and its tokenizer.
        max_new_tokens: the response length cap.
        temperature: sampling temperature (log-probs are of the tempered distribution).
        max_prompt_tokens: longer prompts keep their last tokens.
        apply_chat_template: wrap each prompt as a user message with the tokenizer's chat
            template (turn off when a ``concat_chat`` wrapper already renders it).
        value_head: a module mapping the last prompt hidden state to ``V(s)`` (PPO's critic).
        sampler: ``"plain"`` (``model.generate``), ``"static"`` (a static-KV-cache decoding loop) or
            ``"prefix"`` (one prompt pass per distinct prompt), see :mod:`gem.rl.sampling`.
        compile: ``torch.compile`` the static sampler's decode step.
        seed: seeds the policy's own ``torch.Generator``; torch's global random state is never
            changed (``generate`` runs under ``torch.random.fork_rng``).
        greedy: decode greedily instead of sampling.
        compute_dtype: ``"bfloat16"`` or ``"float16"`` runs the forward passes under
            ``torch.autocast`` in that dtype while the parameters keep theirs (mixed precision);
            ``None`` or ``"float32"``: the parameters' own dtype. Log-probs are float32 either way.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        max_new_tokens: int = 32,
        temperature: float = 1.0,
        max_prompt_tokens: int = 768,
        apply_chat_template: bool = True,
        value_head: Any = None,
        sampler: str = "plain",
        compile: bool = False,
        seed: int = 0,
        greedy: bool = False,
        compute_dtype: Any = None,
    ) -> None:
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be at least 1, got {max_new_tokens!r}.")
        if temperature <= 0:
            raise ValueError(f"temperature must be positive, got {temperature!r}.")
        if sampler not in SAMPLERS:
            raise ValueError(f"Unknown sampler {sampler!r}; choose one of: {', '.join(SAMPLERS)}.")
        self.model, self.tokenizer = model, tokenizer
        self.max_new_tokens, self.temperature = max_new_tokens, temperature
        self.max_prompt_tokens = max_prompt_tokens
        self.apply_chat_template = apply_chat_template and bool(getattr(tokenizer, "chat_template", None))
        self.value_head = value_head
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        self.eos_id = tokenizer.eos_token_id
        self.sampler = sampler
        self.greedy = greedy
        self.static = StaticSampler(model, compile=compile) if sampler == "static" else None
        device = next(model.parameters()).device
        self.generator = torch.Generator(device=device).manual_seed(seed)
        self.compute_dtype = autocast_dtype(compute_dtype)  # an unknown dtype fails here, not mid-rollout

    def autocast(self) -> Any:
        """The context the policy's forward passes run in (see ``compute_dtype``)."""
        return compute_context(next(self.model.parameters()).device, self.compute_dtype)

    def render(self, prompt: str) -> str:
        """The text the model reads: ``prompt`` as a user turn of the chat template (when used)."""
        if self.apply_chat_template:
            return self.tokenizer.apply_chat_template(
                [{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True
            )
        return prompt

    def encode_prompt(self, observation: str) -> list[int]:
        ids = self.tokenizer(self.render(observation), add_special_tokens=False)["input_ids"]
        return ids[-self.max_prompt_tokens:]

    @torch.no_grad()
    def generate(self, prompts: Sequence[str], seeds: Sequence[int] | None = None) -> list[Generation]:
        """One :class:`Generation` per prompt. ``seeds``, one per prompt, gives each prompt its own
        random stream (a ``torch.Generator`` seeded with it), so its tokens do not depend on the rest
        of the batch; without them the batch shares the policy's generator."""
        if seeds is not None and len(seeds) != len(prompts):
            raise ValueError(f"Got {len(seeds)} seeds for {len(prompts)} prompts.")
        prompt_ids = [self.encode_prompt(p) for p in prompts]
        generator: Any = self.generator
        if seeds is not None:
            generator = [torch.Generator(device=self.generator.device).manual_seed(int(s)) for s in seeds]
        was_training = self.model.training
        self.model.eval()
        try:
            with self.autocast():
                responses, logprobs, values = self._sample(prompt_ids, generator)
        finally:
            if was_training:
                self.model.train()
        gens = []
        for i, (p, r) in enumerate(zip(prompt_ids, responses)):
            text = self.tokenizer.decode(r, skip_special_tokens=True)
            gens.append(Generation(p, r, logprobs[i], text, None if values is None else float(values[i])))
        return gens

    def _sample(self, prompt_ids: list[list[int]], generator: Any) -> tuple[list[list[int]], list[list[float]], Any]:
        """Responses, their log-probs and (with a value head) the prompts' values."""
        kwargs = dict(max_new_tokens=self.max_new_tokens, pad_id=self.pad_id, eos_id=self.eos_id,
                      temperature=self.temperature, greedy=self.greedy, generator=generator)
        if self.static is not None:
            responses, logprobs = self.static.sample(prompt_ids, **kwargs)
        elif self.sampler == "prefix":
            responses, logprobs = sample_prefix(self.model, prompt_ids, **kwargs)
        else:
            responses, logprobs = sample_plain(self.model, prompt_ids, **kwargs), None
        values = None
        if logprobs is None or self.value_head is not None:
            lp, _, values = sequence_forward(
                self.model, prompt_ids, responses, self.pad_id, self.temperature, self.value_head
            )
            logprobs = [lp[i, :len(r)].tolist() for i, r in enumerate(responses)]
        return responses, logprobs, values
