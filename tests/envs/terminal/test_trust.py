"""Rewards only for solving: fixed strategies that never solve the task earn nothing.

Each class of attack is played against GEM's own tasks (every bundled task it applies to) and
against tasks written the way users write them (Harbor directories):

* inputs emptied (or cut to their header) and the named outputs created to match: the checks
  judge against the task's pristine inputs, and inputs the task does not declare mutable must be
  unchanged;
* a module planted where a check would import it from: checks import nothing from a place the
  agent's programs can write;
* a correct solution that leaves sockets, fifos, deep trees or huge sparse files behind: the
  workspace is still exported (what can be) and graded.
"""

import re
import shlex

import pytest

from gem.envs.terminal.bundled import bundled_tasks
from gem.envs.terminal.env import TerminalEnv
from gem.envs.terminal.harbor import load_task

TASKS = bundled_tasks()
WITH_INPUTS = [t for t in TASKS if t.files]
# A spread of categories (text, data, archives, scripts, permissions) for the default run.
FAST = ["CountLines", "UniqueWords", "LineSlice", "ColumnSum", "CsvAdults", "SortScores", "ReplaceHost",
        "ExtractArchive", "GreetScript", "PrivateKey", "OrderTotals", "RotateLogs"]
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


def named_outputs(task):
    """The paths the instruction names that are not starting files: what an attacker would create
    without solving anything."""
    names = []
    for token in re.findall(r"`([^`]+)`", task.instruction):
        if not _PATHLIKE.match(token) or token in task.files or token.startswith(("-", "/")) or "." not in token:
            continue
        if any(p.startswith(token.rstrip("/") + "/") for p in task.files):
            continue  # a directory of inputs
        names.append(token)
    return names


def blind_attack(task, inputs, outputs):
    """A command that rewrites every starting file (``inputs``: ``empty`` or ``header``) and
    creates every named output (``outputs``: ``empty``, ``zero`` or ``header``)."""
    cmds = []
    for path in sorted(task.files):
        q = shlex.quote(path)
        cmds.append(f": > {q}" if inputs == "empty" else f"head -n 1 {q} > /tmp/h && cat /tmp/h > {q}")
    first = shlex.quote(sorted(task.files)[0]) if task.files else "/dev/null"
    fill = {"empty": ":", "zero": "echo 0", "header": f"cat {first}"}[outputs]
    for path in named_outputs(task):
        q = shlex.quote(path.rstrip("/"))
        if path.endswith("/"):
            cmds.append(f"mkdir -p {q}")
        else:
            cmds.append(f"mkdir -p \"$(dirname {q})\" && {fill} > {q}")
    return "; ".join(cmds) or "true"


@pytest.mark.parametrize("task", WITH_INPUTS, ids=lambda t: t.name)
def test_blind_input_rewrites_earn_nothing_on_every_bundled_task(task):
    """Inputs emptied or cut to their first line, named outputs created empty, as ``0`` or as that
    first line: nothing on every task (before grading judged against pristine inputs, a fifth of
    the tasks paid 1.0 for one of these)."""
    for inputs, outputs in (("empty", "empty"), ("empty", "zero"), ("header", "empty"), ("header", "header")):
        obs, reward, info = play(task, [blind_attack(task, inputs, outputs)])
        assert reward == 0.0 and info["graded"] and info["tests_passed"] == 0, (inputs, outputs, obs)


def test_the_failure_names_the_changed_input():
    task = next(t for t in TASKS if t.name == "UniqueWords")
    obs, reward, info = play(task, [": > words.txt; : > unique.txt"])
    assert reward == 0.0 and "words.txt was changed" in info["test_results"][0]["detail"]
    # a removed input, an input replaced by a link to a copy, a changed mode: each counted
    for cmd, what in (("sort -u words.txt > unique.txt; rm words.txt", "words.txt was removed"),
                      ("sort -u words.txt > unique.txt; cp words.txt w2; rm words.txt; ln -s w2 words.txt",
                       "no longer a regular file"),
                      ("sort -u words.txt > unique.txt; chmod 600 words.txt", "mode changed")):
        obs, reward, info = play(task, [cmd])
        assert reward == 0.0 and what in info["test_results"][0]["detail"], (cmd, obs)


