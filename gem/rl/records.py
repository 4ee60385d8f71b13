"""Trajectory records of ``gem.rl``'s collection (``gem train --trajectory-dir DIR``).

Every episode the trainer collects (sync or ``--collect async``) becomes one record of GEM's
trajectory schema (:mod:`gem.records`, docs/records.md) in ``DIR/episodes.jsonl``, written with
:func:`gem.eval.records.episode_record` and :class:`gem.records.writer.RecordWriter`, so ``gem
replay``, ``gem regrade`` and ``gem view`` read the directory as they read a ``gem eval`` run.

Per episode: env id, ``env_version``, reset seed, the kwargs the env was made with, wrappers,
outcome (rewards, success, grading status) and costs (tokens, seconds, tool calls), plus the
training step that used it (``step``), its ``group`` and whether that step's update was skipped
(``update_skipped``). Per turn: the ids the model read (``prompt_token_ids``) and sampled
(``completion_token_ids``) and the sampler's log-probs of them, one per id, as the policy
returned them while sampling (``token_source: "sampler"``), the sampling settings (with the
turn's seed when it has its own stream), the policy version that sampled it, its advantage and
return, and ``token_drift``: whether tokenising the turn's text again gives other ids.

The trainer builds its update batch from the same ids (the transitions the records are written
from), never from the text. ``DIR/summary.json`` is :func:`gem.eval.summary.summarize_dir`'s
summary of the records (success, rewards, ``token_sources``, ``token_drift``) with the run's
settings under ``trainer``.

This module imports neither torch nor transformers.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gem.rl.collect import Trajectory, sampling_seed
from gem.rollout import jsonable

logger = logging.getLogger(__name__)

AGENT = "gem.rl"
EPISODES_FILE = "episodes.jsonl"
SUMMARY_FILE = "summary.json"

# How each sampler obtains its ids and log-probs (a record's token_note).
SAMPLER_NOTES = {
    "plain": "sampled in process by model.generate; log-probs of the sampled ids (tempered) from one forward "
             "pass over them right after sampling",
    "static": "sampled in process by a static-KV-cache decoding loop; ids and tempered log-probs recorded as "
              "each token was drawn",
    "prefix": "sampled in process by the shared-prefix decoding loop; ids and tempered log-probs recorded as "
              "each token was drawn",
    "vllm": "sampled in process by vLLM; ids and log-probs as vLLM returned them",
}


def token_drift(tokenizer: Any, text: str, ids: Sequence[int], eos_id: int | None = None) -> bool | None:
    """Whether tokenising ``text`` again gives other ids than ``ids`` (``None``: not measurable).

    The end-of-sequence id that ended a reply is not text (decoding drops it), so a final
    ``eos_id`` is left out of the comparison; any other difference counts.
    """
    if tokenizer is None:
        return None
    expected = [int(i) for i in ids]
    if expected and eos_id is not None and expected[-1] == eos_id:
        expected = expected[:-1]
    try:
        again = tokenizer(text, add_special_tokens=False)["input_ids"]
    except Exception as exc:  # noqa: BLE001 -- a tokenizer that cannot take the text: not measured
        logger.debug("token_drift not measured: %s: %s", type(exc).__name__, exc)
        return None
    return [int(i) for i in again] != expected


def turn_calls(trajectory: Trajectory, sampling: dict[str, Any] | None, tokenizer: Any = None,
               note: str | None = None, eos_id: int | None = None) -> list[dict[str, Any]]:
    """One call record per turn of ``trajectory`` (:func:`gem.records.writer.turn_tokens` reads it):
    the sampled ids and log-probs, ``token_source: "sampler"``, sampling settings and drift."""
    calls = []
    for t in trajectory.transitions:
        turn_sampling = dict(sampling or {})
        if trajectory.sample_seed is not None:
            turn_sampling["seed"] = sampling_seed(trajectory.sample_seed, t.turn)
        calls.append({
            "token_source": "sampler",
            "prompt_token_ids": list(t.prompt_ids),
            "completion_token_ids": list(t.response_ids),
            "completion_logprobs": list(t.logprobs),
            "sampling": turn_sampling or None,
            "token_note": note,
            "token_drift": token_drift(tokenizer, t.action, t.response_ids, eos_id),
        })
    return calls


def trajectory_to_record(
    trajectory: Trajectory,
    index: int,
    *,
    step: int | None = None,
    model: str | None = None,
    wrappers: str = "",
    sampling: dict[str, Any] | None = None,
    tokenizer: Any = None,
    note: str | None = None,
    eos_id: int | None = None,
    update_skipped: bool | None = None,
) -> dict[str, Any]:
    """The trajectory record of one collected episode (``key``: ``env_id#index``).

    Raises ``ValueError`` for a trajectory that was not finished by a ``gem.rl`` collector (no
    episode record) and for log-probs that do not match the ids one to one.
    """
    from gem.eval.records import episode_record

    episode = trajectory.episode
    if episode is None:
        raise ValueError(f"trajectory {trajectory.env_index} of {trajectory.env_id} has no episode record; "
                         "collect it with gem.rl.collect.collect_episodes or gem.rl.async_collect.AsyncCollector.")
    calls = turn_calls(trajectory, sampling, tokenizer, note, eos_id)
    record = episode_record(
        episode, index, env_kwargs=trajectory.kwargs or {}, sampling=sampling, calls=calls,
        agent=AGENT, model=model, wrappers=wrappers or "", step=step, group=jsonable(trajectory.group),
        update_skipped=update_skipped,
    )
    for turn, t in zip(record["turns"], trajectory.transitions):
        turn["policy_version"] = t.version
        turn["advantage"] = t.advantage
        turn["return"] = t.ret
        if t.value is not None:
            turn["value"] = t.value
    return record


class TrajectoryRecorder:
    """Writes each training step's episodes to ``DIR/episodes.jsonl`` and, at :meth:`close`, the
    run's ``DIR/summary.json``.

    Args:
        out_dir: the record directory (created; its ``episodes.jsonl`` is started afresh).
        model: the model's name in each record's ``policy``.
        wrappers: the ``WRAPPER_FACTORY`` names the envs were wrapped with.
        sampling: the sampling settings (temperature, top_p, top_k, max_tokens, ...).
        tokenizer: the policy's tokenizer, to measure ``token_drift`` (``None``: not measured).
        sampler: the sampler's name (``plain``, ``static``, ``prefix``, ``vllm``) for the token note.
        trainer: the run's settings, kept under ``trainer`` in the summary.
    """

    def __init__(self, out_dir: str | Path, *, model: str | None = None, wrappers: str = "",
                 sampling: dict[str, Any] | None = None, tokenizer: Any = None, sampler: str | None = None,
                 trainer: dict[str, Any] | None = None) -> None:
        from gem.records.writer import RecordWriter

        self.dir = Path(out_dir)
        if self.dir.exists() and not self.dir.is_dir():
            raise ValueError(f"the trajectory directory {self.dir} is a file; give a directory.")
        self.model, self.wrappers = model, wrappers or ""
        self.sampling = {k: v for k, v in (sampling or {}).items() if v is not None} or None
        self.tokenizer = tokenizer
        self.eos_id = getattr(tokenizer, "eos_token_id", None)
        self.note = SAMPLER_NOTES.get(sampler or "", None)
        self.trainer = dict(trainer or {})
        self.episodes = 0
        self._writer: Any = RecordWriter(self.dir / EPISODES_FILE, mode="w")

    def write(self, step: int, trajectories: Sequence[Trajectory], update_skipped: bool | None = None
              ) -> list[dict[str, Any]]:
        """Write the episodes of training step ``step``; returns their records."""
        if self._writer is None:
            raise ValueError(f"the trajectory recorder of {self.dir} is closed.")
        records = []
        for trajectory in trajectories:
            record = trajectory_to_record(
                trajectory, self.episodes, step=step, model=self.model, wrappers=self.wrappers,
                sampling=self.sampling, tokenizer=self.tokenizer, note=self.note, eos_id=self.eos_id,
                update_skipped=update_skipped,
            )
            self._writer.write(record)
            self.episodes += 1
            records.append(record)
        return records

    def close(self) -> dict[str, Any] | None:
        """Close the file and write ``summary.json``; returns the summary (``None`` when already closed)."""
        if self._writer is None:
            return None
        from gem.eval.summary import format_tokens, summarize_dir

        self._writer.close()
        self._writer = None
        summary = summarize_dir(self.dir)
        summary["trainer"] = jsonable(self.trainer)
        (self.dir / SUMMARY_FILE).write_text(json.dumps(summary, indent=2, default=str) + "\n", encoding="utf-8")
        line = format_tokens(summary["overall"])
        logger.info("%d episodes recorded in %s%s", self.episodes, self.dir / EPISODES_FILE, f"; {line}" if line else "")
        return summary

    def __enter__(self) -> TrajectoryRecorder:  # noqa: PYI034 -- typing.Self needs Python 3.11
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
