"""``gem export FORMAT ID DIR``: write a GEM id as another framework's environment package.

``openenv``: an OpenEnv env package (``openenv.yaml``, ``server/app.py``, Dockerfile, pyproject).
``verifiers``: a verifiers environment package (``load_environment``), installable with pip.
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
    p.set_defaults(func=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    if args.format == "openenv":
        from gem.interop.openenv.export import export_openenv as export
    else:
        from gem.interop.verifiers.export import export_verifiers as export
    try:
        out = export(args.env_id, args.directory, overwrite=args.force)
    except FileExistsError as exc:
        print(f"gem: {exc}", file=sys.stderr)
        return 2
    print(f"Wrote {args.format} package for {args.env_id} to {out}")
    return 0
