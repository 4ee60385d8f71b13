"""Trustworthy comparisons in a pytest test's process: a value equal to anything decides nothing.

Standard library only: :mod:`gem.envs.swe.grading` sends this file's source ahead of
:mod:`gem.envs.swe._pytest_child` as one program, and the tests import it to check the probes.

Two parts:

* :func:`rewrite_comparisons` rewrites the AST of a test module (the task's own file, as GEM laid
  it over the workspace) before pytest rewrites its asserts: every ``==``, ``!=``, ``in`` and
  ``not in`` becomes a call of the guard's ``cmp`` (same operands, same order, same result, chains
  and short-circuiting kept), and every call of an assertion method or function (``assertEqual``,
  ``assertIn``, ``assertTrue``, ``assert_array_equal``, a mock's ``assert_called_with``, ...) a call
  of the guard's ``call``, which calls it unchanged. Each operand is marked *written by the test*
  when its expression is a literal (constants, displays, ``mock.ANY``, ``call(...)``,
  ``approx(...)``, a class of the test module, or a local name only ever assigned such values).
* :func:`make_guard` builds those two functions. Whatever the comparison returned, every operand
  the test did not write is *probed*: each object in it that is not an exact built-in scalar (an
  ``int``, ``str``, ... whose comparison is the interpreter's own) is compared with a fresh
  instance of a class made for this process, and, when the other side is built-in data, with
  fresh values that differ from that data (``x + 7``, the string with one character changed or a
  random suffix, the list with one element changed or one more element, ...). An object that says
  it is equal to one of them (``==`` truthy, or ``!=`` falsy), however its class was made, is
  reported: it is not a value, it is equal to things it was never given. Built-in containers are
  walked (elements, dict keys and values); subclasses of them are probed and walked through the
  base type's own iteration. After an assertion method returns, the guard also checks the claim
  it made itself (``assertEqual(a, b)``: ``a == b``, probed; ``assertTrue(x)``: ``x`` is truthy).
"""

import ast as _ast

_EQ, _NE, _IN, _NOT_IN = 0, 1, 2, 3
_OPS = {_ast.Eq: _EQ, _ast.NotEq: _NE, _ast.In: _IN, _ast.NotIn: _NOT_IN}

# calls whose result the test writes as an expected value (mock.call(...), pytest.approx(...))
PATTERN_CALLS = frozenset({"call", "approx", "ANY"})
PATTERN_NAMES = frozenset({"ANY"})

# assertion methods whose claim the guard checks itself after they return
CLAIMS = {
    **{n: "eq" for n in ("assertEqual", "assertEquals", "failUnlessEqual", "assertListEqual", "assertTupleEqual",
                         "assertDictEqual", "assertSetEqual", "assertSequenceEqual", "assertMultiLineEqual")},
    "assertIn": "in", "assertTrue": "true", "assert_": "true", "failUnless": "true", "assertFalse": "false",
    "failIf": "false", "assertIsNone": "none", "assertIsNotNone": "notnone", "assertIs": "is",
}
_KWARGS = {"eq": ("first", "second"), "in": ("member", "container"), "true": ("expr",), "false": ("expr",),
           "none": ("obj",), "notnone": ("obj",), "is": ("expr1", "expr2"), "probe": ()}

CMP_NAME = "@gem_cmp"
CALL_NAME = "@gem_call"


# ------------------------------------------------------------------ the AST side
def _dotted(node):
    parts = []
    while isinstance(node, _ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, _ast.Name):
        parts.append(node.id)
    elif isinstance(node, _ast.Call):
        parts.extend(_dotted(node.func))
    return parts


