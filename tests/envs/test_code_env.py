"""Code environments: the bundled set, judging, test layouts, rewards, hub ids offline."""

from __future__ import annotations

import json
from collections import Counter

import pytest

import gem
from gem.envs.code_env import CodeEnv, normalize_tests, outputs_match, values_match
from gem.errors import ResourceUnavailable
from gem.utils.sandbox import Sandbox
from tests.conftest import needs_extra


@pytest.fixture(scope="module")
def sandbox():
    box = Sandbox(slots=64)
    try:
        yield box
    finally:
        box.close()


@pytest.fixture(scope="module")
def env(sandbox):
    e = gem.make("code:Bundled", sandbox=sandbox, test_timeout=5)
    yield e
    e.close()


def _rows():
    from gem import data

    return data.load("code_problems", family="code")


def _reply(code: str) -> str:
    return f"Here is my solution.\n```python\n{code}\n```"


def test_bundled_set_shape():
    rows = _rows()
    assert len(rows) >= 40
    assert Counter(r["difficulty"] for r in rows).keys() == {"easy", "medium", "hard"}
    styles = Counter(r["style"] for r in rows)
    assert styles["stdio"] >= 10 and styles["function"] >= 10
    layouts = Counter(type(json.loads(r["tests"])).__name__ for r in rows)
    assert layouts["dict"] and layouts["list"]  # both of GEM's test layouts
    for r in rows:
        assert len(normalize_tests(r["tests"])) >= 5, r["name"]


def test_every_reference_solution_passes(env):
    failures = []
    for i in range(env._num_items()):
        env.reset(idx=i)
        obs, reward, terminated, truncated, info = env.step(env.reference_solution())
        if reward != 1.0 or not info["correct"]:
            failures.append((env.item["name"], obs))
        assert terminated and truncated  # single-turn: both, as the original GEM
    assert failures == []


def test_wrong_program_stops_at_first_failure(sandbox):
    env = gem.make("code:Bundled", sandbox=sandbox, max_workers=1)
    env.reset(idx=0)
    obs, reward, terminated, _, info = env.step(_reply("print(0)"))
    assert reward == 0.0 and terminated and info["correct"] is False
    assert obs.startswith("Rejected: 0 of")
    assert info["verdicts"][0] == "wrong answer" and info["verdicts"][1:] == [None] * (info["total"] - 1)


def test_fraction_reward(sandbox):
    tests = {"inputs": ["1\n", "2\n", "3\n", "4\n"], "outputs": ["1\n", "2\n", "9\n", "9\n"]}
    rows = [{"problem": "echo", "tests": tests}]
    env = CodeEnv(dataset=rows, reward_mode="fraction", sandbox=sandbox)
    env.reset(seed=0)
    _, reward, _, _, info = env.step(_reply("print(input())"))
    assert reward == pytest.approx(0.5) and info["passed"] == 2 and not info["correct"]
    env = CodeEnv(dataset=rows, sandbox=sandbox)
    env.reset(seed=0)
    assert env.step(_reply("print(input())"))[1] == 0.0


def test_format_error_and_bad_input(env):
    for action in ("no code at all", "", "\x00\ud800", "```python\nunclosed"):
        env.reset(idx=0)
        obs, reward, terminated, _, info = env.step(action)
        assert reward == 0.0 and terminated and info["correct"] is False and info["formatted"] is False
        assert "code block" in obs
    strict = CodeEnv(dataset_name="code_problems", use_format_error_reward=True)
    strict.reset(idx=0)
    assert strict.step("no code at all")[1] == pytest.approx(-0.1)


def test_time_limit_and_runtime_error(sandbox):
    rows = [{"problem": "p", "tests": {"inputs": ["1\n"], "outputs": ["1\n"]}}]
    env = CodeEnv(dataset=rows, sandbox=sandbox, test_timeout=1)
    env.reset(seed=0)
    obs, reward, *_ = env.step(_reply("while True: pass"))
    assert reward == 0.0 and "time limit exceeded" in obs
    env.reset(seed=0)
    obs, reward, *_ = env.step(_reply("raise ValueError('boom')"))
    assert reward == 0.0 and "runtime error" in obs and "ValueError: boom" in obs
    env.reset(seed=0)
    obs, reward, *_ = env.step(_reply("import os; os.kill(os.getppid(), 9)"))
    assert reward == 0.0
    env.reset(seed=0)
    assert env.step(_reply("print(1)"))[1] == 1.0  # the sandbox survived


