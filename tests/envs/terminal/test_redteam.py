"""Fixed strategies an optimiser could learn without reading the task, played against the bundled
tasks: each must earn nothing.

* **Global actions.** One command applied to the whole workspace (make everything read-only,
  delete every empty file, strip every carriage return, ...). A task whose instruction scopes an
  action to some files holds other files the action would also change, and those must stay as
  they were: the global action fails the task.
* **Constant programs.** Every program the task asks for (or asks to fix) replaced by one that
  ignores its input: it prints a literal of the instruction (or nothing) on stdout or stderr and
  exits 0, 1 or 124; or it runs its arguments as they are, or echoes them, or copies stdin. Each
  test holds cases with different expected answers, so no constant program passes a test.
* **Isolated tests.** What the agent's program does during one test (files planted next to the
  workspace, where the next test's copy and scratch directory would go) is not seen by the next.

The constant programs are graded directly (:func:`verify_task` on the starting files plus the
programs), which is what an episode's grading does with the exported workspace.
"""

import re
import shlex

import pytest

from gem.envs.terminal.bundled import bundled_tasks
from gem.envs.terminal.env import TerminalEnv
from gem.envs.terminal.task import TerminalTask, build_tar
from gem.envs.terminal.verify import verify_task
from gem.tools.bash_tool import shell_sandbox

TASKS = {t.name: t for t in bundled_tasks()}
_PATHLIKE = re.compile(r"^[\w./-]+$")


def play(task, commands):
    env = TerminalEnv(task=task)
    try:
        env.reset(seed=0)
        for command in commands:
            env.step(f"<bash>{command}</bash>")
        obs, reward, terminated, truncated, info = env.step("<done/>")
        return obs, reward, info
    finally:
        env.close()


# ------------------------------------------------------------------ global actions
GLOBAL = {
    "read-only": "chmod -R a-w,a+r .",
    "files read-only": "find . -type f -exec chmod a-w {} +",
    "all executable": "find . -type f -exec chmod +x {} +",
    "owner-only": "find . -mindepth 1 -type d -exec chmod 700 {} +; find . -type f -exec chmod 600 {} +",
    "delete empty": "find . -type f -empty -delete",
    "strip CR": "find . -type f -exec sed -i 's/\\r$//' {} +",
    "trim trailing space": "find . -type f -exec sed -i 's/[ \\t]*$//' {} +",
    "gzip all": "gzip -r .",
}
# The tasks each strategy paid 1.0 on before their inputs held files outside the instruction's scope.
PAID_BEFORE = {"read-only": "ReadOnlyDocs", "delete empty": "DeleteTmpFiles", "strip CR": "CrlfToLf"}


@pytest.mark.parametrize("strategy", sorted(PAID_BEFORE))
def test_a_global_action_does_not_solve_a_scoped_task(strategy):
    task = TASKS[PAID_BEFORE[strategy]]
    assert play(task, [task.solution])[1] == 1.0
    obs, reward, info = play(task, [GLOBAL[strategy]])
    assert reward == 0.0 and info["graded"], obs


@pytest.mark.parametrize("name, command", [
    # everything in the workspace archived, every archive extracted: each paid 1.0 while the
    # workspace held nothing else
    ("CreateArchive", "tar -czf /tmp/all.tgz * && mv /tmp/all.tgz backup.tar.gz"),
    ("CreateArchive", "tar -czf /tmp/all.tgz . && mv /tmp/all.tgz backup.tar.gz"),
    ("ExtractArchive", "mkdir -p out && find . -name '*.tar.gz' -exec tar -xzf {} -C out \\;"),
])
def test_archiving_or_extracting_everything_does_not_solve_an_archive_task(name, command):
    obs, reward, info = play(TASKS[name], [command])
    assert reward == 0.0 and info["graded"], obs


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(n for n, t in TASKS.items() if t.files))
def test_global_actions_earn_nothing_on_every_bundled_task(name):
    for strategy, command in GLOBAL.items():
        obs, reward, info = play(TASKS[name], [command])
        assert reward == 0.0, (strategy, obs)


# ------------------------------------------------------------------ constant programs
def programs(task):
    """The programs a task's tests run: the scripts its instruction names and the scripts it
    declares mutable (those it asks to fix)."""
    found = []
    for token in re.findall(r"`([^`]+)`", task.instruction):
        for word in token.split():
            word = word[2:] if word.startswith("./") else word
            if _PATHLIKE.match(word) and word.endswith((".sh", ".py")) and word not in found:
                if word not in task.files or task.may_change(word):
                    found.append(word)
    found += [p for p in sorted(task.files) if p.endswith((".sh", ".py")) and task.may_change(p) and p not in found]
    return found


