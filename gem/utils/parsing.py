"""Pull answers out of model text.

All functions are pure and linear in the length of the text, so a hostile 10 MB action costs one
pass, never a quadratic rescan. They return ``None`` when nothing well-formed is found. Parameter
names are GEM's (``extract_last_boxed_answer(solution=...)`` and so on).
"""

from __future__ import annotations

import json
import re
from typing import Any, Optional

_BRACES = re.compile(r"[{}]")
_BOX_COMMANDS = ("\\boxed", "\\fbox")


def _closing_brace(text: str, open_at: int, limit: int) -> int:
    """Index of the brace closing ``text[open_at]`` before ``limit``, or -1."""
    close = text.find("}", open_at + 1, limit)
    if close < 0:
        return -1
    if text.find("{", open_at + 1, close) < 0:  # the common case: no nested braces
        return close
    depth = 0
    for match in _BRACES.finditer(text, open_at, limit):
        depth += 1 if match.group() == "{" else -1
        if depth == 0:
            return match.start()
    return -1


def _last_boxed_span(text: str) -> Optional[tuple[int, int, int]]:
    """(start of ``\\boxed``, start of content, end of content) of the last complete box, or None.

    "Last" is the complete box that starts last (for ``\\boxed{\\boxed{1}}`` the inner one, as
    GEM reads it); an unbalanced box is skipped in favour of an earlier complete one. An earlier
    box can only be complete if it closes before a later unbalanced box starts, so each earlier
    candidate is scanned only up to there: one pass over the text in all.
    """
    limit = len(text)
    start = text.rfind("\\boxed{")
    if start >= 0 and text.find("\\boxed", start + 1) < 0 and text.find("\\fbox", start) < 0:
        close = _closing_brace(text, start + 6, limit)  # the common case: one plain last box
        if close >= 0:
            return start, start + 7, close
    # The last occurrence of each command before the current candidate; only the command that
    # gave the candidate is searched again, so the text is scanned once per command.
    last = {cmd: text.rfind(cmd) for cmd in _BOX_COMMANDS}
    while True:
        cmd, start = max(last.items(), key=lambda item: item[1])
        if start < 0:
            return None
        last[cmd] = text.rfind(cmd, 0, start)
        brace = start + len(cmd)
        while brace < limit and text[brace] in " \t\n":
            brace += 1
        if brace >= limit or text[brace] != "{":
            continue  # "\\boxed 5" or "\\boxedx": not a box
        close = _closing_brace(text, brace, limit)
        if close >= 0:
            return start, brace + 1, close
        limit = start


def last_boxed_only_string(string: str) -> Optional[str]:
    """The last complete ``\\boxed{...}`` including the command, e.g. ``"\\boxed{42}"``."""
    if not isinstance(string, str):
        return None
    span = _last_boxed_span(string)
    return None if span is None else string[span[0] : span[2] + 1]


def remove_boxed(s: Optional[str]) -> Optional[str]:
    """``"\\boxed{42}" -> "42"``; a string that is not one box from start to end gives ``None``."""
    if not s:
        return None
    for cmd in _BOX_COMMANDS:
        if s.startswith(cmd):
            brace = len(cmd)
            while brace < len(s) and s[brace] in " \t\n":
                brace += 1
            if brace < len(s) and s[brace] == "{" and _closing_brace(s, brace, len(s)) == len(s) - 1:
                return s[brace + 1 : -1]
    return None


def extract_last_boxed_answer(solution: str) -> Optional[str]:
    """The content of the last complete ``\\boxed{...}`` in ``solution``, stripped, or ``None``."""
    if not isinstance(solution, str):
        return None
    # The common case inline (an env parses every step): one plain last box, no nested braces.
    start = solution.rfind("\\boxed{")
    if start >= 0:
        close = solution.find("}", start + 7)
        if (
            close >= 0
            and solution.find("{", start + 7, close) < 0
            and solution.find("\\boxed", start + 1) < 0
            and solution.find("\\fbox", start) < 0
        ):
            return solution[start + 7 : close].strip()
    span = _last_boxed_span(solution)
    return None if span is None else solution[span[1] : span[2]].strip()


def extract_last_tagged_answer(model_response: str, tag: str = "answer") -> Optional[str]:
    """The content of the last complete ``<tag>...</tag>`` in ``model_response``, stripped, or ``None``."""
    text = model_response
    if not isinstance(text, str):
        return None
    close = f"</{tag}>"
    end = text.rfind(close)
    if end < 0:
        return None
    start = text.rfind(f"<{tag}>", 0, end)
    if start < 0:
        return None
    return text[start + len(tag) + 2 : end].strip()


