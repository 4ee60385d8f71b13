"""Every relative link of README.md and docs/**/*.md leads to a file of the repository, and every
``#anchor`` to a heading of its page (GitHub's anchors: lowercased, punctuation dropped, spaces to
hyphens, a repeated heading numbered)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.docs.doc_blocks import REPO, doc_files

_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")
_LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_CODE_SPAN = re.compile(r"`[^`\n]*`")


def _prose(text: str) -> str:
    """``text`` without fenced blocks and inline code (links there are examples, not links)."""
    kept, fenced = [], False
    for line in text.split("\n"):
        if _FENCE.match(line):
            fenced = not fenced
            kept.append("")
        else:
            kept.append("" if fenced else _CODE_SPAN.sub("", line))
    return "\n".join(kept)


def slug(heading: str) -> str:
    text = _CODE_SPAN.sub(lambda m: m.group(0).strip("`"), heading.strip()).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of the headings of ``path``."""
    seen: dict[str, int] = {}
    found = set()
    fenced = False
    for line in path.read_text(encoding="utf-8").split("\n"):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if fenced or not m:
            continue
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def links(path: Path) -> list[tuple[int, str]]:
    body = _prose(path.read_text(encoding="utf-8"))
    return [(body.count("\n", 0, m.start()) + 1, m.group(1)) for m in _LINK.finditer(body)]


def broken(path: Path, target: str) -> str | None:
    """Why ``target`` (a link in ``path``) leads nowhere, or ``None``."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:...: not checked offline
        return None
    file_part, _, anchor = target.partition("#")
    dest = (path.parent / file_part).resolve() if file_part else path
    if not dest.exists():
        return f"no file {file_part}"
    if REPO not in dest.parents and dest != REPO:
        return f"{file_part} is outside the repository"
    if anchor and dest.suffix == ".md" and anchor not in anchors(dest):
        return f"{dest.relative_to(REPO)} has no heading #{anchor}"
    return None


LINKS = [
    pytest.param(path, target, id=f"{path.relative_to(REPO)}:{line}:{target}")
    for path in doc_files()
    for line, target in links(path)
]


def test_the_docs_have_links() -> None:
    assert len(LINKS) >= 50
    readme = [p for p in LINKS if p.values[0].name == "README.md"]
    assert len(readme) >= 20


@pytest.mark.parametrize(("path", "target"), LINKS)
def test_link_leads_somewhere(path: Path, target: str) -> None:
    problem = broken(path, target)
    assert problem is None, f"{path.relative_to(REPO)}: [..]({target}): {problem}"


def test_the_checker_finds_a_missing_file_and_a_missing_heading(tmp_path: Path) -> None:
    assert slug("Learning with a real model on CPU (`python -m gem.rl.learn`)") == (
        "learning-with-a-real-model-on-cpu-python--m-gemrllearn"
    )
    assert slug("The `gem` command") == "the-gem-command"
    page = REPO / "docs" / "api.md"
    assert broken(page, "install.md#torch") is None
    assert broken(page, "no-such-page.md") == "no file no-such-page.md"
    assert broken(page, "install.md#no-such-heading") == "docs/install.md has no heading #no-such-heading"
    assert broken(page, "https://example.com/anything") is None