def constant_program(path, text, stream, status):
    if path.endswith(".py"):
        return f"import sys\nprint({text!r}, file=sys.{stream})\nsys.exit({status})\n"
    return f"#!/bin/bash\necho {shlex.quote(text)}{' >&2' if stream == 'stderr' else ''}\nexit {status}\n"


PASS_THROUGH = {  # ignores what the task asks: hands its input back
    "run args": ("#!/bin/bash\n\"$@\"\n", "import sys\n"),
    "echo args": ("#!/bin/bash\necho \"$@\"\n", "import sys\nprint(' '.join(sys.argv[1:]))\n"),
    "copy stdin": ("#!/bin/bash\ncat\n", "import sys\nsys.stdout.write(sys.stdin.read())\n"),
}


def grade_with(task, replacements):
    """Grade the task's starting files with ``replacements`` (path -> content) as executables."""
    files = dict(task.files)
    files.update({p: (text, 0o755) for p, text in replacements.items()})
    return verify_task(shell_sandbox(), task, build_tar(files))


def constant_strategies(task, streams=("stdout", "stderr"), statuses=(0, 1, 124)):
    literals = [""] + list(dict.fromkeys(re.findall(r"`([^`]+)`", task.instruction)))
    for text in literals:
        for stream in streams:
            for status in statuses:
                yield (text, stream, status), {p: constant_program(p, text, stream, status) for p in programs(task)}


PROGRAM_TASKS = sorted(n for n, t in TASKS.items() if programs(t))
# Each paid 0.5 before its tests mixed cases with different answers (a constant exit status, the
# usage line, the instruction's example output, the default value, TIMEOUT).
FIXED = ["PrimeCheck", "GreetScript", "EnvDefault", "TimeoutWrapper", "FixMedian"]


def test_the_program_tasks_are_found():
    assert set(FIXED) <= set(PROGRAM_TASKS)
    assert programs(TASKS["FixBackupScript"]) == ["backup.sh"] and programs(TASKS["PrimeCheck"]) == ["isprime.sh"]


# What paid before (text, stream, exit status), played by default; the whole family under -m slow.
PAID = {"PrimeCheck": [("", "stdout", 0), ("", "stdout", 1)],
        "GreetScript": [("usage: greet.sh NAME", "stderr", 1)],
        "EnvDefault": [("default", "stdout", 0)],
        "TimeoutWrapper": [("TIMEOUT", "stdout", 124)],
        "FixMedian": [("mean=2.5 median=2.5", "stdout", 0)]}


@pytest.mark.parametrize("name", FIXED)
def test_a_constant_program_passes_no_test(name):
    task = TASKS[name]
    assert grade_with(task, {}).passed == 0  # the starting files alone
    for text, stream, status in PAID[name]:
        verdict = grade_with(task, {p: constant_program(p, text, stream, status) for p in programs(task)})
        assert verdict.graded and verdict.passed == 0, (text, stream, status, verdict.summary())


@pytest.mark.slow  # waits out the slow case twice (8 s)
def test_a_program_that_runs_its_arguments_passes_no_test():
    task = TASKS["TimeoutWrapper"]  # `"$@"` is half a timeout wrapper: it never cuts a slow command
    bash, _ = PASS_THROUGH["run args"]
    verdict = grade_with(task, {"limit.sh": bash})
    assert verdict.graded and verdict.passed == 0, verdict.summary()
    assert grade_with(task, {"limit.sh": task.solution.split("<<'EOF'\n", 1)[1].rsplit("EOF", 1)[0]}).passed == 2


@pytest.mark.parametrize("name", ["PrimeCheck", "FixMedian", "RpnCalculator"])
def test_a_program_that_hands_its_input_back_passes_no_test(name):
    task = TASKS[name]
    for how, (bash, python) in PASS_THROUGH.items():
        verdict = grade_with(task, {p: python if p.endswith(".py") else bash for p in programs(task)})
        assert verdict.graded and verdict.passed == 0, (how, verdict.summary())