_INT = re.compile(r"[+-]?\d+")


def parse_int(text: Optional[str]) -> Optional[int]:
    """``text`` as an integer if it is exactly one (signs and surrounding space allowed), else None.

    ``"0"`` and ``"-3"`` are numbers; ``"3.5"``, ``"3 4"`` and 5000-digit strings are not.
    """
    if text is None:
        return None
    if text.isdigit() and len(text) < 19:  # the common case; isdigit alone admits "²"
        return int(text) if text.isascii() else None
    text = text.strip().replace("\\,", "").replace(",", "")
    if len(text) > 64 or not _INT.fullmatch(text):
        return None
    return int(text)


# ------------------------------------------------------------------ code blocks (tools and code envs)
_PY_FENCE = re.compile(r"```[ \t]*\n?(?:python3?|py)(?![\w+-])")
_ANY_FENCE_HEAD = re.compile(r"[\w+#.-]*[ \t]*\n")


def extract_first_python_block(text: str) -> Optional[tuple[str, int]]:
    """The first complete Python block for a tool call: ``(code, end)`` or ``None``.

    A block is ``<python>...</python>`` or a fenced ```` ```python ... ``` ```` block; of the two
    kinds, the block that closes first wins (GEM's rule), and ``end`` is the index just after it,
    so ``text[:end]`` is the action cut at the call. The code is stripped of surrounding blank
    space. Linear in the text: only the first opening of each kind is considered, since a later
    one cannot close if the first does not.
    """
    if not isinstance(text, str):
        return None
    found: list[tuple[int, str]] = []
    start = text.find("<python>")
    if start >= 0:
        close = text.find("</python>", start + 8)
        if close >= 0:
            found.append((close + 9, text[start + 8 : close]))
    fence = _PY_FENCE.search(text)
    if fence is not None:
        close = text.find("```", fence.end())
        if close >= 0:
            found.append((close + 3, text[fence.end() : close]))
    if not found:
        return None
    end, code = min(found, key=lambda item: item[0])
    return code.strip(), end


def extract_code_from_model(model_response: str) -> Optional[str]:
    """The program in a model's answer: the last fenced code block (any language tag), stripped.

    Fences pair up from the left (```` ```lang\\n ... ``` ````); a ``<python>...</python>`` block
    is used when there is no fenced block. ``None`` when there is neither. Linear in the text.
    """
    text = model_response
    if not isinstance(text, str):
        return None
    last: Optional[str] = None
    pos = text.find("```")
    while pos >= 0:
        head = _ANY_FENCE_HEAD.match(text, pos + 3)
        if head is None:
            pos = text.find("```", pos + 3)
            continue
        close = text.find("```", head.end())
        if close < 0:
            break
        last = text[head.end() : close]
        pos = text.find("```", close + 3)
    if last is None:
        start = text.rfind("<python>")
        close = text.find("</python>", start + 8) if start >= 0 else -1
        if close >= 0:
            last = text[start + 8 : close]
    return None if last is None else last.strip()


def function_call_from_json(obj: Any) -> Optional[tuple[str, dict[str, Any]]]:
    """``(name, arguments)`` of an OpenAI-style function call already parsed from JSON, else ``None``.

    Accepts ``{"name": ..., "arguments": {...} or "<json>"}`` (``"parameters"`` and ``"kwargs"`` are
    read too), the same under ``"function"``, an object with a ``tool_calls`` array, and a
    one-element list (a bare ``tool_calls`` array): the first call is taken. Empty string
    arguments are ``{}``; arguments that are not an object make it ``None``.
    """
    if isinstance(obj, list) and len(obj) == 1:
        obj = obj[0]
    if not isinstance(obj, dict):
        return None
    calls = obj.get("tool_calls")
    if isinstance(calls, list) and calls:
        return function_call_from_json(calls[0])
    if isinstance(obj.get("function"), dict):
        obj = obj["function"]
    name = obj.get("name")
    args = next((obj[k] for k in ("arguments", "parameters", "kwargs") if k in obj), {})
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except (ValueError, RecursionError):  # not JSON, or nested too deep to parse
            return None
    if not isinstance(name, str) or not isinstance(args, dict):
        return None
    return name, args

