"""Records of episodes GEM did not play itself: the env's side (each step as the env returned it)
joined one to one with the policy's side (each model call, with its token fields).

``gem proxy`` joins what a harness posts with the calls it forwarded; the verifiers and OpenEnv
bridges (:mod:`gem.interop.tokens`) join an episode with the token ids the other framework
recorded; ``gem serve``'s session log (:mod:`gem.server.session_log`) writes the env's side alone.
All of them write the same trajectory record (:mod:`gem.records.writer`) with the same outcome
fields (:func:`outcome_fields`).
"""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

from gem.records.writer import trajectory_record
from gem.rollout import Episode, EpisodeRecorder, jsonable

STEP_FIELDS = "{action, observation, reward, terminated, truncated}"


def outcome_fields(episode: Episode, seconds: Optional[float] = None) -> dict[str, Any]:
    """How ``episode`` went and what it cost: the record fields every writer adds to the schema's."""
    return {
        "status": "ok" if episode.error is None else "error",
        "error": episode.error,
        "observation0": episode.observations[0] if episode.observations else None,
        "total_reward": episode.total_reward,
        "task_reward": round(episode.task_reward, 10),
        "tool_bonus": round(episode.tool_bonus, 10),
        "success": episode.success,
        "terminated": episode.terminated,
        "truncated": episode.truncated,
        "stopped": episode.stopped,
        "usage": dict(episode.usage),
        "seconds": round(episode.seconds if seconds is None else seconds, 4),
        "tool_calls": episode.tool_calls,
        "infra_error": episode.infra_error,
        "grading": episode.grading,
    }


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def steps_problem(body: Any) -> Optional[str]:
    """Why an episode's env side (``{env_id, seed, observation0, steps, kwargs?, wrappers?,
    success?}``) cannot be joined, or ``None``."""
    if not isinstance(body, dict):
        return "the body must be a JSON object"
    if not isinstance(body.get("env_id"), str) or not body["env_id"]:
        return "env_id must be a non-empty string"
    seed = body.get("seed")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        return "seed must be an integer or null"
    if not isinstance(body.get("observation0", ""), str):
        return "observation0 must be a string"
    steps = body.get("steps")
    if not isinstance(steps, list) or not steps:
        return f"steps must be a non-empty list of {STEP_FIELDS}"
    for k, step in enumerate(steps, 1):
        if not isinstance(step, dict):
            return f"step {k} must be an object"
        if not isinstance(step.get("action"), str) or not isinstance(step.get("observation"), str):
            return f"step {k}: action and observation must be strings"
        if not _finite(step.get("reward")):
            return f"step {k}: reward must be a finite number"
        if not isinstance(step.get("terminated"), bool) or not isinstance(step.get("truncated"), bool):
            return f"step {k}: terminated and truncated must be true or false"
    if not isinstance(body.get("kwargs", {}), dict):
        return "kwargs must be an object"
    if not isinstance(body.get("wrappers", ""), str):
        return "wrappers must be a string"
    return None


def joined_record(
    key: str,
    body: dict[str, Any],
    calls: Sequence[dict[str, Any]],
    *,
    agent: str,
    model: Optional[str] = None,
    seconds: Optional[float] = None,
) -> dict[str, Any]:
    """The trajectory record of an episode: the env's steps (``body``, see :func:`steps_problem`)
    joined one to one with ``calls``, the policy's call records (token fields as
    :func:`gem.records.writer.turn_tokens` reads them). Raises ``ValueError`` when ``body`` is
    malformed, the counts differ, or a call's token fields do not hold together."""
    why = steps_problem(body)
    if why is not None:
        raise ValueError(why)
    steps = body["steps"]
    if len(calls) != len(steps):
        raise ValueError(f"{len(calls)} model calls for {len(steps)} steps: one call per step")
    recorder = EpisodeRecorder(env_id=body["env_id"], seed=body.get("seed"), max_steps=len(steps),
                               success_reward=body.get("success_reward") if _finite(body.get("success_reward")) else None)
    recorder.start(body.get("observation0") or "", {})
    for step, call in zip(steps, calls):
        recorder.begin_turn()
        info = step.get("info") if isinstance(step.get("info"), dict) else {}
        recorder.add_turn(step["action"], step["observation"], step["reward"], step["terminated"], step["truncated"],
                          info, call=call)
    episode = recorder.finish()
    if isinstance(body.get("success"), bool):
        episode.success = body["success"]
    if seconds is None:
        seconds = sum(float(c.get("latency_s") or 0.0) for c in calls)
    record = trajectory_record(
        episode,
        env_kwargs=body.get("kwargs") or {},
        wrappers=body.get("wrappers") or "",
        agent=agent,
        model=model,
        sampling=calls[0].get("sampling") if calls else None,
        calls=list(calls),
    )
    messages = calls[-1].get("messages") if calls else None
    return {"key": key, **outcome_fields(episode, seconds), "messages": jsonable(messages), **record}
