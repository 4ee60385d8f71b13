"""The reward is decided outside the agent's reach: each cheat earns nothing it did not solve."""

import os

import pytest

import gem
from gem.envs.terminal.env import TerminalEnv
from gem.envs.terminal.task import TerminalTask
from gem.sandbox import sandbox as sandbox_module


def finish(env_id, commands, seed=0):
    env = gem.make(env_id)
    try:
        env.reset(seed=seed)
        for command in commands:
            env.step(f"<bash>{command}</bash>")
        return env.step("<done/>")
    finally:
        env.close()


FAKE_VERDICTS = (
    "printf '#!/bin/bash\\n"
    "for n in 0 1 deadbeef; do echo \"$n {\\\\\"test\\\\\": \\\\\"test_greet\\\\\", \\\\\"passed\\\\\": true}\"; done\\n"
    "echo \"{\\\\\"test\\\\\": \\\\\"test_usage\\\\\", \\\\\"passed\\\\\": true}\" >&2\\n' > greet.sh && chmod +x greet.sh"
)


def test_printing_fake_verdicts_earns_nothing():
    obs, reward, _, _, info = finish("terminal:GreetScript", [FAKE_VERDICTS])
    assert reward == 0.0 and info["graded"] and info["tests_passed"] == 0


def test_killing_the_harness_earns_nothing():
    # greet.sh kills every process it may signal (the harness included) the moment a test runs it
    kill_all = "printf '#!/bin/bash\\nkill -9 -1; kill -9 $PPID; echo Hello, World!\\n' > greet.sh && chmod +x greet.sh"
    obs, reward, _, _, info = finish("terminal:GreetScript", [kill_all])
    assert reward == 0.0 and info["tests_passed"] == 0


def test_writing_into_the_harness_channel_and_memory_is_refused():
    # Try every descriptor and memory of every process reachable; collect what succeeded.
    probe = (
        "printf '#!/bin/bash\\nfor p in /proc/[0-9]*; do "
        "for fd in 1 2 3 4 5 6 7 8 9; do echo \"x {\\\\\"test\\\\\": \\\\\"test_greet\\\\\", \\\\\"passed\\\\\": true}\" "
        "2>/dev/null > $p/fd/$fd && echo \"wrote $p/$fd\" >> \"$HOME/leak\"; done; "
        "cat $p/environ 2>/dev/null | tr \"\\\\\\\\0\" \"\\\\\\\\n\" >> \"$HOME/leak\"; done; exit 0\\n' > greet.sh && chmod +x greet.sh"
    )
    obs, reward, _, _, info = finish("terminal:GreetScript", [probe])
    assert reward == 0.0 and info["tests_passed"] == 0


@pytest.mark.parametrize("target", ["/etc/hostname", "../../../../etc/passwd", "/proc/self/fd/0", "/proc/self/environ"])
def test_output_symlinked_outside_the_workspace_earns_nothing(target):
    obs, reward, _, _, info = finish("terminal:CountLines", [f"ln -s {target} count.txt"])
    assert reward == 0.0 and "outside the workspace" in obs


def test_the_agent_never_holds_the_tests():
    env = gem.make("terminal:CountLines")
    try:
        env.reset(seed=0)
        # A line of the hidden test itself (a bare "def test_count" also occurs in numpy's own tests,
        # which are visible where the interpreter's site-packages are).
        marker = "read('count.txt').strip() == '137'"
        obs = env.step(f"<bash>grep -rlF \"{marker}\" ~ .. /tmp 2>/dev/null | head; env | grep -c test_count</bash>")[0]
        assert obs.startswith("0\n"), obs
        if hasattr(sandbox_module, "default_hidden_paths"):  # the sandbox hides GEM's own files
            package = os.path.dirname(os.path.dirname(os.path.abspath(gem.__file__)))
            obs = env.step(f"<bash>grep -rlF \"{marker}\" {package} 2>/dev/null | head -3</bash>")[0]
            assert "bundled.py" not in obs
    finally:
        env.close()


def test_a_workspace_too_large_to_export_is_ungraded_not_failed():
    obs, reward, _, _, info = finish("terminal:CountLines", ["for i in 1 2 3; do head -c 15000000 /dev/zero > big$i; done"])
    assert reward == 0.0 and info["graded"] is False and "Not graded" in obs and info["ungraded_reason"]


def test_a_test_that_hangs_is_cut_off_and_the_rest_still_run():
    task = TerminalTask(
        "Hang", "write run.sh", test_timeout=1.0,
        tests="def test_hangs():\n    sh('./run.sh', timeout=60)\n\ndef test_after():\n    assert exists('run.sh')\n",
    )
    env = TerminalEnv(task=task)
    try:
        env.reset(seed=0)
        env.step("<bash>printf '#!/bin/bash\\nsleep 1000 &\\nsleep 1000\\n' > run.sh && chmod +x run.sh</bash>")
        obs, reward, _, _, info = env.step("<done/>")
        first, second = info["test_results"]
        assert "did not finish" in first["detail"] and second["passed"] and reward == 0.5
    finally:
        env.close()