class _Scope:
    """Names a scope binds, and the ones bound only to values the test writes."""

    def __init__(self, nodes, outer, callables):
        self.outer = outer
        self.callables = callables
        values = {}

        def bind(name, value):
            values.setdefault(name, []).append(value)

        def targets(node, value):
            if isinstance(node, _ast.Name):
                bind(node.id, value)
            elif isinstance(node, (_ast.Tuple, _ast.List)):
                for elt in node.elts:
                    targets(elt, None)
            elif isinstance(node, _ast.Starred):
                targets(node.value, None)

        def walk(node, top):
            if not top and isinstance(node, (_ast.FunctionDef, _ast.AsyncFunctionDef, _ast.ClassDef, _ast.Lambda)):
                if not isinstance(node, _ast.Lambda):
                    bind(node.name, None)
                return
            if isinstance(node, _ast.Assign):
                for t in node.targets:
                    targets(t, node.value if isinstance(t, _ast.Name) else None)
            elif isinstance(node, _ast.AnnAssign):
                targets(node.target, node.value)
            elif isinstance(node, (_ast.AugAssign, _ast.For, _ast.AsyncFor)):
                targets(node.target, None)
            elif isinstance(node, _ast.NamedExpr):
                targets(node.target, None)
            elif isinstance(node, _ast.withitem) and node.optional_vars is not None:
                targets(node.optional_vars, None)
            elif isinstance(node, _ast.ExceptHandler) and node.name:
                bind(node.name, None)
            elif isinstance(node, (_ast.Import, _ast.ImportFrom)):
                for alias in node.names:  # from unittest.mock import ANY: the test's own pattern
                    name = (alias.asname or alias.name).split(".")[0]
                    if name not in PATTERN_NAMES:
                        bind(name, None)
            elif isinstance(node, (_ast.Global, _ast.Nonlocal)):
                for name in node.names:
                    bind(name, None)
            elif isinstance(node, _ast.arg):
                bind(node.arg, None)
            elif isinstance(node, _ast.comprehension):
                targets(node.target, None)
            elif isinstance(node, _ast.Delete):
                for t in node.targets:
                    targets(t, None)
            for child in _ast.iter_child_nodes(node):
                walk(child, False)

        for node in nodes:
            walk(node, True)
        self.bound = set(values)
        self.literal = set()
        for _ in range(4):  # a = {...}; b = [a]: a few rounds reach the fixed point
            grown = {n for n, vs in values.items() if all(v is not None and self.written(v) for v in vs)}
            if grown == self.literal:
                break
            self.literal = grown

    def name_is_literal(self, name):
        if name in self.bound:
            return name in self.literal
        if self.outer is not None:
            return self.outer.name_is_literal(name)
        return name in PATTERN_NAMES

    def written(self, node):
        """``node`` is a value the test writes itself (no call into the repository's code)."""
        if isinstance(node, _ast.Constant):
            return True
        if isinstance(node, (_ast.List, _ast.Tuple, _ast.Set)):
            return all(self.written(e.value if isinstance(e, _ast.Starred) else e) for e in node.elts)
        if isinstance(node, _ast.Dict):
            return all(k is None or self.written(k) for k in node.keys) and all(self.written(v) for v in node.values)
        if isinstance(node, _ast.UnaryOp):
            return self.written(node.operand)
        if isinstance(node, _ast.BinOp):
            return self.written(node.left) and self.written(node.right)
        if isinstance(node, _ast.JoinedStr):
            return all(self.written(v.value if isinstance(v, _ast.FormattedValue) else v) for v in node.values)
        if isinstance(node, _ast.Name):
            return self.name_is_literal(node.id)
        if isinstance(node, _ast.Attribute):
            return node.attr in PATTERN_NAMES
        if isinstance(node, _ast.Call):
            parts = _dotted(node.func)
            made = bool(PATTERN_CALLS.intersection(parts)) or (
                isinstance(node.func, _ast.Name) and node.func.id in self.callables)
            return made and all(self.written(a.value if isinstance(a, _ast.Starred) else a) for a in node.args) and all(
                self.written(k.value) for k in node.keywords)
        return False


