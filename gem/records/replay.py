"""Re-playing recorded episodes against today's envs (``gem replay``) and re-scoring their final
verdicts (``gem regrade``, :mod:`gem.records.regrade`).

An episode is re-played from its record alone: ``gem.make(env_id, **kwargs)``, the recorded
``wrappers`` in order, ``reset(seed=seed)``, then each recorded action in turn. Replay compares the
first observation, then each turn's observation, reward, ``terminated`` and ``truncated`` with
the record, and stops at the first difference. Nothing calls a model.

Records come from ``RUN_DIR/episodes.jsonl`` (or a ``.jsonl`` file named directly); the last
record of each ``key`` counts, as in ``gem eval``'s summary.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

from gem.rollout import EpisodeRecorder

logger = logging.getLogger(__name__)

EPISODES_FILE = "episodes.jsonl"
COMPARED = ("observation", "reward", "terminated", "truncated")
MAX_SHOWN = 160  # characters of an observation shown around a difference


# ------------------------------------------------------------------------- reading
def records_path(run: str | Path) -> Path:
    """The JSONL file of ``run``: ``RUN_DIR/episodes.jsonl``, or ``run`` itself if it is a file."""
    path = Path(run)
    if path.is_dir():
        path = path / EPISODES_FILE
    if not path.is_file():
        raise FileNotFoundError(f"no records at {path} (give a directory of records, such as gem eval --out or gem train --trajectory-dir, or a .jsonl file).")
    return path


def read_records(run: str | Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The last record of each episode in ``run`` and one message per line that could not be read."""
    path = records_path(run)
    latest: dict[str, dict[str, Any]] = {}
    problems: list[str] = []
    with path.open(encoding="utf-8", errors="replace") as fh:
        for n, line in enumerate(fh, 1):
            line = line.strip()
            if not line:
                continue
            try:
                record = json.loads(line)
            except (json.JSONDecodeError, RecursionError):
                problems.append(f"{path} line {n}: not complete JSON; skipped")
                continue
            if not isinstance(record, dict) or not isinstance(record.get("env_id"), str):
                problems.append(f"{path} line {n}: not a record (no env_id); skipped")
                continue
            key = record.get("key") if isinstance(record.get("key"), str) else f"{record['env_id']}@line{n}"
            latest[key] = dict(record, key=key)
    return list(latest.values()), problems


# ------------------------------------------------------------------------- playing
@dataclass
class Difference:
    """The first place a replay departs from its record (turn 0: what reset returned)."""

    turn: int
    field: str
    recorded: Any
    replayed: Any

    def describe(self) -> str:
        where = "reset" if self.turn == 0 else f"turn {self.turn}"
        if self.field == "observation" and isinstance(self.recorded, str) and isinstance(self.replayed, str):
            at = next(
                (i for i, (a, b) in enumerate(zip(self.recorded, self.replayed)) if a != b),
                min(len(self.recorded), len(self.replayed)),
            )
            lo = max(0, at - 40)
            return (
                f"{where} observation differs at character {at}: recorded "
                f"{self.recorded[lo:lo + MAX_SHOWN]!r}, replayed {self.replayed[lo:lo + MAX_SHOWN]!r}"
            )
        return f"{where} {self.field}: recorded {self.recorded!r:.200}, replayed {self.replayed!r:.200}"


@dataclass
class Played:
    """What re-playing one record gave."""

    key: str
    env_id: str
    seed: Optional[int]
    status: str  # "identical", "different" or "skipped"
    reason: Optional[str] = None  # why it was skipped
    difference: Optional[Difference] = None
    turns: int = 0  # turns re-played
    recorded_version: Optional[str] = None
    current_version: Optional[str] = None
    total_reward: float = 0.0
    success: bool = False
    grading_status: Optional[str] = None
    extras: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("extras")
        if self.difference is not None:
            out["difference"]["description"] = self.difference.describe()
        return out


def _same(field_name: str, recorded: Any, replayed: Any) -> bool:
    if field_name == "reward":
        try:
            a, b = float(recorded), float(replayed)
        except (TypeError, ValueError):
            return False
        return a == b or (math.isnan(a) and math.isnan(b))
    if field_name in ("terminated", "truncated"):
        return bool(recorded) == bool(replayed)
    return recorded == replayed


def _skip_reason(record: dict[str, Any]) -> Optional[str]:
    turns = record.get("turns")
    if not isinstance(turns, list):
        return "the record has no turns"
    if not isinstance(record.get("seed"), int) or isinstance(record.get("seed"), bool):
        return "the record has no seed (the env chose one), so its episode cannot be re-created"
    if any(not isinstance(t, dict) or not isinstance(t.get("action"), str) for t in turns):
        return "the record does not keep its actions"
    if not isinstance(record.get("kwargs", {}), dict):
        return "the record's kwargs are not an object"
    if not isinstance(record.get("wrappers", "") or "", str):
        return "the record's wrappers are not a comma-separated string"
    if record.get("status") == "error" and (record.get("error") or {}).get("stage") in ("make", "reset"):
        return f"the recorded episode failed at {record['error']['stage']}; there is nothing to re-play"
    return None


