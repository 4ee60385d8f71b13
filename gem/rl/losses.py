"""Policy and value losses over token masks (torch; import this module only where torch is installed).

Shapes: ``logprobs``, ``old_logprobs`` and ``mask`` are ``(batch, tokens)`` (the mask is 1 on the
response tokens the loss covers); ``advantages`` is ``(batch,)`` (one per transition, spread over its
tokens) or ``(batch, tokens)``. Losses average over the masked tokens of the whole batch.
"""

from __future__ import annotations

from typing import Any

import torch


def masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``x`` over the positions where ``mask`` is 1 (0 when the mask is empty)."""
    mask = mask.to(x.dtype)
    return (x * mask).sum() / mask.sum().clamp(min=1.0)


def _per_token(advantages: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    if advantages.dim() == 1:
        return advantages.unsqueeze(-1).expand_as(like)
    if advantages.shape != like.shape:
        raise ValueError(f"advantages has shape {tuple(advantages.shape)}; expected (batch,) or {tuple(like.shape)}.")
    return advantages


def importance_weights(
    logprobs: torch.Tensor, behaviour_logprobs: torch.Tensor, mask: torch.Tensor, cap: float = 2.0
) -> torch.Tensor:
    """Truncated per-token importance weights ``min(pi / mu, cap)`` (no gradient; 0 off the mask).

    ``logprobs`` are the tokens' log-probs under the policy being updated, ``behaviour_logprobs``
    under the (older) policy that sampled them. Truncating at ``cap`` bounds the variance a very
    stale or very unlikely token can add (IMPALA's truncated importance sampling; AReaL's behaviour
    weight cap).
    """
    if not cap > 0:
        raise ValueError(f"The importance weight cap must be positive, got {cap!r}.")
    ratio = torch.exp((logprobs.detach() - behaviour_logprobs.detach()).float())
    return torch.clamp(ratio, max=cap) * mask.to(ratio.dtype)


def _weighted(x: torch.Tensor, weights: torch.Tensor | None) -> torch.Tensor:
    if weights is None:
        return x
    if weights.shape != x.shape:
        raise ValueError(f"weights has shape {tuple(weights.shape)}; expected {tuple(x.shape)}.")
    return x * weights.detach().to(x.dtype)


def reinforce_loss(logprobs: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor,
                   weights: torch.Tensor | None = None) -> torch.Tensor:
    """``-mean(w * A * log pi(token))`` over the masked tokens (REINFORCE, ReBN and GRPO without
    clipping); ``weights`` ``w`` (per token, e.g. :func:`importance_weights`) default to 1."""
    adv = _per_token(advantages.to(logprobs.dtype), logprobs).detach()
    return -masked_mean(_weighted(adv * logprobs, weights), mask)


def ppo_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    clip_eps: float = 0.2,
    weights: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, Any]]:
    """The clipped surrogate ``-mean(w * min(rho A, clip(rho, 1-eps, 1+eps) A))``, ``rho = pi / pi_old``.

    ``weights`` ``w`` (per token) default to 1; with stale turns they are the behaviour policy's
    truncated importance weights ``pi_old / mu`` (decoupled PPO, as AReaL: ``pi_old`` the policy at
    the start of the update, ``mu`` the one that sampled).

    Returns ``(loss, stats)`` with ``stats["clip_frac"]`` (the share of masked tokens clipped) and
    ``stats["approx_kl"]`` (mean of ``old - new`` log-probs).
    """
    if clip_eps <= 0:
        raise ValueError(f"clip_eps must be positive, got {clip_eps!r}.")
    adv = _per_token(advantages.to(logprobs.dtype), logprobs).detach()
    ratio = torch.exp(logprobs - old_logprobs.detach())
    unclipped = ratio * adv
    clipped = torch.clamp(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * adv
    loss = -masked_mean(_weighted(torch.minimum(unclipped, clipped), weights), mask)
    with torch.no_grad():
        clip_frac = masked_mean((clipped < unclipped).to(logprobs.dtype), mask)
        approx_kl = masked_mean(old_logprobs - logprobs, mask)
    return loss, {"clip_frac": float(clip_frac), "approx_kl": float(approx_kl)}


def value_loss(values: torch.Tensor, targets: torch.Tensor, old_values: Any = None, clip_eps: Any = None) -> torch.Tensor:
    """``0.5 * mean((V - target)^2)``; with ``old_values`` and ``clip_eps``, PPO's clipped value loss."""
    targets = targets.detach().to(values.dtype)
    loss = (values - targets) ** 2
    if old_values is not None and clip_eps is not None:
        old = old_values.detach().to(values.dtype)
        clipped = old + torch.clamp(values - old, -clip_eps, clip_eps)
        loss = torch.maximum(loss, (clipped - targets) ** 2)
    return 0.5 * loss.mean()


def token_logprobs(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """``log softmax(logits)[tokens]``: logits ``(B, T, V)`` and tokens ``(B, T)`` -> ``(B, T)``."""
    logp = torch.log_softmax(logits.float(), dim=-1)
    return logp.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