def test_declared_mutable_inputs_may_change_and_others_may_not():
    task = next(t for t in TASKS if t.name == "TrimTrailingSpace")
    assert task.may_change("src/a.py") and not task.may_change("src/c.txt")
    solved = play(task, [task.solution])[1]
    # the reference solution plus a change to a file the task says to keep
    spoiled = play(task, [task.solution + " && echo extra >> src/c.txt"])
    assert solved == 1.0 and spoiled[1] == 0.0 and "src/c.txt was changed" in spoiled[0]


# ------------------------------------------------------------------ tasks written by users
def _write(path, text, mode=0o644):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)


def _harbor_task(root, tests, *, checks=True, mutable=None, files=None):
    _write(root / "task.toml", 'version = "1.0"\n[verifier]\ntimeout_sec = 20.0\n'
           + (f"[gem]\nmutable = {mutable!r}\n".replace("'", '"') if mutable is not None else ""))
    _write(root / "instruction.md", "Write the answer to out.txt.\n")
    for rel, text in (files or {"data.txt": "3\n4\n"}).items():
        _write(root / "environment" / rel, text)
    if checks:
        _write(root / "tests" / "gem_checks.py", tests)
    else:
        _write(root / "tests" / "test.sh", tests, 0o755)
    return load_task(root)


# A check that runs the agent's program, then imports a module the harness has not loaded yet.
PLANTED_CHECKS = """
def test_a_program_runs():
    sh('./prog.sh')

def test_b_answer():
    import {module}
    assert {module}.{probe}(read('out.txt')) == 'answer'
"""
PROBES = {"difflib": "SequenceMatcher", "csv": "Sniffer"}  # stdlib modules the harness has not imported


@pytest.mark.parametrize("module", sorted(PROBES))
def test_a_module_planted_by_the_agents_program_is_not_imported_by_a_later_check(tmp_path, module):
    task = _harbor_task(tmp_path / "planted", PLANTED_CHECKS.format(module=module, probe=PROBES[module]))
    # prog.sh writes a stand-in for the module into every directory it can reach near the workspace
    fake = f"def {PROBES[module]}(*args, **kwargs):\n    return 'answer'\n"
    plant = (f"printf '%s' {shlex.quote(fake)} > {module}.py; "
             f"printf '#!/bin/bash\\nfor d in .. ../.. \"$TMPDIR\" /tmp; do cp -f {module}.py \"$d/\" 2>/dev/null; done; exit 0\\n' "
             f"> prog.sh; chmod +x prog.sh; echo wrong > out.txt")
    obs, reward, info = play(task, [plant])
    results = {r["test"]: r for r in info["test_results"]}
    assert results["test_a_program_runs"]["passed"], obs
    assert not results["test_b_answer"]["passed"] and reward == 0.5, obs


def test_a_module_planted_in_the_workspace_is_not_imported_by_a_test_script(tmp_path):
    # test.sh checks the answer with Python started from the workspace (as `python3 -c` puts the
    # current directory first on its path, the planted json.py would answer for the real one)
    script = ("python3 -c \"import json, sys; sys.exit(0 if json.load(open('out.json')) == {'answer': 42} else 1)\" "
              "&& echo 1 > \"$REWARD_FILE\" || echo 0 > \"$REWARD_FILE\"\n")
    task = _harbor_task(tmp_path / "script", script, checks=False)
    assert task.kind == "script"
    plant = "printf 'def load(f):\\n    return {\"answer\": 42}\\n' > json.py; echo '{}' > out.json"
    obs, reward, info = play(task, [plant])
    assert reward == 0.0, obs
    solved = play(task, ["echo '{\"answer\": 42}' > out.json"])[1]
    assert solved == 1.0


