"""What the model is shown for an observation: the env's text plus its instruction.

Envs keep their observation as GEM's envs always have (``math:Arithmetic`` observes just the
question) and put the answer format in ``info["suffix"]`` (``Put your final answer within
\\boxed{}.``) and any preamble in ``info["prefix"]``. A model that never sees the suffix cannot know
the format, so every path that builds a prompt (agents, ``gem eval``, ``gem.rl``, the observation
wrappers) turns an observation into the text of a user turn with :func:`user_content`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional


def _join(first: str, second: str) -> str:
    if not first:
        return second
    if not second:
        return first
    if first.endswith("\n\n") or second.startswith("\n"):
        return first + second
    return first + ("\n" if first.endswith("\n") else "\n\n") + second


def user_content(observation: str, info: Optional[Mapping[str, Any]] = None) -> str:
    """``info["prefix"]``, ``observation`` and ``info["suffix"]`` as one user message.

    Parts are separated by a blank line; a part already in the observation (an env or wrapper that
    put the instruction in the text itself, a history rendered with a chat template) is not repeated.
    """
    text = "" if observation is None else str(observation)
    info = info or {}
    prefix = str(info.get("prefix") or "")
    suffix = str(info.get("suffix") or "")
    # Already in the text (an env or wrapper put it there; a chat-rendered history holds it inside
    # its user turns): never again, above all not after the template's assistant header.
    if prefix and prefix.strip() not in text:
        text = _join(prefix, text)
    if suffix and suffix.strip() not in text:
        text = _join(text, suffix)
    return text
