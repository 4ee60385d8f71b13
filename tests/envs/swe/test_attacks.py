"""Fixed cheating strategies (tests/envs/swe/attacks.py) earn nothing on any repository task.

Each strategy is played as an agent would: one bash command that rewrites the repository (or plants
a file), then ``<done/>``. The full matrix (every strategy on every bundled task) is marked slow;
the default run plays each strategy on a few tasks that cover values, floats, exceptions and
relations. The reference fix still earns 1.0 everywhere (test_swe.py).
"""

import concurrent.futures
import dataclasses
import json
import re
import secrets

import pytest

from gem.envs.swe import grading
from gem.envs.swe.bundled import bundled_tasks
from gem.envs.swe.checks import SameAsNext, compile_tests
from gem.envs.swe.env import SweEnv
from gem.envs.swe.loader import load_instances
from gem.envs.swe.values import Opaque, Raised, Raises, decode, same
from gem.sandbox import SandboxError

from . import attacks

TASKS = bundled_tasks()
FEW = [t for t in TASKS if t.name in ("Slugify", "StackPop", "Fibonacci")]  # values, exceptions, a relation
APPENDED = sorted(k for k in attacks.APPENDED if k not in ("sleep", "stop_parent"))


def command(name):
    if name in attacks.APPENDED:
        return attacks.append_command(attacks.APPENDED[name])
    cmd = attacks.plant_command(*attacks.PLANTED[name])
    if name == "plugin_module":
        cmd += "\n" + attacks.plant_command(*attacks.PYTEST_INI)
    return cmd


def play(task, name):
    env = SweEnv(tasks=[task], task=task)
    try:
        env.reset(seed=0)
        env.step(f"<bash>{command(name)}</bash>")
        obs, reward, terminated, truncated, info = env.step("<done/>")
        assert terminated
        return reward, info
    finally:
        env.close()


def assert_earns_nothing(tasks, name):
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda t: (t, *play(t, name)), tasks))
    for task, reward, info in results:
        assert reward == 0.0 and not info["resolved"], (name, task.name, info["test_results"])
        assert info["graded"], (name, task.name)
        assert info["fail_to_pass"]["passed"] == 0, (name, task.name, info["test_results"])


@pytest.mark.parametrize("name", APPENDED + sorted(attacks.PLANTED))
def test_attack_earns_nothing(name):
    assert_earns_nothing(FEW, name)


@pytest.mark.slow
@pytest.mark.parametrize("name", APPENDED + sorted(attacks.PLANTED))
def test_attack_earns_nothing_on_any_bundled_task(name):
    assert_earns_nothing(TASKS, name)


@pytest.mark.parametrize("name", ["sleep", "stop_parent"])
def test_sleeping_or_stopping_the_parent_is_a_failed_test(name):
    task = dataclasses.replace(TASKS[0], test_timeout=1.0)
    reward, info = play(task, name)
    assert reward == 0.0 and info["graded"] and info["fail_to_pass"]["passed"] == 0
    if name == "sleep":
        assert all("did not finish within 1 s" in r["detail"] for r in info["test_results"])


@pytest.mark.slow
@pytest.mark.parametrize("name", ["sleep", "stop_parent"])
def test_sleeping_or_stopping_the_parent_on_any_bundled_task(name):
    assert_earns_nothing([dataclasses.replace(t, test_timeout=1.0) for t in TASKS], name)


