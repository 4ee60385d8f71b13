"""Episode records: one JSON object per episode in ``OUT/episodes.jsonl`` (written, read, resumed).

A record holds the run's identity (``key`` = ``env_id#index``, ``env_id``, ``index``, ``sample``,
``seed``), its outcome (``status`` ``ok``/``error``, ``error``, ``success``, ``total_reward``,
``task_reward``, ``tool_bonus``, ``terminated``, ``truncated``, ``infra_error``, ``grading``), what
happened (``observation0``, ``messages``, ``turns`` with each turn's ``finish_reason`` and
``tool_bonus``), the reference answer ``gold`` (read after the episode) and costs (``usage``,
``seconds``).
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any, Optional, Sequence

from gem.eval.config import EPISODES_FILE
from gem.rollout import Episode, jsonable

logger = logging.getLogger(__name__)


def episode_key(env_id: str, index: int) -> str:
    """The resume key of episode ``index`` of ``env_id``."""
    return f"{env_id}#{index}"


def episode_record(
    episode: Episode,
    index: int,
    sample: int = 0,
    messages: Optional[list[dict[str, Any]]] = None,
    **extra: Any,
) -> dict[str, Any]:
    """The JSON record of ``episode`` (``extra``: run fields such as ``agent``, ``model``)."""
    env_id = str(episode.env_id)
    return {
        "key": episode_key(env_id, index),
        "env_id": env_id,
        "index": index,
        "sample": sample,
        "seed": episode.seed,
        **extra,
        "status": "ok" if episode.ok else "error",
        "error": episode.error,
        "started_at": round(time.time() - episode.seconds, 3),
        "observation0": episode.observations[0] if episode.observations else None,
        "messages": jsonable(messages) if messages is not None else None,
        "turns": episode.steps,
        "total_reward": episode.total_reward,
        "task_reward": round(episode.task_reward, 10),
        "tool_bonus": round(episode.tool_bonus, 10),
        "success": episode.success,
        "terminated": episode.terminated,
        "truncated": episode.truncated,
        "stopped": episode.stopped,
        "num_turns": episode.turns,
        "tool_calls": episode.tool_calls,
        "usage": dict(episode.usage),
        "infra_error": episode.infra_error,
        "grading": episode.grading,
        "gold": episode.gold,
        "seconds": round(episode.seconds, 4),
    }


def read_episodes(out: str | Path) -> list[dict[str, Any]]:
    """Every record of ``OUT/episodes.jsonl`` (a torn last line, from a killed run, is skipped)."""
    path = Path(out) / EPISODES_FILE
    if not path.exists():
        return []
    records = []
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            line = line.strip()
            if not line:
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                logger.warning("%s line %d is not complete JSON (an interrupted write?); skipped", path, n)
    return records


def latest_records(records: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The last record of each episode key."""
    latest: dict[str, dict[str, Any]] = {}
    for rec in records:
        latest[rec["key"]] = rec
    return latest


def ends_with_newline(path: Path) -> bool:
    """Whether a non-empty file's last byte is a newline (else a killed writer tore its last line)."""
    with path.open("rb") as fh:
        fh.seek(-1, 2)
        return fh.read(1) == b"\n"