def test_function_call_styles(sandbox):
    rows = [
        {"problem": "add", "tests": {"fn_name": "add", "inputs": [[1, 2], [3, 4]], "outputs": [[3], 7]}},
        {
            "problem": "pair",
            "tests": json.dumps(
                [
                    {"input": "[2]", "output": "[2, 4]", "type": "function_call", "fn_name": "pair"},
                ]
            ),
        },
    ]
    env = CodeEnv(dataset=rows, sandbox=sandbox, eval=True)
    env.reset(idx=0)
    assert (
        env.step(
            _reply("class Solution:\n    def add(self, a, b):\n        print('noise')\n        return a + b")
        )[1]
        == 1.0
    )
    env.reset(idx=1)
    assert env.step(_reply("def pair(x):\n    return (x, 2 * x)"))[1] == 1.0  # a tuple is a list in JSON
    env.reset(idx=1)
    obs, reward, *_ = env.step(_reply("def other(x):\n    return x"))
    assert reward == 0.0 and "no function 'pair'" in obs


def test_output_comparison():
    assert outputs_match("1 2 \n3\n\n", "1 2\n3")
    assert outputs_match("0.3333333333\n", "0.333333")
    assert outputs_match("1.0000001", "1.0") and outputs_match("1e-7", "0.0")
    # an expected integer is matched exactly: float answers near it, or "42.0" for "42", fail
    assert not outputs_match("1.0000001", "1") and not outputs_match("42.0", "42")
    assert not outputs_match("123456789012781504", "123456789012781598")
    assert not outputs_match("0.34", "0.333333")
    assert not outputs_match("1 2", "1 2 3")
    assert not outputs_match("YES", "NO")
    assert not outputs_match("1_0", "10") and not outputs_match("inf", "1e999")
    assert values_match([1, 2.0000000001], [1, 2.0]) and not values_match(True, 1)
    assert not values_match([1, 2.0000000001], [1, 2]) and values_match(2.0, 2)
    assert not values_match(1.2345678901234568e17, 123456789012345678) and not values_match(10**400, 1.5)
    assert values_match({"a": 1}, {"a": 1}) and not values_match({"a": 1}, {"a": 2})


def test_normalize_tests_layouts_and_limit():
    a = normalize_tests({"inputs": ["x", ["1", "2"]], "outputs": ["y", "z"]})
    assert [t["kind"] for t in a] == ["stdio", "stdio"]
    b = normalize_tests(
        [
            {"input": "1", "output": "2", "testtype": "stdin"},
            {"input": "[1]", "output": "1", "type": "functional", "fn_name": "f"},
        ]
    )
    assert [t["kind"] for t in b] == ["stdio", "call"]
    many = {"inputs": [str(i) * (i + 1) for i in range(20)], "outputs": [""] * 20}
    kept = normalize_tests(many, max_tests=3)
    assert [t["input"] for t in kept] == [str(i) * (i + 1) for i in (17, 18, 19)]
    with pytest.raises(ValueError, match="outputs"):
        normalize_tests({"inputs": ["1"], "outputs": []})
    with pytest.raises(ValueError, match="fn_name"):
        normalize_tests([{"input": "1", "output": "1", "type": "function_call"}])


def test_seeded_reset_is_reproducible(env):
    assert env.reset(seed=5)[0] == env.reset(seed=5)[0]
    first = [env.reset()[0] for _ in range(3)]
    assert len(set(first)) == 3


def test_bad_arguments():
    with pytest.raises(ValueError, match="reward_mode"):
        gem.make("code:Bundled", reward_mode="half")
    with pytest.raises(ValueError, match="max_workers"):
        gem.make("code:Bundled", max_workers=0)


@pytest.mark.parametrize(
    "env_id", ["code:CodeContest", "code:Taco8k", "code:PrimeIntellect15k", "eval:CodeContest"]
)
def test_hub_ids_offline_raise_resource_unavailable(env_id, monkeypatch):
    needs_extra("code")  # datasets reads the hub
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from gem import data

    if data.hub_reachable():
        pytest.skip("the hub is reachable here")
    with pytest.raises(ResourceUnavailable, match="dataset_name"):
        gem.make(env_id)


def test_hub_id_overridden_by_local_file(tmp_path, sandbox):
    path = tmp_path / "mine.jsonl"
    path.write_text(
        json.dumps({"problem": "double it", "tests": {"inputs": ["4\n"], "outputs": ["8\n"]}}) + "\n"
    )
    env = gem.make("code:CodeContest", dataset_name=str(path), sandbox=sandbox)
    obs, _ = env.reset(seed=0)
    assert obs == "double it"
    assert env.step(_reply("print(2 * int(input()))"))[1] == 1.0


def test_copies_share_the_sandbox(env):
    env.reset(idx=3)
    twin = env.spawn(same_state=True)
    assert twin._sandbox is env._sandbox and twin.item == env.item
    assert twin.step(twin.reference_solution())[1] == 1.0
    state = env.get_state()
    env.reset(idx=4)
    env.set_state(state)
    assert env.idx == 3


