"""Scores of recorded episodes: per env and overall (``summary.json`` and the printed table).

Rates (``success_rate``, ``mean_reward``, pass@k) are over *scored* episodes: those that ran to
their end (no error), with no infrastructure failure and a graded answer. Errors (by stage),
infrastructure failures (by component) and ungraded answers (by status) are counted apart, so a
broken grader or server is never read as a wrong answer. pass@k groups episodes by problem, i.e.
by ``(env_id, seed)``, and is reported for k = 1, 2, 4, ... up to the samples per problem.
Rewards are split: ``mean_task_reward`` is what solving earned, ``mean_tool_bonus`` what tool use
earned (``info["tool_bonus"]``); ``mean_reward`` is their sum.
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import Any, Optional, Sequence

from gem.eval.records import latest_records, read_episodes

PASS_KS = (1, 2, 4, 8, 16, 32, 64, 128)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of a problem sampled ``n`` times with ``c`` successes (Chen et al. 2021)."""
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def _mean(values: Sequence[float]) -> Optional[float]:
    return round(sum(values) / len(values), 6) if values else None


def is_scored(record: dict[str, Any]) -> bool:
    """Whether an episode record counts in the rates (ran to its end, graded, no infra failure)."""
    return record.get("status") == "ok" and not record.get("infra_error") and not record.get("grading")


def _problem(record: dict[str, Any]) -> tuple[Any, Any]:
    return record.get("env_id"), record.get("seed")


def pass_at_ks(records: Sequence[dict[str, Any]]) -> dict[str, float]:
    """pass@k over problems ``(env_id, seed)``; k up to the most samples any problem was given."""
    planned = Counter(_problem(r) for r in records)
    outcomes: dict[tuple[Any, Any], list[bool]] = {}
    for r in records:
        if is_scored(r):
            outcomes.setdefault(_problem(r), []).append(bool(r.get("success")))
    most = max(planned.values(), default=0)
    result: dict[str, float] = {}
    for k in sorted({k for k in PASS_KS if k <= most} | ({most} if most else set())):
        eligible = [v for v in outcomes.values() if len(v) >= k]
        if eligible:
            result[f"pass@{k}"] = round(sum(pass_at_k(len(v), sum(v), k) for v in eligible) / len(eligible), 6)
    return result


def _count(records: Sequence[dict[str, Any]], field: str, sub: str) -> dict[str, int]:
    return dict(Counter(str((r.get(field) or {}).get(sub, "unknown")) for r in records if r.get(field)))


def summarize_records(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Scores of episode records (the last record of each key)."""
    ok = [r for r in records if r.get("status") == "ok"]
    scored = [r for r in ok if is_scored(r)]
    errors = _count([r for r in records if r.get("status") != "ok"], "error", "stage")
    infra = _count(records, "infra_error", "component")
    ungraded = _count(ok, "grading", "status")
    turns = [t for r in ok for t in r.get("turns") or []]
    return {
        "episodes": len(records),
        "completed": len(ok),
        "scored": len(scored),
        "errors": sum(errors.values()),
        "errors_by_stage": errors,
        "infra_errors": sum(infra.values()),
        "infra_errors_by_component": infra,
        "ungraded": sum(ungraded.values()),
        "ungraded_by_status": ungraded,
        "success_rate": _mean([1.0 if r.get("success") else 0.0 for r in scored]),
        "mean_reward": _mean([float(r["total_reward"]) for r in scored]),
        "mean_task_reward": _mean([float(r.get("task_reward", r["total_reward"])) for r in scored]),
        "mean_tool_bonus": _mean([float(r.get("tool_bonus") or 0.0) for r in scored]),
        "problems": len({_problem(r) for r in records}),
        **pass_at_ks(records),
        "mean_turns": _mean([r["num_turns"] for r in ok]),
        "mean_tool_calls": _mean([r.get("tool_calls", 0) for r in ok]),
        "cut_replies": sum(1 for t in turns if t.get("finish_reason") == "length"),
        "prompt_tokens": sum(int((r.get("usage") or {}).get("prompt_tokens") or 0) for r in records),
        "completion_tokens": sum(int((r.get("usage") or {}).get("completion_tokens") or 0) for r in records),
        "mean_seconds": _mean([float(r.get("seconds", 0.0)) for r in ok]),
        "rewards": [float(r["total_reward"]) for r in scored],
    }


def summarize_dir(out: str | Path, env_ids: Optional[Sequence[str]] = None) -> dict[str, Any]:
    """The summary of ``OUT``: per env (in ``env_ids`` order, or as found) and overall."""
    latest = latest_records(read_episodes(out))
    groups: dict[str, list[dict[str, Any]]] = {env_id: [] for env_id in env_ids or []}
    for rec in latest.values():
        groups.setdefault(rec["env_id"], []).append(rec)
    per_env = {env_id: summarize_records(recs) for env_id, recs in groups.items()}
    overall = summarize_records(list(latest.values()))
    overall.pop("rewards")
    return {"envs": per_env, "overall": overall}


COLUMNS = (
    "episodes", "errors", "infra_errors", "ungraded", "success_rate", "pass@1", "mean_reward",
    "mean_task_reward", "mean_tool_bonus", "mean_turns", "mean_tool_calls", "cut_replies", "completion_tokens",
)
HEADINGS = {"infra_errors": "infra", "mean_task_reward": "task_reward", "mean_tool_bonus": "tool_bonus"}


def format_summary(summary: dict[str, Any]) -> str:
    """A plain-text table of the summary: one row per env (pass@k beyond 1 beside its id)."""
    rows = [("env_id",) + tuple(HEADINGS.get(c, c) for c in COLUMNS)]
    for env_id, s in summary["envs"].items():
        extra = [k for k in s if k.startswith("pass@") and k != "pass@1"]
        row = [env_id] + [s.get(c) for c in COLUMNS]
        if extra:
            row[0] += " (" + ", ".join(f"{k}={s[k]:.3f}" for k in extra) + ")"
        rows.append(tuple("-" if v is None else f"{v:.3f}" if isinstance(v, float) else str(v) for v in row))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in rows) + "\n"
