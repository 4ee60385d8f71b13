"""``gem eval``, ``gem plot`` and ``gem view`` (see docs/eval.md)."""

from __future__ import annotations

import argparse
import json
import logging
import sys

logger = logging.getLogger(__name__)


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``gem eval`` to the ``gem`` command's subparsers."""
    from gem.cli import positive_int, wrapper_names
    from gem.eval.config import AGENTS, DEFAULT_MAX_TURNS, TOOL_CALLING

    p = sub.add_parser(
        "eval",
        help="score a model on an OpenAI-compatible server or an offline agent (needs the eval extra)",
        description="Score an agent on env ids; exit status 1 when no episode could be scored "
        "(every one failed: request errors, env errors, infrastructure failures, ungraded answers).",
    )
    p.add_argument("env_ids", nargs="+", metavar="ENV_ID")
    p.add_argument("--agent", choices=AGENTS, default="openai", help="who plays")
    p.add_argument("--model", default=None, help="model name served at --base-url (for --agent openai)")
    p.add_argument("--base-url", default=None, help="the server's /v1 URL, e.g. http://127.0.0.1:8000/v1")
    p.add_argument("--api-key", default=None, help="the API key (else $OPENAI_API_KEY, else 'EMPTY')")
    p.add_argument("--episodes", type=positive_int, default=10, help="problems (seeds) per env")
    p.add_argument(
        "--repeats", type=positive_int, default=1, help="samples per problem: EPISODES x REPEATS episodes, pass@k up to k=REPEATS"
    )
    p.add_argument("--concurrency", type=positive_int, default=8, help="episodes in flight at once")
    p.add_argument(
        "--wrappers", type=wrapper_names, default="", help="WRAPPER_FACTORY names, e.g. python_tool (comma-separated)"
    )
    p.add_argument("--tokenizer", default=None, help="tokenizer name/path for concat_chat wrappers")
    p.add_argument("--seed", type=int, default=0, help="problem p uses seed SEED + p")
    p.add_argument(
        "--max-turns", "--max-steps", dest="max_turns", type=positive_int, default=DEFAULT_MAX_TURNS,
        help="steps per episode at most (--max-steps: gem run's older name)",
    )
    p.add_argument("--limit", type=int, default=None, help="run at most this many missing episodes, then stop")
    p.add_argument("--system-prompt", default=None, help="a first system message")
    p.add_argument("--temperature", type=float, default=None, help="sampling temperature (server default)")
    p.add_argument("--top-p", type=float, default=None, help="nucleus sampling (server default)")
    p.add_argument("--max-tokens", type=int, default=None, help="tokens per reply (cut replies are counted)")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per model request (its own time)")
    p.add_argument("--retries", type=int, default=3, help="retries per model request (exponential backoff)")
    p.add_argument("--backoff", type=float, default=1.0, help="first retry delay in seconds (doubles each time)")
    p.add_argument("--tool-role", choices=("tool", "user"), default="tool", help="chat role of tool outputs")
    p.add_argument(
        "--tool-calling", choices=TOOL_CALLING, default="text",
        help="tool calls written in the reply's text, or the API's native function calls",
    )
    p.add_argument(
        "--record-tokens", action="store_true",
        help="ask the server for token ids and logprobs and record them (see docs/records.md)",
    )
    p.add_argument("--kwarg", action="append", default=[], metavar="KEY=VALUE", help="env kwargs (JSON values)")
    p.add_argument("--out", required=True, help="output directory (rerun with the same one to resume)")
    p.add_argument(
        "--no-progress", "--quiet", dest="no_progress", action="store_true", help="no progress bar (--quiet: an alias)"
    )
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=cmd_eval)