class EnvCache:
    """Envs made from records, one per (id, kwargs, wrappers), reused across episodes."""

    def __init__(self) -> None:
        self.envs: dict[str, Any] = {}
        self.versions: dict[str, Optional[str]] = {}

    def get(self, env_id: str, kwargs: dict[str, Any], wrappers: str) -> Any:
        key = json.dumps([env_id, kwargs, wrappers], sort_keys=True, default=str)
        env = self.envs.get(key)
        if env is None:
            from gem.envs.registration import make
            from gem.wrappers.wrapper_factory import get_wrapper_fns

            env = make(env_id, **kwargs)
            if wrappers:
                for wrap in get_wrapper_fns(wrappers):
                    env = wrap(env)
            self.envs[key] = env
        return env

    def version(self, env_id: str) -> Optional[str]:
        if env_id not in self.versions:
            from gem.records.writer import record_env_version

            self.versions[env_id] = record_env_version(env_id)
        return self.versions[env_id]

    def close(self) -> None:
        for env in self.envs.values():
            try:
                env.close()
            except Exception:  # noqa: BLE001 -- closing goes on with the others
                logger.exception("closing a replayed env failed")
        self.envs.clear()


def play_record(record: dict[str, Any], cache: EnvCache, compare: bool = True) -> Played:
    """Re-play ``record``'s actions; with ``compare``, stop at the first difference from the record.

    Never raises for a bad record or a failing env: those are ``skipped`` (with the reason) or a
    difference in field ``error``.
    """
    env_id = record["env_id"]
    played = Played(
        key=record["key"], env_id=env_id, seed=record.get("seed") if isinstance(record.get("seed"), int) else None,
        status="skipped", recorded_version=record.get("env_version"),
    )
    reason = _skip_reason(record)
    if reason is not None:
        played.reason = reason
        return played
    played.current_version = cache.version(env_id)
    try:
        env = cache.get(env_id, dict(record.get("kwargs") or {}), record.get("wrappers") or "")
    except Exception as exc:  # noqa: BLE001 -- an env that cannot be made today is reported
        played.reason = f"cannot make {env_id} today: {type(exc).__name__}: {exc}"
        return played
    turns = record["turns"]
    rec = EpisodeRecorder(env, played.seed, max_steps=max(1, len(turns)), record=True)

    def differ(turn: int, name: str, recorded: Any, replayed: Any) -> bool:
        if compare and not _same(name, recorded, replayed):
            played.difference = Difference(turn, name, recorded, replayed)
            return True
        return False

    try:
        observation, info = env.reset(seed=played.seed)
    except Exception as exc:  # noqa: BLE001
        played.status = "different"
        played.difference = Difference(0, "error", None, f"reset raised {type(exc).__name__}: {exc}")
        return played
    rec.start(observation, info)
    if record.get("observation0") is not None and differ(0, "observation", record["observation0"], observation):
        played.status = "different"
        return played
    for recorded in turns:
        rec.begin_turn()
        try:
            observation, reward, terminated, truncated, info = env.step(recorded["action"])
        except Exception as exc:  # noqa: BLE001
            played.status = "different"
            played.difference = Difference(rec.turn, "error", None, f"step raised {type(exc).__name__}: {exc}")
            return played
        rec.add_turn(recorded["action"], observation, reward, terminated, truncated, info)
        played.turns = rec.turn
        replayed = {"observation": observation, "reward": float(reward), "terminated": terminated,
                    "truncated": truncated}
        for name in COMPARED:
            if name == "observation" and recorded.get("observation") is None:
                continue  # a record that did not keep observations is compared on the rest
            if differ(rec.turn, name, recorded.get(name), replayed[name]):
                played.status = "different"
                return played
        if (terminated or truncated) and rec.turn < len(turns):
            if differ(rec.turn, "end", "more turns recorded", "the env ended the episode"):
                played.status = "different"
                return played
    episode = rec.finish()
    played.status = "identical"
    played.total_reward = episode.total_reward
    played.success = episode.success
    status = (episode.steps[-1].get("info") or {}).get("grading") if episode.steps else None
    played.grading_status = episode.grading.get("status") if episode.grading else status
    played.extras["gold"] = episode.gold
    return played


def play_run(
    run: str | Path, compare: bool = True, on_played: Optional[Callable[[Played], None]] = None
) -> tuple[list[Played], list[str]]:
    """:func:`play_record` over every record of ``run``; also returns the unreadable lines' messages."""
    records, problems = read_records(run)
    cache = EnvCache()
    played = []
    try:
        for record in records:
            result = play_record(record, cache, compare=compare)
            played.append(result)
            if on_played is not None:
                on_played(result)
    finally:
        cache.close()
    return played, problems


def version_warnings(played: list[Played]) -> list[str]:
    """One line per env whose current version differs from a record's."""
    seen: dict[str, set[str]] = {}
    current: dict[str, Optional[str]] = {}
    for p in played:
        if p.recorded_version and p.current_version and p.recorded_version != p.current_version:
            seen.setdefault(p.env_id, set()).add(p.recorded_version)
            current[p.env_id] = p.current_version
    return [
        f"{env_id} is at version {current[env_id]}, the records were made at {', '.join(sorted(versions))}: "
        "its code, data or default kwargs changed since"
        for env_id, versions in seen.items()
    ]


def replay_report(run: str | Path) -> dict[str, Any]:
    """``gem replay RUN``'s report: counts, version warnings, unreadable lines and every episode."""
    played, problems = play_run(run, compare=True)
    counts = {s: sum(p.status == s for p in played) for s in ("identical", "different", "skipped")}
    return {
        "run": str(run),
        "episodes": len(played),
        **counts,
        "warnings": version_warnings(played) + problems,
        "results": [p.to_json() for p in played],
    }


def iter_differences(report: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for result in report["results"]:
        if result["status"] == "different":
            yield result
