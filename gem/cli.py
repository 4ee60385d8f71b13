"""The ``gem`` command.

``gem list [FAMILY]`` lists ids; ``gem play ID`` lets a person play in the terminal;
``gem run ID --agent random|solver|gold|openai --episodes N --seed S [--json] [--out DIR]`` plays
episodes and prints a summary. Other features add subcommands through ``SUBCOMMANDS`` (imported
only when used). ``gem run`` and ``gem eval`` share their option names (``--max-turns``,
``--no-progress``, ``--wrappers``, ``--out``; the older ``--max-steps`` and ``--quiet`` still work).
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import sys
from typing import Any, Callable, NoReturn, Optional, Sequence

# name -> "module:function"; the function receives the subparsers object and adds its parser,
# setting ``func`` (called with the parsed args, returning an exit code).
SUBCOMMANDS: dict[str, str] = {
    "serve": "gem.server.cli:add_parser",
    "train": "gem.rl.cli:add_parser",
    "eval": "gem.eval.cli:add_parser",
    "plot": "gem.eval.cli:add_plot_parser",
    "view": "gem.eval.cli:add_view_parser",
    "proxy": "gem.eval.cli:add_proxy_parser",
    "export": "gem.interop.cli:add_parser",
    "validate": "gem.checks.cli:add_parser",
    "replay": "gem.records.cli:add_replay_parser",
    "regrade": "gem.records.cli:add_regrade_parser",
}


def _agents() -> tuple[str, ...]:
    """The agents gem run can use: the one table's (gem.agents.AGENTS), without the person of gem play."""
    from gem.agents.registry import UNATTENDED

    return UNATTENDED