class _Rewriter(_ast.NodeTransformer):
    def __init__(self, tree, chains):
        self.chains = chains
        self.temps = 0
        callables = {n.name for n in tree.body if isinstance(n, _ast.ClassDef)}
        for node in tree.body:  # helpers the test imports from its own package (from .helpers import AnyStr)
            if isinstance(node, _ast.ImportFrom) and (node.level or (node.module or "").split(".")[0] in (
                    "tests", "test", "testing", "conftest")):
                callables.update(a.asname or a.name for a in node.names)
        self.scope = _Scope(tree.body, None, callables)

    def _function(self, node):
        outer = self.scope
        self.scope = _Scope([node.args, *node.body], outer, outer.callables)
        try:
            self.generic_visit(node)
        finally:
            self.scope = outer
        return node

    visit_FunctionDef = visit_AsyncFunctionDef = _function

    def visit_Lambda(self, node):
        outer = self.scope
        self.scope = _Scope([node.args], outer, outer.callables)
        try:
            self.generic_visit(node)
        finally:
            self.scope = outer
        return node

    def _flags(self, *nodes):
        return sum(1 << i for i, n in enumerate(nodes) if n is not None and self.scope.written(n))

    def _cmp(self, code, left, right, flags, where):
        call = _ast.Call(_ast.Name(CMP_NAME, _ast.Load()),
                         [_ast.Constant(code), left, right, _ast.Constant(flags), _ast.Constant(where.lineno)], [])
        return _ast.copy_location(call, where)

    def visit_Compare(self, node):
        ops = [_OPS.get(type(op)) for op in node.ops]
        if all(code is None for code in ops):
            return self.generic_visit(node)
        operands = [node.left, *node.comparators]
        flags = [self._flags(operands[i], operands[i + 1]) for i in range(len(ops))]
        self.generic_visit(node)
        operands = [node.left, *node.comparators]
        if len(ops) == 1:
            return self._cmp(ops[0], operands[0], operands[1], flags[0], node)
        if not self.chains:
            return node
        parts, previous = [], operands[0]
        for i, code in enumerate(ops):
            right = operands[i + 1]
            if i < len(ops) - 1:
                name = f"@gem_t{self.temps}"
                self.temps += 1
                right = _ast.NamedExpr(_ast.Name(name, _ast.Store()), right)
            if code is None:
                part = _ast.Compare(previous, [node.ops[i]], [right])
            else:
                part = self._cmp(code, previous, right, flags[i], node)
            parts.append(_ast.copy_location(part, node))
            previous = _ast.Name(right.target.id, _ast.Load()) if isinstance(right, _ast.NamedExpr) else right
        return _ast.copy_location(_ast.BoolOp(_ast.And(), parts), node)

    def visit_Call(self, node):
        parts = _dotted(node.func)
        name = parts[0] if parts else ""
        positional = [a for a in node.args if not isinstance(a, _ast.Starred)]
        flags = self._flags(*positional[:2]) if len(positional) == len(node.args) else 0
        self.generic_visit(node)
        if not (name in CLAIMS or name.startswith(("assert", "fail_unless"))) or isinstance(node.func, _ast.Name) and (
                node.func.id == CALL_NAME):
            return node
        kind = CLAIMS.get(name, "probe")
        call = _ast.Call(_ast.Name(CALL_NAME, _ast.Load()),
                         [node.func, _ast.Constant(kind), _ast.Constant(flags), _ast.Constant(node.lineno), *node.args],
                         node.keywords)
        return _ast.copy_location(call, node)


def rewrite_comparisons(tree, chains=True):
    """Rewrite ``tree`` (a test module) in place so its comparisons and assertion calls go through
    the guard (see the module doc); ``chains=False`` leaves chained comparisons as they are (where
    the temporaries a chain needs are not allowed)."""
    _Rewriter(tree, chains).visit(tree)
    _ast.fix_missing_locations(tree)
    return tree


