"""What an env is, worked out from what it shows and does, never from GEM's attribute names.

``gem validate`` attacks an env with the strategies that fit it. Which fit is read from behaviour:

* the **formats** an answer can take are the ones the prompt names (``\\boxed{}``, ``<final>...</final>``,
  ``[ANS]...[/ANS]``, ``ANSWER: <n>``, ``Final answer: <n>``, ``[[...]]``, a JSON object with a key),
  :func:`prompt_formats`;
* the **commands** an agent can send are the tags, self-closing tags and quoted words the prompt
  offers (``<hint/>``, ``load``, ``save``), :func:`prompt_commands`;
* the **gold answer** comes from the env's reference behaviour: its declared answer (``env.answer``,
  the answer key of GEM's task envs), its reference solution, a solver that wins in one reply, or a
  value kept anywhere on the env (an attribute, a list, a dict, an object, a closure or a
  ``functools.partial``) that, played in the prompt's format, reaches the success level:
  :func:`candidate_values` lists them, the validator confirms each by playing it.
"""

from __future__ import annotations

import functools
import json
import random
import re
from typing import Any, Iterator, Optional

# ------------------------------------------------------------------ formats and commands
_TAG_PAIR = re.compile(r"<([A-Za-z][\w-]{0,30})>")
_SELF_CLOSING = re.compile(r"<([A-Za-z][\w-]{0,30})\s*/>")
_LABEL = re.compile(r"(?<![\w])([A-Za-z]+)\s*([:=])\s*<[^</>\n][^<>\n]{0,29}>")
_LONG_LABEL = re.compile(r"(?<![\w])([A-Z][a-z]+ [a-z]+)\s*([:=])\s*<[^</>\n][^<>\n]{0,29}>")  # "Final answer: <n>"
_BRACKET_PAIR = re.compile(r"\[([A-Za-z][\w-]{0,30})\]")  # [ANS]...[/ANS]
_JSON_KEY = re.compile(r"\{\s*\"([A-Za-z_]\w{0,30})\"\s*:")
_HASHES = re.compile(r"####\s*<?[^\n]{0,20}")
_DOUBLED = re.compile(r"(<<|\{\{|\(\()[^<>{}()\n]{1,40}(>>|\}\}|\)\))")  # <<0.25>>, {{X}}, ((X))
_TEMPLATE = re.compile(r"`([^`<>\n]{0,40})<[a-z][\w -]{0,20}>([^`<>\n]{0,40})`")  # `| answer | <number> |`
_SLASH_COMMAND = re.compile(r"(?<![\w/.:<])/[A-Za-z][\w-]{1,20}(?![\w/.])")  # /undo, /hint
_NOT_ANSWER_TAGS = {"think", "reasoning", "br", "p", "b", "i", "python", "bash", "search"}
_KEYWORD = re.compile(r"(?<![\w#])([A-Z]{2,}|#)\s*<[^</>\n][^<>\n]{0,29}>")
_COMMAND_WORDS = re.compile(
    r"(?:type|send|say|enter|use|command|commands|reply|write|issue)\s*:?\s*((?:[\"'`][^\"'`\n]{1,30}[\"'`]"
    r"(?:\s*(?:,|or|and|/)\s*)?)+)", re.I)


def prompt_formats(text: str) -> list[tuple[str, str]]:
    """The answer formats ``text`` names, in the order they appear: ``(open, close)`` pairs."""
    found: list[tuple[int, tuple[str, str]]] = []
    i = text.find("\\boxed")
    if i >= 0:
        found.append((i, ("\\boxed{", "}")))
    for m in _TAG_PAIR.finditer(text):
        tag = m.group(1)
        if tag.lower() in _NOT_ANSWER_TAGS or f"</{tag}>" not in text:
            continue
        found.append((m.start(), (f"<{tag}>", f"</{tag}>")))
    for label in (_LABEL, _LONG_LABEL):
        for m in label.finditer(text):
            found.append((m.start(), (f"{m.group(1)}{m.group(2)} ", "")))
    for m in _BRACKET_PAIR.finditer(text):
        if f"[/{m.group(1)}]" in text:
            found.append((m.start(), (f"[{m.group(1)}]", f"[/{m.group(1)}]")))
    for m in _KEYWORD.finditer(text):
        found.append((m.start(), (m.group(1) + ("" if m.group(1) == "#" else " "), "")))
    for m in _JSON_KEY.finditer(text):
        found.append((m.start(), ('{"' + m.group(1) + '": "', '"}')))
    i = text.find("[[")
    if i >= 0 and "]]" in text[i:]:
        found.append((i, ("[[", "]]")))
    m = _HASHES.search(text)
    if m:
        found.append((m.start(), ("#### ", "")))
    for m in _TEMPLATE.finditer(text):  # a backticked template with one placeholder
        if m.group(1).strip() or m.group(2).strip():
            found.append((m.start(), (m.group(1), m.group(2))))
    for m in _DOUBLED.finditer(text):
        if {"<<": ">>", "{{": "}}", "((": "))"}[m.group(1)] == m.group(2):
            found.append((m.start(), (m.group(1), m.group(2))))
    out: list[tuple[str, str]] = []
    for _, fmt in sorted(found, key=lambda x: x[0]):
        if fmt not in out:
            out.append(fmt)
    return out[:8]


