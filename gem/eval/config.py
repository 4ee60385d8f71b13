"""What a ``gem eval`` run is: :class:`EvalConfig` and the names of the files it writes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from gem.agents.openai_agent import TOOL_CALLING
from gem.agents.registry import UNATTENDED as AGENTS  # the agents of the one table that need no person

EPISODES_FILE = "episodes.jsonl"
SUMMARY_FILE = "summary.json"
CONFIG_FILE = "run.json"
DEFAULT_MAX_TURNS = 100
# Settings that must match when a run is resumed (the episodes would not be comparable otherwise).
RESUME_KEYS = ("agent", "model", "wrappers", "seed", "repeats", "system_prompt", "max_turns", "tool_calling")


@dataclass
class EvalConfig:
    """Everything ``gem eval`` needs (see ``gem eval --help``).

    ``episodes`` is the number of problems per env and ``repeats`` the samples of each: an env
    runs ``episodes * repeats`` episodes, and sample ``r`` of problem ``p`` uses seed ``seed + p``.
    """

    env_ids: list[str]
    out: str
    agent: str = "openai"
    model: Optional[str] = None
    base_url: Optional[str] = None
    api_key: Optional[str] = None
    episodes: int = 10
    repeats: int = 1
    concurrency: int = 8
    wrappers: str = ""
    seed: int = 0
    max_turns: int = DEFAULT_MAX_TURNS
    limit: Optional[int] = None
    system_prompt: Optional[str] = None
    temperature: Optional[float] = None
    top_p: Optional[float] = None
    max_tokens: Optional[int] = None
    timeout_s: float = 120.0
    max_retries: int = 3
    backoff_s: float = 1.0
    tool_role: str = "tool"
    tokenizer: Optional[str] = None
    progress: bool = True
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    tool_calling: str = "text"
    record_tokens: bool = False

    def validate(self) -> None:
        if not self.env_ids:
            raise ValueError("gem eval needs at least one env id.")
        if self.agent not in AGENTS:
            raise ValueError(f"agent must be one of {', '.join(AGENTS)}, got {self.agent!r}.")
        if self.agent == "openai" and not self.model:
            raise ValueError("--agent openai needs --model (the name your server serves).")
        if self.tool_calling not in TOOL_CALLING:
            raise ValueError(f"tool_calling must be one of {', '.join(TOOL_CALLING)}, got {self.tool_calling!r}.")
        for name in ("episodes", "repeats", "concurrency", "max_turns"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}.")
        if self.wrappers:
            from gem.wrappers.wrapper_factory import WRAPPER_FACTORY

            unknown = [n.strip() for n in self.wrappers.split(",") if n.strip() and n.strip() not in WRAPPER_FACTORY]
            if unknown:
                raise ValueError(f"unknown wrapper {unknown[0]!r}; choose from: {', '.join(WRAPPER_FACTORY)}.")
        if self.limit is not None and self.limit < 0:
            raise ValueError(f"limit must be >= 0, got {self.limit}.")

    @property
    def episodes_per_env(self) -> int:
        """Problems times samples."""
        return self.episodes * self.repeats

    def seed_of(self, index: int) -> int:
        """The reset seed of episode ``index`` (its problem)."""
        return self.seed + index // self.repeats