# ------------------------------------------------------------------ tests that cannot be graded
class _ScriptedSandbox:
    """Answers each run from a table keyed by stdin: a SandboxResult, or an exception to raise."""

    def __init__(self, table):
        self.table = table

    def run(self, code, stdin=None, *, limits=None, **overrides):
        from gem.utils.sandbox import SandboxResult

        outcome = self.table[stdin]
        if isinstance(outcome, Exception):
            raise outcome
        stdout, reason, cpu, code_ = outcome
        return SandboxResult(stdout=stdout, stderr="", exit_code=code_, reason=reason, wall_time=1.0, cpu_time=cpu)


def _two_tests():
    return [{"problem": "p", "tests": {"inputs": ["1\n", "2\n"], "outputs": ["1\n", "2\n"]}}]


def test_a_sandbox_failure_leaves_the_answer_ungraded_not_wrong(monkeypatch):
    monkeypatch.delenv("GEM_STRICT_INFRA")  # reported in info, not raised
    from gem.utils.sandbox import SandboxError

    box = _ScriptedSandbox({"1\n": ("1\n", "ok", 0.01, 0), "2\n": SandboxError("the worker could not start")})
    env = CodeEnv(dataset=_two_tests(), sandbox=box, max_workers=1)
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(_reply("print(input())"))
    assert (reward, terminated, truncated, info["correct"], info["grading"]) == (0.0, True, True, None, "error")
    assert info["grading_error"]["component"] == "sandbox"
    assert "could not start" in info["grading_error"]["reason"] and "could not be graded" in obs
    assert info["verdicts"] == ["passed", "ungraded"]
    assert info["infra_error"]["component"] == "grader:sandbox" and "could not start" in info["infra_error"]["message"]


def test_a_wall_clock_cut_without_cpu_use_is_ungraded_but_a_cpu_timeout_is_wrong(monkeypatch):
    monkeypatch.delenv("GEM_STRICT_INFRA")  # reported in info, not raised
    wall = ("", "timeout", 0.05, -9)  # killed at the wall-clock limit after 0.05 s of CPU
    env = CodeEnv(dataset=_two_tests(), sandbox=_ScriptedSandbox({"1\n": ("1\n", "ok", 0.01, 0), "2\n": wall}),
                  max_workers=1, test_timeout=1)
    env.reset(seed=0)
    _, reward, _, _, info = env.step(_reply("print(input())"))
    assert (reward, info["correct"], info["grading"]) == (0.0, None, "timeout")
    assert "wall-clock limit of 4 s" in info["grading_error"]["reason"]
    cpu = ("", "timeout", 0.97, -24)  # used its CPU time: the program's fault
    env = CodeEnv(dataset=_two_tests(), sandbox=_ScriptedSandbox({"1\n": ("1\n", "ok", 0.01, 0), "2\n": cpu}),
                  max_workers=1, test_timeout=1)
    env.reset(seed=0)
    obs, reward, _, _, info = env.step(_reply("print(input())"))
    assert (reward, info["correct"], info["grading"]) == (0.0, False, "ok") and "time limit exceeded" in obs


def test_a_failed_test_makes_the_answer_wrong_even_if_another_is_ungraded(monkeypatch):
    monkeypatch.delenv("GEM_STRICT_INFRA")  # reported in info, not raised
    from gem.utils.sandbox import SandboxError

    box = _ScriptedSandbox({"1\n": ("7\n", "ok", 0.01, 0), "2\n": SandboxError("gone")})
    env = CodeEnv(dataset=_two_tests(), sandbox=box, max_workers=1, reward_mode="all")
    env.reset(seed=0)
    _, reward, _, _, info = env.step(_reply("print(7)"))
    assert (reward, info["correct"], info["grading"]) == (0.0, False, "ok")
    box = _ScriptedSandbox({"1\n": ("1\n", "ok", 0.01, 0), "2\n": SandboxError("gone")})
    env = CodeEnv(dataset=_two_tests(), sandbox=box, max_workers=1, reward_mode="fraction")
    env.reset(seed=0)
    _, reward, _, _, info = env.step(_reply("print(input())"))
    assert (reward, info["correct"], info["grading"]) == (0.0, None, "error")  # fraction: any ungraded test


def test_a_sleeping_program_is_cut_at_the_wall_clock_limit_and_earns_nothing(sandbox, monkeypatch):
    monkeypatch.delenv("GEM_STRICT_INFRA")  # reported in info, not raised
    env = CodeEnv(dataset=_two_tests(), sandbox=sandbox, max_workers=1, test_timeout=0.2)
    env.reset(seed=0)
    _, reward, _, _, info = env.step(_reply("import time\ntime.sleep(30)"))
    assert (reward, info["correct"], info["grading"]) == (0.0, None, "timeout")
    assert info["infra_error"]["component"] == "grader:sandbox"