@pytest.mark.slow
@pytest.mark.parametrize("name", PROGRAM_TASKS)
def test_constant_and_pass_through_programs_pass_no_test_on_every_program_task(name):
    task = TASKS[name]
    for how, replacements in constant_strategies(task):
        verdict = grade_with(task, replacements)
        assert verdict.graded and verdict.passed == 0, (how, verdict.summary())
    for how, (bash, python) in PASS_THROUGH.items():  # TimeoutWrapper: `"$@"` waits out its slow case
        verdict = grade_with(task, {p: python if p.endswith(".py") else bash for p in programs(task)})
        assert verdict.graded and verdict.passed == 0, (how, verdict.summary())


# ------------------------------------------------------------------ isolated tests
ISOLATION = TerminalTask(
    "Isolation", "Write an executable prog.sh.",
    tests=("def test_a_runs():\n    assert sh('./prog.sh').returncode == 0\n\n"
           "def test_b_fresh():\n    assert not exists('planted') and not exists('sub'), listdir('.')\n"
           "    assert sh('ls -A \"$TMPDIR\"').stdout == '', 'the scratch directory holds files'\n"),
)
# prog.sh plants files where the next tests' copies and scratch directories would go (the names
# an earlier harness used), and a link to a directory of its own in place of a subdirectory.
PLANT = ("printf '#!/bin/bash\\nmkdir -p ../evil && echo x > ../evil/x\\n"
         "for d in .. ../..; do for i in 0 1 2 3; do mkdir -p $d/workspace$i $d/workspace$i.tmp; "
         "touch $d/workspace$i/planted $d/workspace$i.tmp/planted; ln -sfn \"$PWD/../evil\" $d/workspace$i/sub; done; done\\n"
         "for d in ../* ../../*; do [ -d \"$d\" ] && [ \"$d\" != ../workspace ] && touch \"$d/planted\" 2>/dev/null; done; exit 0\\n' "
         "> prog.sh && chmod +x prog.sh")


def test_what_a_test_plants_next_to_its_workspace_the_next_test_does_not_see():
    obs, reward, info = play(ISOLATION, [PLANT])
    assert reward == 1.0, obs  # before: test_b_fresh found 'planted' and 'sub' (0.5)


# ------------------------------------------------------------------ a workspace over the limit
def test_a_workspace_just_over_the_limit_pays_what_doing_nothing_pays_and_counts_as_failed():
    from gem.envs.terminal.env import ScriptedAgent
    from gem.eval.records import episode_record
    from gem.eval.summary import summarize_records
    from gem.rollout import run_episode

    task = TASKS["CountLines"]
    # each file under the 32 MiB limit (a single larger one would be left out and the rest
    # graded), together just over it: the solved task is not graded
    fill = "head -c 16777216 /dev/zero > pad1 && head -c 16777216 /dev/zero > pad2"
    records, verdicts = [], []
    for i, actions in enumerate(([f"<bash>{task.solution} && {fill}</bash>"], ["<bash>true</bash>"])):
        env = TerminalEnv(task=task)
        try:
            episode = run_episode(env, ScriptedAgent(actions), seed=0)
        finally:
            env.close()
        records.append(episode_record(episode, i))
        verdicts.append(env.last_verdict)
    over, nothing = records
    assert not verdicts[0].graded and "more than" in verdicts[0].reason and verdicts[1].graded
    assert over["total_reward"] == nothing["total_reward"] == 0.0 and not over["success"]
    summary = summarize_records([over])
    # not set apart as "ungraded": an agent cannot hide a failure by filling its workspace
    assert summary["scored"] == 1 and summary["ungraded"] == 0 and summary["success_rate"] == 0.0


# ------------------------------------------------------------------ programs left running
# greet.sh writes 1 to the reward files in the directories it is given (Harbor's /logs/verifier,
# or where GEM's harness keeps a script's logs) and makes them read-only, starts a process that
# leaves its session and keeps writing them for 3 s, then fails.
REWARD_WRITER = r'''#!/bin/bash
for d in {dirs}; do [ -d "$d" ] && echo 1 > "$d/reward.txt" && chmod 444 "$d/reward.txt"; done
( setsid bash -c 'end=$((SECONDS + 3)); while [ $SECONDS -lt $end ]; do for d in {dirs}; do
  [ -d "$d" ] && echo 1 > "$d/reward.txt" && echo "{{\"reward\": 1.0}}" > "$d/reward.json"; done; done' </dev/null >/dev/null 2>&1 & )
echo nope
'''


