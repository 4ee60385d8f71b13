"""Shared fixtures of the SWE env tests: SWE-bench-format instances over small git repositories
made here (rows as the hub has them: FAIL_TO_PASS and PASS_TO_PASS as JSON strings, ``repo`` a hub
name, the local clone named by the caller through ``repo_paths``)."""

import json
import subprocess
import textwrap
from types import SimpleNamespace

import pytest


def _git(cwd, *args):
    return subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout


def make_instance(root, repo_name, instance_id, base, fix, tests_after, fail_to_pass, pass_to_pass, statement):
    """A git repository at ``root/<name>`` with ``base`` committed, and the SWE-bench row whose
    ``patch`` turns ``base`` into ``base | fix`` and whose ``test_patch`` writes ``tests_after``."""
    repo = root / repo_name.replace("/", "__")
    for path, text in base.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(textwrap.dedent(text))
    _git(repo if repo.exists() else root, "init", "-q", str(repo))
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    commit = _git(repo, "rev-parse", "HEAD").strip()
    for path, text in fix.items():
        (repo / path).write_text(textwrap.dedent(text))
    patch = _git(repo, "diff")
    _git(repo, "checkout", "-q", "--", ".")
    for path, text in tests_after.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(textwrap.dedent(text))
    _git(repo, "add", "-A")
    test_patch = _git(repo, "diff", "--cached")
    _git(repo, "reset", "-q", "--hard")
    _git(repo, "clean", "-qfd")
    row = {"instance_id": instance_id, "repo": repo_name, "base_commit": commit, "problem_statement": statement,
           "patch": patch, "test_patch": test_patch, "FAIL_TO_PASS": json.dumps(fail_to_pass),
           "PASS_TO_PASS": json.dumps(pass_to_pass), "version": "0.1", "environment_setup_commit": commit}
    path = root / f"{repo_name.replace('/', '__')}.jsonl"
    path.write_text(json.dumps(row) + "\n")
    return SimpleNamespace(path=str(path), repo_paths={repo_name: str(repo)}, row=row, repo=repo)


@pytest.fixture
def swebench_instance(tmp_path):
    """A SWE-bench-format instance over a small git repository made here."""
    return make_instance(
        tmp_path, "local/calc", "local__calc-1",
        base={"calc/__init__.py": "", "calc/core.py": "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n",
              "tests/test_core.py": "from calc.core import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"},
        fix={"calc/core.py": "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"},
        tests_after={"tests/test_core.py": "from calc.core import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"
                     "\n\n@__import__('pytest').mark.parametrize('a', [1, 2])\ndef test_add(a):\n"
                     "    from calc.core import add\n    assert add(a, 3) == a + 3\n"},
        fail_to_pass=["tests/test_core.py::test_add[1]", "tests/test_core.py::test_add[2]"],
        pass_to_pass=["tests/test_core.py::test_mul"], statement="add() subtracts.")