def test_tested_code_finds_no_nonce_and_no_other_test(monkeypatch):
    """The test process's frames and garbage collector hold no harness state: the leak attack
    reports every 32-hex string and every test id it can reach in its error message."""
    nonce = "f00dfeed" * 4
    monkeypatch.setattr(grading.secrets, "token_hex", lambda n=16: nonce if n == 16 else secrets.token_bytes(n).hex())
    for task in FEW:
        env = SweEnv(tasks=[task], task=task)
        try:
            env.reset(seed=0)
            env.step(f"<bash>{attacks.append_command(attacks.LEAK)}</bash>")
            *_, info = env.step("<done/>")
        finally:
            env.close()
        for result in info["test_results"]:
            found = re.search(r"GEMLEAK (.*?) GEMLEAKEND", result["detail"])
            assert found, result  # the attack ran and its report came back
            seen = set(found.group(1).split())
            assert nonce not in seen
            assert not seen & set(task.test_names), (task.name, seen)
            own = result["test"].split("::")[-1]
            hidden = {"def:" + t.split("::")[-1] for t in task.fail_to_pass} - {"def:" + own}
            assert not seen & hidden, (task.name, result["test"], seen)  # no other hidden test, on disk or in memory


def test_no_expected_value_reaches_the_sandbox(monkeypatch):
    sent = []
    task = next(t for t in TASKS if t.name == "Slugify")
    env = SweEnv(tasks=[task], task=task)
    real_run = env.sandbox.run

    def spy(code, stdin=None, **kw):
        sent.append(stdin)
        return real_run(code, stdin, **kw)

    monkeypatch.setattr(env.sandbox, "run", spy)
    try:
        obs, info = env.reset(seed=0)
        solver = env.make_solver()
        solver.reset(obs, info)
        for action in solver.actions:
            *_, info = env.step(action)
    finally:
        env.close()
    assert info["resolved"]
    grading_input = [s for s in sent if s and b'"programs"' in s]
    assert len(grading_input) == 1
    assert b"_gem_check(lambda: slugify('Hello,  World!'))" in grading_input[0]  # the test's calls go ...
    assert b"hello-world" not in grading_input[0] and b"a-b" not in grading_input[0]  # ... its answers do not


def test_ungraded_is_reported_and_never_paid(monkeypatch):
    task = TASKS[0]
    env = SweEnv(tasks=[task], task=task)
    try:
        obs, info = env.reset(seed=0)
        solver = env.make_solver()
        solver.reset(obs, info)
        for action in solver.actions[:-1]:
            env.step(action)

        def broken(*a, **k):
            raise SandboxError("no worker")

        monkeypatch.setattr(env.sandbox, "run", broken)
        obs, reward, terminated, truncated, info = env.step("<done/>")
    finally:
        env.close()
    assert reward == 0.0 and info["graded"] is False and "no worker" in info["ungraded_reason"]


# ------------------------------------------------------------------ the comparison itself
def test_strict_comparison():
    assert same(1, 1.0) and same(2.5, 2.5) and not same(1, True) and not same(True, 1) and not same(0, False)
    assert not same(float("nan"), float("nan")) and not same(1, "1") and not same(None, 0)
    assert same([1, (2, 3)], [1, (2, 3)]) and not same([1, (2, 3)], [1, [2, 3]]) and not same((1,), [1])
    assert same({1: "a"}, decode(["dict", [[["int", "1"], ["str", "a"]]]]))
    assert not same({1: "a"}, decode(["dict", [[["bool", True], ["str", "a"]]]]))
    assert not same({1: "a"}, decode(["dict", [[["int", "1"], ["str", "a"]], [["int", "2"], ["str", "b"]]]]))
    assert same({1, 2}, decode(["set", [["int", "2"], ["int", "1"]]])) and not same(
        {1, 2}, decode(["frozenset", [["int", "2"], ["int", "1"]]]))
    assert not same("x", Opaque("Anything")) and not same(Raises("IndexError"), "x")
    raised = decode(["raised", ["IndexError", "LookupError", "Exception", "BaseException"], "pop from empty stack"])
    assert isinstance(raised, Raised) and same(Raises("IndexError", "empty"), raised) and same(Raises("LookupError"), raised)
    assert not same(Raises("IndexError", "full"), raised) and not same(Raises("KeyError"), raised) and not same(None, raised)
    for bad in (["int"], ["int", 3], ["list", "x"], ["what", 1], "str", ["raised", "IndexError", None]):
        with pytest.raises(ValueError):
            decode(bad)


