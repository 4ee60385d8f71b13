"""Writing trajectory records: :func:`trajectory_record` turns a finished
:class:`~gem.rollout.Episode` into one record of the schema (:mod:`gem.records.schema`), and
:class:`RecordWriter` appends records to a JSONL file.

Every writer of episodes uses these: ``gem eval`` and ``gem run --out`` (through
:func:`gem.eval.records.episode_record`), ``gem train --trajectory-dir`` (:mod:`gem.rl.records`,
with ``token_source: "sampler"``), and they are meant for ``gem serve``'s session logs too. A policy that knows the exact token ids of a turn passes them
in its call record (``calls[k]`` for turn ``k + 1``) with ``token_source`` saying where they came
from (``server``: the inference server returned them for this request; ``server_logprob_tokens``:
the server returned each token's text, mapped one to one to ids through its vocabulary;
``sampler``: the policy's own sampler). Without ids a turn says ``token_source: "none"``: nothing here tokenises text.
"""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from typing import IO, Any, Optional, Sequence

from gem.records.schema import SCHEMA_VERSION, token_problems
from gem.rollout import Episode, jsonable

logger = logging.getLogger(__name__)

TOKEN_FIELDS = ("prompt_token_ids", "completion_token_ids", "completion_logprobs")


def record_env_version(env_id: str) -> Optional[str]:
    """``gem.env_version(env_id)``, or ``None`` (logged) when it cannot be computed."""
    from gem.envs.registration import env_version

    try:
        return env_version(env_id)
    except Exception as exc:  # noqa: BLE001 -- a record without a version beats no record
        logger.warning("no env_version for %s: %s: %s", env_id, type(exc).__name__, exc)
        return None


def turn_tokens(call: Optional[dict[str, Any]], sampling: Optional[dict[str, Any]] = None) -> dict[str, Any]:
    """The token fields of a turn from its model call record (``token_source: "none"`` without ids).

    Raises ``ValueError`` when ids come without a ``token_source`` or logprobs do not match the ids.
    """
    call = call or {}
    fields: dict[str, Any] = {
        "sampling": jsonable(call.get("sampling", sampling)),
        "token_source": "none",
        "prompt_token_ids": None,
        "completion_token_ids": None,
        "completion_logprobs": None,
    }
    if any(call.get(k) is not None for k in TOKEN_FIELDS):
        source = call.get("token_source")
        if source in (None, "none"):
            raise ValueError(
                "a call record has token ids or logprobs but no token_source; say where they came from "
                "('server', 'server_logprob_tokens', 'sampler', 'verifiers', 'openenv' or 'retokenized' with its 'tokenizer')."
            )
        fields["token_source"] = source
        for k in TOKEN_FIELDS:
            value = call.get(k)
            fields[k] = None if value is None else [float(v) if k == "completion_logprobs" else int(v) for v in value]
        if source == "retokenized":
            fields["tokenizer"] = call.get("tokenizer")
    if call.get("token_note") is not None:
        fields["token_note"] = str(call["token_note"])
    if isinstance(call.get("token_drift"), bool):
        fields["token_drift"] = call["token_drift"]
    problems = token_problems(fields)
    if problems:
        raise ValueError("; ".join(problems))
    return fields


def trajectory_record(
    episode: Episode,
    *,
    env_kwargs: Optional[dict[str, Any]] = None,
    wrappers: str = "",
    agent: Optional[str] = None,
    model: Optional[str] = None,
    sampling: Optional[dict[str, Any]] = None,
    calls: Optional[Sequence[dict[str, Any]]] = None,
    env_version: Optional[str] = None,
) -> dict[str, Any]:
    """The schema's fields for ``episode`` (a writer adds its own around them).

    Args:
        env_kwargs: the kwargs given to ``gem.make`` over the registered defaults.
        wrappers: the ``WRAPPER_FACTORY`` names applied after make, comma-separated.
        agent, model, sampling: the policy (sampling: temperature, top_p, max_tokens...).
        calls: the policy's model call records, one per turn in order; token ids in them are kept.
        env_version: the env's version; computed from the id when not given.
    """
    from gem.version import __version__

    env_id = str(episode.env_id)
    sampling = {k: v for k, v in (sampling or {}).items() if v is not None} or None
    model_turns = calls is not None
    turns = []
    for k, step in enumerate(episode.steps):
        call = calls[k] if calls is not None and k < len(calls) else None
        turn = dict(step)
        turn.update(turn_tokens(call, sampling if model_turns else None))
        turns.append(turn)
    grading_status = None
    if episode.steps:
        grading_status = (episode.steps[-1].get("info") or {}).get("grading")
    if episode.grading is not None:
        grading_status = episode.grading.get("status", grading_status)
    return {
        "schema_version": SCHEMA_VERSION,
        "gem_version": __version__,
        "env_id": env_id,
        "env_version": env_version if env_version is not None else record_env_version(env_id),
        "seed": episode.seed,
        "kwargs": jsonable(dict(env_kwargs or {})),
        "wrappers": wrappers or "",
        "policy": {"agent": agent, "model": model, "sampling": sampling},
        "rewards": [float(r) for r in episode.rewards],
        "grading_status": None if grading_status is None else str(grading_status),
        "turns": turns,
    }


class RecordWriter:
    """Appends records to a JSONL file, one per line, flushed at once (thread-safe).

    A file whose last line was torn by a killed writer gets a newline first, so the next record
    stays whole. Use as a context manager or call :meth:`close`.
    """

    def __init__(self, path: str | Path, mode: str = "a") -> None:
        if mode not in ("a", "w"):
            raise ValueError(f"mode must be 'a' (append) or 'w' (a fresh file), got {mode!r}.")
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        torn = mode == "a" and self.path.exists() and self.path.stat().st_size > 0 and not _ends_with_newline(self.path)
        self._fh: Optional[IO[str]] = self.path.open(mode, encoding="utf-8")
        self._lock = threading.Lock()
        if torn:
            self._fh.write("\n")

    def write(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, ensure_ascii=False, default=str) + "\n"
        with self._lock:
            if self._fh is None:
                raise ValueError(f"the record writer of {self.path} is closed.")
            self._fh.write(line)
            self._fh.flush()

    def close(self) -> None:
        with self._lock:
            if self._fh is not None:
                self._fh.close()
                self._fh = None

    def __enter__(self) -> "RecordWriter":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as fh:
        fh.seek(-1, 2)
        return fh.read(1) == b"\n"
