"""``gem serve --record-dir``: each episode played on the server is a trajectory record that
``gem replay`` re-plays, over GEM's protocol and OpenEnv's, within caps a hostile client cannot pass."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="needs the server extra (pip install -e '.[server]' in the GEM checkout)")

import httpx  # noqa: E402

import gem  # noqa: E402
from gem.records.schema import record_problems  # noqa: E402
from gem.server.session_log import EPISODES_FILE, RecordLimits, SessionLog  # noqa: E402
from tests.interop.families import record as solve  # noqa: E402
from tests.interop.wire import ws_exchange  # noqa: E402

from .conftest import ServerThread, gem_serve  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
GAME = "game:GuessTheNumber-v0-easy"


def read(directory: Path) -> list[dict]:
    return [json.loads(line) for line in (directory / EPISODES_FILE).read_text().splitlines() if line.strip()]


def replay(directory: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gem.cli", "replay", str(directory)], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(REPO)})


def play_http(client: httpx.Client, sid: str, seed: int, actions: list[str]) -> list[dict]:
    assert client.post(f"/sessions/{sid}/reset", json={"seed": seed}).status_code == 200
    return [client.post(f"/sessions/{sid}/step", json={"action": a}).json() for a in actions]


def test_each_episode_of_a_session_is_a_record_that_replays(serve, tmp_path):
    server = serve(record_dir=str(tmp_path))
    won = solve(GAME, 3, max_turns=6)
    with httpx.Client(base_url=server.url, timeout=30) as client:
        sid = client.post("/sessions", json={"env_id": GAME, "kwargs": {"max_turns": 6}}).json()["session_id"]
        play_http(client, sid, 3, won.actions)  # to the end: written as it ends
        play_http(client, sid, 4, ["\\boxed{1}"])  # cut short by the next reset
        client.post(f"/sessions/{sid}/reset", json={"seed": 5})  # reset, never stepped: no record
        assert client.delete(f"/sessions/{sid}").status_code == 200
        metrics = client.get("/metrics").text
    server.stop()
    first, second = read(tmp_path)
    assert "gem_records_written_total 1" in metrics or "gem_records_written_total 2" in metrics
    for rec in (first, second):
        assert record_problems(rec) == []
        assert rec["env_id"] == GAME and rec["kwargs"] == {"max_turns": 6} and rec["wrappers"] == ""
        assert rec["env_version"] == gem.env_version(GAME)
        assert rec["policy"]["agent"] == "gem serve client"
        assert all(t["token_source"] == "none" and t["completion_token_ids"] is None for t in rec["turns"])
        assert rec["usage"] == {"prompt_tokens": 0, "completion_tokens": 0} and rec["seconds"] >= 0
        assert all(t["env_s"] is not None for t in rec["turns"])
    assert first["seed"] == 3 and [t["action"] for t in first["turns"]] == won.actions
    assert first["rewards"] == [s[1] for s in won.steps] and first["total_reward"] == 1.0
    assert first["success"] and first["terminated"] and not first["stopped"]
    assert first["observation0"] == won.first
    assert second["seed"] == 4 and len(second["turns"]) == 1 and second["stopped"] and not second["success"]
    local = gem.make(GAME, max_turns=6)
    local.reset(seed=4)
    assert second["rewards"] == [local.step("\\boxed{1}")[1]] and not second["terminated"]
    assert first["key"] != second["key"] and (first["session"], first["episode"], second["episode"]) == (1, 1, 2)
    done = replay(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 episodes: 2 identical" in done.stdout


def test_openenv_protocol_sessions_are_logged_the_same_way(tmp_path):
    from gem.interop.openenv.server import create_openenv_app

    won = solve(GAME, 7)
    server = ServerThread(create_openenv_app([GAME], record_dir=str(tmp_path))).start()
    try:
        messages = [{"type": "reset", "data": {"seed": 7}}]
        messages += [{"type": "step", "data": {"text": a}} for a in won.actions]
        replies = ws_exchange(server.url, *messages)
        assert replies[-1]["data"]["done"] is True
        # stateless HTTP: /reset alone plays no turn (no record); /step is a one-turn episode
        assert httpx.post(server.url + "/reset", json={"seed": 1}).status_code == 200
        assert httpx.post(server.url + "/step", json={"action": {"text": "\\boxed{2}"}, "seed": 1}).status_code == 200
    finally:
        server.stop()
    ws_record, http_record = read(tmp_path)
    assert record_problems(ws_record) == [] and record_problems(http_record) == []
    assert ws_record["seed"] == 7 and [t["action"] for t in ws_record["turns"]] == won.actions
    assert ws_record["total_reward"] == 1.0 and ws_record["success"]
    assert http_record["seed"] == 1 and [t["action"] for t in http_record["turns"]] == ["\\boxed{2}"]
    done = replay(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_gem_serve_record_dir_from_the_command_line(tmp_path):
    out = tmp_path / "log"
    won = solve(GAME, 11)
    with gem_serve([GAME, "--record-dir", str(out)], {"GEM_SERVER_TOKEN": ""}) as url:
        with httpx.Client(base_url=url, timeout=30) as client:
            sid = client.post("/sessions", json={"env_id": GAME}).json()["session_id"]
            play_http(client, sid, 11, won.actions)
    (rec,) = read(out)  # written when the episode ended, before the server stopped
    assert rec["seed"] == 11 and rec["total_reward"] == 1.0
    done = replay(out)
    assert done.returncode == 0 and "1 episodes: 1 identical" in done.stdout, done.stdout + done.stderr


# ------------------------------------------------------------------------- a hostile client
def test_an_episode_over_its_cap_is_cut_and_says_so(serve, tmp_path):
    limits = RecordLimits(max_episode_bytes=20_000, max_session_bytes=1 << 20, max_bytes=1 << 20)
    server = serve(record_dir=str(tmp_path), record_limits=limits)
    with httpx.Client(base_url=server.url, timeout=30) as client:
        sid = client.post("/sessions", json={"env_id": GAME, "kwargs": {"max_turns": 6}}).json()["session_id"]
        replies = play_http(client, sid, 0, ["\\boxed{1}" + " " * 6000] * 6)  # 36 kB: over the 20 kB cap
    server.stop()
    (rec,) = read(tmp_path)
    line = (tmp_path / EPISODES_FILE).read_text()
    assert len(line.encode()) < 20_000 + 4096
    kept = len(rec["turns"])
    assert 1 <= kept < 6 and rec["cut"]["turns"] == 6 - kept
    assert rec["cut"]["reward"] == sum(r["reward"] for r in replies[kept:])
    assert (rec["cut"]["terminated"], rec["cut"]["truncated"]) == (replies[-1]["terminated"], replies[-1]["truncated"])
    assert record_problems(rec) == []
    assert replay(tmp_path).returncode == 0  # the turns it kept re-play


def test_the_log_stops_growing_at_its_caps(serve, tmp_path):
    limits = RecordLimits(max_episode_bytes=8192, max_session_bytes=20_000, max_bytes=32_000)
    server = serve(record_dir=str(tmp_path), record_limits=limits)
    with httpx.Client(base_url=server.url, timeout=30) as client:
        sids = [client.post("/sessions", json={"env_id": GAME}).json()["session_id"] for _ in range(3)]
        for _ in range(6):  # each episode's record is a few kB: sessions and then the file fill up
            for sid in sids:
                play_http(client, sid, 0, ["\\boxed{1}" + " " * 2000, "\\boxed{2}" + " " * 2000])
        metrics = client.get("/metrics").text
    server.stop()
    size = (tmp_path / EPISODES_FILE).stat().st_size
    assert size <= 32_000
    records = read(tmp_path)
    by_session: dict[int, int] = {}
    for rec in records:
        by_session[rec["session"]] = by_session.get(rec["session"], 0) + len(json.dumps(rec, ensure_ascii=False))
    assert all(total <= 20_000 for total in by_session.values())
    dropped = int(next(line.split()[1] for line in metrics.splitlines() if line.startswith("gem_records_dropped_total")))
    assert dropped > 0 and len(records) + dropped >= 15  # every ended episode is written or counted


def test_the_client_never_names_the_file_and_a_planted_link_is_refused(tmp_path):
    target = tmp_path / "elsewhere.txt"
    target.write_text("")
    log_dir = tmp_path / "log"
    log_dir.mkdir()
    (log_dir / EPISODES_FILE).symlink_to(target)
    with pytest.raises(ValueError, match="regular file"):
        SessionLog(log_dir)
    with pytest.raises(ValueError, match="at least 4096"):
        RecordLimits(max_episode_bytes=10)
    # env ids and kwargs are record contents, never paths: a session with a hostile-looking
    # kwarg value writes into DIR/episodes.jsonl only
    log = SessionLog(tmp_path / "ok")
    log.opened("s", GAME, {"note": "../../etc/passwd"})
    log.reset("s", 0, "obs", {})
    log.stepped("s", "a", {"observation": "o", "reward": 0.0, "terminated": True, "truncated": False, "info": {}}, 0.0)
    log.close()
    assert sorted(p.name for p in (tmp_path / "ok").iterdir()) == [EPISODES_FILE]
    assert target.read_text() == ""
