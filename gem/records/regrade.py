"""Re-scoring recorded episodes with today's graders, without the model (``gem regrade``).

Each finished episode's actions (the final answer, the program, the commands that built a
workspace) are re-played against today's env from the recorded seed, kwargs and wrappers
(:func:`gem.records.replay.play_record`), and the verdict it earns now (total reward, success,
grading status) is compared with the recorded one. Episodes that ended in an error have no
verdict to compare and are skipped, and so are episodes whose seed gives another problem today
(the recorded reference answer ``gold`` differs from the env's): their answer was to another task.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from gem.records.replay import EnvCache, play_record, read_records, version_warnings

VERDICT = ("total_reward", "success", "grading_status")


def recorded_verdict(record: dict[str, Any]) -> dict[str, Any]:
    """The verdict a record holds (older records without ``grading_status``: from the last turn)."""
    status = record.get("grading_status")
    if status is None and "grading_status" not in record:
        turns = record.get("turns") or []
        last = turns[-1] if turns and isinstance(turns[-1], dict) else {}
        status = (last.get("info") or {}).get("grading")
        if isinstance(record.get("grading"), dict):
            status = record["grading"].get("status", status)
    reward = record.get("total_reward")
    return {
        "total_reward": float(reward) if isinstance(reward, (int, float)) and not isinstance(reward, bool) else None,
        "success": record.get("success") if isinstance(record.get("success"), bool) else None,
        "grading_status": status,
    }


def _ungraded(status: Any) -> Any:
    """``None`` for a graded answer (``"ok"``, or an env that does not report grading), else the status."""
    return None if status in (None, "ok") else status


def verdict_changed(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether the reward, success or grading changed. An env that did not report its grading
    (older records, games) and one that reports ``"ok"`` agree; ``"timeout"``/``"error"`` do not."""
    return (
        old["total_reward"] != new["total_reward"]
        or old["success"] != new["success"]
        or _ungraded(old["grading_status"]) != _ungraded(new["grading_status"])
    )


def regrade_report(run: str | Path) -> dict[str, Any]:
    """``gem regrade RUN``'s report: every changed verdict, totals by env, skipped episodes."""
    records, problems = read_records(run)
    cache = EnvCache()
    changed: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    played_all = []
    by_env: dict[str, dict[str, Any]] = {}
    try:
        for record in records:
            env_id = record["env_id"]
            totals = by_env.setdefault(env_id, {
                "episodes": 0, "regraded": 0, "changed": 0, "skipped": 0,
                "old_success": 0, "new_success": 0, "old_reward": 0.0, "new_reward": 0.0,
            })
            totals["episodes"] += 1
            if record.get("status") not in (None, "ok"):
                totals["skipped"] += 1
                skipped.append({"key": record["key"], "env_id": env_id, "reason": "the episode ended in an error"})
                continue
            played = play_record(record, cache, compare=False)
            played_all.append(played)
            if played.status != "identical":  # skipped, or the env failed while re-playing
                reason = played.reason or (played.difference.describe() if played.difference else "not re-played")
                totals["skipped"] += 1
                skipped.append({"key": record["key"], "env_id": env_id, "reason": reason})
                continue
            if record.get("gold") is not None and played.extras.get("gold") != record["gold"]:
                totals["skipped"] += 1
                skipped.append({"key": record["key"], "env_id": env_id, "reason": (
                    f"seed {record.get('seed')} gives another problem today (reference answer "
                    f"{played.extras.get('gold')!r:.60}, recorded {record['gold']!r:.60}); its answer cannot be regraded"
                )})
                continue
            old = recorded_verdict(record)
            new = {"total_reward": played.total_reward, "success": played.success,
                   "grading_status": played.grading_status}
            totals["regraded"] += 1
            totals["old_success"] += bool(old["success"])
            totals["new_success"] += bool(new["success"])
            totals["old_reward"] += old["total_reward"] or 0.0
            totals["new_reward"] += new["total_reward"]
            if verdict_changed(old, new):
                totals["changed"] += 1
                changed.append({
                    "key": record["key"], "env_id": env_id, "seed": record.get("seed"),
                    "old": old, "new": new,
                    "recorded_version": record.get("env_version"), "current_version": played.current_version,
                })
    finally:
        cache.close()
    for totals in by_env.values():
        totals["old_reward"] = round(totals["old_reward"], 10)
        totals["new_reward"] = round(totals["new_reward"], 10)
    return {
        "run": str(run),
        "episodes": len(records),
        "regraded": sum(t["regraded"] for t in by_env.values()),
        "changed": len(changed),
        "skipped": len(skipped),
        "by_env": by_env,
        "changes": changed,
        "skipped_episodes": skipped,
        "warnings": version_warnings(played_all) + problems,
    }


def format_change(change: dict[str, Any]) -> str:
    old, new = change["old"], change["new"]
    parts = []
    for k in VERDICT:
        if k == "grading_status" and _ungraded(old[k]) == _ungraded(new[k]):
            continue
        if old[k] != new[k]:
            parts.append(f"{k} {old[k]!r} -> {new[k]!r}")
    return f"{change['key']} (seed {change['seed']}): " + ", ".join(parts)


def format_regrade(report: dict[str, Any], limit: Optional[int] = None) -> str:
    lines = [f"warning: {w}" for w in report["warnings"]]
    shown = report["changes"] if limit is None else report["changes"][:limit]
    lines += [format_change(c) for c in shown]
    if limit is not None and len(report["changes"]) > limit:
        lines.append(f"... and {len(report['changes']) - limit} more changed verdicts (--json lists all)")
    lines += [f"skipped {s['key']}: {s['reason']}" for s in report["skipped_episodes"]]
    lines.append("")
    lines.append(f"{'env':<34}{'regraded':>9}{'changed':>8}{'success before':>15}{'after':>6}{'reward before':>14}{'after':>8}")
    for env_id, t in report["by_env"].items():
        lines.append(
            f"{env_id:<34}{t['regraded']:>9}{t['changed']:>8}{t['old_success']:>15}{t['new_success']:>6}"
            f"{t['old_reward']:>14.4g}{t['new_reward']:>8.4g}"
        )
    lines.append(
        f"{report['episodes']} episodes: {report['regraded']} regraded, {report['changed']} verdicts changed, "
        f"{report['skipped']} skipped."
    )
    return "\n".join(lines) + "\n"