def cmd_eval(args: argparse.Namespace) -> int:
    """Run the evaluation; exit status 1 when not one episode could be scored."""
    from gem.cli import _parse_kwargs
    from gem.errors import missing_extra
    from gem.eval.runner import SUMMARY_FILE, EvalConfig, EvalRunner, format_summary
    from gem.eval.summary import format_tokens

    if args.agent == "openai":
        try:
            import openai  # noqa: F401
        except ImportError as exc:
            raise missing_extra("gem eval --agent openai", "eval", "openai") from exc
    config = EvalConfig(
        env_ids=list(args.env_ids),
        out=args.out,
        agent=args.agent,
        model=args.model,
        base_url=args.base_url,
        api_key=args.api_key,
        episodes=args.episodes,
        repeats=args.repeats,
        concurrency=args.concurrency,
        wrappers=args.wrappers,
        seed=args.seed,
        max_turns=args.max_turns,
        limit=args.limit,
        system_prompt=args.system_prompt,
        temperature=args.temperature,
        top_p=args.top_p,
        max_tokens=args.max_tokens,
        timeout_s=args.timeout,
        max_retries=args.retries,
        backoff_s=args.backoff,
        tool_role=args.tool_role,
        tool_calling=args.tool_calling,
        record_tokens=args.record_tokens,
        tokenizer=args.tokenizer,
        progress=not args.no_progress,
        env_kwargs=_parse_kwargs(args.kwarg),
    )
    runner = EvalRunner(config)
    summary = runner.run()
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        sys.stdout.write(format_summary(summary))
        tokens = format_tokens(summary["overall"])
        if tokens:
            print(tokens)
        print(f"episodes: {args.out}/episodes.jsonl  summary: {args.out}/{SUMMARY_FILE}")
    overall = summary["overall"]
    if (runner.ran and runner.failed == runner.ran) or (overall["episodes"] and not overall["scored"]):
        lines = [
            f"gem eval: no episode could be scored ({overall['errors']} errors, {overall['infra_errors']} "
            f"infrastructure failures, {overall['ungraded']} ungraded). The first error of each kind:"
        ]
        lines += [f"  {kind}: {message}" for kind, message in overall["first_errors"].items()]
        lines.append(f"Every episode: {args.out}/episodes.jsonl")
        print("\n".join(lines), file=sys.stderr)
        return 1
    return 0


def add_plot_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``gem plot``."""
    p = sub.add_parser("plot", help="PNG charts of a gem eval output directory (needs matplotlib)")
    p.add_argument("out", metavar="DIR", help="a gem eval --out directory")
    p.add_argument("--to", default=None, help="where to write the PNGs (default: DIR/plots)")
    p.set_defaults(func=cmd_plot)


def cmd_plot(args: argparse.Namespace) -> int:
    from gem.eval.plot import plot_dir

    for path in plot_dir(args.out, args.to):
        print(path)
    return 0


def add_view_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``gem view``."""
    p = sub.add_parser("view", help="browse a gem eval output directory in a local web page")
    p.add_argument("out", metavar="DIR", help="a gem eval --out directory")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8765)
    p.set_defaults(func=cmd_view)


def cmd_view(args: argparse.Namespace) -> int:
    from gem.eval.viewer import serve

    serve(
        args.out,
        host=args.host,
        port=args.port,
        on_ready=lambda url: print(f"gem view: open {url} (Ctrl-C to stop)", flush=True),
    )
    return 0


def add_proxy_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``gem proxy``."""
    p = sub.add_parser(
        "proxy",
        help="a recording OpenAI-compatible endpoint in front of a server: token ids for any harness",
        description="Forward chat requests to --upstream with token ids and logprobs asked for, and "
        "record them by episode (X-GEM-Episode header) into the trajectory schema (see docs/records.md).",
    )
    p.add_argument("--upstream", required=True, help="the real server's /v1 URL, e.g. http://127.0.0.1:8000/v1")
    p.add_argument("--out", default="gem-proxy", help="where calls.jsonl and episodes.jsonl go")
    p.add_argument("--host", default="127.0.0.1", help="the address to bind (loopback by default)")
    p.add_argument("--port", type=int, default=8001)
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per upstream request")
    p.add_argument("--api-key", default=None, help="the upstream's key (else the harness's Authorization is passed on)")
    p.set_defaults(func=cmd_proxy)


def cmd_proxy(args: argparse.Namespace) -> int:
    from gem.errors import missing_extra

    try:
        from gem.eval.proxy import serve
    except ImportError as exc:
        raise missing_extra("gem proxy", "server", "fastapi") from exc
    from gem.http.limits import is_loopback

    if not is_loopback(args.host):
        logger.warning("gem proxy binds %s: anyone who reaches it can use the upstream server through it "
                       "(it has no authentication of its own)", args.host)
    print(f"gem proxy: http://{args.host}:{args.port}/v1 -> {args.upstream}; recording into {args.out}", flush=True)
    serve(args.upstream, args.out, host=args.host, port=args.port, timeout_s=args.timeout, api_key=args.api_key)
    return 0