def test_harbor_tasks_keep_their_inputs_unless_they_declare_them_mutable(tmp_path):
    checks = "def test_sum():\n    assert read('out.txt').strip() == str(sum(int(x) for x in lines('data.txt')))\n"
    strict = _harbor_task(tmp_path / "strict", checks)
    assert strict.mutable == ()
    blind = "printf '0\\n' > data.txt; echo 0 > out.txt"  # an input rewritten to match the output
    assert play(strict, [blind])[1] == 0.0
    assert play(strict, ["echo 7 > out.txt"])[1] == 1.0
    loose = _harbor_task(tmp_path / "loose", checks, mutable=["data.txt"])
    assert loose.mutable == ("data.txt",) and play(loose, [blind])[1] == 1.0  # the author allowed it
    script = ("[ \"$(cat out.txt)\" = 7 ] && echo 1 > \"$REWARD_FILE\" || echo 0 > \"$REWARD_FILE\"\n")
    scripted = _harbor_task(tmp_path / "scripted", script, checks=False)
    assert play(scripted, ["echo 7 > out.txt"])[1] == 1.0
    assert play(scripted, ["echo 7 > out.txt; rm data.txt"])[1] == 0.0  # test.sh tasks too


# ------------------------------------------------------------------ special files
SPECIAL = ("cd \"$HOME\"; python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.bind('leftover.sock')\"; "
           "mkfifo leftover.fifo; mkdir -p run && python3 -c \"import socket; socket.socket(socket.AF_UNIX).bind('run/s')\"")


@pytest.mark.parametrize("task", [t for t in TASKS if t.name in FAST], ids=lambda t: t.name)
def test_a_correct_solution_with_leftover_sockets_and_fifos_scores_1(task):
    obs, reward, info = play(task, [task.solution, SPECIAL])
    assert reward == 1.0 and info["graded"], obs
    skipped = " ".join(info["export_skipped"])
    assert "leftover.sock (a socket)" in skipped and "leftover.fifo (a fifo)" in skipped and "run/s (a socket)" in skipped
    assert "Not exported to the tests" in obs


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.name)
def test_every_bundled_solution_with_leftover_special_files_scores_1(task):
    obs, reward, info = play(task, [task.solution, SPECIAL])
    assert reward == 1.0 and info["graded"], obs


def test_deep_trees_and_huge_sparse_files_are_skipped_and_the_rest_graded():
    task = next(t for t in TASKS if t.name == "CountLines")
    deep = "d=deep; for i in $(seq 130); do d=$d/d; done; mkdir -p $d && touch $d/leaf"
    sparse = "truncate -s 40M sparse.bin"  # over the 32 MiB export limit, holding no data
    obs, reward, info = play(task, [task.solution, deep, sparse])
    assert reward == 1.0 and info["graded"], obs
    skipped = " ".join(info["export_skipped"])
    assert "nested deeper than" in skipped and "sparse.bin" in skipped and "larger than" in skipped


def test_what_setup_made_is_a_pristine_input_too():
    from gem.envs.terminal.task import TerminalTask

    task = TerminalTask(
        "SetupMade", "Copy made.txt to out.txt.", files={"seed.txt": "s\n"}, setup="echo generated > made.txt",
        tests="def test_copy():\n    assert read('out.txt') == original('made.txt') == 'generated\\n'\n\n"
              "def test_not_an_input():\n    original('out.txt')\n",
        solution="cp made.txt out.txt")
    obs, reward, info = play(task, [task.solution])
    assert reward == 0.5 and "not one of the task's starting files" in info["test_results"][1]["detail"], obs
    obs, reward, info = play(task, ["echo forged > made.txt; cp made.txt out.txt"])
    assert reward == 0.0 and "made.txt was changed" in obs


@pytest.mark.parametrize("name, spoil", [
    ("ReadOnlyDocs", "chmod u+w docs/a.md && : > docs/a.md && chmod a-w docs/a.md"),
    ("PrivateKey", ": > keys/secret.key"),
    ("MakeExecutable", "echo '#!/bin/bash' > bin/clean.sh"),
    ("RenameExtensions", ": > docs/guide.md"),
    ("GzipLogs", "echo x | gzip > logs/app.log.gz"),
])
def test_mutable_inputs_are_still_judged_against_their_originals(name, spoil):
    # the task allows changing these files in one way (mode, name, compression), not emptying them
    task = next(t for t in TASKS if t.name == name)
    assert play(task, [task.solution])[1] == 1.0
    obs, reward, info = play(task, [task.solution, "cd ~ && " + spoil])
    assert reward < 1.0, obs
