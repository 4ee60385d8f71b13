"""Observed values of a test, as data, and their strict comparison with expected values.

The process that runs a repository's code (the test child in the sandbox) never decides whether a
test passed. It runs the test's calls and writes what each returned or raised in a tagged JSON form
(:func:`decode` reads it). Only exact built-in types are written as values; an object of any other
type (an "equal to anything" object, a subclass of ``str`` or ``int``) is written as an opaque
``object`` that equals nothing. GEM's process then compares the decoded values with the expected
ones, which never leave it, with :func:`same`:

* ``bool`` is not a number: ``True`` never equals ``1``;
* numbers (``int`` and ``float``) compare by value across the two types, as Python's ``==`` does
  (``2 == 2.0``): a fix that returns ``30.0`` where the reference returns ``30`` is the same answer.
  ``nan`` equals nothing;
* ``str``, ``bytes`` and ``None`` compare exactly; ``list`` and ``tuple`` are different types (as
  for ``==``), so are ``set`` and ``frozenset``; containers compare element by element with these
  same rules (dict keys too: ``{1: x}`` is not ``{True: x}``);
* an expected :class:`Raises` matches a call that raised that built-in exception (or a subclass of
  it) whose message contains the given text.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Optional

_MAX_NODES = 100_000
_MAX_DEPTH = 100


@dataclasses.dataclass(frozen=True)
class Raises:
    """Expected: the call raises the built-in exception ``name`` (or a subclass) whose message
    contains ``match`` (when given)."""

    name: str
    match: Optional[str] = None

    def __repr__(self) -> str:
        return f"raises({self.name!r}" + (f", {self.match!r})" if self.match is not None else ")")


@dataclasses.dataclass(frozen=True)
class Raised:
    """Observed: the call raised. ``classes`` are the built-in exception classes among its type's
    bases (its own name first when it is one), ``message`` is ``str()`` of the exception."""

    classes: tuple
    message: Optional[str]

    def __repr__(self) -> str:
        name = self.classes[0] if self.classes else "an exception of a type of its own"
        return f"raised {name}({self.message!r})" if self.message is not None else f"raised {name}"


@dataclasses.dataclass(frozen=True)
class Opaque:
    """Observed: a value of a type that is not an exact built-in one (equals nothing)."""

    type_name: str

    def __repr__(self) -> str:
        return f"<an object of type {self.type_name}>"


class DecodeError(ValueError):
    """The observation document is not in the tagged form."""


def decode(node: Any) -> Any:
    """A tagged observation (``["int", "3"]``, ``["list", [...]]``, ...) as a plain value."""
    count = [0]

    def walk(n: Any, depth: int) -> Any:
        count[0] += 1
        if count[0] > _MAX_NODES or depth > _MAX_DEPTH:
            raise DecodeError("the observation is too large or too deep")
        if not isinstance(n, list) or not n or not isinstance(n[0], str):
            raise DecodeError(f"not a tagged value: {str(n)[:80]}")
        tag, args = n[0], n[1:]
        if tag == "none" and not args:
            return None
        if len(args) != 1 and tag not in ("raised", "object"):
            raise DecodeError(f"malformed {tag!r}")
        if tag == "bool" and isinstance(args[0], bool):
            return args[0]
        if tag == "int" and isinstance(args[0], str):
            try:
                return int(args[0])
            except ValueError as exc:
                raise DecodeError(f"bad int {args[0][:40]!r}") from exc
        if tag == "float" and isinstance(args[0], str):
            try:
                return float(args[0])
            except ValueError as exc:
                raise DecodeError(f"bad float {args[0][:40]!r}") from exc
        if tag == "str" and isinstance(args[0], str):
            return args[0]
        if tag == "bytes" and isinstance(args[0], str):
            try:
                return bytes.fromhex(args[0])
            except ValueError as exc:
                raise DecodeError("bad bytes") from exc
        if tag in ("list", "tuple", "set", "frozenset") and isinstance(args[0], list):
            items = [walk(x, depth + 1) for x in args[0]]
            if tag == "list":
                return items
            if tag == "tuple":
                return tuple(items)
            return _Bag(tag, tuple(items))
        if tag == "dict" and isinstance(args[0], list):
            pairs = []
            for pair in args[0]:
                if not isinstance(pair, list) or len(pair) != 2:
                    raise DecodeError("malformed dict item")
                pairs.append((walk(pair[0], depth + 1), walk(pair[1], depth + 1)))
            return _Pairs(tuple(pairs))
        if tag == "object" and len(args) == 1 and isinstance(args[0], str):
            return Opaque(args[0][:200])
        if tag == "raised" and len(args) == 2 and isinstance(args[0], list) and all(isinstance(c, str) for c in args[0]) \
                and (args[1] is None or isinstance(args[1], str)):
            return Raised(tuple(args[0]), args[1])
        raise DecodeError(f"unknown tag {tag[:40]!r}")

    return walk(node, 0)


@dataclasses.dataclass(frozen=True)
class _Pairs:
    """An observed dict, kept as its items (``1`` and ``True`` would merge as keys of a real dict)."""

    items: tuple

    def __repr__(self) -> str:
        return "{" + ", ".join(f"{k!r}: {v!r}" for k, v in self.items) + "}"


@dataclasses.dataclass(frozen=True)
class _Bag:
    """An observed set or frozenset, kept as its elements."""

    kind: str
    items: tuple

    def __repr__(self) -> str:
        inner = ", ".join(repr(x) for x in self.items)
        return f"{self.kind}({{{inner}}})"


def _is_number(x: Any) -> bool:
    return type(x) in (int, float)


def same(expected: Any, actual: Any) -> bool:
    """Whether ``actual`` (decoded) is ``expected`` under the rules in the module doc."""
    if isinstance(expected, Raises):
        return isinstance(actual, Raised) and expected.name in actual.classes and (
            expected.match is None or (actual.message is not None and expected.match in actual.message))
    if isinstance(actual, (Raised, Opaque)):
        return False
    if expected is None:
        return actual is None
    te = type(expected)
    if te is bool:
        return type(actual) is bool and actual is expected
    if _is_number(expected):
        if not _is_number(actual):
            return False
        if isinstance(expected, float) and math.isnan(expected):
            return False
        return expected == actual
    if te in (str, bytes):
        return type(actual) is te and actual == expected
    if te in (list, tuple):
        return type(actual) is te and len(actual) == len(expected) and all(
            same(e, a) for e, a in zip(expected, actual))
    if te in (set, frozenset):
        return isinstance(actual, _Bag) and actual.kind == te.__name__ and _match_all(list(expected), list(actual.items))
    if te is dict:
        if not isinstance(actual, _Pairs) or len(actual.items) != len(expected):
            return False
        left = list(actual.items)
        for key, value in expected.items():
            hit = next((i for i, (k, _) in enumerate(left) if same(key, k)), None)
            if hit is None or not same(value, left[hit][1]):
                return False
            left.pop(hit)
        return not left
    raise TypeError(f"cannot compare with an expected value of type {te.__name__}")


def _match_all(expected: list, actual: list) -> bool:
    if len(expected) != len(actual):
        return False
    left = list(actual)
    for e in expected:
        hit = next((i for i, a in enumerate(left) if same(e, a)), None)
        if hit is None:
            return False
        left.pop(hit)
    return True


def check_expected(value: Any) -> None:
    """Raise ``ValueError`` unless ``value`` is something :func:`same` can compare with."""
    if isinstance(value, Raises) or value is None or type(value) in (bool, int, float, str, bytes):
        return
    if type(value) in (list, tuple, set, frozenset):
        for v in value:
            check_expected(v)
        return
    if type(value) is dict:
        for k, v in value.items():
            check_expected(k)
            check_expected(v)
        return
    raise ValueError(f"an expected value must be built of None, bool, int, float, str, bytes, list, tuple, "
                     f"set, frozenset, dict or raises(...); got {type(value).__name__}")


def show(value: Any, limit: int = 120) -> str:
    """A short description of a decoded value (for a verdict's detail)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
