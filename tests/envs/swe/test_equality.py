"""SWE-bench instances (the pytest runner): a value equal to anything earns nothing, however it is made.

The instance is a SWE-bench-format row (FAIL_TO_PASS / PASS_TO_PASS as JSON strings, ``repo`` a hub
name) over a small git repository built here (``shapes_instance`` in conftest.py). Its hidden tests
compare values of every kind: plain asserts, chains, ``in``, unittest's assertion methods, a mock's
``assert_called_once_with``, the test's own ``mock.ANY`` and ``pytest.approx`` patterns, and honest
value classes (a dataclass, a hand-written ``__eq__`` that accepts strings, ``IntEnum``, a ``str``
subclass, ``Decimal``, ``Fraction``, ``namedtuple``, ``Counter``). The reference fix earns 1.0;
every strategy in ``attacks.EQUALITY`` (each makes every function of the repository return an
object equal to anything, made a different way, or tampers with what compares) earns 0.
"""

import ast
import concurrent.futures
import dataclasses
import functools
import json
import os

import pytest

from gem.envs.swe._equality import make_guard, rewrite_comparisons
from gem.envs.swe.env import SweEnv
from gem.envs.swe.loader import instance_to_task, load_instances, validate_row

from . import attacks

pytest.importorskip("pytest")


@pytest.fixture
def shapes_task(shapes_instance):
    task, = load_instances(shapes_instance.path, repo_paths=shapes_instance.repo_paths)
    return dataclasses.replace(task, test_timeout=30.0)


def play(task, actions):
    env = SweEnv(tasks=[task], task=task)
    try:
        obs, info = env.reset(seed=0)
        for action in actions:
            obs, reward, terminated, truncated, info = env.step(action)
            if terminated:
                return reward, info
    finally:
        env.close()
    raise AssertionError("the episode did not end")


# ------------------------------------------------------------------ the instance
def test_reference_fix_earns_one_and_no_fix_earns_nothing(shapes_task):
    env = SweEnv(tasks=[shapes_task], task=shapes_task)
    try:
        obs, info = env.reset(seed=0)
        solver = env.make_solver()
        solver.reset(obs, info)
        for action in solver.actions:
            obs, reward, terminated, truncated, info = env.step(action)
    finally:
        env.close()
    assert reward == 1.0 and info["resolved"], info["test_results"]  # honest values and patterns: no refusal
    assert info["fail_to_pass"] == {"passed": 2, "total": 2} and info["pass_to_pass"] == {"passed": 1, "total": 1}
    reward, info = play(shapes_task, ["<done/>"])
    assert reward == 0.0 and info["fail_to_pass"]["passed"] == 0 and info["pass_to_pass"]["passed"] == 1


def _attack(task, name):
    if name in attacks.EQUALITY:
        command = attacks.append_command(attacks.EQUALITY[name])
    else:
        command = attacks.plant_command(*attacks.PLANTED[name])
    return play(task, [f"<bash>{command}</bash>", "<done/>"])


ATTACKS = sorted(attacks.EQUALITY) + ["conftest", "tests_conftest"]


def test_equal_to_anything_earns_nothing(shapes_task):
    """Every strategy, on both FAIL_TO_PASS tests (plain asserts; unittest methods): 0, and the
    reason is GEM's refusal, not an accident of the attack."""
    task = dataclasses.replace(shapes_task, pass_to_pass=())
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        results = dict(zip(ATTACKS, pool.map(functools.partial(_attack, task), ATTACKS)))
    for name, (reward, info) in results.items():
        assert reward == 0.0 and info["graded"], (name, info["test_results"])
        assert info["fail_to_pass"]["passed"] == 0, (name, info["test_results"])
        methods = next(r for r in info["test_results"] if r["test"].endswith("test_methods"))
        assert "refused" in methods["detail"], (name, methods)  # assertEqual & co. pass for these values: GEM refuses them


# ------------------------------------------------------------------ the guard itself
def _guard():
    found = []
    cmp, call = make_guard(found.append, os.urandom(32))
    return found, cmp, call


class _AE:
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = object.__hash__