def test_a_process_left_running_by_a_check_cannot_write_the_reward_of_an_exported_task(tmp_path):
    from gem.envs.terminal.harbor import load_task, write_task

    task_dir = write_task(TASKS["GreetScript"], tmp_path / "tasks")
    scripted = load_task(task_dir, verifier="script")
    # (inside the grading sandbox: its /tmp is its own)
    writer = REWARD_WRITER.format(dirs="/logs/verifier /tmp/logs/verifier /tmp/*/logs/verifier /tmp/*/*/logs/verifier")
    obs, reward, info = play(scripted, [f"printf '%s' {shlex.quote(writer)} > greet.sh && chmod +x greet.sh"])
    assert reward == 0.0, obs  # before: 1.0 (the writer outlived test.sh and won the race to the file)


def test_the_exported_runner_leaves_no_process_of_the_checks_behind(tmp_path):
    import os
    import shutil
    import subprocess
    import time

    from gem.envs.terminal.harbor import write_task

    task_dir = write_task(TASKS["GreetScript"], tmp_path / "tasks")
    workspace, logs = tmp_path / "app", tmp_path / "logs"
    shutil.copytree(task_dir / "environment" / "files", workspace)
    (workspace / "greet.sh").write_text(REWARD_WRITER.format(dirs=shlex.quote(str(logs))))  # only its own
    (workspace / "greet.sh").chmod(0o755)
    env = {"PATH": os.environ["PATH"], "TEST_DIR": str(task_dir / "tests"), "LOGS_DIR": str(logs)}
    proc = subprocess.run(["bash", str(task_dir / "tests" / "test.sh")], cwd=workspace, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    time.sleep(0.5)  # a writer still running would have rewritten the files by now
    assert float((logs / "reward.txt").read_text()) == 0.0, proc.stdout
    assert "0.0" in (logs / "reward.json").read_text()


# ------------------------------------------------------------------ the declared-mutable inputs
MUTABLE_TASKS = sorted(n for n, t in TASKS.items() if any(t.may_change(p) for p in t.files))
REMOVING_IS_THE_TASK = {"DeleteTmpFiles"}  # its mutable files are exactly the ones to delete


def _only_mutable(task, how):
    paths = [shlex.quote(p) for p in sorted(task.files) if task.may_change(p)]
    return "; ".join((f": > {p}" if how == "empty" else f"rm -f {p}") for p in paths)


@pytest.mark.parametrize("name", ["ReplaceHost", "ReadOnlyDocs", "RenameExtensions", "FixMedian"])
def test_emptying_or_removing_only_the_mutable_inputs_earns_nothing(name):
    task = TASKS[name]
    for how in ("empty", "remove"):
        obs, reward, info = play(task, [_only_mutable(task, how)])
        assert reward == 0.0, (how, obs)


@pytest.mark.slow
@pytest.mark.parametrize("name", MUTABLE_TASKS)
def test_emptying_or_removing_only_the_mutable_inputs_earns_nothing_on_every_task(name):
    task = TASKS[name]
    for how in ("empty", "remove"):
        if how == "remove" and name in REMOVING_IS_THE_TASK:
            continue
        obs, reward, info = play(task, [_only_mutable(task, how)])
        assert reward == 0.0, (how, obs)


# ------------------------------------------------------------------ outputs that are inputs
def _outputs(task):
    names = []
    for token in re.findall(r"`([^`]+)`", task.instruction):
        for word in token.split():
            if (_PATHLIKE.match(word) and "." in word and not word.startswith(("-", "/", ".")) and word not in task.files
                    and not word.endswith("/") and not any(p.startswith(word + "/") for p in task.files)):
                names.append(word)
    return list(dict.fromkeys(names))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(n for n, t in TASKS.items() if t.files and _outputs(t)))
def test_outputs_copied_or_linked_from_an_input_earn_nothing(name):
    task = TASKS[name]
    for source in sorted(task.files)[:6]:
        for how in ("cp", "ln", "ln -s"):
            cmds = []
            for out in _outputs(task):
                target = ("../" * out.count("/")) + source if how == "ln -s" else source
                cmds.append(f"mkdir -p \"$(dirname {shlex.quote(out)})\" && {how} {shlex.quote(target)} {shlex.quote(out)}")
            obs, reward, info = play(task, ["; ".join(cmds)])
            assert reward == 0.0, (source, how, obs)


