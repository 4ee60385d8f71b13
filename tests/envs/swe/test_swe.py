"""SweEnv: the editor, the bundled repositories (gold 1.0, no fix 0), cheats, and SWE-bench instances."""

import concurrent.futures
import json
import subprocess

import pytest

import gem
from gem.agents.base import run_episode
from gem.agents.simple import SolverAgent
from gem.envs.swe.bundled import bundled_tasks
from gem.envs.swe.env import SweEnv
from gem.envs.swe.loader import load_instances
from gem.envs.terminal.env import ScriptedAgent
from gem.tools.bash_tool import SandboxShell
from gem.tools.editor_tool import EditorTool, parse_editor_tag

TASKS = bundled_tasks()


def play(env, actions, seed=0):
    obs, info = env.reset(seed=seed)
    for action in actions:
        obs, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return obs, reward, info
    raise AssertionError("the episode did not end")


def run_gold_and_none(task):
    env = SweEnv(task=task)
    try:
        gold = run_episode(env, SolverAgent(env), seed=0).rewards[-1]
        none = run_episode(env, ScriptedAgent([]), seed=0).rewards[-1]
        passed = {r["test"] for r in env.last_verdict.results if r["passed"]}
        return task.name, gold, none, passed
    finally:
        env.close()


def test_catalogue_and_ids():
    from gem.envs.registration import spec

    assert len(TASKS) >= 20
    for task in TASKS:
        assert spec(f"swe:{task.name}").kwargs == {"task": task.name}
        assert task.fail_to_pass and set(task.fail_to_pass).isdisjoint(task.pass_to_pass)
        hidden = next(iter(task.hidden_files))
        assert task.files[hidden] != task.hidden_files[hidden]  # the agent sees only the old test file


def test_gold_fix_resolves_every_task_and_no_fix_resolves_none():
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        results = list(pool.map(run_gold_and_none, TASKS))
    assert [(n, g) for n, g, *_ in results if g != 1.0] == []
    for (name, _, none, passed), task in zip(results, TASKS):
        assert none == 0.0, name
        assert not passed & set(task.fail_to_pass), name  # the hidden tests really fail before the fix ...
        assert passed >= set(task.pass_to_pass), name  # ... and the old ones pass


@pytest.fixture
def env():
    e = gem.make("swe:Slugify")
    yield e
    e.close()


def test_editing_through_tags_resolves_the_issue(env):
    obs, info = env.reset(seed=0)
    assert "hello-world" in obs and "<str_replace" in obs and {"view", "str_replace", "bash"} <= {
        s["function"]["name"] for s in info["tools"]}
    view = env.step('<view path="textkit/slug.py"/>')[0]
    assert "     6\t    text = re.sub(r'[^a-z0-9]', '-', text)" in view
    edit = env.step("<str_replace path=\"textkit/slug.py\">\n<old>r'[^a-z0-9]'</old><new>r'[^a-z0-9]+'</new></str_replace>")[0]
    assert edit.startswith("Edited textkit/slug.py")
    obs, reward, terminated, truncated, info = env.step("<done/>")
    assert reward == 1.0 and info["resolved"] and info["fail_to_pass"] == {"passed": 1, "total": 1}


def test_a_fix_that_breaks_passing_tests_is_not_resolved(env):
    # collapses runs but stops stripping dashes: FAIL_TO_PASS passes, PASS_TO_PASS breaks
    fix = json.dumps({"name": "str_replace", "arguments": {
        "path": "textkit/slug.py", "old_str": "text = re.sub(r'[^a-z0-9]', '-', text)\n    return text.strip('-')",
        "new_str": "return re.sub(r'[^a-z0-9]+', '-', text).strip('-') if text.strip() != '-a-' else '-a-'"}})
    obs, reward, info = play(env, [fix, "<done/>"])
    assert reward == 0.0 and not info["resolved"] and info["pass_to_pass"]["passed"] < info["pass_to_pass"]["total"]


