"""``gem serve --record-dir DIR``: every episode played on the server, as a trajectory record.

Each episode a session plays (from a reset to the step that ends it, the next reset, or the
session's close or expiry) is one record of GEM's trajectory schema (docs/records.md) in
``DIR/episodes.jsonl``: the env id, its version, the seed, the kwargs the session was made with,
each turn's action, observation, reward and end flags, the outcome (success, terminated,
truncated, an env error) and the costs (wall seconds, each step's env seconds, tool calls). The
server sees no model, so turns say ``token_source: "none"``; a harness that wants its tokens
recorded sends its model calls through ``gem proxy``. ``gem replay DIR`` re-plays the log.

Both protocols of ``gem serve`` (GEM's and OpenEnv's) play through
:class:`gem.server.app.SessionStore`, which calls this log; an episode reset but never stepped
(OpenEnv's stateless ``POST /reset``) is not written.

Every client is hostile, so the log is bounded (:class:`RecordLimits`): the client never names a
file (there is one, ``DIR/episodes.jsonl``, and a symlink there is refused); an episode is held in
memory up to ``max_episode_bytes`` and turns past that are left out of its record (which says so
in ``cut``); one session writes at most ``max_session_bytes``; the file stops growing at
``max_bytes`` (counting what it held at start), after which episodes are dropped and counted.
Records are built and written on a thread of their own, in order, so the event loop never waits
for the disk.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import json
import logging
import secrets
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from gem.records.join import outcome_fields
from gem.records.writer import RecordWriter, record_env_version, trajectory_record
from gem.rollout import EpisodeRecorder, jsonable, small_info

logger = logging.getLogger(__name__)

EPISODES_FILE = "episodes.jsonl"
AGENT = "gem serve client"
TURN_OVERHEAD = 512  # bytes a turn's fixed fields take in a record, beyond its texts
RECORD_OVERHEAD = 2048  # bytes of a record's own fields
UNBOUNDED_TURNS = 1 << 62  # the server has no turn cap of its own: the env's limits end an episode


@dataclass(frozen=True)
class RecordLimits:
    """How much the session log may take (bytes of JSON, UTF-8)."""

    max_episode_bytes: int = 1 << 20
    """An episode's record: turns past it are left out (and held in memory up to it)."""
    max_session_bytes: int = 64 << 20
    """All the records of one session: its later episodes are dropped."""
    max_bytes: int = 1 << 30
    """The whole file, counting what it held at start: later episodes are dropped."""

    def __post_init__(self) -> None:
        for name in ("max_episode_bytes", "max_session_bytes", "max_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 4096:
                raise ValueError(f"{name} must be an integer of at least 4096 bytes, got {value!r}.")


@dataclass
class _Episode:
    recorder: EpisodeRecorder
    number: int
    bytes: int
    started: float = field(default_factory=time.perf_counter)
    cut: Optional[dict[str, Any]] = None


@dataclass
class _Session:
    env_id: str
    kwargs: dict[str, Any]
    number: int
    success_reward: Optional[float]
    written: int = 0  # bytes of this session's records, written or queued
    episodes: int = 0
    episode: Optional[_Episode] = None


def _size(*values: Any) -> int:
    return len(json.dumps(values, ensure_ascii=False, default=str).encode("utf-8", "surrogatepass"))


class SessionLog:
    """The episodes of a server's sessions, written to ``directory/episodes.jsonl``.

    The server's :class:`~gem.server.app.SessionStore` calls :meth:`opened`, :meth:`reset`,
    :meth:`stepped`, :meth:`failed` and :meth:`closed` from its event loop; :meth:`close` writes
    what is still open and waits for the writer.
    """

    def __init__(self, directory: str | Path, limits: Optional[RecordLimits] = None) -> None:
        self.limits = limits or RecordLimits()
        self.directory = Path(directory).expanduser().resolve()
        self.directory.mkdir(parents=True, exist_ok=True)
        self.path = self.directory / EPISODES_FILE
        if self.path.is_symlink() or (self.path.exists() and not self.path.is_file()):
            raise ValueError(f"{self.path} must be a regular file (or absent), not a link or a folder.")
        self._writer = RecordWriter(self.path)
        self._bytes = self.path.stat().st_size
        self._run = secrets.token_hex(4)  # keys stay unique across restarts of the server
        self._numbers = itertools.count(1)
        self._sessions: dict[str, _Session] = {}
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="gem-session-log")
        self._lock = threading.Lock()
        self._pending: set[concurrent.futures.Future] = set()
        self.written = self.dropped = self.cut = 0
        self._full_warned = False

    # ------------------------------------------------------------------ the store's calls
    def opened(self, session_id: str, env_id: str, kwargs: dict[str, Any], env: Any = None) -> None:
        """A session was made (``kwargs``: the client's, as checked against the env's schema)."""
        reward = getattr(env, "success_reward", None)
        success_reward = float(reward) if isinstance(reward, (int, float)) and not isinstance(reward, bool) else None
        self._sessions[session_id] = _Session(env_id, jsonable(dict(kwargs)), next(self._numbers), success_reward)

    def reset(self, session_id: str, seed: Optional[int], observation: Any, info: Any) -> None:
        """An episode starts: the one running is written first."""
        session = self._sessions.get(session_id)
        if session is None:
            return
        self._end(session, stopped=True)
        session.episodes += 1
        recorder = EpisodeRecorder(env_id=session.env_id, seed=seed, max_steps=UNBOUNDED_TURNS,
                                   success_reward=session.success_reward)
        observation = str(observation)
        size = RECORD_OVERHEAD + _size(observation, session.kwargs)
        recorder.start(observation, info if isinstance(info, dict) else {})
        episode = _Episode(recorder, session.episodes, size)
        if size > self.limits.max_episode_bytes:
            episode.cut = {"reason": "the first observation is larger than the episode cap", "turns": 0}
        session.episode = episode

    def stepped(self, session_id: str, action: str, result: dict[str, Any], env_s: float) -> None:
        """A step returned ``result`` (the server's reply: observation, reward, terminated, truncated, info)."""
        session = self._sessions.get(session_id)
        episode = session.episode if session is not None else None
        if session is None or episode is None:
            return  # a step before any reset, or after the episode ended: nothing to add to
        info = result.get("info") if isinstance(result.get("info"), dict) else {}
        terminated, truncated = bool(result["terminated"]), bool(result["truncated"])
        if episode.cut is None:
            size = TURN_OVERHEAD + _size(action, result["observation"], small_info(info))
            if episode.bytes + size > self.limits.max_episode_bytes:
                episode.cut = {"reason": f"the record reached its cap of {self.limits.max_episode_bytes} bytes",
                               "turns": 0, "reward": 0.0, "terminated": False, "truncated": False}
            else:
                episode.bytes += size
                episode.recorder.begin_turn()
                episode.recorder.add_turn(action, str(result["observation"]), float(result["reward"]),
                                          terminated, truncated, info, env_s=env_s)
        if episode.cut is not None:  # what the record leaves out, summed
            cut = episode.cut
            cut.update(turns=cut["turns"] + 1, reward=cut["reward"] + float(result["reward"]),
                       terminated=terminated, truncated=truncated)
        if terminated or truncated:
            self._end(session, stopped=False)

    def failed(self, session_id: str, stage: str, exc: BaseException) -> None:
        """An env call failed: a step (``stage`` ``"env"``) ends the episode with its error; a
        reset (``"reset"``) ends the running episode as stopped."""
        session = self._sessions.get(session_id)
        if session is None or session.episode is None:
            return
        if stage == "reset":  # the running episode ends there; the failed reset starts none
            self._end(session, stopped=True)
            return
        recorder = session.episode.recorder
        recorder.stage = stage
        recorder.begin_turn()
        recorder.fail(exc)
        self._end(session, stopped=False)

    def closed(self, session_id: str) -> None:
        """The session was closed or expired: its running episode is written."""
        session = self._sessions.pop(session_id, None)
        if session is not None:
            self._end(session, stopped=True)

    # ----------------------------------------------------------------------- writing
    def _end(self, session: _Session, stopped: bool) -> None:
        episode, session.episode = session.episode, None
        if episode is None or episode.recorder.turn == 0 and episode.cut is None:
            return  # reset but never stepped: no experience to keep
        if stopped and not episode.recorder.ended:
            episode.recorder.stop()
        key = f"serve-{self._run}-{session.number}.{episode.number}"
        job = (key, session.env_id, session.kwargs, session.number, episode)
        if episode.cut is not None:
            self.cut += 1
        future = self._pool.submit(self._write, job, session)
        with self._lock:
            self._pending.add(future)
        future.add_done_callback(self._done)

    def _done(self, future: concurrent.futures.Future) -> None:
        with self._lock:
            self._pending.discard(future)
        exc = future.exception()
        if exc is not None:
            logger.error("The session log could not write an episode: %s: %s", type(exc).__name__, exc)

    def _write(self, job: tuple[str, str, dict[str, Any], int, _Episode], session: _Session) -> None:
        key, env_id, kwargs, number, episode = job
        recorder = episode.recorder
        seconds = time.perf_counter() - episode.started
        ep = recorder.finish()
        record = {
            "key": key,
            "session": number,
            "episode": episode.number,
            **outcome_fields(ep, seconds),
            **trajectory_record(ep, env_kwargs=kwargs, agent=AGENT, env_version=record_env_version(env_id)),
            "cut": episode.cut,
        }
        line_bytes = _size(record)
        limits = self.limits
        if line_bytes > limits.max_episode_bytes + RECORD_OVERHEAD:
            why = f"its record ({line_bytes} bytes) is over the episode cap"
        elif session.written + line_bytes > limits.max_session_bytes:
            why = f"its session has written its cap of {limits.max_session_bytes} bytes"
        elif self._bytes + line_bytes > limits.max_bytes:
            why = f"{self.path} reached its cap of {limits.max_bytes} bytes"
            if not self._full_warned:
                self._full_warned = True
                logger.warning("The session log is full (%s); later episodes are dropped.", why)
        else:
            self._writer.write(record)
            session.written += line_bytes
            self._bytes += line_bytes + 1
            self.written += 1
            return
        self.dropped += 1
        logger.info("Session log: episode %s (%s) not written: %s", key, env_id, why)

    def flush(self, timeout: Optional[float] = None) -> None:
        """Wait until every episode ended so far is written."""
        with self._lock:
            pending = list(self._pending)
        concurrent.futures.wait(pending, timeout=timeout)

    def close(self) -> None:
        """Write the episodes still running, wait for the writer and close the file."""
        for session_id in list(self._sessions):
            self.closed(session_id)
        self._pool.shutdown(wait=True)
        self._writer.close()

    def metrics(self) -> list[tuple[str, str, str, int]]:
        """Prometheus rows: episodes written, dropped at a cap, and cut at the episode cap."""
        return [
            ("gem_records_written_total", "counter", "episodes written to the session log", self.written),
            ("gem_records_dropped_total", "counter", "episodes the session log dropped at a size cap", self.dropped),
            ("gem_records_cut_total", "counter", "episodes whose record left out turns past the episode cap", self.cut),
        ]
