"""``gem serve``: run the env server (see :mod:`gem.server.app` and docs/scale.md).

The token is read from ``$GEM_SERVER_TOKEN`` or ``--token-file`` and then removed from the
process environment; a ``--token`` on the command line is refused, because every process on the
machine (including programs that envs run) can read a command line.
"""

from __future__ import annotations

import argparse
import logging
import signal
from typing import Any

from gem.http.limits import LOOPBACK_HOSTS, ServerLimits, is_loopback, read_secret, scrub_environ
from gem.http.protocol import (
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_HOST,
    DEFAULT_MAX_SESSIONS,
    DEFAULT_MAX_SESSIONS_PER_CLIENT,
    DEFAULT_PORT,
    DEFAULT_SESSION_GRACE,
    DEFAULT_SESSION_TTL,
    DEFAULT_WORKERS,
    TOKEN_ENV_VAR,
)
from gem.server.quotas import DEFAULT_TEST_THREADS_PER_CLIENT
from gem.server.schema import ClientKwargs

logger = logging.getLogger(__name__)
_LIMITS = ServerLimits()


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``gem serve`` to the ``gem`` command's subparsers."""
    p = sub.add_parser("serve", help="serve env ids over HTTP and WebSocket (needs the server extra)")
    p.add_argument("env_ids", nargs="*", help="ids clients may make (default: every registered id)")
    p.add_argument("--protocol", choices=("gem", "openenv"), default="gem", help="GEM's protocol, or OpenEnv's (docs/interop.md)")
    p.add_argument("--host", default=DEFAULT_HOST, help="address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT)
    p.add_argument(
        "--token-file", default=None, metavar="PATH",
        help=f"file with the accepted token(s), one per line, mode 600 (default: ${TOKEN_ENV_VAR} if set)",
    )
    p.add_argument("--token", default=None, help=argparse.SUPPRESS)  # refused: see cmd_serve
    p.add_argument(
        "--insecure-no-token", action="store_true",
        help="allow binding an address other machines reach without a token (anyone there can run envs)",
    )
    p.add_argument(
        "--allow-origin", action="append", default=[], metavar="ORIGIN",
        help="a web origin (https://host:port) allowed to call the server from a browser; repeatable",
    )
    p.add_argument(
        "--client-kwargs", choices=[m.value for m in ClientKwargs], default=ClientKwargs.DECLARED.value,
        help="env kwargs clients may pass: as each env declares (default), typed, or any (trusted clients only)",
    )
    p.add_argument("--session-ttl", type=float, default=DEFAULT_SESSION_TTL, help="idle seconds before a session closes")
    p.add_argument("--max-sessions", type=int, default=DEFAULT_MAX_SESSIONS, help="sessions open at once, in total")
    p.add_argument(
        "--max-sessions-per-client", type=int, default=None,
        help=f"sessions (and WebSockets) one client (a token; without tokens, this machine or a remote "
             f"address) may hold, below --max-sessions (if not given: {DEFAULT_MAX_SESSIONS_PER_CLIENT}, and at "
             "most a quarter of --max-sessions; WebSockets: a quarter of the WebSocket cap)",
    )
    p.add_argument(
        "--shells-per-client", type=int, default=None,
        help="sandbox shells (terminal and code-tool sessions) one client may hold at once in each shared "
             "sandbox (if not given: a quarter of the 224 of its 256 slots that shells may take)",
    )
    p.add_argument(
        "--test-threads-per-client", type=int, default=DEFAULT_TEST_THREADS_PER_CLIENT,
        help="threads of each client's own pool for code-env tests",
    )
    p.add_argument(
        "--session-grace", type=float, default=DEFAULT_SESSION_GRACE,
        help="seconds a new WebSocket has to make its session (OpenEnv: its first reset) before it is closed",
    )
    p.add_argument("--workers", type=int, default=DEFAULT_WORKERS, help="threads running env calls")
    p.add_argument("--per-client-workers", type=int, default=None, help="workers one client may use at once (default half)")
    p.add_argument("--call-timeout", type=float, default=DEFAULT_CALL_TIMEOUT, help="seconds one env call may take")
    p.add_argument("--max-body-bytes", type=int, default=_LIMITS.max_body_bytes, help="largest body or WebSocket message")
    p.add_argument("--max-connections", type=int, default=_LIMITS.max_connections, help="open connections at once")
    p.add_argument("--header-timeout", type=float, default=_LIMITS.header_timeout, help="seconds to send a request head")
    p.add_argument("--request-timeout", type=float, default=_LIMITS.request_timeout, help="seconds one request may take")
    p.add_argument(
        "--record-dir", default=None, metavar="DIR",
        help="write every episode played as a trajectory record to DIR/episodes.jsonl (docs/records.md); off by default",
    )
    p.add_argument("--record-max-episode-bytes", type=int, default=1 << 20,
                   help="bytes one episode's record may take; later turns are left out of it (default 1 MiB)")
    p.add_argument("--record-max-session-bytes", type=int, default=64 << 20,
                   help="bytes one session's records may take; later episodes are dropped (default 64 MiB)")
    p.add_argument("--record-max-bytes", type=int, default=1 << 30,
                   help="bytes DIR/episodes.jsonl may grow to; later episodes are dropped (default 1 GiB)")
    p.set_defaults(func=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    from gem.errors import missing_extra

    if args.token is not None:
        raise ValueError(
            "--token is refused: a command line is visible to every process on the machine, including "
            f"the programs envs run. Put the token in ${TOKEN_ENV_VAR} or in a file (--token-file PATH, chmod 600)."
        )
    try:
        import uvicorn  # noqa: F401

        from gem.server.app import create_app
        from gem.http.limits import fit_limits
    except ImportError as exc:
        raise missing_extra("gem serve", "server", exc.name or "fastapi/uvicorn") from exc
    tokens = read_secret(TOKEN_ENV_VAR, args.token_file)
    scrub_environ(TOKEN_ENV_VAR)
    if not tokens and not is_loopback(args.host):
        if not args.insecure_no_token:
            raise ValueError(
                f"Refusing to serve {args.host} without a token: anyone who can reach it could run envs (and the "
                f"code envs run). Set ${TOKEN_ENV_VAR} or --token-file, or pass --insecure-no-token."
            )
        logger.warning("Serving on %s without a token: anyone who can reach it can run envs.", args.host)
    limits, _ = fit_limits(ServerLimits(  # fitted before the app sizes its WebSocket cap from it
        max_body_bytes=args.max_body_bytes,
        header_timeout=args.header_timeout,
        request_timeout=args.request_timeout,
        max_connections=args.max_connections,
    ))
    record_limits = None
    if args.record_dir is not None:
        from gem.server.session_log import RecordLimits

        record_limits = RecordLimits(args.record_max_episode_bytes, args.record_max_session_bytes, args.record_max_bytes)
    if args.protocol == "openenv":
        from gem.interop.openenv.server import create_openenv_app as create_app  # same options, same limits
    app = create_app(
        args.env_ids or None,
        session_ttl=args.session_ttl,
        max_sessions=args.max_sessions,
        tokens=tokens,
        allow_origins=args.allow_origin,
        limits=limits,
        client_kwargs=args.client_kwargs,
        max_sessions_per_client=args.max_sessions_per_client,
        shells_per_client=args.shells_per_client,
        test_threads_per_client=args.test_threads_per_client,
        workers=args.workers,
        per_client_workers=args.per_client_workers,
        call_timeout=args.call_timeout,
        session_grace=args.session_grace,
        record_dir=args.record_dir,
        record_limits=record_limits,
        allowed_hosts=[*LOOPBACK_HOSTS, args.host] if is_loopback(args.host) else None,
    )
    token_mode = _token_mode(len(tokens), args.host)
    del tokens
    log_level = "info" if args.verbose else "warning"
    return serve_app(app, args.host, args.port, limits, token_mode, log_level=log_level)


def _token_mode(count: int, host: str) -> str:
    """How clients are admitted, in words for the start line."""
    if count:
        return f"token required ({count} accepted; each is one client for quotas)"
    if is_loopback(host):
        return "no token (only this machine can connect; all of it is one client)"
    return "NO TOKEN (--insecure-no-token: anyone who reaches this address can run envs)"


def serve_app(app: Any, host: str, port: int, limits: ServerLimits, token_mode: str, log_level: str = "warning") -> int:
    """Run ``app`` until Ctrl-C or SIGTERM: one line when it listens, one when it stops; returns 0."""
    import uvicorn

    from gem.http.limits import uvicorn_config

    class Server(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets=sockets)
            if self.started:
                bound = self.servers[0].sockets[0].getsockname() if self.servers else (host, port)
                shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
                logger.info("gem serve: listening on http://%s:%d, %s", shown, bound[1], token_mode)

        def handle_exit(self, sig: int, frame: Any) -> None:
            # A signal asks for a clean stop (a second Ctrl-C forces it); uvicorn would raise the
            # signal again after stopping, which ends the process with a traceback and status 130.
            self.signal_name = "Ctrl-C" if sig == signal.SIGINT else signal.Signals(sig).name
            if self.should_exit and sig == signal.SIGINT:
                self.force_exit = True
            self.should_exit = True

    logger.setLevel(logging.INFO)  # the start and stop lines show without --verbose
    server = Server(uvicorn_config(app, host, port, limits, log_level=log_level))
    server.signal_name = None
    server.run()
    if server.signal_name is None and not server.started:
        return 1  # uvicorn has logged why it could not start (an address in use, ...)
    logger.info("gem serve: stopped (%s)", server.signal_name or "shut down")
    return 0