@pytest.mark.parametrize("cheat", [
    "cat > conftest.py <<'EOF'\nimport pytest\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
    "    outcome = yield\n    outcome.get_result().outcome = 'passed'\nEOF",
    "printf 'def raises(*a, **k):\\n    return True\\nmain = lambda *a: 0\\n' > pytest.py",
    "printf 'import os\\nos._exit(0)\\n' > sitecustomize.py && cp sitecustomize.py usercustomize.py",
    "printf 'def test_collapse():\\n    pass\\n' > tests/test_slug.py",  # the hidden file replaces it
    "rm -rf tests && mkdir tests && ln -s /dev/null tests/test_slug.py",
])
def test_cheats_earn_nothing(env, cheat):
    obs, reward, info = play(env, [f"<bash>{cheat}</bash>", "<done/>"])
    assert reward == 0.0 and info["fail_to_pass"]["passed"] == 0


def test_editor_errors_are_observations(env):
    env.reset(seed=0)
    assert "occurs 0 times" in env.step('<str_replace path="textkit/slug.py"><old>nope</old><new>x</new></str_replace>')[0]
    assert "occurs 6 times" in env.step(
        '<str_replace path="textkit/slug.py"><old>text</old><new>x</new></str_replace>')[0]
    assert "outside the workspace" in env.step('<view path="../../etc/passwd"/>')[0]
    assert "needs <old>" in env.step("<str_replace path='a.py'>oops</str_replace>")[0]
    assert "not closed" in env.step('<view path="a.py"' + "<view " * 10000)[0]
    assert "No such file" in env.step('<view path="missing.py"/>')[0]
    obs, reward, *_ = env.step('{"name": "view", "arguments": {"path": 3}}')
    assert "path" in obs and reward == 0.0


def test_editor_tool_on_its_own():
    shell = SandboxShell(command_timeout=5)
    tool = EditorTool(shell)
    try:
        assert tool.execute_action("plain text")[0] is False
        ok = tool.execute_action('<create path="pkg/m.py">\na = 1\nb = 2\n</create>')
        assert ok[0] and not ok[1] and "Created pkg/m.py" in ok[2]
        assert "     2\tb = 2" in tool.execute_action('<view path="pkg/m.py" range="2,2"/>')[2]
        assert "pkg/m.py" in tool.execute_action('<view path="."/>')[2]
        inserted = tool.execute_action('<insert path="pkg/m.py" line="0">import os</insert>')[2]
        assert "     1\timport os" in inserted
        call = json.dumps({"name": "str_replace_editor", "arguments": {"command": "view", "path": "pkg/m.py"}})
        assert "     3\tb = 2" in tool.execute_action(call)[2]
        assert parse_editor_tag('<view path="a.py" range="x"/>')[0]["error"].startswith("range")
    finally:
        shell.close()


def test_swebench_instance_gold_patch_resolves_and_no_patch_does_not(swebench_instance):
    pytest.importorskip("pytest")
    task, = load_instances(swebench_instance.path, repo_paths=swebench_instance.repo_paths)
    assert task.name == "local__calc-1" and task.runner == "pytest" and "tests/test_core.py" in task.hidden_files
    env = SweEnv(tasks=[task])
    try:
        obs, info = env.reset(seed=0)
        assert "add() subtracts." in obs
        listing = env.step("<bash>ls -a; grep -c test_add tests/test_core.py</bash>")[0]
        assert ".git" not in listing and listing.split("\n")[-3] == "0"  # no history, no hidden tests
        solver = env.make_solver()
        solver.reset(obs, info)
        for _ in range(3):
            obs, reward, terminated, truncated, info = env.step(solver.act(obs, info))
            if terminated:
                break
        assert reward == 1.0 and info["fail_to_pass"] == {"passed": 2, "total": 2}
        _, none, info = play(env, ["<done/>"])
        assert none == 0.0 and info["pass_to_pass"] == {"passed": 1, "total": 1}
    finally:
        env.close()


def test_loader_errors_are_clear(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_instances(str(tmp_path / "none.jsonl"))
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"instance_id": "x"}) + "\n")
    with pytest.raises(KeyError, match="base_commit"):
        load_instances(str(bad))
