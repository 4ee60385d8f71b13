"""Shared fixtures of the SWE env tests."""

import json
import subprocess

import pytest


def _git(cwd, *args):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture
def swebench_jsonl(tmp_path):
    """A SWE-bench-format instance over a small git repository made here."""
    repo = tmp_path / "calc"
    (repo / "calc").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "calc" / "__init__.py").write_text("")
    (repo / "calc" / "core.py").write_text("def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n")
    (repo / "tests" / "test_core.py").write_text("from calc.core import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n")
    _git(repo, "init", "-q")
    _git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "add", "-A")
    _git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "base")
    base = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    (repo / "calc" / "core.py").write_text("def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n")
    with open(repo / "tests" / "test_core.py", "a") as fh:
        fh.write("\n\n@__import__('pytest').mark.parametrize('a', [1, 2])\ndef test_add(a):\n"
                 "    from calc.core import add\n    assert add(a, 3) == a + 3\n")
    patch = subprocess.run(["git", "diff", "--", "calc"], cwd=repo, capture_output=True, text=True).stdout
    test_patch = subprocess.run(["git", "diff", "--", "tests"], cwd=repo, capture_output=True, text=True).stdout
    _git(repo, "checkout", "-q", "--", ".")
    row = {"instance_id": "local__calc-1", "repo": str(repo), "base_commit": base, "problem_statement": "add() subtracts.",
           "patch": patch, "test_patch": test_patch,
           "FAIL_TO_PASS": json.dumps(["tests/test_core.py::test_add[1]", "tests/test_core.py::test_add[2]"]),
           "PASS_TO_PASS": json.dumps(["tests/test_core.py::test_mul"])}
    path = tmp_path / "instances.jsonl"
    path.write_text(json.dumps(row) + "\n")
    return path