def _dirty_values():
    from unittest import mock

    m = mock.MagicMock()
    m.__eq__.return_value = True
    builtins_only = type("V", (), {"__eq__": lambda s, o: type(o) in (int, str, list, dict, tuple, float, bool, type(None)),
                                   "__hash__": lambda s: 0})
    return {"ANY": mock.ANY, "MagicMock": m, "class": _AE(), "str subclass": type("S", (str,), {"__eq__": lambda s, o: True,
            "__hash__": str.__hash__})("x"), "int subclass": type("I", (int,), {"__eq__": lambda s, o: True, "__hash__": int.__hash__})(1),
            "list subclass": type("L", (list,), {"__eq__": lambda s, o: True})(), "truthy": type("T", (), {"__eq__": lambda s, o: "yes"})(),
            "builtins only": builtins_only(), "inside a list": [1, _AE()], "inside a dict": {"k": _AE()},
            "ne only": type("N", (), {"__ne__": lambda s, o: False})()}


@pytest.mark.parametrize("expected", [6, "item-3", [1, 2], {"k": 1}, (1, 2), 2.5, None, True])
def test_guard_flags_every_value_equal_to_anything(expected):
    for what, value in _dirty_values().items():
        found, cmp, _ = _guard()
        result = cmp(0, value, expected, 0, 7)
        assert found and "line 7" in found[0] and "equal to values it was never given" in found[0], (what, expected)
        assert result == (value == expected)  # the comparison's own result is what the test gets


def test_guard_passes_honest_values_and_the_tests_own_patterns():
    from collections import Counter, OrderedDict, namedtuple
    from decimal import Decimal
    from enum import IntEnum
    from fractions import Fraction
    from unittest import mock

    @dataclasses.dataclass
    class Point:
        x: int
        y: int

    class Sloppy:  # an __eq__ that assumes its operand's type
        def __init__(self, v):
            self.v = v

        def __eq__(self, other):
            return self.v == other.v

    Pair = namedtuple("Pair", "a b")
    Color = IntEnum("Color", "RED GREEN")
    pairs = [(Point(1, 2), Point(1, 2)), (Decimal("1.5"), 1.5), (Fraction(1, 2), 0.5), (Color.GREEN, 2),
             (Pair(1, 2), (1, 2)), (Counter("ab"), {"a": 1, "b": 1}), (OrderedDict(a=1), {"a": 1}),
             (Sloppy(3), Sloppy(3)), (type("Name", (str,), {})("bob"), "bob"), ([Point(0, 0)], [Point(0, 0)]),
             (mock.sentinel.token, mock.sentinel.token), (frozenset({1}), {1}), ({}.keys(), set())]
    try:
        import numpy as np

        pairs += [(np.array([1, 2]), [1, 2]), (np.float64(0.25), 0.25), (np.int64(3), 3)]
    except ImportError:
        pass
    for left, right in pairs:
        found, cmp, _ = _guard()
        result = cmp(0, left, right, 0, 1)
        assert not found, (left, right, found)
        assert bool(getattr(result, "all", lambda: result)())
    found, cmp, _ = _guard()
    assert cmp(0, {"id": 5, "name": "x"}, {"id": mock.ANY, "name": "x"}, 2, 1)  # ANY written by the test: its right
    assert cmp(0, 0.1 + 0.2, pytest.approx(0.3), 2, 1) and not found
    cmp(0, {"id": mock.ANY}, {"id": 5}, 2, 1)  # ANY on the side the test did not write
    assert found


def test_guard_checks_what_assertion_methods_claim():
    import unittest

    case = unittest.TestCase()
    found, _, call = _guard()
    call(case.assertEqual, "eq", 0, 3, 6, 6)
    call(case.assertIn, "in", 0, 4, 6, [6, 7])
    assert not found
    call(case.assertEqual, "eq", 0, 5, _AE(), 6)
    assert found and "line 5" in found[0]
    found, _, call = _guard()
    call(lambda a, b: None, "eq", 0, 9, 5, 6)  # an assertEqual that was replaced: passes, claim false
    call(lambda x: None, "true", 0, 10, False)
    assert [f.split(":")[0] for f in found] == ["line 9", "line 10"]
    from unittest import mock

    m = mock.Mock()
    m(1, line=2, kind="k", fn=None, flags=0)
    found, _, call = _guard()
    call(m.assert_called_once_with, "probe", 0, 11, 1, line=2, kind="k", fn=None, flags=0)  # the call's own keywords
    try:
        import numpy as np

        call(lambda a, b: None, "eq", 0, 12, np.ones((2, 2)), np.ones((2, 2)))  # equal everywhere: the claim holds
        call(lambda a, b: None, "eq", 0, 13, np.ones(2), np.ones(3))  # cannot be told: not reported
    except ImportError:
        pass
    assert not found