def prompt_commands(text: str, formats: list[tuple[str, str]]) -> list[str]:
    """The commands ``text`` offers: self-closing tags, tags that are no answer format (filled with
    nothing), the quoted words it tells the agent to type, and slash commands (``/undo``)."""
    out: list[str] = []
    for m in _SELF_CLOSING.finditer(text):
        out.append(m.group(0).replace(" ", ""))
    opens = {f[0] for f in formats}
    for m in _TAG_PAIR.finditer(text):
        tag = m.group(1)
        if f"<{tag}>" in opens or tag.lower() in ("think", "reasoning", "br", "p", "b", "i") or f"</{tag}>" not in text:
            continue
        out.append(f"<{tag}></{tag}>")
    for m in _COMMAND_WORDS.finditer(text):
        for word in re.findall(r"[\"'`]([^\"'`\n]{1,30})[\"'`]", m.group(1)):
            if not re.search(r"<[^>]*>|\\boxed", word) and word.strip():
                out.append(word.strip())
    out += _SLASH_COMMAND.findall(text)
    return list(dict.fromkeys(out))[:12]


# ------------------------------------------------------------------ candidate gold values
_MAX_CANDIDATES = 60
_MAX_CHARS = 1000  # a kept answer can be long: a move sequence, a grid
_SKIP_TYPES = (random.Random, type, type(re), type(functools))


def _scalar(value: Any) -> Optional[str]:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str) and 0 < len(value.strip()) <= _MAX_CHARS:
        return value.strip()
    return None


def candidate_values(env: Any, observation: str = "") -> list[tuple[tuple, str]]:
    """Every short value ``env`` keeps that could be the current episode's answer: ``(path, text)``.

    The path (see :func:`read_path`) reads the same place again after another reset. Strings come
    first (an answer is more often a string than a count), then small mappings as JSON (a colouring,
    an assignment), then numbers, then short spans of the prompt (an extractive task's answer), then
    lists joined by commas.
    """
    found: list[tuple[tuple, str]] = []
    for path, value in _walk(env, (), 0, set()):
        text = _scalar(value)
        if text is not None:
            found.append((path, text))
    spans = [f for f in found if len(f[1].split()) >= 3 and f[1] in observation]
    # a short part of a long prompt can be an answer (a passage's span, a premise restated); the
    # question itself, or most of the prompt, is the quote attack's, not a kept answer
    found = [f for f in found if f not in spans or 4 * len(f[1]) <= len(observation)]
    spans = [f for f in spans if f in found]
    mappings = [f for f in found if f[0] and f[0][-1][0] == "json" and f not in spans]
    joined = [f for f in found if f[0] and f[0][-1][0] == "joined" and f not in spans]
    numbers = [f for f in found if re.fullmatch(r"-?\d+(\.\d+)?", f[1]) and f not in joined]
    strings = [f for f in found if f not in spans and f not in mappings and f not in numbers and f not in joined]
    # every path, not every text: two may hold the same text on this seed only; a joined list comes
    # last (its items come first: a list whose first item is the answer is no list answer)
    return (strings + mappings + numbers + spans + joined)[:_MAX_CANDIDATES]


def _walk(obj: Any, path: tuple, depth: int, seen: set[int]) -> Iterator[tuple[tuple, Any]]:
    if id(obj) in seen or depth > 2:
        return
    seen.add(id(obj))
    inner = _inner_env(obj)
    if inner is not None:  # a wrapper chain (Gymnasium's, GEM's): the env inside holds the state
        yield from _walk(inner, path + (("unwrapped", None),), depth, seen)
        return
    if isinstance(obj, dict):
        items = list(obj.items())[:50]
        for k, v in items:
            yield from _yield(v, path + (("key", k),), depth, seen)
        return
    if isinstance(obj, (list, tuple, set, frozenset)):
        seq = list(obj)[:50] if not isinstance(obj, (set, frozenset)) else sorted(obj, key=repr)[:50]
        for i, v in enumerate(seq):
            yield from _yield(v, path + (("item", i),), depth, seen)
        return
    if isinstance(obj, functools.partial):
        for i, v in enumerate(obj.args):
            yield from _yield(v, path + (("partial", i),), depth, seen)
        for k, v in obj.keywords.items():
            yield from _yield(v, path + (("partial_kw", k),), depth, seen)
        return
    closure = getattr(getattr(obj, "__func__", obj), "__closure__", None)
    if callable(obj) and closure:
        for i, cell in enumerate(closure):
            try:
                v = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            yield from _yield(v, path + (("cell", i),), depth, seen)
        return
    attrs = getattr(obj, "__dict__", None)
    if isinstance(attrs, dict) and not isinstance(obj, _SKIP_TYPES):
        for k, v in list(attrs.items())[:200]:
            if k.startswith("__") or k in ("spec", "rng", "action_rng", "np_random", "env", "_env"):
                continue
            yield from _yield(v, path + (("attr", k),), depth, seen)