# ------------------------------------------------------------------ the tools a check runs
# Knowing the answer, the agent fakes the tools DeleteTmpFiles's check runs (`find ... | sort`)
# instead of deleting: shell start-up files in its workspace (the checks' HOME), executables named
# like the tools where a PATH might look, a BASH_ENV it exports in its own shell.
FAKE_FIND = "find() { printf '%s\\n' project/logs/.keep project/notes.tmp.txt project/src/__init__.py project/src/main.c; }"
FAKE_TOOLS = (
    f"for f in .bashrc .profile .bash_profile .bash_login .env; do echo {shlex.quote(FAKE_FIND)} > $f; done; "
    "mkdir -p bin .local/bin; for d in . bin .local/bin; do for t in find sort bash sh python3 awk tar gzip; do "
    "printf '#!/bin/sh\\nprintf \"%s\\\\n\" project/logs/.keep project/notes.tmp.txt project/src/__init__.py project/src/main.c\\n' > $d/$t; "
    "chmod +x $d/$t; done; done; export BASH_ENV=$HOME/.bashrc ENV=$HOME/.bashrc PATH=$HOME/bin:$PATH"
)


def test_faked_tools_and_shell_start_up_files_do_not_answer_for_a_check():
    task = TASKS["DeleteTmpFiles"]
    obs, reward, info = play(task, [FAKE_TOOLS])
    assert reward == 0.0 and info["graded"], obs
    obs, reward, info = play(task, [task.solution, FAKE_TOOLS])  # and they do not stop a solution
    assert reward == 1.0, obs


# ------------------------------------------------------------------ the agent's own leftovers
def test_what_the_agent_left_running_does_not_change_the_workspace_after_its_command():
    task = TASKS["CountLines"]
    spoil = "(setsid bash -c 'sleep 0.5; echo 999 > count.txt' </dev/null >/dev/null 2>&1 &)"
    obs, reward, info = play(task, [task.solution + "; " + spoil, "sleep 1"])
    assert reward == 1.0, obs  # killed when its command returned: count.txt is as the agent left it
    late = "echo 0 > count.txt; (setsid bash -c 'sleep 1; wc -l < data.txt > count.txt' </dev/null >/dev/null 2>&1 &)"
    obs, reward, info = play(task, [late])
    assert reward == 0.0, obs  # a solution still running when the agent submits does not count


# ------------------------------------------------------------------ inputs reached another way
@pytest.mark.parametrize("spoil, what", [
    # the directory holding the inputs moved and linked back: every input reads the same
    ('mv "my data" kept && ln -s kept "my data"', "was removed"),
    # an input hard-linked to a copy that is then changed: the input changes with it
    ('ln "my data/two.txt" alias && echo 3 > alias', "was changed"),
    # the same bytes, as a link to a copy with the same name elsewhere
    ('mkdir -p ../copy && cp "my data/two.txt" ../copy/ && rm "my data/two.txt" && ln -s ../../copy/two.txt "my data/two.txt"',
     "no longer a regular file"),
])
def test_inputs_reached_through_links_are_still_judged(spoil, what):
    task = TASKS["FixBackupScript"]
    obs, reward, info = play(task, [task.solution, spoil])
    assert reward == 0.0 and what in obs, obs


def test_the_exported_runner_fails_closed_when_it_stops_early(tmp_path):
    import os
    import shutil
    import subprocess

    from gem.envs.terminal.harbor import write_task

    task_dir = write_task(TASKS["CountLines"], tmp_path / "tasks")
    (task_dir / "tests" / "gem_inputs.tar").unlink()  # the runner stops before grading anything
    workspace, logs = tmp_path / "app", tmp_path / "logs"
    shutil.copytree(task_dir / "environment" / "files", workspace)
    logs.mkdir()
    for name, text in (("reward.txt", "1\n"), ("reward.json", '{"reward": 1.0}')):  # left there, read-only
        (logs / name).write_text(text)
        (logs / name).chmod(0o444)
    env = {"PATH": os.environ["PATH"], "TEST_DIR": str(task_dir / "tests"), "LOGS_DIR": str(logs)}
    proc = subprocess.run(["bash", str(task_dir / "tests" / "test.sh")], cwd=workspace, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0  # it did stop early
    assert float((logs / "reward.txt").read_text()) == 0.0 and '"reward": 0.0' in (logs / "reward.json").read_text()