def test_rewritten_comparisons_keep_their_meaning():
    source = ("from unittest.mock import ANY\nE = {'a': ANY}\ncalls = []\n"
              "def f(x):\n    calls.append(x)\n    return x\n"
              "def ident(v):\n    return v\n"
              "def results():\n    expected = [1, ANY]\n"
              "    return [1 == 1, 1 != 1, 2 in [1, 2], 3 not in [3], 0 < f(1) == 1 < 2, 1 == f(2) == f(3),"
              " ident([1, 2]) == expected, ident({'a': 9}) == E, (lambda y: y == 4)(4), [x == 2 for x in (1, 2)]]\n")
    tree = ast.parse(source)
    rewrite_comparisons(tree)
    text = ast.unparse(tree)
    assert "@gem_cmp(0, ident([1, 2]), expected, 2" in text and "@gem_cmp(0, ident({'a': 9}), E, 2" in text
    assert "@gem_cmp(0, 1, 1, 3" in text and "@gem_cmp(0, y, 4, 2" in text  # names bound to literals
    found, cmp, call = _guard()
    space = {"@gem_cmp": cmp, "@gem_call": call}
    exec(compile(tree, "t.py", "exec"), space)
    assert space["results"]() == [True, False, True, False, True, False, True, True, True, [False, True]]
    assert space["calls"] == [1, 2] and not found  # short-circuit kept: f(3) never ran


# ------------------------------------------------------------------ the rows
def test_row_repo_must_be_a_hub_name_unless_the_caller_names_a_local_one(shapes_instance, tmp_path):
    row = dict(shapes_instance.row, repo=str(shapes_instance.repo))  # a row pointing at a directory of the host
    with pytest.raises(ValueError, match="not a hub name 'owner/name'.*repo_paths"):
        instance_to_task(row)
    task = instance_to_task(row, repo_paths={str(shapes_instance.repo): str(shapes_instance.repo)})
    assert task.fail_to_pass == ("tests/test_shapes.py::test_values", "tests/test_shapes.py::TestShapes::test_methods")
    for bad in ("../etc", "owner/..", "/abs/path", "owner", "a/b/c", "-u/x"):
        with pytest.raises(ValueError, match="hub name"):
            validate_row(dict(shapes_instance.row, repo=bad))
    with pytest.raises(ValueError, match="not a git repository"):
        instance_to_task(shapes_instance.row, repo_paths={"acme/shapes": str(tmp_path / "nothing")})


@pytest.mark.parametrize("field, value, message", [
    ("base_commit", "--output=/tmp/x", "hexadecimal commit"),
    ("base_commit", 123, "hexadecimal commit"),
    ("FAIL_TO_PASS", "[not json", "not a JSON list"),
    ("FAIL_TO_PASS", json.dumps({"a": 1}), "must be a list"),
    ("FAIL_TO_PASS", json.dumps([1, 2]), "non-empty strings"),
    ("FAIL_TO_PASS", "[]", "at least one test"),
    ("FAIL_TO_PASS", json.dumps(["-p evil"]), "no option"),
    ("FAIL_TO_PASS", json.dumps(["/etc/x.py::t"]), "no absolute path"),
    ("PASS_TO_PASS", json.dumps(["../up.py::t"]), "no '..'"),
    ("PASS_TO_PASS", json.dumps(["t.py::a\nb"]), "NUL or newline"),
    ("PASS_TO_PASS", json.dumps(["t.py::x"] * 20_001), "at most 20000"),
    ("problem_statement", None, "must be a string"),
    ("problem_statement", "x" * ((1 << 20) + 1), "at most"),
    ("test_patch", ["diff"], "must be a string"),
    ("instance_id", "a/../b", "instance_id"),
    ("test_timeout", float("nan"), "test_timeout"),
    ("test_timeout", True, "test_timeout"),
], ids=lambda v: v if isinstance(v, str) and len(v) < 24 and v.isprintable() else type(v).__name__)
def test_row_fields_are_checked(shapes_instance, field, value, message):
    with pytest.raises(ValueError, match=message):
        validate_row(dict(shapes_instance.row, **{field: value}))


def test_row_checks_keep_hub_rows_working(shapes_instance):
    row = validate_row(dict(shapes_instance.row, FAIL_TO_PASS=json.loads(shapes_instance.row["FAIL_TO_PASS"]), PASS_TO_PASS=""))
    assert row["FAIL_TO_PASS"][0] == "tests/test_shapes.py::test_values" and row["PASS_TO_PASS"] == ()
    with pytest.raises(KeyError, match="base_commit"):
        validate_row({"instance_id": "x"})
    with pytest.raises(ValueError, match="JSON object"):
        validate_row(["not", "a", "row"])