# The repository of the equality tests: values of every kind, honest value classes, and tests that
# compare them with plain asserts, unittest's methods, mocks and the test's own patterns.
SHAPES_BASE = {
    "shapes/__init__.py": "",
    "shapes/core.py": '''
        import collections
        import dataclasses
        import enum
        from decimal import Decimal
        from fractions import Fraction


        @dataclasses.dataclass(frozen=True)
        class Point:
            x: int
            y: int


        class Version:
            """A value class with a hand-written __eq__ (compares its fields, accepts strings)."""

            def __init__(self, text):
                self.parts = tuple(int(p) for p in text.split("."))

            def __eq__(self, other):
                if isinstance(other, str):
                    other = Version(other)
                if not isinstance(other, Version):
                    return NotImplemented
                return self.parts == other.parts

            def __hash__(self):
                return hash(self.parts)


        class Color(enum.IntEnum):
            RED = 1
            GREEN = 2


        class Name(str):
            pass


        Pair = collections.namedtuple("Pair", "first second")


        def area(w, h):
            return w + h


        def label(n):
            return f"item-{n}"


        def span(n):
            return [n, n + area(1, 1)]


        def record(n):
            return {"id": 1000 + n, "name": f"n{n}", "size": area(n, 2)}


        def corner(n):
            return Point(n, area(n, 1))


        def version(n):
            return Version(f"1.{area(n, 1)}")


        def color(n):
            return Color(area(n, 1))


        def name(n):
            return Name("x" * area(n, 1))


        def price(n):
            return Decimal(area(n, 4)) / 4


        def ratio(n):
            return Fraction(area(n, 1), 3)


        def pair(n):
            return Pair(n, area(n, 2))


        def counts(n):
            return collections.Counter("ab" * area(n, 1))


        def notify(callback, n):
            callback(area(n, 2), unit="cm")
    ''',
    "tests/__init__.py": "",
    "tests/test_shapes.py": '''
        from shapes.core import label


        def test_label():
            assert label(3) == "item-3"
    ''',
}
SHAPES_FIX = {"shapes/core.py": SHAPES_BASE["shapes/core.py"].replace("return w + h", "return w * h")}
SHAPES_TESTS = {"tests/test_shapes.py": '''
    import collections
    import unittest
    from decimal import Decimal
    from fractions import Fraction
    from unittest import mock
    from unittest.mock import ANY, call

    import pytest

    from shapes.core import Color, Pair, Point, Version, area, color, corner, counts, label, name, notify, pair, price, ratio, record, span, version

    EXPECTED = {"id": ANY, "name": "n3", "size": 6}


    def test_label():
        assert label(3) == "item-3"


    def test_values():
        assert area(2, 3) == 6
        assert area(2, 3) != 5
        assert area(2, 3) in (6, 60)
        assert 0 < area(2, 3) == 6 <= 6
        assert span(2) == [2, 3] and span(2)[1] == 3
        assert record(3) == {"id": ANY, "name": "n3", "size": 6}
        assert record(3) == EXPECTED
        expected = {"id": 1003, "name": ANY, "size": 6}
        assert record(3) == expected
        assert corner(2) == Point(2, 2) and corner(2) != Point(2, 3)
        assert version(2) == Version("1.2") and version(2) == "1.2" and version(2) != "1.3"
        assert color(2) == Color.GREEN and color(2) == 2
        assert name(2) == "xx" and isinstance(name(2), str)
        assert price(2) == Decimal("2") and price(2) == 2
        assert ratio(3) == Fraction(1) and ratio(3) == 1
        assert pair(2) == (2, 4) and pair(2) == Pair(2, 4)
        assert counts(1) == {"a": 1, "b": 1} and counts(1) == collections.Counter(a=1, b=1)
        assert area(0.5, 0.5) == pytest.approx(0.25)
        assert [area(i, i) for i in range(3)] == [0, 1, 4]
        assert all(area(i, 1) == i for i in range(3))
        m = mock.Mock()
        notify(m, 3)
        m.assert_called_once_with(6, unit="cm")
        m.assert_called_once_with(ANY, unit=ANY)
        assert m.call_args == call(6, unit="cm")


    class TestShapes(unittest.TestCase):
        def test_methods(self):
            self.assertEqual(area(2, 3), 6)
            self.assertEqual(corner(2), Point(2, 2))
            self.assertEqual(record(3), {"id": 1003, "name": "n3", "size": 6})
            self.assertIn(area(2, 3), [6, 7])
            self.assertTrue(area(2, 2) == 4)
            self.assertIsNone(None if area(1, 1) == 1 else 0)
            self.assertListEqual(span(1), [1, 2])
'''}


@pytest.fixture
def shapes_instance(tmp_path):
    """The equality tests' instance: ``acme/shapes``, whose ``area`` adds instead of multiplying."""
    return make_instance(
        tmp_path, "acme/shapes", "acme__shapes-1", base=SHAPES_BASE, fix=SHAPES_FIX, tests_after=SHAPES_TESTS,
        fail_to_pass=["tests/test_shapes.py::test_values", "tests/test_shapes.py::TestShapes::test_methods"],
        pass_to_pass=["tests/test_shapes.py::test_label"], statement="area() adds its sides instead of multiplying them.")