def __getattr__(name: str) -> Any:  # AGENTS, read from the table only when asked for (a fast `gem list`)
    if name == "AGENTS":
        return _agents()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def positive_int(text: str) -> int:
    """An argparse type: an integer >= 1 (``--episodes 0`` is an error, not an empty run)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def wrapper_names(text: str) -> str:
    """An argparse type: comma-separated ``WRAPPER_FACTORY`` names (an unknown one is an error that
    names the valid ones)."""
    from gem.wrappers.wrapper_factory import WRAPPER_FACTORY

    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in WRAPPER_FACTORY]
    if unknown:
        import difflib

        close = difflib.get_close_matches(unknown[0], WRAPPER_FACTORY, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise argparse.ArgumentTypeError(
            f"unknown wrapper {unknown[0]!r}{hint}; choose from: {', '.join(WRAPPER_FACTORY)}"
        )
    return ",".join(names)


def _parse_kwargs(pairs: Sequence[str]) -> dict[str, Any]:
    """``["max_turns=5", "name=x"]`` -> ``{"max_turns": 5, "name": "x"}`` (values parsed as JSON)."""
    kwargs: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"gem: --kwarg takes KEY=VALUE, got {pair!r}")
        try:
            kwargs[key] = json.loads(value)
        except json.JSONDecodeError:
            kwargs[key] = value
    return kwargs


def cmd_list(args: argparse.Namespace) -> int:
    import gem

    try:
        if args.params:
            sys.stdout.write(markdown_params_page(args.family))
            return 0
        if args.markdown:
            sys.stdout.write(markdown_env_table(args.family))
            return 0
        if args.versions:
            from gem.envs.registration import env_version

            ids = gem.list_envs(args.family)
            width = max((len(i) for i in ids), default=10) + 2
            for env_id in ids:
                print(f"{env_id:<{width}}{env_version(env_id)}")
            return 0
        gem.print_envs(args.family)
    except ValueError as exc:
        print(f"gem: {exc}", file=sys.stderr)
        return 2
    return 0


def markdown_env_table(family: Optional[str] = None) -> str:
    """The env ids as a Markdown table (docs/envs.md's table is this output)."""
    import gem
    from gem.envs.registration import registry

    lines = ["| id | family | description |", "| --- | --- | --- |"]
    for env_id in gem.list_envs(family):
        spec = registry.get(env_id)
        desc = spec.description if spec else ""
        lines.append(f"| `{env_id}` | {env_id.split(':', 1)[0]} | {desc} |")
    return "\n".join(lines) + "\n"


PARAMS_PAGE_HEAD = """# Env parameters

Every parameter an env declares (`PARAMS`, see [write-an-env.md](write-an-env.md#declare-your-parameters)),
per env class, with the ids built from it. Pass them to `gem.make(id, name=value)`; a value outside
"allowed" raises a `ValueError` naming the parameter. "A client may set" is what `gem serve` accepts
from a network client (`yes`: the same range; `no`: never; otherwise the narrower range a server
allows). This page is generated from the declarations: `gem list --params` prints it (the test
suite checks that it matches).
"""


def markdown_params_page(family: Optional[str] = None) -> str:
    """The declared params of every env class (of ``family``), as docs/env-params.md shows them."""
    import gem
    from gem.envs.registration import spec
    from gem.params import params_table

    classes: dict[Any, list[str]] = {}
    for env_id in gem.list_envs(family):
        classes.setdefault(spec(env_id).entry_point, []).append(env_id)
    titled = {}
    for entry_point, ids in classes.items():
        try:
            factory = spec(ids[0]).load()
        except ImportError:  # an extra that is not installed: its class cannot be read here
            continue
        shown = ", ".join(f"`{i}`" for i in ids[:3]) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")
        titled[f"{getattr(factory, '__qualname__', entry_point)} ({shown})"] = factory
    return PARAMS_PAGE_HEAD + "\n" + params_table(titled)


def _agent_options(args: argparse.Namespace) -> dict[str, Any]:
    if args.agent != "openai":
        return {}
    if not args.model:
        raise ValueError("--agent openai needs --model (the name your server serves) and usually --base-url.")
    return {"model": args.model, "base_url": args.base_url, "api_key": args.api_key}


def cmd_run(args: argparse.Namespace) -> int:
    import gem
    from gem.agents import check_agent, make_agent, run_episode
    from gem.eval.config import EPISODES_FILE, SUMMARY_FILE
    from gem.eval.progress import progress_bar
    from gem.eval.records import episode_record
    from gem.eval.summary import format_summary, summarize_records

    out = None
    if args.out:
        from pathlib import Path

        out = Path(args.out)
        if (out / EPISODES_FILE).exists():
            raise ValueError(
                f"{out / EPISODES_FILE} exists; gem run writes a fresh directory (use another --out, or "
                "gem eval to resume a run)."
            )
    env = gem.make(args.env_id, **_parse_kwargs(args.kwarg))
    try:
        if args.wrappers:
            from gem.wrappers.wrapper_factory import get_wrapper_fns

            for wrap in get_wrapper_fns(args.wrappers):
                env = wrap(env)
        check_agent(args.agent, env, names=list(_agents()))  # before any work: no bar, no episode
        agent = make_agent(args.agent, env, **_agent_options(args))
        records = []
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
        fh = (out / EPISODES_FILE).open("w", encoding="utf-8") if out is not None else None
        try:
            with progress_bar(
                args.episodes, f"{args.env_id} ({args.agent})", disable=args.json or args.no_progress
            ) as advance:
                for k in range(args.episodes):
                    episode = run_episode(env, agent, seed=args.seed + k, max_steps=args.max_turns, record=True)
                    record = episode_record(
                        episode, k, messages=getattr(agent, "messages", None), agent=args.agent,
                        model=getattr(args, "model", None), wrappers=args.wrappers,
                        env_kwargs=_parse_kwargs(args.kwarg),
                    )
                    if fh is not None:
                        fh.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
                        fh.flush()
                    records.append(record)
                    advance()
        finally:
            if fh is not None:
                fh.close()
    finally:
        env.close()
    summary = {"env_id": args.env_id, **summarize_records(records)}
    summary.pop("rewards")
    if out is not None:
        from gem.eval.summary import summarize_dir

        (out / SUMMARY_FILE).write_text(json.dumps(summarize_dir(out), indent=2), encoding="utf-8")
    if args.json:
        print(json.dumps(summary))
    else:
        sys.stdout.write(format_summary({"envs": {args.env_id: summary}}))
        if out is not None:
            print(f"episodes: {out / EPISODES_FILE}  summary: {out / SUMMARY_FILE}")
    return 0


def cmd_play(args: argparse.Namespace) -> int:
    import gem
    from gem.agents import check_agent, make_agent, run_episode
    from gem.agents.simple import format_error_check

    env = gem.make(args.env_id, **_parse_kwargs(args.kwarg))
    try:
        check_agent("human", env, names=["human"])  # a raw multi-agent game: name its views
    except ValueError:
        env.close()
        raise
    out = sys.stdout

    def write(text: str) -> None:
        out.write(text)
        out.flush()

    def read(prompt: str) -> str:
        write(prompt)
        line = sys.stdin.readline()
        if not line:
            raise EOFError
        return line.rstrip("\n")

    total = 0.0

    def on_turn(turn: dict[str, Any]) -> None:
        nonlocal total
        total += turn["reward"]
        write(f"[reward {turn['reward']:+.3g}, total {total:+.3g}]\n")

    agent = make_agent(
        "human", env, read=read, show=lambda text: write(f"\n{text}\n"), tell=lambda note: write(f"{note}\n"),
        check=format_error_check(env),  # a bare non-move is refused (the player types again), not sent
    )
    try:
        episode = run_episode(env, agent, seed=args.seed, record=True, on_turn=on_turn)
    except (EOFError, KeyboardInterrupt):
        write("\nStopped.\n")
        return 130
    finally:
        env.close()
    if episode.stopped:
        write(f"\nQuit; total reward {episode.total_reward:+.3g}.\n")
        return 0
    write(f"\n{episode.observations[-1]}\n")
    how = "terminated" if episode.terminated else "truncated"
    write(f"Episode over ({how}); total reward {episode.total_reward:+.3g}.\n")
    return 0


class _SubcommandParser(argparse.ArgumentParser):
    """A subcommand's parser: its help shows each option's default."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", argparse.ArgumentDefaultsHelpFormatter)
        super().__init__(*args, **kwargs)


def did_you_mean(unknown: Sequence[str], parser: argparse.ArgumentParser) -> str:
    """`` (did you mean --episodes?)`` for the first unknown ``--option`` close to one of ``parser``'s
    options, else ``""``."""
    import difflib

    options = [o for action in parser._actions for o in action.option_strings if o.startswith("--")]
    for word in unknown:
        if not word.startswith("-"):
            continue
        close = difflib.get_close_matches(word.split("=", 1)[0], options, n=1, cutoff=0.6)
        if close:
            return f" (did you mean {close[0]}?)"
    return ""


class _GemParser(argparse.ArgumentParser):
    """The top-level parser. An unknown option is reported by the subcommand's parser (its usage, not
    the top level's), with the closest option it has; an unknown subcommand with the closest one."""

    subcommands: Optional[argparse._SubParsersAction] = None

    def parse_args(self, args: Optional[Sequence[str]] = None, namespace: Any = None) -> argparse.Namespace:  # type: ignore[override]
        parsed, unknown = self.parse_known_args(args, namespace)
        if unknown:
            command = getattr(parsed, "command", None)
            target = self.subcommands.choices.get(command, self) if self.subcommands and command else self
            target.error(f"unrecognized arguments: {' '.join(unknown)}{did_you_mean(unknown, target)}")
        return parsed

    def error(self, message: str) -> NoReturn:  # type: ignore[override]
        if self.subcommands is not None and message.startswith("argument command: invalid choice"):
            import difflib
            import re

            typed = re.search(r"invalid choice: '([^']*)'", message)
            close = difflib.get_close_matches(typed.group(1), list(self.subcommands.choices), n=1) if typed else []
            if close:
                message += f" (did you mean {close[0]}?)"
        super().error(message)


BUILT_IN = ("list", "play", "run")


def command_in(argv: Sequence[str]) -> Optional[str]:
    """The subcommand ``argv`` names (its first word that is not ``-v``), if gem has one by that name."""
    for word in argv:
        if word in ("-v", "--verbose"):
            continue
        return word if word in BUILT_IN or word in SUBCOMMANDS else None
    return None


def build_parser(command: Optional[str] = None) -> argparse.ArgumentParser:
    """The ``gem`` parser. With ``command`` (the subcommand about to run), the other subcommands are
    named but not built, so that ``gem list`` imports neither the agents nor the other features'
    modules; without it (help, a misspelt subcommand), every one is built."""
    parser = _GemParser(prog="gem", description="GEM: a gym for agentic LLMs.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_SubcommandParser)
    parser.subcommands = sub

    p = sub.add_parser("list", help="list env ids")
    p.add_argument("family", nargs="?", help="only this family (game, math, code, qa, ...)")
    p.add_argument("--markdown", action="store_true", help="print a Markdown table")
    p.add_argument("--params", action="store_true", help="print each env's declared parameters (Markdown)")
    p.add_argument(
        "--versions", action="store_true",
        help="print each id's version: a hash of its code, data files and default kwargs (docs/records.md)",
    )
    p.set_defaults(func=cmd_list)

    p = sub.add_parser(
        "play",
        help="play an env yourself in the terminal",
        description="Play an env in the terminal. A move typed without the action format the env asks "
        "for (5 where it wants \\boxed{5}, ls where it wants <bash>ls</bash>) is put in it; one that would "
        "then be a format error (hello where a number is asked for) is not sent, and you type again. "
        "Type :help for help and :quit to stop; neither is sent to the env.",
    )
    p.add_argument("env_id")
    p.add_argument("--seed", type=int, default=None, help="the episode's seed (None: a fresh one)")
    p.add_argument("--kwarg", action="append", default=[], metavar="KEY=VALUE", help="env argument")
    p.set_defaults(func=cmd_play)

    if command not in (None, "run"):
        sub.add_parser("run", add_help=False)
    else:
        _add_run_parser(sub)
    for name, target in SUBCOMMANDS.items():
        if command not in (None, name):
            sub.add_parser(name, add_help=False)  # named (the parser knows it), built when it runs
            continue
        module_name, _, func = target.partition(":")
        getattr(importlib.import_module(module_name), func)(sub)
    for subparser in sub.choices.values():  # -v also after the subcommand
        try:
            subparser.add_argument(
                "-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help="log at INFO level"
            )
        except argparse.ArgumentError:  # the subcommand has its own -v
            pass
    return parser


def _add_run_parser(sub: Any) -> None:
    p = sub.add_parser("run", help="play episodes with an agent and summarize")
    p.add_argument("env_id")
    p.add_argument("--agent", choices=_agents(), default="random", help="who plays")
    p.add_argument("--model", default=None, help="model name (for --agent openai)")
    p.add_argument("--base-url", default=None, help="the server's /v1 URL (for --agent openai)")
    p.add_argument("--api-key", default=None, help="the API key (else $OPENAI_API_KEY, else 'EMPTY')")
    p.add_argument("--episodes", type=positive_int, default=10, help="episodes to play")
    p.add_argument("--seed", type=int, default=0, help="episode k uses seed S + k")
    p.add_argument(
        "--max-turns", "--max-steps", dest="max_turns", type=positive_int, default=10_000,
        help="cut an episode after this many steps (--max-steps: the older name)",
    )
    p.add_argument("--wrappers", type=wrapper_names, default="", help="WRAPPER_FACTORY names (comma-separated)")
    p.add_argument("--kwarg", action="append", default=[], metavar="KEY=VALUE", help="env argument")
    p.add_argument("--out", default=None, help="also write episodes.jsonl and summary.json here (for gem view/plot)")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    p.add_argument(
        "--no-progress", "--quiet", dest="no_progress", action="store_true",
        help="no progress bar (--quiet: the older name)",
    )
    p.set_defaults(func=cmd_run)


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(command_in(argv)).parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    from gem.errors import GemError

    try:
        return int(args.func(args) or 0)
    except (GemError, ValueError, NotImplementedError) as exc:
        print(f"gem: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader went away (`gem list | head -1`): stop quietly, as Python's docs advise
        # (stdout goes to devnull so the interpreter's final flush does not fail again).
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
