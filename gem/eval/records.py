"""Episode records: one JSON object per episode in ``OUT/episodes.jsonl`` (written, read, resumed).

A record is one trajectory of GEM's schema (:mod:`gem.records`, docs/records.md: ``schema_version``,
``env_version``, ``kwargs``, ``wrappers``, ``rewards``, ``grading_status``, per-turn ``token_source``
and token ids...) with ``gem eval``'s own fields. It holds the run's identity (``key`` = ``env_id#index``, ``env_id``, ``index``, ``sample``,
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
    *,
    env_kwargs: Optional[dict[str, Any]] = None,
    sampling: Optional[dict[str, Any]] = None,
    calls: Optional[Sequence[dict[str, Any]]] = None,
    **extra: Any,
) -> dict[str, Any]:
    """The JSON record of ``episode``: the trajectory schema's fields (:mod:`gem.records`) and
    ``gem eval``'s own (``extra``: run fields such as ``agent``, ``model``, ``wrappers``).

    ``env_kwargs``: the kwargs the env was made with; ``sampling``: the model's sampling settings;
    ``calls``: the agent's call records, one per turn (token ids in them are kept).
    """
    from gem.records.writer import trajectory_record
    from gem.records.join import outcome_fields

    env_id = str(episode.env_id)
    schema_fields = trajectory_record(
        episode,
        env_kwargs=env_kwargs,
        wrappers=str(extra.get("wrappers") or ""),
        agent=extra.get("agent"),
        model=extra.get("model"),
        sampling=sampling,
        calls=calls,
    )
    return {
        "key": episode_key(env_id, index),
        "env_id": env_id,
        "index": index,
        "sample": sample,
        "seed": episode.seed,
        **extra,
        **outcome_fields(episode),  # status, error, rewards, end flags, costs: every writer's fields
        "started_at": round(time.time() - episode.seconds, 3),
        "messages": jsonable(messages) if messages is not None else None,
        "turns": episode.steps,
        "num_turns": episode.turns,
        "gold": episode.gold,
        **schema_fields,
    }


# Fields a record must have with these types to be read (any other field is shown as it is).
_NUMBER = (int, float)
_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "key": (str,),
    "env_id": (str,),
    "status": (str,),
    "index": (int,),
}
_OPTIONAL_TYPES: dict[str, tuple[type, ...]] = {
    "total_reward": _NUMBER,
    "task_reward": _NUMBER,
    "tool_bonus": _NUMBER,
    "success": (bool,),
    "num_turns": (int,),
    "tool_calls": (int,),
    "seconds": _NUMBER,
    "seed": (int, str),
    "sample": (int,),
    "turns": (list,),
    "usage": (dict,),
    "error": (dict,),
    "infra_error": (dict,),
    "grading": (dict,),
}


def record_problem(record: Any) -> Optional[str]:
    """Why ``record`` (one parsed line of ``episodes.jsonl``) cannot be read, or ``None`` if it can."""
    if not isinstance(record, dict):
        return f"not a JSON object but {type(record).__name__}"
    for name, types in _FIELD_TYPES.items():
        value = record.get(name)
        if not isinstance(value, types) or isinstance(value, bool) and bool not in types:
            return f"field {name!r} must be {' or '.join(t.__name__ for t in types)}, got {value!r:.60}"
    for name, types in _OPTIONAL_TYPES.items():
        value = record.get(name)
        if value is None:
            continue
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            return f"field {name!r} must be {' or '.join(t.__name__ for t in types)} or null, got {value!r:.60}"
        if isinstance(value, float) and value != value:
            return f"field {name!r} is NaN"
    for turn in record.get("turns") or []:
        if not isinstance(turn, dict):
            return "field 'turns' must hold JSON objects"
    return None


def read_episodes_checked(out: str | Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The readable records of ``OUT/episodes.jsonl`` and one message per line that is not.

    A line that is not JSON, not an object, or whose fields have the wrong types (a hand-edited or
    hostile file) is skipped; its message names the file and line. A torn last line (a killed run)
    is one such line.
    """
    path = Path(out) / EPISODES_FILE
    if not path.exists():
        return [], []
    records: list[dict[str, Any]] = []
    problems: list[str] = []
    with path.open(encoding="utf-8", errors="replace") as fh:
        for n, line in enumerate(fh, 1):
            line = line.strip()
            if not line:
                continue
            try:
                record = json.loads(line)
            except (json.JSONDecodeError, RecursionError):
                why = "not complete JSON (an interrupted write?)"
            else:
                why = record_problem(record)
                if why is None:
                    records.append(record)
                    continue
            problems.append(f"{path} line {n}: {why}; skipped")
    return records, problems


def read_episodes(out: str | Path) -> list[dict[str, Any]]:
    """Every readable record of ``OUT/episodes.jsonl`` (bad lines are logged and skipped: see
    :func:`read_episodes_checked`)."""
    records, problems = read_episodes_checked(out)
    for problem in problems:
        logger.warning("%s", problem)
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
