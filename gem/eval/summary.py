"""Scores of recorded episodes: per env and overall (``summary.json`` and the printed table).

Every episode counts in the rates (``success_rate``, pass@k, the mean rewards): one that errored,
hit an infrastructure failure or was left ungraded (a grader timeout) counts as *not solved*, so a
model cannot raise its score by getting itself ungraded. Those episodes are also counted apart
(``unscored``; errors by stage, infrastructure failures by component, ungraded answers by status),
so a broken grader or server shows as such and not only as wrong answers. pass@k groups episodes by
problem, i.e. by ``(env_id, seed)``, and is reported for k = 1, 2, 4, ... up to the samples per
problem. Rewards are split: ``mean_task_reward`` is what solving earned, ``mean_tool_bonus`` what
tool use earned (``info["tool_bonus"]``); ``mean_reward`` is their sum.

:func:`summarize_dir` is the one summary of a run directory: ``gem eval``, ``gem view`` and
``gem plot`` all read it.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from pathlib import Path
from typing import Any, Optional, Sequence

from gem.eval.records import latest_records, read_episodes_checked

PASS_KS = (1, 2, 4, 8, 16, 32, 64, 128)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of a problem sampled ``n`` times with ``c`` successes (Chen et al. 2021)."""
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def _mean(values: Sequence[float]) -> Optional[float]:
    return round(sum(values) / len(values), 6) if values else None


def is_scored(record: dict[str, Any]) -> bool:
    """Whether an episode was scored (ran to its end, graded, no infra failure); one that was not
    still counts in the rates, as not solved."""
    return record.get("status") == "ok" and not record.get("infra_error") and not record.get("grading")


def _problem(record: dict[str, Any]) -> tuple[Any, Any]:
    return record.get("env_id"), record.get("seed")


def solved(record: dict[str, Any]) -> bool:
    """Whether an episode counts as solved: scored and successful (an unscored one never is)."""
    return is_scored(record) and record.get("success") is True


def pass_at_ks(records: Sequence[dict[str, Any]]) -> dict[str, float]:
    """pass@k over problems ``(env_id, seed)``; k up to the most samples any problem was given.
    An unscored sample counts as a failed one."""
    outcomes: dict[tuple[Any, Any], list[bool]] = {}
    for r in records:
        outcomes.setdefault(_problem(r), []).append(solved(r))
    most = max((len(v) for v in outcomes.values()), default=0)
    result: dict[str, float] = {}
    for k in sorted({k for k in PASS_KS if k <= most} | ({most} if most else set())):
        eligible = [v for v in outcomes.values() if len(v) >= k]
        if eligible:
            result[f"pass@{k}"] = round(sum(pass_at_k(len(v), sum(v), k) for v in eligible) / len(eligible), 6)
    return result


def _count(records: Sequence[dict[str, Any]], field: str, sub: str) -> dict[str, int]:
    return dict(Counter(str((r.get(field) or {}).get(sub, "unknown")) for r in records if r.get(field)))


def tool_bonus(record: dict[str, Any]) -> Optional[float]:
    """An episode's tool bonus: its own field, else the sum of its turns' ``tool_bonus`` (records
    written before the field existed), else ``None``."""
    if record.get("tool_bonus") is not None:
        return float(record["tool_bonus"])
    bonuses = [t["tool_bonus"] for t in record.get("turns") or [] if t.get("tool_bonus") is not None]
    return float(sum(bonuses)) if bonuses else None


def task_reward(record: dict[str, Any]) -> float:
    """What solving earned: the record's ``task_reward``, else its return less its tool bonus."""
    if record.get("task_reward") is not None:
        return float(record["task_reward"])
    return float(record.get("total_reward") or 0.0) - (tool_bonus(record) or 0.0)


