"""Find the code blocks of the Markdown docs and run them (used by ``test_doc_blocks.py``).

Every fenced block tagged ``python``, ``bash``, ``sh`` or ``shell`` in README.md and docs/**/*.md is run
verbatim: Python in a fresh interpreter, shell with ``bash -e``, both in an empty temporary
directory (the repository's ``examples/``, ``benchmarks/`` and ``scripts/`` are linked into it, so
``python examples/x.py`` works as written), with this checkout's ``gem`` first on the path and
``gem`` on ``PATH``. Untagged blocks are text (output, a synopsis) and are not run.

A block that cannot run here says why in an HTML comment on the line(s) just above its fence::

    <!-- doc-test: skip network -->      needs the internet (the Hugging Face hub, a search API)
    <!-- doc-test: skip gpu -->          needs an NVIDIA GPU
    <!-- doc-test: skip service -->      needs a server or cluster it does not start (vLLM, Ray)
    <!-- doc-test: skip install -->      changes the Python environment (pip install)
    <!-- doc-test: skip fragment -->     not a whole program: uses names from the text around it
    <!-- doc-test: slow -->              runs, but only in the slow suite (pytest -m slow)
    <!-- doc-test: continue -->          runs after the previous block of the file, in one process
    <!-- doc-test: needs rl -->          needs GEM's ``rl`` extra: skipped where it is not installed
                                         (``needs rl,search`` for several)

Words after the kind are the reason, for readers (``<!-- doc-test: slow 7 minutes on 2 cores -->``).
Directives combine with ``;``: ``<!-- doc-test: slow; needs rl -->``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

REPO = Path(__file__).resolve().parents[2]
RUN_LANGS = {"python": "python", "py": "python", "bash": "bash", "sh": "bash", "shell": "bash"}
SKIP_KINDS = ("network", "gpu", "service", "install", "fragment")
LINKED_DIRS = ("examples", "benchmarks", "scripts")
TIMEOUT_S = 180
SLOW_TIMEOUT_S = 1800

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<ticks>`{3,})(?P<info>[^`]*)$")
_DIRECTIVE = re.compile(r"<!--\s*doc-test:\s*(?P<body>.*?)\s*-->")


@dataclass
class Block:
    path: str  # relative to the repository
    line: int  # of the opening fence, 1-based
    lang: str  # "python", "bash", or the info string's first word for blocks that are not run
    code: str
    directive: str = ""  # "skip", "slow", "continue" or ""
    kind: str = ""  # for skip: one of SKIP_KINDS
    reason: str = ""
    extras: tuple[str, ...] = ()  # GEM extras the block needs (``needs``): skipped without them

    @property
    def runnable(self) -> bool:
        return self.lang in ("python", "bash") and self.directive != "skip"

    @property
    def name(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass
class Group:
    """Blocks run together: one block and the ``continue`` blocks after it."""

    blocks: list[Block] = field(default_factory=list)

    @property
    def lang(self) -> str:
        return self.blocks[0].lang

    @property
    def slow(self) -> bool:
        return any(b.directive == "slow" for b in self.blocks)

    @property
    def extras(self) -> tuple[str, ...]:
        """The extras every block of the group needs, together (each skips the group without it)."""
        return tuple(dict.fromkeys(e for b in self.blocks for e in b.extras))

    @property
    def name(self) -> str:
        return self.blocks[0].name + "".join(f"+{b.line}" for b in self.blocks[1:])

    @property
    def code(self) -> str:
        return "\n".join(b.code for b in self.blocks)


class DirectiveError(ValueError):
    """A ``doc-test`` comment that this module does not understand."""


def parse_directive(text: str) -> tuple[str, str, str]:
    """``"skip network hub data"`` -> ``("skip", "network", "hub data")``; raises DirectiveError."""
    words = text.split()
    if not words:
        raise DirectiveError("empty doc-test directive")
    head, rest = words[0], words[1:]
    if head == "skip":
        if not rest or rest[0] not in SKIP_KINDS:
            raise DirectiveError(f"doc-test: skip needs a kind, one of {', '.join(SKIP_KINDS)}; got {text!r}")
        return "skip", rest[0], " ".join(rest[1:])
    if head in ("slow", "continue"):
        return head, "", " ".join(rest)
    raise DirectiveError(f"unknown doc-test directive {text!r}; use skip KIND, slow, continue or needs EXTRA")


def parse_directives(text: str) -> tuple[str, str, str, tuple[str, ...]]:
    """``"slow 7 minutes; needs rl"`` -> ``("slow", "", "7 minutes", ("rl",))``: at most one of skip,
    slow and continue, and any ``needs EXTRA[,EXTRA]``; raises DirectiveError."""
    directive = kind = reason = ""
    extras: list[str] = []
    # a ";" starts another directive only before a directive's name (reasons may hold ";")
    for part in re.split(r";\s*(?=(?:skip|slow|continue|needs)\b)", text):
        words = part.split()
        if words and words[0] == "needs":
            names = [e for w in words[1:2] for e in w.split(",") if e]
            if not names:
                raise DirectiveError(f"doc-test: needs takes an extra (needs rl); got {part.strip()!r}")
            extras.extend(names)
            continue
        if directive:
            raise DirectiveError(f"doc-test: one of skip, slow and continue per block; got {text!r}")
        directive, kind, reason = parse_directive(part)
    return directive, kind, reason, tuple(extras)


def extract(text: str, path: str = "<text>") -> list[Block]:
    """Every fenced block of a Markdown text, with the directive written above it."""
    lines = text.split("\n")
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, ticks, info = m.group("indent"), m.group("ticks"), m.group("info").strip()
        close = re.compile(rf"^[ \t]*`{{{len(ticks)},}}[ \t]*$")
        j = i + 1
        while j < len(lines) and not close.match(lines[j]):
            j += 1
        body = [ln[len(indent):] if ln.startswith(indent) else ln.lstrip() for ln in lines[i + 1 : j]]
        word = info.split()[0].lower() if info else ""
        block = Block(path, i + 1, RUN_LANGS.get(word, word), "\n".join(body) + "\n")
        k = i - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        d = _DIRECTIVE.search(lines[k]) if k >= 0 else None
        if d:
            try:
                block.directive, block.kind, block.reason, block.extras = parse_directives(d.group("body"))
            except DirectiveError as exc:
                raise DirectiveError(f"{path}:{k + 1}: {exc}") from None
        blocks.append(block)
        i = j + 1
    return blocks


def doc_files(root: Path = REPO) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


def groups(blocks: list[Block]) -> list[Group]:
    """The runnable blocks, ``continue`` blocks joined to the group before them (same language)."""
    out: list[Group] = []
    last: Optional[Group] = None
    for block in blocks:
        if block.lang not in ("python", "bash"):
            continue
        if block.directive == "continue":
            if last is None or last.lang != block.lang:
                raise DirectiveError(f"{block.name}: 'continue' follows no runnable {block.lang} block")
            last.blocks.append(block)
            continue
        if block.directive == "skip":
            last = None
            continue
        last = Group([block])
        out.append(last)
    return out


def all_groups(root: Path = REPO) -> list[Group]:
    found: list[Group] = []
    for path in doc_files(root):
        found.extend(groups(extract(path.read_text(encoding="utf-8"), str(path.relative_to(root)))))
    return found


def run_group(group: Group, workdir: Path, timeout: Optional[float] = None) -> subprocess.CompletedProcess:
    """Run a group's code in ``workdir``; the result carries stdout/stderr (text)."""
    for name in LINKED_DIRS:
        if (REPO / name).exists() and not (workdir / name).exists():
            (workdir / name).symlink_to(REPO / name)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    env["PATH"] = os.pathsep.join((str(Path(sys.executable).parent), env.get("PATH", "")))
    env.setdefault("MPLBACKEND", "Agg")
    env["PYTHONUNBUFFERED"] = "1"
    if group.lang == "python":
        script = workdir / "doc_block.py"
        argv = [sys.executable, str(script)]
    else:
        script = workdir / "doc_block.sh"
        argv = ["bash", "-e", str(script)]
    script.write_text(group.code, encoding="utf-8")
    limit = timeout or (SLOW_TIMEOUT_S if group.slow else TIMEOUT_S)
    return subprocess.run(argv, cwd=workdir, env=env, capture_output=True, text=True, timeout=limit,
                          stdin=subprocess.DEVNULL)
