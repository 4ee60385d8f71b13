"""The fast exact paths of math grading, in the caller's process: normalization, numbers, shapes.

``fast_verdict(pred, gold)`` decides what cheap checks can (the same string after light
normalization, the same number: integers, decimals, ``a/b``, ``\\frac{a}{b}``, thousands
separators) and returns ``None`` for the rest, which :mod:`gem.grading.math_pool` sends to
math-verify. ``number_verdict(pred, gold)`` decides every answer to a gold that is a plain number,
exactly: the grading without math-verify (the core install, without the ``math`` extra).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from fractions import Fraction
from typing import Any, Optional


_STRIP_TOKENS = (
    "\\left", "\\right", "\\!", "\\,", "\\;", "\\:", "\\ ", "\\displaystyle", "\\dfrac", "\\tfrac", "\\$", "$",
)
_TEXT_CMD = re.compile(r"\\(?:text|textbf|mathrm|mbox|operatorname)\s*\{([^{}]*)\}")
_UNIT_TEXT = re.compile(r"\\(?:text|mbox|mathrm)\s*\{\s*[A-Za-z][A-Za-z .]*\}")
_ASSIGNMENT = re.compile(r"[A-Za-z](?:_\{?\w+\}?)?=")
_SPACES = re.compile(r"\s+")
_INT = re.compile(r"[+-]?\d+")
_THOUSANDS = re.compile(r"[+-]?\d{1,3}(?:,\d{3})+(?:\.\d+)?")
_DECIMAL = re.compile(r"[+-]?(?:\d+\.\d*|\.\d+|\d+)")
_SLASH = re.compile(r"([+-]?\d+)/([+-]?\d+)")
_FRAC = re.compile(r"([+-]?)\\frac\{([+-]?\d+)\}\{([+-]?\d+)\}")
_FRAC_SHORT = re.compile(r"([+-]?)\\frac(\d)(\d)")


def normalize_string(answer: str) -> str:
    """Light, linear normalization for the exact-match path (spacing, ``\\left``, ``\\text{}``...)."""
    s = answer.strip()
    for token in _STRIP_TOKENS:
        if token in s:
            s = s.replace(token, "\\frac" if token in ("\\dfrac", "\\tfrac") else "")
    if "\\text" in s or "\\math" in s or "\\mbox" in s or "\\operatorname" in s:
        s = _TEXT_CMD.sub(r"\1", s)
    s = _SPACES.sub("", s)
    s = s.replace("^{\\circ}", "").replace("^\\circ", "").replace("\\%", "").replace("{,}", ",")
    while s.endswith("."):
        s = s[:-1]
    return s


def _value(s: str) -> Optional[Fraction]:
    """A normalized string as an exact number, or ``None``."""
    if len(s) > 64 or not s:
        return None
    if _THOUSANDS.fullmatch(s):
        s = s.replace(",", "")
    try:
        if _DECIMAL.fullmatch(s):
            return Fraction(s)
        m = _SLASH.fullmatch(s)
        if m:
            den = int(m.group(2))
            return Fraction(int(m.group(1)), den) if den else None
        m = _FRAC.fullmatch(s) or _FRAC_SHORT.fullmatch(s)
        if m:
            den = int(m.group(3))
            if not den:
                return None
            value = Fraction(int(m.group(2)), den)
            return -value if m.group(1) == "-" else value
    except (ValueError, ZeroDivisionError):
        return None
    return None


def parse_number(answer: str) -> Optional[Fraction]:
    """``answer`` as an exact number if it is a plain one, else ``None`` (never evaluates powers)."""
    shape = answer_shape(answer)
    return shape[1] if shape is not None and shape[0] == "num" else None


def answer_shape(answer: str) -> Optional[tuple[Any, ...]]:
    """A cheap structural reading of an answer, for the fast paths; ``None`` if it is not simple.

    ``("num", Fraction)`` for a number (``x = 5``, units in ``\\text{}`` and ``\\$`` dropped),
    ``("set", frozenset)`` for ``\\{1, 2\\}``, ``("seq", open, close, tuple)`` for ``(1, 2]``.
    """
    if len(answer) > 512:
        return None
    if "\\text" in answer or "\\mbox" in answer or "\\mathrm" in answer:
        answer = _UNIT_TEXT.sub("", answer)
    s = normalize_string(answer)
    m = _ASSIGNMENT.match(s)
    if m and "=" not in s[m.end():]:
        s = s[m.end():]
    value = _value(s)
    if value is not None:
        return ("num", value)
    if len(s) > 4 and s.startswith("\\{") and s.endswith("\\}"):
        items = [_value(x) for x in s[2:-2].split(",")]
        if all(v is not None for v in items):
            return ("set", frozenset(items))
    if len(s) > 2 and s[0] in "([" and s[-1] in ")]" and "," in s:
        items = [_value(x) for x in s[1:-1].split(",")]
        if all(v is not None for v in items):
            return ("seq", s[0], s[-1], tuple(items))
    return None


def _all_integers(shape: tuple[Any, ...]) -> bool:
    values = [shape[1]] if shape[0] == "num" else list(shape[1] if shape[0] == "set" else shape[3])
    return all(v.denominator == 1 for v in values)


_POWER = re.compile(r"(\d{1,30})\^(?:\{(.*)\}|(\d{1,30}))")
HUGE_DIGITS = 100_000  # no gold answer has this many digits


def _tower(s: str) -> Optional[list[int]]:
    """``9^{9^{9}}`` as ``[9, 9, 9]``; ``None`` unless ``s`` is an integer power tower."""
    nums: list[int] = []
    while True:
        m = _POWER.fullmatch(s)
        if m is None:
            if s.isdigit() and len(s) <= 30 and nums:
                return nums + [int(s)]
            return None
        nums.append(int(m.group(1)))
        s = m.group(2) if m.group(2) is not None else m.group(3)


def is_huge_power(answer: str) -> bool:
    """Whether ``answer`` is an integer power tower with more than :data:`HUGE_DIGITS` digits.

    Such a number cannot be anyone's answer, and evaluating it can hang sympy in C code.
    """
    if "^" not in answer or len(answer) > 512:
        return False
    nums = _tower(normalize_string(answer))
    if nums is None:
        return False
    digits = math.log10(max(nums[-1], 1))  # log10 of the tower, evaluated from the top
    for base in reversed(nums[:-1]):
        if base <= 1:
            digits = 0.0
            continue
        exponent = 10 ** digits if digits < 300 else math.inf
        digits = exponent * math.log10(base)
    return digits > HUGE_DIGITS


def braces_balanced(text: str) -> bool:
    """Whether the unescaped ``{``/``}`` of ``text`` pair up (malformed LaTeX is not worth parsing)."""
    depth = 0
    escaped = False
    for ch in text:
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0


# Words that join alternatives (a hedge: "41 or 42", "41 \\lor 42", "\\pm 42"); an answer may use
# one only where the gold answer does.
_CONNECTIVE = re.compile(
    r"\\(?:lor|vee|land|wedge|pm|mp)(?![A-Za-z])|\\(?:text|mathrm|textrm|mbox)\s*\{\s*(?:or|and)\s*\}"
    r"|(?<![A-Za-z])(?:or|and)(?![A-Za-z])|;"
)
# A binary operator after an operand: the answer is an expression still to be evaluated.
_BINARY_OP = re.compile(r"(?<=[\w)}\]])(?:[-+*/]|\\times|\\cdot|\\div|\\ast)")
_SCIENTIFIC = re.compile(r"[+-]?\d+(?:\.\d+)?(?:\\times|\\cdot)10\^(?:\{[+-]?\d+\}|[+-]?\d)")
_LATEX_CMD = re.compile(r"\\[A-Za-z]+")
_WORD = re.compile(r"[A-Za-z]{3,}")


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(_LATEX_CMD.sub(" ", _UNIT_TEXT.sub(" ", text)))}


def hedged(pred: str, gold: str) -> bool:
    """Whether ``pred`` joins alternatives by a connective that ``gold`` does not use
    (``41 \\lor 42``, ``42 \\text{ or } 43``, ``a and b``, ``\\pm 42``, ``41; 42``)."""
    if not _CONNECTIVE.search(pred):
        return False
    return bool(_connectives(pred) - _connectives(gold))  # more of some connective than the gold has


def _connectives(text: str) -> "Counter[str]":
    """The connectives of ``text``, counted by word (``\\text{ or }`` and ``or`` are the same)."""
    return Counter(re.sub(r"[^a-z;]", "", m.group(0).lower().replace("text", "").replace("mathrm", "")
                          .replace("textrm", "").replace("mbox", "")) for m in _CONNECTIVE.finditer(text))


def not_a_final_answer(pred: str, gold: str) -> Optional[str]:
    """Why ``pred`` cannot be paid as an answer to ``gold`` whatever its value, or ``None``.

    A grader that evaluates answers pays hedges and restated problems unless they are refused
    first: alternatives joined by a connective the gold answer does not use (``41 \\lor 42``,
    ``42 \\text{ or } 43``, ``\\pm 42``), equations between values (``41 = 42``: math-verify
    reads the right side) where the gold answer has none, an unevaluated expression where the gold answer is a
    number (``17 - 14 - 9 \\times 9``: the question echoed back), and prose (two or more words the
    gold answer does not have: ``Compute ...``).
    """
    if hedged(pred, gold):
        return "alternatives joined by a connective"
    if pred.count("=") > gold.count("="):
        lhs = pred.split("=", 1)[0].strip()
        if pred.count("=") > 1 or not re.fullmatch(r"[A-Za-z](?:_\{?\w+\}?)?", lhs):
            return "an equation between values (41 = 42), not a value"
    if parse_number(gold) is not None and parse_number(pred) is None:
        s = normalize_string(_UNIT_TEXT.sub("", pred))
        if _BINARY_OP.search(s) and not _SCIENTIFIC.fullmatch(s):
            return "an expression still to be evaluated"
    if len(_words(pred) - _words(gold)) >= 2:
        return "prose, not an answer"
    return None


def number_verdict(pred: str, gold: str) -> Optional[bool]:
    """The exact verdict on ``pred`` for a gold answer that is a plain number, ``None`` for any other gold.

    The grading for a number when math-verify is not installed: ``pred`` is correct only if it is a
    plain number (an integer, a decimal, ``a/b``, ``\\frac{a}{b}``, ``\\dfrac``, thousands
    separators, ``x = 5``, units in ``\\text{}``) of exactly the gold's value, compared as
    fractions. An expression of that value (``\\sqrt{4}``, ``2^3``), a rounded decimal (``0.333``
    for ``1/3``) and everything :func:`not_a_final_answer` refuses are wrong.
    """
    value = parse_number(gold)
    if value is None:
        return None
    if not_a_final_answer(pred, gold) is not None:
        return False
    return parse_number(pred) == value


def fast_verdict(pred: str, gold: str) -> Optional[bool]:
    """``True``/``False`` when the cheap checks decide, ``None`` when math-verify must.

    Equal normalized strings, numbers, sets of numbers or intervals/tuples of numbers are correct;
    different integers (sets, tuples of integers) or brackets are wrong, and so is what
    :func:`not_a_final_answer` refuses (hedges, unevaluated expressions for a number, prose). Other
    differences (``0.333`` vs ``1/3``, ``\\pi`` vs ``3.14``, expressions) are left to math-verify.
    """
    if pred == gold:
        return True
    a, b = normalize_string(pred), normalize_string(gold)
    if a == b and a:
        return True
    if not_a_final_answer(pred, gold) is not None:
        return False
    x, y = answer_shape(pred), answer_shape(gold)
    if x is not None and y is not None and x[0] == y[0]:
        if x == y:
            return True
        if x[0] == "seq" and (x[1:3] != y[1:3] or len(x[3]) != len(y[3])):
            return False  # different brackets or lengths: a different interval or tuple
        if _all_integers(x) and _all_integers(y):
            return False
    return None