def summarize_records(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Scores of episode records (the last record of each key); every record counts in the rates."""
    ok = [r for r in records if r.get("status") == "ok"]
    scored = [r for r in ok if is_scored(r)]
    errors = _count([r for r in records if r.get("status") != "ok"], "error", "stage")
    infra = _count(records, "infra_error", "component")
    ungraded = _count(ok, "grading", "status")
    turns = [t for r in ok for t in r.get("turns") or []]
    bonuses = [b for b in map(tool_bonus, records) if b is not None]
    return {
        "episodes": len(records),
        "completed": len(ok),
        "scored": len(scored),
        "unscored": len(records) - len(scored),
        "solved": sum(map(solved, records)),
        "errors": sum(errors.values()),
        "errors_by_stage": errors,
        "infra_errors": sum(infra.values()),
        "infra_errors_by_component": infra,
        "ungraded": sum(ungraded.values()),
        "ungraded_by_status": ungraded,
        "success_rate": _mean([1.0 if solved(r) else 0.0 for r in records]),
        "mean_reward": _mean([float(r.get("total_reward") or 0.0) for r in records]),
        "mean_task_reward": _mean([task_reward(r) for r in records]),
        "mean_tool_bonus": _mean(bonuses),
        "problems": len({_problem(r) for r in records}),
        **pass_at_ks(records),
        "mean_turns": _mean([r.get("num_turns") or 0 for r in ok]),
        "mean_tool_calls": _mean([r.get("tool_calls") or 0 for r in ok]),
        "cut_replies": sum(1 for t in turns if t.get("finish_reason") == "length"),
        "prompt_tokens": sum(_tokens(r, "prompt_tokens") for r in records),
        "completion_tokens": sum(_tokens(r, "completion_tokens") for r in records),
        "mean_seconds": _mean([float(r.get("seconds") or 0.0) for r in ok]),
        **token_stats(turns),
        "first_errors": first_errors(records),
        "rewards": [float(r.get("total_reward") or 0.0) for r in records],
    }


_CAUSE = re.compile(r"attempt\(s\): (\w+):")


def token_stats(turns: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """How the turns' token ids were obtained and how often re-tokenising the text gives others.

    ``token_sources``: turns per ``token_source``; ``token_notes``: the first note of each source
    (why ids are missing); ``token_drift``: the fraction of turns with ids whose completion text,
    tokenised again, gives other ids (``None``: never measured); ``token_drift_turns``: ``[drifted,
    measured]``.
    """
    sources: dict[str, int] = {}
    notes: dict[str, str] = {}
    measured = drifted = 0
    for t in turns:
        source = str(t.get("token_source") or "none")
        sources[source] = sources.get(source, 0) + 1
        if isinstance(t.get("token_note"), str):
            notes.setdefault(source, t["token_note"][:300])
        if isinstance(t.get("token_drift"), bool):
            measured += 1
            drifted += t["token_drift"]
    return {
        "token_sources": sources,
        "token_notes": notes,
        "token_drift": drifted / measured if measured else None,
        "token_drift_turns": [drifted, measured],
    }


def format_tokens(overall: dict[str, Any]) -> str:
    """One line on the run's token ids, or ``""`` when no turn says anything about them (not asked)."""
    sources = overall.get("token_sources") or {}
    notes = overall.get("token_notes") or {}
    if not notes and set(sources) <= {"none"}:
        return ""
    parts = [f"{n} turns {source}" for source, n in sorted(sources.items())]
    line = "token ids: " + ", ".join(parts)
    if sources.get("none") and "none" in notes:
        line += f" (none: {notes['none']})"
    drifted, measured = overall.get("token_drift_turns") or [0, 0]
    if measured:
        line += f"; token_drift {overall['token_drift']:.3f} ({drifted} of {measured} turns re-tokenise otherwise)"
    return line


def first_errors(records: Sequence[dict[str, Any]], limit: int = 300) -> dict[str, str]:
    """The first message of each kind of failure, in record order: ``{"model APIConnectionError":
    "chat request to ... failed ..."}``. A kind is the stage and error type (and, for a failed
    model request, the client's exception: an unknown model, a server that is down and an HTTP
    500 are three kinds), ``infra COMPONENT`` or ``ungraded STATUS``."""
    found: dict[str, str] = {}
    for r in records:
        if r.get("status") != "ok":
            err = r.get("error") or {}
            message = str(err.get("message") or "")
            kind = f"{err.get('stage', 'unknown')} {err.get('type', 'error')}"
            cause = _CAUSE.search(message)
            if cause:
                kind += f" ({cause.group(1)})"
        elif r.get("infra_error"):
            err = r["infra_error"]
            kind, message = f"infra {err.get('component', 'unknown')}", f"{err.get('type')}: {err.get('message')}"
        elif r.get("grading"):
            err = r["grading"]
            kind, message = f"ungraded {err.get('status', 'unknown')}", str(err.get("message") or err)
        else:
            continue
        found.setdefault(kind, message[:limit])
    return found


def _tokens(record: dict[str, Any], name: str) -> int:
    value = (record.get("usage") or {}).get(name)
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def summarize_dir(out: str | Path, env_ids: Optional[Sequence[str]] = None) -> dict[str, Any]:
    """The summary of ``OUT``: per env (in ``env_ids`` order, or as found) and overall.

    ``problems`` lists the lines of ``episodes.jsonl`` that could not be read (file and line
    number, why); they are left out of the scores.
    """
    records, problems = read_episodes_checked(out)
    latest = latest_records(records)
    groups: dict[str, list[dict[str, Any]]] = {env_id: [] for env_id in env_ids or []}
    for rec in latest.values():
        groups.setdefault(rec["env_id"], []).append(rec)
    per_env = {env_id: summarize_records(recs) for env_id, recs in groups.items()}
    overall = summarize_records(list(latest.values()))
    overall.pop("rewards")
    return {"envs": per_env, "overall": overall, "problems": problems}


# (summary key, heading): the table's columns, in order (pass@k after success). A column that is
# zero or empty in every row is left out, and so are pass@1 where it equals the success rate (one
# sample per problem) and the task reward where no episode earned a tool bonus. The episodes not
# scored are the errors, infrastructure failures and ungraded answers: each has its column.
COLUMNS = (
    ("episodes", "episodes"), ("errors", "errors"), ("infra_errors", "infra"), ("ungraded", "ungraded"),
    ("success_rate", "success"), ("mean_reward", "reward"), ("mean_task_reward", "task"),
    ("mean_tool_bonus", "bonus"), ("mean_turns", "turns"), ("mean_tool_calls", "tools"),
    ("cut_replies", "cut"), ("completion_tokens", "out_tok"),
)
TABLE_WIDTH = 100


def _cell(value: Any) -> str:
    return "-" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


def _shorten(text: str, room: int) -> str:
    """``text`` cut in the middle to ``room`` characters (family and variant stay readable)."""
    if len(text) <= room:
        return text
    head = (room - 1) // 2
    return text[:head] + "~" + text[len(text) - (room - 1 - head):]


def format_summary(summary: dict[str, Any], width: int = TABLE_WIDTH) -> str:
    """A plain-text table of the summary, one row per env, no line wider than ``width``.

    Columns that are zero for the whole run are left out; an env id longer than a third of the
    width is shortened in the middle; columns that still do not fit go on into a second table
    (with the env ids again) below the first.
    """
    envs = summary["envs"]
    ks = sorted({k for s in envs.values() for k in s if k.startswith("pass@")}, key=lambda k: int(k[5:]))
    columns = list(COLUMNS[:5]) + [(k, k) for k in ks] + list(COLUMNS[5:])
    keep = []
    for key, heading in columns:
        values = [s.get(key) for s in envs.values()]
        if key not in ("episodes", "success_rate", "mean_reward") and all(v in (None, 0, 0.0) for v in values):
            continue  # nothing to see in the whole run
        if key == "pass@1" and all(s.get("pass@1") == s.get("success_rate") for s in envs.values()):
            continue
        if key == "mean_task_reward" and all(s.get(key) == s.get("mean_reward") for s in envs.values()):
            continue  # no tool bonus anywhere: the task reward is the reward
        keep.append((key, heading))
    cells = [[h for _, h in keep]] + [[_cell(s.get(k)) for k, _ in keep] for s in envs.values()]
    widths = [max(len(r[i]) for r in cells) for i in range(len(keep))]
    ids = ["env_id"] + list(envs)
    room = max(12, width // 3)
    if max(map(len, ids)) + 2 + sum(w + 2 for w in widths) - 2 > width:
        ids = [_shorten(i, room) for i in ids]
    id_width = max(map(len, ids))
    parts: list[list[int]] = [[]]
    used = id_width
    for i, w in enumerate(widths):
        if parts[-1] and used + 2 + w > width:
            parts.append([])
            used = id_width
        parts[-1].append(i)
        used += 2 + w
    blocks = []
    for part in parts:
        lines = []
        for env_id, row in zip(ids, cells):
            values = [env_id.ljust(id_width)] + [row[i].ljust(widths[i]) for i in part]
            lines.append("  ".join(values).rstrip())
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"