def _inner_env(obj: Any) -> Any:
    """The env inside a wrapper chain (``obj.unwrapped`` when it is another object), else ``None``."""
    if isinstance(obj, (dict, list, tuple, set, frozenset, functools.partial, *_SKIP_TYPES)):
        return None
    if not hasattr(type(obj), "unwrapped"):  # a class attribute or property, as wrappers define it
        return None
    try:
        inner = obj.unwrapped
    except Exception:  # noqa: BLE001 -- a property that fails: no chain to follow
        return None
    return inner if inner is not None and inner is not obj else None


def _json_mapping(value: Any) -> Optional[str]:
    """A small mapping of scalars as JSON (``{"0": 1, "1": 2}``), the form prompts ask for, else ``None``."""
    if not isinstance(value, dict) or not 0 < len(value) <= 50:
        return None
    if not all(isinstance(k, (str, int)) and isinstance(v, (str, int, float)) and not isinstance(v, bool)
               for k, v in value.items()):
        return None
    text = json.dumps({str(k): v for k, v in value.items()})
    return text if len(text) <= _MAX_CHARS else None


def _joined(value: Any) -> Optional[str]:
    """A short list or tuple of numbers or words joined by commas (``2, 3, 5``: a list answer), else ``None``."""
    if not isinstance(value, (list, tuple)) or not 2 <= len(value) <= 50:
        return None
    if not all(isinstance(v, (str, int, float)) and not isinstance(v, bool) and str(v).strip() for v in value):
        return None
    text = ", ".join(str(v).strip() for v in value)
    return text if len(text) <= _MAX_CHARS else None


def _yield(value: Any, path: tuple, depth: int, seen: set[int]) -> Iterator[tuple[tuple, Any]]:
    if _scalar(value) is not None:
        yield path, value
        return
    mapping = _json_mapping(value)
    if mapping is not None:
        yield path + (("json", None),), mapping
    joined = _joined(value)
    if joined is not None:
        yield path + (("joined", None),), joined
    if not isinstance(value, (str, bytes, bool, int, float)) and value is not None:
        yield from _walk(value, path, depth + 1, seen)


def read_path(obj: Any, path: tuple) -> Optional[str]:
    """The value at ``path`` (from :func:`candidate_values`) as text, or ``None`` when it is gone."""
    try:
        for how, key in path:
            if how == "attr":
                obj = vars(obj)[key]
            elif how == "key":
                obj = obj[key]
            elif how == "item":
                obj = (list(obj) if not isinstance(obj, (set, frozenset)) else sorted(obj, key=repr))[key]
            elif how == "partial":
                obj = obj.args[key]
            elif how == "partial_kw":
                obj = obj.keywords[key]
            elif how == "json":
                obj = _json_mapping(obj)
            elif how == "joined":
                obj = _joined(obj)
            elif how == "unwrapped":
                obj = obj.unwrapped
            elif how == "cell":
                obj = getattr(getattr(obj, "__func__", obj), "__closure__")[key].cell_contents
    except (KeyError, IndexError, TypeError, AttributeError, ValueError):
        return None
    return _scalar(obj)


def describe_path(path: tuple) -> str:
    """``path`` as an attacker would write it: ``env._secret``, ``env.record['key']``, ``env.check (closure)``."""
    out = "env"
    for how, key in path:
        out += {"attr": f".{key}", "key": f"[{key!r}]", "item": f"[{key}]", "partial": f" (partial arg {key})",
                "partial_kw": f" (partial {key}=)", "cell": f" (closure cell {key})",
                "unwrapped": ".unwrapped", "json": " (as JSON)", "joined": " (joined by commas)"}[how]
    return out


def inner_value(reply: str, formats: list[tuple[str, str]]) -> str:
    """The value inside the first of ``formats`` that ``reply`` uses (the reply itself when none)."""
    for o, c in formats:
        i = reply.rfind(o)
        if i < 0:
            continue
        rest = reply[i + len(o):]
        j = rest.rfind(c) if c else len(rest)
        if j >= 0:
            return rest[:j].strip()
    return reply.strip()
