"""``gem export FORMAT ID DIR``: write a GEM id as another framework's environment package.

``openenv``: an OpenEnv env package (``openenv.yaml``, typed models and client, ``server/app.py``, a
Dockerfile, pyproject, ``uv.lock`` and the running GEM as a wheel in ``vendor/``).
``verifiers``: a verifiers environment package (a taskset and an env), installable with pip.
"""

from __future__ import annotations

import argparse
import sys

FORMATS = ("openenv", "verifiers")


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``gem export`` to the ``gem`` command's subparsers."""
    p = sub.add_parser("export", help="write an env id as an OpenEnv or verifiers environment package")
    p.add_argument("format", choices=FORMATS, help="the package's framework")
    p.add_argument("env_id", help="the GEM id to export")
    p.add_argument("directory", help="where to write the package (created)")
    p.add_argument("--force", action="store_true", help="write into a directory that is not empty")
    p.add_argument("--no-lock", action="store_true",
                   help="openenv: do not run `uv lock` in the package (it needs uv and the package index)")
    p.set_defaults(func=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    kwargs = {}
    if args.format == "openenv":
        from gem.interop.openenv.export import export_openenv as export

        kwargs["lock"] = not args.no_lock
    else:
        from gem.interop.verifiers.export import export_verifiers as export
    try:
        out = export(args.env_id, args.directory, overwrite=args.force, **kwargs)
    except FileExistsError as exc:
        print(f"gem: {exc}", file=sys.stderr)
        return 2
    print(f"Wrote {args.format} package for {args.env_id} to {out}")
    if args.format == "openenv" and not (out / "uv.lock").exists():
        print(f"No uv.lock in {out}: run `uv lock` there (it needs uv and the package index).", file=sys.stderr)
    return 0