def test_compile_tests_keeps_expected_values_out_of_the_observing_source():
    visible, observing, expected = compile_tests(
        "def test_a():\n    s = make()\n    assert f(1) == 'secret-value' and not g(2)\n    check(s.pop(), raises('IndexError', 'empty'))\n"
        "    assert h(3) == h(2) + h(1)\n    assert k() is None\n")
    assert "secret-value" not in observing and "empty" not in observing and "IndexError" not in observing
    assert expected["test_a"][:3] == ("secret-value", False, Raises("IndexError", "empty"))
    assert isinstance(expected["test_a"][3], SameAsNext) and expected["test_a"][4:] == (None, None) and "assert f(1) == 'secret-value'" in visible and "except IndexError" in visible
    namespace = {"make": lambda: [], "f": lambda x: "secret-value", "g": lambda x: False, "h": lambda n: 1 if n < 3 else 2,
                 "k": lambda: None}
    exec(visible, namespace)
    namespace["test_a"]()  # the visible form is plain Python: the reference behaviour passes it
    with pytest.raises(ValueError, match="top-level"):
        compile_tests("def test_b():\n    if x:\n        assert f() == 1\n")
    with pytest.raises(ValueError, match="at least one check"):
        compile_tests("def test_c():\n    f()\n")
    with pytest.raises(ValueError, match="raises"):
        compile_tests("def test_d():\n    check(f(), raises(1))\n")


# ------------------------------------------------------------------ pytest instances
@pytest.fixture
def pytest_task(swebench_instance):
    pytest.importorskip("pytest")
    task, = load_instances(swebench_instance.path, repo_paths=swebench_instance.repo_paths)
    return dataclasses.replace(task, test_timeout=20.0)


@pytest.mark.slow
def test_pytest_instance_attacks_earn_nothing(pytest_task):
    for name in APPENDED + sorted(attacks.PLANTED):
        reward, info = play(pytest_task, name)
        assert reward == 0.0, (name, info["test_results"])
        assert not any(r["passed"] for r in info["test_results"] if "test_add" in r["test"]), (name, info["test_results"])


def test_pytest_instance_test_files_are_restored(pytest_task):
    """An agent that rewrites the tests it can see (PASS_TO_PASS) gets the task's version back."""
    env = SweEnv(tasks=[pytest_task], task=pytest_task)
    try:
        env.reset(seed=0)
        env.step("<bash>printf 'def test_mul():\\n    pass\\n\\ndef test_add():\\n    pass\\n' > tests/test_core.py</bash>")
        *_, info = env.step("<done/>")
    finally:
        env.close()
    assert not info["resolved"] and info["fail_to_pass"]["passed"] == 0 and info["pass_to_pass"]["passed"] == 1


def test_pytest_tampering_is_refused_with_a_reason(pytest_task):
    one = dataclasses.replace(pytest_task, fail_to_pass=pytest_task.fail_to_pass[:1], pass_to_pass=())
    for name, why in [("conftest", "conftest.py added"), ("sitecustomize", "sitecustomize.py added"),
                      ("plugin_module", "pytest configuration in pytest.ini added"),
                      ("patch_pytest_runtest", "_pytest.python.Function.runtest replaced"),
                      ("always_equal", "equals anything"), ("descriptor_spray", "not signed"),
                      ("frame_walk", "not signed"), ("patch_json_report", "failed")]:
        reward, info = play(one, name)
        assert reward == 0.0 and why in info["test_results"][0]["detail"], (name, info["test_results"][0])


