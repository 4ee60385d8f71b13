"""Harbor / Terminal-Bench task directories: loading, writing, sandbox runs and the container path."""

import concurrent.futures
import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from gem.envs.terminal.bundled import bundled_tasks
from gem.envs.terminal.env import TerminalEnv
from gem.envs.terminal.harbor import load_task, load_tasks, write_task
from gem.envs.terminal.verify import protected_inputs
from gem.errors import ResourceUnavailable
from tests.conftest import needs_extra


def _write(path: Path, text: str, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)


def _finish(env, commands):
    env.reset(seed=0)
    for command in commands:
        env.step(f"<bash>{command}</bash>")
    return env.step("<done/>")


def test_every_bundled_task_roundtrips_through_the_harbor_layout(tmp_path):
    for task in bundled_tasks():
        write_task(task, tmp_path)
    loaded = {t.name: t for t in load_tasks(tmp_path)}
    assert sorted(loaded) == sorted(t.name for t in bundled_tasks())
    for task in bundled_tasks():
        twin = loaded[task.name]
        assert (twin.instruction.strip(), twin.tests, twin.difficulty, twin.kind, twin.mutable, twin.test_timeout) == (
            task.instruction.strip(), task.tests, task.difficulty, task.kind, task.mutable, task.test_timeout)
        assert twin.container is None and set(twin.files) == set(task.files)
        assert (tmp_path / task.name / "environment" / "Dockerfile").is_file()
        assert (tmp_path / task.name / "tests" / "test.sh").stat().st_mode & 0o111
    assert (tmp_path / "PrivateKey" / "environment" / "files" / "keys" / "secret.key").stat().st_mode & 0o777 == 0o644
    scripted = load_task(tmp_path / "CountLines", verifier="script")
    assert scripted.kind == "script" and "test.sh" in scripted.tests and scripted.mutable == ()
    with pytest.raises(ValueError, match="verifier must be one of"):
        load_task(tmp_path / "CountLines", verifier="pytest")


def _rewards(task):
    """(doing nothing, the reference solution) on ``task``."""
    env = TerminalEnv(task=task)
    try:
        nothing = _finish(env, [])[1]
        solved = _finish(env, [task.solution])[1]
        return nothing, solved
    finally:
        env.close()


def _roundtrip(name, root):
    """The rewards of the original task and of its export loaded back, checks and test.sh alike."""
    task = next(t for t in bundled_tasks() if t.name == name)
    path = write_task(task, root)
    return name, {"original": _rewards(task), "checks": _rewards(load_task(path)),
                  "test.sh": _rewards(load_task(path, verifier="script"))}


ROUNDTRIP_SAMPLE = ["CountLines", "ExtractArchive", "PrivateKey", "FixBackupScript", "OrderTotals", "BuildOrder"]


def test_exported_tasks_give_the_same_rewards_loaded_back(tmp_path):
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        results = dict(pool.map(lambda n: _roundtrip(n, tmp_path), ROUNDTRIP_SAMPLE))
    assert results == {n: {"original": (0.0, 1.0), "checks": (0.0, 1.0), "test.sh": (0.0, 1.0)} for n in ROUNDTRIP_SAMPLE}


@pytest.mark.slow
def test_all_exported_tasks_give_the_same_rewards_loaded_back(tmp_path):
    names = [t.name for t in bundled_tasks()]
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        results = dict(pool.map(lambda n: _roundtrip(n, tmp_path), names))
    bad = {n: r for n, r in results.items() if set(r.values()) != {(0.0, 1.0)}}
    assert len(results) == len(bundled_tasks()) and not bad, bad


