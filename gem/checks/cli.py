"""``gem validate``: attack env ids with cheap strategies; exit 1 when any strategy is paid.

``gem validate`` with no ids validates every offline id (ids that need no hub download, network
or API key); ``gem validate game rg:ab`` validates a family and an id; ``--import MODULE`` first
imports a module that registers your own envs (then, without ids, the ids it registered). Exit
status: 0 when nothing was found, 1 on any finding or an env that could not be validated, 2 on bad
arguments. See docs/validate.md.
"""

from __future__ import annotations

import argparse
import concurrent.futures as futures
import contextlib
import importlib
import multiprocessing
import os
import sys
import time
import warnings
from typing import Any, Optional, Sequence

from gem.checks.strategies import STRATEGY_NAMES
from gem.checks.validate import CONTROLS, Report


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``gem validate`` to the ``gem`` command's subparsers."""
    p = sub.add_parser(
        "validate",
        help="attack envs with cheap strategies (hedges, echoes, forged verdicts, ...); exit 1 on any finding",
        description="Play the cheapest ways to reward against env ids and report every strategy that is paid "
        "(and every positive control that fails). Exit status 0: nothing found; 1: a finding or an env that "
        "could not be validated; 2: bad arguments.",
    )
    p.add_argument("targets", nargs="*", metavar="ID|FAMILY",
                   help="env ids or families (default: every offline id, or the ids --import registered)")
    p.add_argument("--import", dest="imports", action="append", default=[], metavar="MODULE",
                   help="import MODULE first (it registers your envs); may be repeated")
    p.add_argument("--strategies", action="append", default=None, metavar="NAME[,NAME...]",
                   help=f"only these strategies and controls, comma-separated (of: {', '.join(STRATEGY_NAMES + CONTROLS)})")
    p.add_argument("--thorough", action="store_true", help="more seeds, longer episodes, slow strategies (releases)")
    p.add_argument("--seeds", type=int, nargs="+", default=None, metavar="SEED", help="the seeds to play")
    p.add_argument("--jobs", type=int, default=None, help="envs validated at once (default: the CPU count, at most 4)")
    p.add_argument("--strict", action="store_true",
                   help="also fail (exit 1) when a class of attack could not run on an env (no gold answer found, "
                        "no reference behaviour), or an env was skipped")
    p.add_argument("--json", action="store_true", help="print every report as one JSON document")
    p.add_argument("--out", default=None, metavar="FILE", help="also write every report as one JSON document to FILE")
    p.add_argument("--wrappers", default=None, help="WRAPPER_FACTORY names to wrap each env with, e.g. python_tool")
    p.add_argument("--kwarg", action="append", default=[], metavar="KEY=VALUE", help="env kwargs (JSON values)")
    p.set_defaults(func=cmd_validate)


def hub_backed(env_id: str) -> bool:
    """Whether ``env_id`` reads a dataset from the hub by default (needs the network)."""
    import gem

    source = gem.spec(env_id).kwargs.get("dataset_name")
    return isinstance(source, str) and "/" in source and not source.startswith((".", "/"))


def offline_ids() -> list[str]:
    """Every registered id that needs no hub download, network or API key (a multi-agent game
    through its single-agent views)."""
    import gem

    return _through_views([i for i in gem.list_envs() if not hub_backed(i)])


def single_agent_views(env_id: str) -> list[str]:
    """The registered single-agent views of the multi-agent game ``env_id`` (``-vs-scripted``, ...)."""
    import gem

    return [i for i in gem.list_envs() if gem.spec(i).kwargs.get("game") == env_id]


def _through_views(ids: Sequence[str]) -> list[str]:
    """``ids`` with each multi-agent game replaced by its single-agent views (an agent plays a view)."""
    out: list[str] = []
    for env_id in ids:
        out += single_agent_views(env_id) or [env_id]
    return list(dict.fromkeys(out))


def resolve_targets(targets: Sequence[str], added: Sequence[str]) -> list[str]:
    """Ids from ids and family names (a family gives its offline ids); no targets: ``added`` or all offline."""
    import gem

    if not targets:
        return list(added) if added else offline_ids()
    ids: list[str] = []
    from gem.envs.registration import interop_spec

    for target in targets:
        if interop_spec(target) is not None:  # openenv:<url>, gymnasium:<id>, verifiers:<id>, as gem.make takes them
            ids.append(target)
            continue
        if ":" in target:
            gem.spec(target)  # raises KeyError naming the closest ids
            ids.append(target)
            continue
        family = [i for i in gem.list_envs(target) if not hub_backed(i)]
        if not family:
            raise ValueError(f"{target!r} is neither an env id nor a family with offline ids; "
                             f"families: {', '.join(sorted({i.split(':', 1)[0] for i in gem.list_envs()}))}.")
        ids += family
    return _through_views(ids)


def _import_all(modules: Sequence[str]) -> None:
    """Import the user's modules (the current directory first on the path, as ``python -m`` does)."""
    if modules and os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    for name in modules:
        importlib.import_module(name)