def test_pytest_tampering_check_ignores_what_pytest_does_not_read(pytest_task):
    base = grading._tar_entries(pytest_task.files_tar)
    files = {p: c for p, (kind, c) in base.items() if kind == "file"}
    from gem.envs.terminal.task import build_tar

    edited = dict(files, **{"setup.cfg": b"[metadata]\nname = calc\n", "pyproject.toml": b"[project]\nname = 'calc'\n",
                            "calc/core.py": b"def add(a, b):\n    return a + b\n"})
    assert grading.tampering(pytest_task, build_tar(edited)) == []
    planted = dict(edited, **{"setup.cfg": b"[tool:pytest]\naddopts = -p x\n"})
    assert grading.tampering(pytest_task, build_tar(planted)) == ["pytest configuration in setup.cfg added"]
    toml = dict(edited, **{"pyproject.toml": b"[tool.pytest.ini_options]\naddopts = '-p x'\n"})
    assert grading.tampering(pytest_task, build_tar(toml)) == ["pytest configuration in pyproject.toml added"]


def test_pytest_report_must_be_signed_for_this_test():
    key = "ab" * 32
    import hashlib
    import hmac

    def signed(doc, k=key):
        body = json.dumps(doc)
        return hmac.new(bytes.fromhex(k), body.encode(), hashlib.sha256).hexdigest() + " " + body

    good = {"test": "t.py::a", "exit": 0, "records": [["t.py::a", "call", "passed"]], "suspects": []}
    assert grading._judge_pytest("t.py::a", signed(good), key) == (True, "")
    assert not grading._judge_pytest("t.py::a", signed(good, "cd" * 32), key)[0]
    assert not grading._judge_pytest("t.py::a", signed(good) + "\n" + signed(good), key)[0]
    assert not grading._judge_pytest("t.py::b", signed(dict(good, test="t.py::b")).replace("t.py::b", "t.py::a", 1), key)[0]
    assert not grading._judge_pytest("t.py::a", signed(dict(good, exit=1)), key)[0]
    assert not grading._judge_pytest("t.py::a", signed(dict(good, records=[["t.py::a", "call", "skipped"]])), key)[0]
    assert not grading._judge_pytest("t.py::a", json.dumps(good), key)[0]


@pytest.mark.parametrize("signal_name", ["SIGKILL", "SIGSTOP"])
def test_a_correct_fix_that_signals_its_parent_is_still_graded(signal_name):
    """The first test's process kills or stops the process that started it: the next tests start
    another way and the verdicts are still right (here: the fix is right, reward 1.0)."""
    task = next(t for t in TASKS if t.name == "Slugify")
    env = SweEnv(tasks=[task], task=task)
    try:
        obs, info = env.reset(seed=0)
        solver = env.make_solver()
        solver.reset(obs, info)
        for action in solver.actions[:-1]:
            env.step(action)
        code = f"import os, signal\ntry:\n    os.kill(os.getppid(), signal.{signal_name})\nexcept OSError:\n    pass\n"
        env.step(f"<bash>{attacks.append_command(code)}</bash>")
        obs, reward, terminated, truncated, info = env.step("<done/>")
    finally:
        env.close()
    assert reward == 1.0 and info["tests_passed"] == info["tests_total"] == 3, info["test_results"]


def test_overlay_replaces_files_directories_and_links_at_or_above_its_paths():
    import io
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        def add(name, data=None, kind=tarfile.REGTYPE, link=""):
            info = tarfile.TarInfo(name)
            info.type = kind
            info.linkname = link
            info.size = len(data or b"")
            tar.addfile(info, io.BytesIO(data) if data else None)
        add("pkg/mod.py", b"code")
        add("tests", kind=tarfile.SYMTYPE, link="/etc")  # a link where the tests' directory was
        add("other/test_x.py", kind=tarfile.DIRTYPE)  # a directory where a test file was
        add("other/test_x.py/inner.py", b"x")
    merged = grading._tar_entries(grading.merge_overlay(buf.getvalue(), {"tests/test_a.py": b"A", "other/test_x.py": b"X"}))
    assert merged == {"pkg/mod.py": ("file", b"code"), "tests/test_a.py": ("file", b"A"), "other/test_x.py": ("file", b"X")}


def test_refusal_is_in_info(pytest_task):
    reward, info = play(pytest_task, "tests_conftest")
    assert reward == 0.0 and info["refused"] == "tests/conftest.py added" and info["graded"]
