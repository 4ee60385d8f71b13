"""``gem view DIR``: browse a ``gem eval`` directory turn by turn in a local web page.

A small ``http.server`` (standard library) on ``127.0.0.1`` serves one static page
(``gem/eval/static/viewer.html``) and three JSON endpoints, which re-read ``episodes.jsonl`` on
every request (so a running eval can be watched):

* ``GET /api/summary``: the summary (as in ``summary.json``);
* ``GET /api/episodes``: one row per episode (the last record of each key): key, env, seed,
  status, success, return, turns, tool calls;
* ``GET /api/episode?key=KEY``: the full record;
* ``GET /api/envs``: one row per env for the landing page: episodes, success rate, mean task reward,
  mean tool bonus, errors (records from before ``task_reward``/``tool_bonus`` were written count
  their whole return as task reward, and show no tool bonus).
"""

from __future__ import annotations

import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Optional
from urllib.parse import parse_qs, urlparse

from gem.eval.runner import latest_records, read_episodes, summarize_dir

logger = logging.getLogger(__name__)

PAGE = Path(__file__).with_name("static") / "viewer.html"
ROW_KEYS = ("key", "env_id", "index", "seed", "status", "success", "total_reward", "num_turns", "tool_calls")


def episode_rows(out: str | Path) -> list[dict[str, Any]]:
    """The episode list the page shows (sorted by env, then index)."""
    rows = [{k: rec.get(k) for k in ROW_KEYS} for rec in latest_records(read_episodes(out)).values()]
    return sorted(rows, key=lambda r: (str(r["env_id"]), int(r["index"] or 0)))


def _tool_bonus(rec: dict[str, Any]) -> Optional[float]:
    """The episode's tool bonus: its own field, else the sum of its turns' ``tool_bonus``, else None."""
    if rec.get("tool_bonus") is not None:
        return float(rec["tool_bonus"])
    bonuses = [t["tool_bonus"] for t in rec.get("turns") or [] if t.get("tool_bonus") is not None]
    return float(sum(bonuses)) if bonuses else None


def _task_reward(rec: dict[str, Any]) -> float:
    if rec.get("task_reward") is not None:
        return float(rec["task_reward"])
    return float(rec.get("total_reward") or 0.0) - (_tool_bonus(rec) or 0.0)


def env_table(out: str | Path) -> list[dict[str, Any]]:
    """Per env: episodes, errors (the run's or the infrastructure's), success rate over the episodes
    that ran, mean task reward, mean tool bonus (None when no record has one)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for rec in latest_records(read_episodes(out)).values():
        groups.setdefault(str(rec.get("env_id")), []).append(rec)
    table = []
    for env_id in sorted(groups):
        recs = groups[env_id]
        failed = [r for r in recs if r.get("status") != "ok" or r.get("infra_error")]
        ran = [r for r in recs if r.get("status") == "ok"]
        bonuses = [b for b in map(_tool_bonus, ran) if b is not None]
        table.append({
            "env_id": env_id,
            "episodes": len(recs),
            "errors": len(failed),
            "success_rate": sum(bool(r.get("success")) for r in ran) / len(ran) if ran else None,
            "mean_task_reward": sum(map(_task_reward, ran)) / len(ran) if ran else None,
            "mean_tool_bonus": sum(bonuses) / len(bonuses) if bonuses else None,
        })
    return table


def _handler(out: Path) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, fmt: str, *args: Any) -> None:  # route to logging, not stderr
            logger.debug("viewer: " + fmt, *args)

        def _send(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def _json(self, value: Any, status: int = 200) -> None:
            self._send(status, json.dumps(value, default=str).encode(), "application/json")

        def do_GET(self) -> None:  # noqa: N802 -- http.server's name
            url = urlparse(self.path)
            if url.path in ("/", "/index.html"):
                self._send(200, PAGE.read_bytes(), "text/html; charset=utf-8")
            elif url.path == "/api/summary":
                self._json(summarize_dir(out))
            elif url.path == "/api/envs":
                self._json(env_table(out))
            elif url.path == "/api/episodes":
                self._json(episode_rows(out))
            elif url.path == "/api/episode":
                key = (parse_qs(url.query).get("key") or [""])[0]
                record = latest_records(read_episodes(out)).get(key)
                if record is None:
                    self._json({"error": f"no episode {key!r} in {out}"}, 404)
                else:
                    self._json(record)
            else:
                self._json({"error": f"unknown path {url.path}"}, 404)

    return Handler


class Viewer:
    """The viewer server in a background thread (``port=0``: a free port); a context manager."""

    def __init__(self, out: str | Path, host: str = "127.0.0.1", port: int = 0) -> None:
        self.out = Path(out)
        if not (self.out / "episodes.jsonl").exists():
            raise ValueError(f"{self.out} has no episodes.jsonl; give the --out directory of a gem eval run.")
        self.httpd = ThreadingHTTPServer((host, port), _handler(self.out))
        self.httpd.daemon_threads = True
        self._thread: Optional[threading.Thread] = None

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}/"

    def start(self) -> "Viewer":
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def __enter__(self) -> "Viewer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def serve(out: str | Path, host: str = "127.0.0.1", port: int = 8765, on_ready: Any = None) -> None:
    """Serve the viewer until Ctrl-C; ``on_ready(url)`` is called once it listens."""
    viewer = Viewer(out, host, port)
    logger.info("gem view at %s", viewer.url)
    if on_ready is not None:
        on_ready(viewer.url)
    try:
        viewer.httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        viewer.httpd.server_close()