# ------------------------------------------------------------------ the runtime side
def make_guard(report, seed):
    """``(cmp, call)``: the functions the rewritten test calls. ``report(message)`` is called for
    each object found equal to what it was never given; ``seed`` (bytes) seeds the private
    generator of the probes' values."""
    import random

    _type, _id, _len, _bool, _isinstance, _repr = type, id, len, bool, isinstance, object.__repr__
    _list_iter, _tuple_iter, _dict_items, _set_iter = list.__iter__, tuple.__iter__, dict.items, iter
    _fs_iter = frozenset.__iter__
    rng = random.Random(seed)
    nan_inf = (float("inf"), float("-inf"))

    class _Unseen:  # made in this process at start: no code written before it can name it
        __slots__ = ()

    scalars = frozenset({type(None), bool, int, float, complex, str, bytes, bytearray, range, slice, type(...),
                         type(NotImplemented)})
    views = frozenset({type({}.keys()), type({}.values()), type({}.items())})
    plain = scalars | {list, tuple, dict, set, frozenset}
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    budget_nodes = 50_000

    def token(n=12):
        return "".join(rng.choice(alphabet) for _ in range(n))

    def other_char(ch):
        while True:
            c = rng.choice(alphabet)
            if c.casefold() != ch.casefold():
                return c

    def neighbours(p, near):
        """Fresh values that differ from ``p``: of its exact type, and one of another built-in type
        (none for an opaque ``p``)."""
        t = _type(p)
        if t not in plain:
            return []
        return same_type(p, t, near) + [rng.randint(1 << 20, 1 << 40) if t in (str, bytes, type(None)) else token()]

    def same_type(p, t, near):
        if t is bool:
            return [not p]
        if t is int:
            far = p + rng.randint(1 << 20, 1 << 40)
            return [p + rng.choice((-1, 1)) * rng.randint(1, 9), far] if near else [far]
        if t is float:
            if p != p or p in nan_inf:
                return [0.0, 1.5]
            d = max(1.0, abs(p)) * rng.uniform(0.5, 2.0)
            return [p + d, p - d]
        if t is complex:
            return [p + complex(1 + rng.random(), 1)]
        if t is str:
            out = [p + token()]
            if near and p:
                i = rng.randrange(_len(p))
                out.append(p[:i] + other_char(p[i]) + p[i + 1:])
            return out
        if t is bytes:
            out = [p + token().encode()]
            if near and p:
                i = rng.randrange(_len(p))
                out.append(p[:i] + other_char(chr(p[i]) if p[i] < 128 else "a").encode() + p[i + 1:])
            return out
        if t is list or t is tuple:
            out = [p + t((_Unseen(),))]
            if near and p:
                items = list(p)
                i = rng.randrange(_len(items))
                items[i] = (neighbours(items[i], True) or [_Unseen()])[0] if _type(items[i]) in scalars else _Unseen()
                out.append(t(items))
            return out
        if t is dict:
            wider = dict(p)
            wider[token()] = _Unseen()
            out = [wider]
            if near and p:
                changed = dict(p)
                k = rng.choice(list(changed))
                v = changed[k]
                changed[k] = (neighbours(v, True) or [_Unseen()])[0] if _type(v) in scalars else _Unseen()
                out.append(changed)
            return out
        if t is set or t is frozenset:
            return [t(list(p) + [token()])] + ([t(list(p)[1:] + [token()])] if near and p else [])
        return []

    def truth(r, reduce="all"):
        """``True`` / ``False`` for what a comparison's result says (an array reduced with
        ``all``, or ``any`` for ``!=``, twice for a frame), ``None`` when it cannot be told."""
        if r is True or r is False:
            return r
        for _ in range(3):
            try:
                return _bool(r)
            except Exception:  # noqa: BLE001 - an array: reduce it
                try:
                    r = getattr(r, reduce)()
                except Exception:  # noqa: BLE001
                    return None
        return None

    def said_equal(r):
        return truth(r) is True

    def said_not_different(r):
        return truth(r, "any") is False

    def claims(v, c):
        """``v`` says it is equal to ``c`` (which it never saw)."""
        try:
            if said_equal(v == c):
                return True
        except Exception:  # noqa: BLE001 - an honest __eq__ may not know what to do with c
            pass
        except BaseException:  # noqa: BLE001 - SystemExit & co. from a comparison: not a value
            return True
        try:
            return said_not_different(v != c)
        except Exception:  # noqa: BLE001
            return False
        except BaseException:  # noqa: BLE001
            return True

    def contains_unseen(v, member):
        for c in [_Unseen()] + (neighbours(member, False) if _type(member) in plain else []):
            try:
                if c in v:
                    return True
            except Exception:  # noqa: BLE001
                pass
            except BaseException:  # noqa: BLE001
                return True
        return False

    def name_of(v):
        t = _type(v)
        try:
            return f"{_type.__getattribute__(t, '__module__')}.{_type.__getattribute__(t, '__qualname__')}"
        except Exception:  # noqa: BLE001
            return "an object"

    def walk(value, partner, container=False, member=None):
        """The first object in ``value`` equal to what it never saw (``None``: none)."""
        queue = [(value, partner, container)]
        seen = set()
        i = 0
        while i < _len(queue) and i < budget_nodes:
            v, p, is_container = queue[i]
            i += 1
            t = _type(v)
            if t in scalars:
                continue
            if t is list or t is tuple:
                paired = not is_container and _type(p) is t and _len(p) == _len(v)
                queue.extend((x, p[j] if paired else (member if is_container else None), False)
                             for j, x in enumerate(v))
                continue
            if t is dict:
                pd = p if _type(p) is dict and not is_container else None
                for k, x in _dict_items(v):
                    queue.append((k, member if is_container else None, False))
                    if not is_container:
                        queue.append((x, pd[k] if pd is not None and _type(k) in scalars and k in pd else None, False))
                continue
            if t is set or t is frozenset or t in views:
                queue.extend((x, member if is_container else None, False) for x in v)
                continue
            if _id(v) in seen:
                continue
            seen.add(_id(v))
            if is_container:
                if contains_unseen(v, member):
                    return v
            else:
                probes = [_Unseen()] + (neighbours(p, True) if _type(p) in plain else [])
                if any(claims(v, c) for c in probes):
                    return v
            if _isinstance(v, (list, tuple)):
                queue.extend((x, None, False) for x in (_list_iter(v) if _isinstance(v, list) else _tuple_iter(v)))
            elif _isinstance(v, dict):
                for k, x in _dict_items(v):
                    queue.extend(((k, None, False), (x, None, False)))
            elif _isinstance(v, frozenset):
                queue.extend((x, None, False) for x in _fs_iter(v))
            elif _isinstance(v, set):
                queue.extend((x, None, False) for x in set.__iter__(v))
        return None

    def partner_in(member, container):
        """The element of a built-in container that ``member`` is equal to (for its probes)."""
        t = _type(container)
        if t not in (list, tuple, set, frozenset, dict) and t not in views:
            return None
        for n, e in enumerate(container):
            if n > 1000:
                break
            if _type(e) in scalars:
                try:
                    if said_equal(member == e):
                        return e
                except Exception:  # noqa: BLE001
                    pass
        return None

    def flag(found, line, what):
        report(f"line {line}: {what} {name_of(found)} is equal to values it was never given (an object equal to anything)")

    def check(code, left, right, flags, line):
        if _type(left) in scalars and _type(right) in scalars:
            return
        if code in (_EQ, _NE):
            if not flags & 1:
                found = walk(left, right)
                if found is not None:
                    return flag(found, line, "a")
            if not flags & 2:
                found = walk(right, left)
                if found is not None:
                    return flag(found, line, "a")
        else:
            if not flags & 1:
                found = walk(left, partner_in(left, right))
                if found is not None:
                    return flag(found, line, "a")
            if not flags & 2:
                found = walk(right, None, container=True, member=left)
                if found is not None:
                    return flag(found, line, "a container")

    def cmp(code, left, right, flags, line):
        if code == _EQ:
            result = left == right
        elif code == _NE:
            result = left != right
        elif code == _IN:
            result = left in right
        else:
            result = left not in right
        check(code, left, right, flags, line)
        return result

    mock_types = ()
    try:
        import unittest.mock as _mock

        mock_types = (_mock.NonCallableMock,)
    except ImportError:  # pragma: no cover - the standard library has it
        pass

    def held(claim):
        """``False`` only when the claim is definitely false (an exception: cannot be told)."""
        try:
            return _bool(claim())
        except Exception:  # noqa: BLE001
            return None

    def call(fn, kind, flags, line, /, *args, **kwargs):  # positional-only: any keyword is the call's own
        result = fn(*args, **kwargs)
        names = _KWARGS[kind]
        ops = list(args[:2]) + [kwargs[k] for k in names[len(args):2] if k in kwargs]
        owner = getattr(fn, "__self__", None)
        if mock_types and _isinstance(owner, mock_types):
            # what the repository's code passed to the mock is compared with what the test expects
            for recorded in (owner.call_args_list, owner.mock_calls):
                found = walk(list(recorded), None)
                if found is not None:
                    flag(found, line, "a mock was called with")
                    return result
            for i, op in enumerate(ops):
                if not flags & (1 << i):
                    found = walk(op, None)
                    if found is not None:
                        flag(found, line, "a")
                        return result
            return result
        if kind == "probe" or kind == "eq":
            if _len(ops) >= 2:
                check(_EQ, ops[0], ops[1], flags, line)
                if kind == "eq" and held(lambda: truth(ops[0] == ops[1]) is not False) is False:
                    report(f"line {line}: an assertion method passed but its operands are not equal (it was replaced?)")
            return result
        if kind == "in" and _len(ops) >= 2:
            check(_IN, ops[0], ops[1], flags, line)
            if held(lambda: ops[0] in ops[1]) is False:
                report(f"line {line}: assertIn passed but the member is not in the container (it was replaced?)")
        elif ops:
            x = ops[0]
            claim = {"true": lambda: truth(x) is not False, "false": lambda: truth(x) is not True,
                     "none": lambda: x is None, "notnone": lambda: x is not None,
                     "is": lambda: _len(ops) < 2 or x is ops[1]}[kind]
            if held(claim) is False:
                report(f"line {line}: an assertion method passed but its claim does not hold (it was replaced?)")
        return result

    return cmp, call
