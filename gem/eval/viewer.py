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
  their whole return as task reward, and show no tool bonus);
* ``GET /api/problems``: the lines of ``episodes.jsonl`` that could not be read (file, line, why).

Every number comes from :func:`gem.eval.summary.summarize_dir`, the summary ``gem eval`` prints.
A line of ``episodes.jsonl`` that is not a readable record is skipped and named (file and line) in
the log and on the page; the other episodes still show. The server answers only requests whose
``Host`` header names the address it listens on or, on a loopback address, a loopback name (as
``gem serve`` does), so a web page whose domain was re-pointed at 127.0.0.1 (DNS rebinding) cannot
read the episodes and their gold answers.
"""

from __future__ import annotations

import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Optional
from urllib.parse import parse_qs, urlparse

from gem.eval.records import latest_records, read_episodes_checked
from gem.eval.summary import summarize_dir
from gem.http.limits import LOOPBACK_HOSTS, is_loopback

logger = logging.getLogger(__name__)

PAGE = Path(__file__).with_name("static") / "viewer.html"
ROW_KEYS = ("key", "env_id", "index", "seed", "status", "success", "total_reward", "num_turns", "tool_calls")


def episode_rows(out: str | Path) -> list[dict[str, Any]]:
    """The episode list the page shows (sorted by env, then index)."""
    rows = [{k: rec.get(k) for k in ROW_KEYS} for rec in latest_records(read_episodes_checked(out)[0]).values()]
    return sorted(rows, key=lambda r: (r["env_id"], r["index"]))


def env_table(out: str | Path) -> list[dict[str, Any]]:
    """Per env, from :func:`summarize_dir`: episodes, unscored episodes (errors, infrastructure
    failures, ungraded answers), success rate over every episode (an unscored one counts as not
    solved), mean task reward, mean tool bonus (None when no record has one)."""
    summary = summarize_dir(out)
    return [
        {
            "env_id": env_id,
            "episodes": s["episodes"],
            "errors": s["unscored"],
            "success_rate": s["success_rate"],
            "mean_task_reward": s["mean_task_reward"],
            "mean_tool_bonus": s["mean_tool_bonus"],
        }
        for env_id, s in sorted(summary["envs"].items())
    ]


def allowed_hosts(host: str) -> Optional[set[str]]:
    """The ``Host`` names the viewer answers to, as ``gem serve``: on a loopback address, the
    loopback names and the address; on any other address, any (``None``)."""
    if not is_loopback(host):
        return None
    return {h.strip("[]").lower() for h in (*LOOPBACK_HOSTS, host)}


def host_name(header: str) -> str:
    """The name part of a ``Host`` header (``[::1]:8765`` -> ``::1``, ``localhost:80`` -> ``localhost``)."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:].split("]")[0]
    return header.rsplit(":", 1)[0] if ":" in header else header


def _handler(out: Path, hosts: Optional[set[str]]) -> type[BaseHTTPRequestHandler]:
    logged: set[str] = set()

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
            header = self.headers.get("Host") or ""
            if hosts is not None and host_name(header) not in hosts:
                self._json(
                    {"error": f"requests for the host {header[:100]!r} are refused; this viewer answers to "
                     f"{', '.join(sorted(hosts))}"},
                    403,
                )
                return
            try:
                self._route()
            except Exception as exc:  # noqa: BLE001 -- one bad record must not take the page down
                logger.exception("gem view: %s failed", self.path)
                self._json({"error": f"{type(exc).__name__}: {exc}"}, 500)

        def _route(self) -> None:
            url = urlparse(self.path)
            if url.path in ("/", "/index.html"):
                self._send(200, PAGE.read_bytes(), "text/html; charset=utf-8")
            elif url.path == "/api/summary":
                summary = summarize_dir(out)
                for problem in summary["problems"]:
                    if problem not in logged:  # once per line, not on every request
                        logged.add(problem)
                        logger.warning("gem view: %s", problem)
                self._json(summary)
            elif url.path == "/api/envs":
                self._json(env_table(out))
            elif url.path == "/api/problems":
                self._json(summarize_dir(out)["problems"])
            elif url.path == "/api/episodes":
                self._json(episode_rows(out))
            elif url.path == "/api/episode":
                key = (parse_qs(url.query).get("key") or [""])[0]
                record = latest_records(read_episodes_checked(out)[0]).get(key)
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
        self.httpd = ThreadingHTTPServer((host, port), _handler(self.out, allowed_hosts(host)))
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
