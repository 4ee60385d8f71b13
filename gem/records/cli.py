"""``gem replay`` and ``gem regrade`` (see docs/records.md)."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys


def add_replay_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``gem replay``."""
    p = sub.add_parser(
        "replay",
        help="re-play a run's recorded actions against today's envs and report the first difference",
        description="Re-play every recorded episode's actions with its recorded seed, kwargs and wrappers, "
        "comparing observations, rewards and end flags turn by turn. Exit 0 when every episode re-plays "
        "identically, 1 when any differs, 2 when nothing could be re-played.",
    )
    p.add_argument("run", metavar="RUN_DIR", help="a directory of records (gem eval --out, gem run --out, gem train --trajectory-dir) or its episodes.jsonl")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_replay)


def cmd_replay(args: argparse.Namespace) -> int:
    from gem.records.replay import replay_report

    try:
        with contextlib.redirect_stdout(sys.stderr):  # what an env prints must not mix with the report
            report = replay_report(args.run)
    except FileNotFoundError as exc:
        print(f"gem replay: {exc}", file=sys.stderr)
        return 2
    for warning in report["warnings"]:
        print(f"gem replay: warning: {warning}", file=sys.stderr)
    if args.json:
        print(json.dumps(report, indent=2, default=str))
    else:
        for result in report["results"]:
            if result["status"] == "different":
                print(f"{result['key']} (seed {result['seed']}): {result['difference']['description']}")
            elif result["status"] == "skipped":
                print(f"{result['key']}: skipped: {result['reason']}")
        print(
            f"{report['episodes']} episodes: {report['identical']} identical, {report['different']} different, "
            f"{report['skipped']} skipped."
        )
    if report["different"]:
        return 1
    return 0 if report["identical"] else 2


def add_regrade_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``gem regrade``."""
    p = sub.add_parser(
        "regrade",
        help="re-score a run's recorded answers with today's graders, without the model",
        description="Re-play every finished episode's actions against today's env (its graders included) "
        "and report each verdict that changed (reward, success, grading status), with totals by env. "
        "Exit 0 when no verdict changed, 1 when any did, 2 when nothing could be regraded.",
    )
    p.add_argument("run", metavar="RUN_DIR", help="a directory of records (gem eval --out, gem run --out, gem train --trajectory-dir) or its episodes.jsonl")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--show", type=int, default=50, help="changed verdicts to print (default 50; --json lists all)")
    p.set_defaults(func=cmd_regrade)


def cmd_regrade(args: argparse.Namespace) -> int:
    from gem.records.regrade import format_regrade, regrade_report

    try:
        with contextlib.redirect_stdout(sys.stderr):  # what an env prints must not mix with the report
            report = regrade_report(args.run)
    except FileNotFoundError as exc:
        print(f"gem regrade: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report, indent=2, default=str))
    else:
        sys.stdout.write(format_regrade(report, limit=max(0, args.show)))
    if report["changed"]:
        return 1
    return 0 if report["regraded"] else 2
