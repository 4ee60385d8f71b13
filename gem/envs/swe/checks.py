"""Unit tests whose verdict is decided outside the process that runs the code under test.

A test for GEM's runner is a function whose top-level statements are plain statements (set-up,
calls) and *checks*. A check is written either as ``check(EXPR, EXPECTED)`` or as an ``assert``:

* ``assert EXPR == LITERAL`` / ``check(EXPR, LITERAL)``: EXPR's value must be LITERAL
  (compared type-strictly, see :mod:`gem.envs.swe.values`);
* ``assert EXPR is None`` / ``is True`` / ``is False``, ``assert not EXPR`` (EXPR must be
  ``False``), ``assert EXPR`` (EXPR must be ``True``): exact booleans, not truthiness;
* ``assert A and B`` is two checks; ``check(EXPR, raises("IndexError", "empty"))``: EXPR raises
  that built-in exception (or a subclass) with that text in its message;
* ``assert LEFT == RIGHT`` where RIGHT is not a literal (a relation such as
  ``fib(5) == fib(4) + fib(3)``): both sides are observed and must be the same value.

:func:`compile_tests` turns such a module into three things: the test file the agent may see
(plain ``assert`` statements, runnable with pytest or by hand), the source the test process runs
(each check becomes ``_gem_check(lambda: EXPR)``, which records what EXPR returned or raised, and
no expected value is left in it), and the expected values, which stay in GEM's process.
"""

from __future__ import annotations

import ast
from typing import Any

from gem.envs.swe.values import Raises, check_expected


class SameAsNext:
    """Expected: this observation equals the next one (a relation between two computed sides)."""

    def __repr__(self) -> str:
        return "<same as the next observation>"


SAME_AS_NEXT = SameAsNext()


def _literal(node: ast.expr) -> tuple[bool, Any]:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "raises":
        args = [ast.literal_eval(a) for a in node.args]
        if not args or not all(isinstance(a, str) for a in args) or len(args) > 2:
            raise ValueError("raises() takes the exception's name and optionally a text its message contains")
        return True, Raises(*args)
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None
    check_expected(value)
    return True, value


def _checks_of(stmt: ast.stmt) -> list[tuple[ast.expr, Any]] | None:
    """``[(expr, expected)]`` for a check statement (expected may be SAME_AS_NEXT with two entries)."""
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Name) \
            and stmt.value.func.id == "check":
        call = stmt.value
        if len(call.args) != 2 or call.keywords:
            raise ValueError(f"line {stmt.lineno}: check() takes (expression, expected)")
        ok, value = _literal(call.args[1])
        if not ok:
            return [(call.args[0], SAME_AS_NEXT), (call.args[1], None)]
        return [(call.args[0], value)]
    if not isinstance(stmt, ast.Assert):
        return None
    out: list[tuple[ast.expr, Any]] = []

    def one(test: ast.expr) -> None:
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            for v in test.values:
                one(v)
        elif isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            out.append((test.operand, False))
        elif isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.Is)):
            right = test.comparators[0]
            if isinstance(test.ops[0], ast.Is):
                if not (isinstance(right, ast.Constant) and right.value in (None, True, False)):
                    raise ValueError(f"line {stmt.lineno}: `is` checks only None, True or False")
                out.append((test.left, right.value))
                return
            ok, value = _literal(right)
            if ok:
                out.append((test.left, value))
            else:
                out.extend([(test.left, SAME_AS_NEXT), (right, None)])
        else:
            out.append((test, True))

    one(stmt.test)
    return out


def _nested_check(stmt: ast.stmt) -> bool:
    for node in ast.walk(stmt):
        if node is not stmt and (isinstance(node, ast.Assert) or (
                isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "check")):
            return True
    return False


def _visible(expr: ast.expr, expected: Any, other: ast.expr | None) -> list[ast.stmt]:
    if expected is SAME_AS_NEXT:
        return [ast.Assert(test=ast.Compare(left=expr, ops=[ast.Eq()], comparators=[other]))]
    if isinstance(expected, Raises):
        handler_body: list[ast.stmt] = [ast.Pass()]
        if expected.match is not None:
            handler_body = ast.parse(f"assert {expected.match!r} in str(exc)").body
        return [ast.Try(body=[ast.Expr(value=expr)],
                        handlers=[ast.ExceptHandler(type=ast.Name(id=expected.name, ctx=ast.Load()), name="exc",
                                                    body=handler_body)],
                        orelse=ast.parse(f"raise AssertionError({('no ' + expected.name)!r})").body, finalbody=[])]
    if expected is None or type(expected) is bool:
        return [ast.Assert(test=ast.Compare(left=expr, ops=[ast.Is()], comparators=[ast.Constant(expected)]))]
    return [ast.Assert(test=ast.Compare(left=expr, ops=[ast.Eq()], comparators=[ast.parse(repr(expected), mode="eval").body]))]


def _observe(expr: ast.expr) -> ast.stmt:
    lam = ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]), body=expr)
    return ast.Expr(value=ast.Call(func=ast.Name(id="_gem_check", ctx=ast.Load()), args=[lam], keywords=[]))


def compile_tests(source: str) -> tuple[str, str, dict[str, tuple]]:
    """``(visible source, observing source, {test function name: expected values})``.

    Raises ``ValueError`` for a test with no check, a check nested in a block, or an expected value
    that is not data.
    """
    tree = ast.parse(source)
    visible_body: list[ast.stmt] = []
    hidden_body: list[ast.stmt] = []
    expected: dict[str, tuple] = {}
    for node in tree.body:
        if not (isinstance(node, ast.FunctionDef) and node.name.startswith("test")):
            visible_body.append(node)
            hidden_body.append(node)
            continue
        vis: list[ast.stmt] = []
        hid: list[ast.stmt] = []
        exp: list[Any] = []
        for stmt in node.body:
            checks = _checks_of(stmt)
            if checks is None:
                if _nested_check(stmt):
                    raise ValueError(f"{node.name}: checks must be top-level statements of the test (line {stmt.lineno})")
                vis.append(stmt)
                hid.append(stmt)
                continue
            i = 0
            while i < len(checks):
                expr, want = checks[i]
                other = checks[i + 1][0] if want is SAME_AS_NEXT else None
                vis.extend(_visible(expr, want, other))
                hid.append(_observe(expr))
                exp.append(want)
                if want is SAME_AS_NEXT:
                    hid.append(_observe(other))
                    exp.append(None)
                    i += 1
                i += 1
        if not exp:
            raise ValueError(f"{node.name}: a test needs at least one check")
        common = dict(name=node.name, args=node.args, decorator_list=[], returns=None, type_comment=None)
        visible_body.append(ast.FunctionDef(body=vis, **common))
        hidden_body.append(ast.FunctionDef(body=hid, **common))
        expected[node.name] = tuple(exp)
    fix = ast.fix_missing_locations
    visible = ast.unparse(fix(ast.Module(body=visible_body, type_ignores=[])))
    hidden = ast.unparse(fix(ast.Module(body=hidden_body, type_ignores=[])))
    return _spaced(visible), _spaced(hidden), expected


def _spaced(code: str) -> str:
    """Two blank lines before each top-level definition (the files read like hand-written ones)."""
    lines = code.splitlines()
    out: list[str] = []
    for line in lines:
        if line.startswith(("def ", "class ", "@")) and out and not out[-1].startswith("@"):
            while out and out[-1] == "":
                out.pop()
            out.extend(["", ""])
        out.append(line)
    return "\n".join(out) + "\n"
