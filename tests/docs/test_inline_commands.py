"""Every inline ``gem ...`` command of README.md and docs/*.md (in single backticks, outside the
fenced blocks that test_doc_blocks.py runs) parses with the ``gem`` command's own parser.

A span that names a subcommand without its target (`gem eval`, `gem eval --tool-calling native`)
is a mention: its options must exist and take valid values, but the required arguments may be
missing. A span that gives a target (`gem eval math:Arithmetic --model solver ...`) is a command a
reader will paste: it must parse whole, required options included.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import shlex

import pytest

from gem.cli import build_parser
from tests.docs.doc_blocks import REPO, doc_files

_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")
_INLINE = re.compile(r"(?<!`)`(gem [^`]+)`(?!`)")
_REQUIRED = re.compile(r"the following arguments are required: (.+)$")


def inline_commands(text: str) -> list[tuple[int, str]]:
    """``(line, command)`` of every inline `gem ...` span outside fenced blocks (spans may wrap)."""
    kept, fenced = [], False
    for line in text.split("\n"):
        if _FENCE.match(line):
            fenced = not fenced
            kept.append("")
        else:
            kept.append("" if fenced else line)
    body = "\n".join(kept)
    return [(body.count("\n", 0, m.start()) + 1, " ".join(m.group(1).split())) for m in _INLINE.finditer(body)]


def _parse(argv: list[str]) -> str | None:
    """The parser's error for ``argv`` (its last line), or ``None``."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            build_parser().parse_args(argv)
    except SystemExit as exc:
        return err.getvalue().strip().splitlines()[-1] if exc.code else None
    return None


def parse_error(command: str) -> str | None:
    """Why ``command`` does not parse (``None``: it does, or it is a mention missing only its target,
    whose options are then checked with a stand-in target)."""
    argv = shlex.split(command)[1:]
    message = _parse(argv)
    missing = _REQUIRED.search(message or "")
    if not missing:
        return message
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[argv[0]]
    positionals = {a.metavar or a.dest for a in sub._actions if not a.option_strings}
    names = [m.strip() for m in missing.group(1).split(",")]
    if not positionals & set(names):
        return message  # a whole command short of a required option
    stand_in = [w for n in names for w in ((n, "stand-in") if n.startswith("-") else ("stand-in",))]
    return _parse(argv[:1] + stand_in + argv[1:])


COMMANDS = [
    pytest.param(cmd, id=f"{path.relative_to(REPO)}:{line}")
    for path in doc_files()
    for line, cmd in inline_commands(path.read_text(encoding="utf-8"))
]


def test_docs_have_inline_commands() -> None:
    assert len(COMMANDS) >= 20


@pytest.mark.parametrize("command", COMMANDS)
def test_inline_command_parses(command: str) -> None:
    assert parse_error(command) is None, f"`{command}` does not parse: {parse_error(command)}"


def test_the_check_catches_broken_commands() -> None:
    text = "Run `gem eval math:Arithmetic\n--model solver` then `gem run --episodes 0 game:X` or ```gem nope```.\n"
    assert inline_commands(text) == [(1, "gem eval math:Arithmetic --model solver"), (2, "gem run --episodes 0 game:X")]
    assert "--out" in parse_error("gem eval math:Arithmetic --model solver")  # a command short of --out
    assert "--episodes" in parse_error("gem run --episodes 0 game:X")
    assert "invalid choice" in parse_error("gem eval --agent gpt")
    assert "unrecognized" in parse_error("gem eval --no-such-flag")
    assert parse_error("gem eval") is None and parse_error("gem eval --tool-calling native") is None
    assert inline_commands("```\n`gem nope`\n```\n") == []  # inside a fenced block: test_doc_blocks' job