def _harbor_verify(task_dir, workspace, logs):
    """Run the exported tests/test.sh as Harbor does: in the workspace, tests and logs beside it."""
    env = {"PATH": os.environ["PATH"], "TEST_DIR": str(task_dir / "tests"), "LOGS_DIR": str(logs)}
    proc = subprocess.run(["bash", str(task_dir / "tests" / "test.sh")], cwd=workspace, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return float((logs / "reward.txt").read_text()), json.loads((logs / "reward.json").read_text()), proc.stdout


@pytest.mark.parametrize("name", ["CountLines", "FixBackupScript", "PrivateKey", "GreetScript"])
def test_the_exported_test_script_writes_harbors_reward_files(tmp_path, name):
    task = next(t for t in bundled_tasks() if t.name == name)
    task_dir = write_task(task, tmp_path / "tasks")
    runs = {}
    kept = protected_inputs(task)
    tamper = f"\necho tampered >> {shlex.quote(kept[0])}\n" if kept else ""
    for label, script in (("nothing", ""), ("solved", task.solution), ("input changed", task.solution + tamper)):
        workspace = tmp_path / label / "app"
        shutil.copytree(task_dir / "environment" / "files", workspace)
        subprocess.run(["bash", "-c", script], cwd=workspace, check=False, capture_output=True, timeout=60)
        runs[label] = _harbor_verify(task_dir, workspace, tmp_path / label / "logs")
    reward, metrics, out = runs["solved"]
    assert reward == 1.0 and metrics["reward"] == 1.0, out
    assert metrics["tests_total"] == len(task.test_names) == metrics["tests_passed"]
    assert all(metrics[t] == 1.0 for t in task.test_names)
    assert all(isinstance(v, float) for v in metrics.values())  # Harbor reads a dict of numbers
    assert runs["nothing"][0] == 0.0 and runs["nothing"][1]["reward"] == 0.0
    if kept:  # a correct output beside a changed input the task does not allow changing: nothing
        assert runs["input changed"][0] == 0.0 and f"{kept[0]} was changed" in runs["input changed"][2]


def test_a_sandbox_task_with_a_test_script(tmp_path):
    root = tmp_path / "hello-file"
    _write(root / "task.toml", 'version = "1.0"\n[metadata]\ndifficulty = "easy"\n[verifier]\ntimeout_sec = 20.0\n')
    _write(root / "instruction.md", "Create hello.txt containing the word hello.\n")
    _write(root / "environment" / "seed.txt", "x\n")
    _write(root / "tests" / "test.sh",
           'if [ "$(cat hello.txt)" = hello ]; then echo 1 > "$REWARD_FILE"; else echo 0 > "$REWARD_FILE"; fi\n', 0o755)
    _write(root / "solution" / "solve.sh", "echo hello > hello.txt\n", 0o755)
    task = load_task(root)
    assert task.kind == "script" and task.container is None and "seed.txt" in task.files
    env = TerminalEnv(tasks=str(root))
    try:
        assert _finish(env, [])[1] == 0.0
        obs, reward, terminated, _, info = _finish(env, [task.solution])
        assert reward == 1.0 and terminated and info["test_results"][0]["test"] == "test.sh"
    finally:
        env.close()


def test_a_container_task_without_docker_says_so(tmp_path, monkeypatch):
    root = tmp_path / "needs-image"
    _write(root / "task.toml", 'version = "1.0"\n')
    _write(root / "instruction.md", "Create /app/x.\n")
    _write(root / "environment" / "Dockerfile", "FROM debian:bookworm-slim\nWORKDIR /app\n")
    _write(root / "tests" / "test.sh", "test -f /app/x && echo 1 > /logs/verifier/reward.txt\n")
    task = load_task(root)
    assert task.container is not None and task.container.workdir == "/app" and task.files == {}
    monkeypatch.setenv("PATH", str(tmp_path / "no-docker-here"))
    env = TerminalEnv(tasks=str(root))
    with pytest.raises(ResourceUnavailable, match="needs its own container.*docker"):
        env.reset(seed=0)


def test_the_terminal_bench_layout_loads_as_a_container_task(tmp_path):
    needs_extra("terminal")  # task.yaml is read with pyyaml
    root = tmp_path / "tb-task"
    _write(root / "task.yaml", "instruction: |\n  Fix the server.\ndifficulty: medium\ncategory: system\n")
    _write(root / "Dockerfile", "FROM python:3.12-slim\n")
    _write(root / "run-tests.sh", "pytest $TEST_DIR/test_outputs.py\n")
    _write(root / "solution.sh", "echo fixed\n")
    _write(root / "tests" / "test_outputs.py", "def test_x():\n    assert True\n")
    task = load_task(root)
    assert task.instruction.strip() == "Fix the server." and task.difficulty == "medium"
    assert task.container.test_script == "run-tests.sh" and "test.sh" in task.tests and task.solution == "echo fixed\n"


def test_bad_task_directories_are_named(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_tasks(tmp_path / "missing")
    with pytest.raises(ValueError, match="no task directories"):
        load_tasks(tmp_path)
    _write(tmp_path / "t" / "task.toml", 'version = "1.0"\n')
    _write(tmp_path / "t" / "instruction.md", "x\n")
    with pytest.raises(ValueError, match="test.sh"):
        load_task(tmp_path / "t")


def test_export_and_check_commands(tmp_path, capsys):
    from gem.envs.terminal.harbor import main

    assert main(["export", str(tmp_path)]) == 0
    assert main(["check", str(tmp_path)]) == 0
    listing = capsys.readouterr().out
    assert "CountLines\teasy\tsandbox, tests: checks" in listing and len(listing.splitlines()) == len(bundled_tasks()) + 1


# ------------------------------------------------------------ untrusted task directories
def _sandbox_task(root: Path, test_sh: str = "echo 1 > \"$REWARD_FILE\"\n", toml: str = "") -> Path:
    _write(root / "task.toml", 'version = "1.0"\n' + toml)
    _write(root / "instruction.md", "Do the thing.\n")
    _write(root / "environment" / "seed.txt", "x\n")
    _write(root / "tests" / "test.sh", test_sh, 0o755)
    _write(root / "solution" / "solve.sh", "true\n", 0o755)
    return root


def _link(path: Path, target: Path) -> None:
    if path.exists() or path.is_symlink():
        shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target)


@pytest.mark.parametrize("where", ["instruction.md", "task.toml", "tests", "tests/test.sh", "solution/solve.sh",
                                   "environment", "environment/seed.txt", "environment/sub"])
def test_a_symlink_out_of_the_task_is_refused(tmp_path, where):
    host = tmp_path / "host"
    _write(host / "secret.txt", "the host's secret\n")
    _write(host / "test.sh", "echo 1 > \"$REWARD_FILE\"\n", 0o755)
    _write(host / "task.toml", 'version = "1.0"\n')
    root = _sandbox_task(tmp_path / "task")
    name = Path(where).name
    if name in ("tests", "environment", "sub"):
        target = host
    else:
        target = host / (name if name in ("test.sh", "task.toml") else "secret.txt")
    _link(root / where, target)
    with pytest.raises(ValueError, match="leads out of the task directory"):
        load_task(root)


def test_a_symlink_within_the_task_is_read_for_single_files_and_left_out_of_trees(tmp_path):
    root = _sandbox_task(tmp_path / "task")
    _write(root / "docs" / "instruction.md", "Linked instruction.\n")
    _link(root / "instruction.md", Path("docs/instruction.md"))
    _link(root / "environment" / "alias.txt", Path("seed.txt"))
    task = load_task(root)
    assert task.instruction == "Linked instruction.\n" and set(task.files) == {"seed.txt"}


def test_files_are_capped_in_size_before_they_are_read(tmp_path, monkeypatch):
    from gem.envs.terminal import harbor

    root = _sandbox_task(tmp_path / "task")
    with open(root / "environment" / "big.bin", "wb") as fh:  # 300 MB, sparse: nothing is written
        fh.truncate(300 * 1024 * 1024)
    with pytest.raises(ValueError, match=r"big.bin holds 314572800 bytes; a task file may hold at most"):
        load_task(root)
    (root / "environment" / "big.bin").unlink()
    _write(root / "instruction.md", "x" * (harbor.MAX_TEXT_BYTES + 1))
    with pytest.raises(ValueError, match="instruction.md holds"):
        load_task(root)
    _write(root / "instruction.md", "Do the thing.\n")
    for k in range(3):
        _write(root / "environment" / f"part{k}.txt", "y" * 600)
    monkeypatch.setattr(harbor, "MAX_TASK_BYTES", 1500)
    with pytest.raises(ValueError, match="more than 1500 bytes in all"):
        load_task(root)


def test_a_fifo_is_not_read(tmp_path):
    root = _sandbox_task(tmp_path / "task")
    (root / "instruction.md").unlink()
    os.mkfifo(root / "instruction.md")  # reading it would block for ever
    with pytest.raises(ValueError, match="not a regular file"):
        load_task(root)


@pytest.mark.parametrize("toml, key", [
    ("[agent]\ntimeout_sec = inf\n", "timeout_sec"), ("[agent]\ntimeout_sec = 1e12\n", "timeout_sec"),
    ("[agent]\ntimeout_sec = nan\n", "timeout_sec"), ("[agent]\ntimeout_sec = 0\n", "timeout_sec"),
    ("[agent]\ntimeout_sec = \"60\"\n", "timeout_sec"), ("[verifier]\ntimeout_sec = -inf\n", "timeout_sec"),
    ("[verifier]\ntimeout_sec = [1]\n", "timeout_sec"), ("[gem]\nmax_turns = 1000000000000\n", "max_turns"),
    ("[gem]\nmax_turns = 0\n", "max_turns"), ("[gem]\nmax_turns = 1e3\n", "max_turns"),
    ("[gem]\nmax_turns = true\n", "max_turns"), ("[gem]\nsandbox = \"yes\"\n", "sandbox"),
    ("agent = 5\n", r"\[agent\] must be a table"), ("[agent\n", "not valid TOML"),
])
def test_task_toml_numbers_are_range_checked(tmp_path, toml, key):
    root = _sandbox_task(tmp_path / "task", toml=toml)
    with pytest.raises(ValueError, match=key):
        load_task(root)


def test_terminal_bench_numbers_are_range_checked(tmp_path):
    needs_extra("terminal")
    root = tmp_path / "tb-task"
    _write(root / "task.yaml", "instruction: x\nmax_agent_timeout_sec: .inf\n")
    _write(root / "run-tests.sh", "true\n")
    with pytest.raises(ValueError, match="max_agent_timeout_sec"):
        load_task(root)
    _write(root / "task.yaml", "- not\n- a mapping\n")
    with pytest.raises(ValueError, match="must hold a mapping"):
        load_task(root)


@pytest.mark.parametrize("write", ['echo inf > "$REWARD_FILE"', 'echo nan > "$REWARD_FILE"',
                                   'echo \'{"reward": 1e999}\' > "$LOGS_DIR/reward.json"'])
def test_a_reward_file_without_a_finite_number_is_ungraded_never_paid(tmp_path, write):
    root = _sandbox_task(tmp_path / "task", test_sh=write + "\n")
    env = TerminalEnv(tasks=str(root))
    try:
        _, reward, terminated, _, info = _finish(env, [])
    finally:
        env.close()
    assert reward == 0.0 and terminated and info["success"] is False
    assert info["graded"] is False and "not a finite number" in info["ungraded_reason"]