def _validate_one(env_id: str, options: dict[str, Any], imports: Sequence[str]) -> Report:
    """One id in a worker process (an env that cannot be made is reported, not raised)."""
    from gem.checks.validate import skip_reason, validate
    from gem.envs.registration import interop_spec, spec
    from gem.errors import DependencyNotInstalled

    warnings.simplefilter("ignore")  # envs' warnings (step after end, ...) are not findings
    _import_all(imports)
    start = time.perf_counter()
    try:
        with contextlib.redirect_stdout(sys.stderr):  # libraries that print keep the report (--json) clean
            return validate(env_id, **options)
    except DependencyNotInstalled as exc:
        try:
            env_spec = interop_spec(env_id) or spec(env_id)
        except KeyError:
            env_spec = None
        return Report(env_id, skipped=skip_reason(exc, env_spec))
    except Exception as exc:  # noqa: BLE001 -- the env failed: reported as an error of that id
        return Report(env_id, errors=[f"{type(exc).__name__}: {exc}"], seconds=time.perf_counter() - start)


def run_ids(ids: Sequence[str], options: dict[str, Any], imports: Sequence[str], jobs: int,
            on_report: Any = None) -> list[Report]:
    """Validate ``ids`` with ``jobs`` worker processes; reports in the order of ``ids``."""
    if jobs <= 1 or len(ids) <= 1:
        reports = []
        for env_id in ids:
            reports.append(_validate_one(env_id, options, imports))
            if on_report:
                on_report(reports[-1])
        return reports
    ctx = multiprocessing.get_context("spawn")  # no forked copies of sandbox threads or pools
    done: dict[str, Report] = {}
    # the slow families first, so that no worker is left with a long id at the end
    order = sorted(ids, key=lambda i: (i.split(":", 1)[0] not in ("swe", "terminal", "code"), ids.index(i)))
    with futures.ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
        pending = {pool.submit(_validate_one, i, options, imports): i for i in order}
        for fut in futures.as_completed(pending):
            env_id = pending[fut]
            try:
                report = fut.result()
            except Exception as exc:  # noqa: BLE001 -- a worker died (killed, out of memory)
                report = Report(env_id, errors=[f"the worker failed: {type(exc).__name__}: {exc}"])
            done[env_id] = report
            if on_report:
                on_report(report)
    return [done[i] for i in ids]


def cmd_validate(args: argparse.Namespace) -> int:
    import gem
    from gem.checks.validate import _check_names, reports_json
    from gem.cli import _parse_kwargs

    try:
        before = set(gem.list_envs())
        _import_all(args.imports)
    except ImportError as exc:
        print(f"gem validate: cannot import {exc.name or exc}: {exc}", file=sys.stderr)
        return 2
    added = [i for i in gem.list_envs() if i not in before]
    if args.strategies:
        args.strategies = [n.strip() for item in args.strategies for n in item.split(",") if n.strip()]
    try:
        ids = resolve_targets(args.targets, added)
        _check_names(args.strategies)
    except (KeyError, ValueError) as exc:
        print(f"gem validate: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return 2
    if args.jobs is not None and args.jobs < 1:
        print("gem validate: --jobs must be at least 1", file=sys.stderr)
        return 2
    options: dict[str, Any] = {"thorough": args.thorough}
    if args.strategies:
        options["strategies"] = args.strategies
    if args.seeds:
        options["seeds"] = args.seeds
    if args.kwarg:
        options["env_kwargs"] = _parse_kwargs(args.kwarg)
    if args.wrappers:
        from gem.wrappers.wrapper_factory import get_wrapper_fns

        try:
            get_wrapper_fns(args.wrappers)
        except (KeyError, ValueError) as exc:
            print(f"gem validate: {exc.args[0] if exc.args else exc}", file=sys.stderr)
            return 2
        options["wrappers"] = args.wrappers
    jobs = args.jobs or max(1, min(4, os.cpu_count() or 1))
    start = time.perf_counter()

    def show(report: Report) -> None:
        if not args.json:
            print(report.summary(), flush=True)

    reports = run_ids(ids, options, args.imports, jobs, on_report=show)
    seconds = time.perf_counter() - start
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(reports_json(reports, seconds))
    if args.json:
        print(reports_json(reports, seconds))
    else:
        print(totals(reports, seconds))
    if not all(r.ok for r in reports):
        return 1
    return 1 if args.strict and not all(r.complete for r in reports) else 0


def totals(reports: Sequence[Report], seconds: float) -> str:
    """The closing line: envs, findings per family, skips and errors, time."""
    findings: dict[str, int] = {}
    for r in reports:
        if r.findings:
            family = r.env_id.split(":", 1)[0]
            findings[family] = findings.get(family, 0) + len(r.findings)
    skipped = sum(1 for r in reports if r.skipped)
    errors = sum(1 for r in reports if r.errors)
    partial = sum(1 for r in reports if r.not_run and not r.skipped)
    per_family = ", ".join(f"{k}: {v}" for k, v in sorted(findings.items())) or "none"
    found = sum(findings.values())
    return (f"gem validate: {_count(len(reports), 'env')}, {_count(found, 'finding')} ({per_family}), "
            f"{errors} with errors, {partial} not fully checked, {skipped} skipped, in {seconds:.0f} s")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def main(argv: Optional[Sequence[str]] = None) -> int:  # python -m gem.checks.cli
    parser = argparse.ArgumentParser(prog="gem")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["validate", *(argv if argv is not None else sys.argv[1:])])
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
