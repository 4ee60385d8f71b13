"""The Shell protocol (gem.sandbox.shell) and its two backends: conformance, the old import paths,
a SandboxShell round trip, the Docker shell's commands (without a daemon), and TerminalEnv over any Shell."""

import subprocess

import pytest

from gem.envs.terminal.bundled import bundled_tasks
from gem.envs.terminal.env import ScriptedAgent, TerminalEnv
from gem.envs.terminal.task import ContainerSpec, TerminalTask
from gem.errors import ResourceUnavailable
from gem.sandbox import shell_docker
from gem.sandbox.shell import MAX_COMMAND_CHARS, CommandResult, Shell, ShellError
from gem.sandbox.shell_docker import DockerShell
from gem.sandbox.shell_sandbox import SandboxShell


def container_task(**spec):
    return TerminalTask(name="Boxed", instruction="x", source="test", container=ContainerSpec(**spec))


# ------------------------------------------------------------------ conformance
def test_both_backends_are_shells_and_a_partial_object_is_not():
    assert isinstance(SandboxShell(), Shell)
    assert isinstance(DockerShell(image="debian:bookworm-slim"), Shell)
    from gem.envs.terminal.docker import TaskDockerShell

    assert isinstance(TaskDockerShell(container_task(image="debian:bookworm-slim")), Shell)



MEMBERS = ("command_timeout", "max_output", "started", "start", "run", "close", "export", "get_state", "set_state")


def _object_with(members):
    values = {"command_timeout": 1.0, "max_output": 100, "started": False}
    return type("Partial", (), {m: values.get(m, lambda self, *a, **k: None) for m in members})()


@pytest.mark.parametrize("missing", MEMBERS)
def test_an_object_without_any_one_member_is_not_a_shell(missing):
    assert isinstance(_object_with(MEMBERS), Shell)
    assert not isinstance(_object_with([m for m in MEMBERS if m != missing]), Shell)


def test_old_import_paths_are_the_same_objects():
    import gem.sandbox as sandbox
    import gem.sandbox.shell as shell
    import gem.sandbox.shell_sandbox as shell_sandbox
    import gem.tools.bash_tool as bash_tool
    from gem.envs.terminal import docker

    assert bash_tool.SandboxShell is shell_sandbox.SandboxShell is sandbox.SandboxShell
    assert bash_tool.CommandResult is shell.CommandResult is sandbox.CommandResult
    assert bash_tool.ShellError is shell.ShellError is sandbox.ShellError
    assert bash_tool.sanitize_command is shell.sanitize_command
    for name in ("shell_sandbox", "compiled_cell", "RUNTIME_SOURCE", "PRELOAD", "DEFAULT_COMMAND_TIMEOUT",
                 "DEFAULT_MAX_OUTPUT", "MAX_ARCHIVE_BYTES", "MAX_COMMAND_CHARS", "WORKSPACE_DIR"):
        assert getattr(bash_tool, name) is getattr(shell_sandbox, name), name
    assert docker.docker_status is shell_docker.docker_status
    assert docker.DockerShell is docker.TaskDockerShell and issubclass(docker.DockerShell, DockerShell)
    assert callable(docker.require_docker)


# ------------------------------------------------------------------ the sandboxed shell
def test_sandbox_shell_round_trip():
    sh = SandboxShell(command_timeout=5, max_output=2000)
    assert not sh.started
    with pytest.raises(ShellError, match="not started"):
        sh.run("echo hi")
    sh.start()
    try:
        assert sh.started
        hi = sh.run("echo hi")
        assert (hi.output, hi.exit_code, hi.timed_out, hi.truncated) == ("hi\n", 0, False, False)
        assert hi.render() == "hi\n[exit code 0]"
        assert sh.run("false").exit_code == 1
        assert sh.run("cd /; X=7; exit 3").exit_code == 3
        assert sh.run("echo $X").output == "7\n"  # state outlives `exit`
        assert sh.run("kill -KILL $$").exit_code == -9
        refused = sh.run("x" * (MAX_COMMAND_CHARS + 1))
        assert refused.exit_code == 126 and "refused" in refused.output
    finally:
        sh.close()
    assert not sh.started
    sh.close()  # twice is fine
    with pytest.raises(ShellError):
        sh.run("echo hi")


# ------------------------------------------------------------------ the Docker shell, no daemon needed
def test_docker_shell_is_built_without_a_daemon_and_says_when_there_is_none(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "no-docker-here"))
    sh = DockerShell(image="debian:bookworm-slim")
    assert not sh.started and sh.command_timeout == 30.0
    with pytest.raises(ResourceUnavailable, match="Docker is not available.*not installed"):
        sh.start()
    with pytest.raises(ShellError, match="not started"):
        sh.run("true")
    with pytest.raises(ShellError):
        sh.export()
    with pytest.raises(ShellError):
        sh.get_state()
    sh.close()
    with pytest.raises(ValueError, match="command_timeout"):
        DockerShell(image="x", command_timeout=0)


class FakeDocker:
    """Stands in for the ``docker`` command: records each call, answers ``exec`` with ``reply``."""

    def __init__(self, reply=(b"", b"", 0)):
        self.calls = []
        self.reply = reply

    def __call__(self, *args, timeout=600.0, input=None):
        self.calls.append(args)
        if "\x00" in "".join(args):
            raise ValueError("embedded null byte")
        out, err, code = self.reply if args[0] == "exec" else (b"", b"", 0)
        return subprocess.CompletedProcess(["docker", *args], code, out, err)


@pytest.fixture
def docker_shell(monkeypatch):
    monkeypatch.setattr(shell_docker, "docker_status", lambda timeout=10.0: None)
    sh = DockerShell(image="img:1", workdir="/work", memory_mb=512, max_processes=32, command_timeout=5,
                     max_output=300)
    sh._docker = FakeDocker()
    sh.start()
    yield sh
    sh.close()


def test_docker_shell_runs_a_container_with_its_options(docker_shell):
    run = docker_shell._docker.calls[0]
    assert run[:3] == ("run", "-d", "--rm") and run[-3:] == ("sleep", "img:1", "infinity")
    options = " ".join(run)
    assert "--network none" in options and "--memory 512m" in options and "--pids-limit 32" in options
    assert docker_shell.started and docker_shell.container in run


def test_docker_shell_commands(docker_shell):
    docker_shell._docker.reply = (b"hi\n", b"", 0)
    result = docker_shell.run("echo hi", timeout=100)
    call = docker_shell._docker.calls[-1]
    assert call[:4] == ("exec", "-w", "/work", docker_shell.container) and call[-1] == "echo hi"
    assert "5" in call  # the timeout is capped by command_timeout
    assert (result.output, result.exit_code, result.timed_out) == ("hi\n", 0, False)
    docker_shell._docker.reply = (b"", b"", 137)
    killed = docker_shell.run("sleep 99")
    assert killed.exit_code == -9 and killed.timed_out
    docker_shell._docker.reply = (b"a" * 1000, b"", 0)
    long = docker_shell.run("yes a")
    assert long.truncated and len(long.output) < 400 and "truncated" in long.output


def test_docker_shell_bad_commands_are_results_not_crashes(docker_shell):
    before = len(docker_shell._docker.calls)
    nul = docker_shell.run("echo a\x00b")
    assert nul.exit_code == 126 and "null byte" in nul.output
    assert docker_shell.run("x" * (MAX_COMMAND_CHARS + 1)).exit_code == 126
    docker_shell.run("echo \udcff")  # a lone surrogate is replaced before it reaches exec
    assert "\udcff" not in docker_shell._docker.calls[-1][-1]
    assert len(docker_shell._docker.calls) == before + 2


def test_docker_shell_close_removes_the_container(docker_shell):
    name = docker_shell.container
    docker_shell.close()
    assert docker_shell._docker.calls[-1] == ("rm", "-f", name) and not docker_shell.started


# ------------------------------------------------------------------ TerminalEnv over any Shell
class Delegating:
    """A Shell that is no SandboxShell: every protocol member forwards to one."""

    def __init__(self):
        self.inner = SandboxShell(command_timeout=10)
        self.command_timeout = self.inner.command_timeout
        self.max_output = self.inner.max_output
        self.commands = []

    @property
    def started(self):
        return self.inner.started

    def start(self, files=None):
        self.inner.start(files)

    def run(self, command, timeout=None):
        self.commands.append(command)
        return self.inner.run(command, timeout)

    def close(self):
        self.inner.close()

    def export(self, limit=1 << 20):
        return self.inner.export(limit)

    def get_state(self):
        return self.inner.get_state()

    def set_state(self, state):
        self.inner.set_state(state)


class AnyShellEnv(TerminalEnv):
    def _make_shell(self):
        return Delegating()


def test_terminal_env_runs_and_grades_on_any_shell():
    task = next(t for t in bundled_tasks() if t.name == "CountLines")
    env = AnyShellEnv(task=task)
    try:
        assert isinstance(env.shell, Shell) and not isinstance(env.shell, SandboxShell)
        env.reset(seed=0)
        shell = env.shell
        for action in ScriptedAgent([f"<bash>{task.solution}</bash>", "<done/>"]).actions:
            obs, reward, terminated, truncated, info = env.step(action)
        assert reward == 1.0 and terminated and info["success"]
        assert shell.commands == [task.solution]  # the commands went through this shell
        env.reset(seed=0)
        assert env.shell is shell  # the env keeps its shell across episodes
        obs, reward, terminated, truncated, info = env.step("<done/>")
        assert reward == 0.0 and terminated and not info["success"]
    finally:
        env.close()


def test_replacing_the_shared_shell_sandbox_at_its_old_home_replaces_it(monkeypatch):
    import gem.sandbox.shell_sandbox as shell_sandbox
    from gem.tools import bash_tool

    box = object()
    monkeypatch.setattr(bash_tool, "_shared", box)
    assert shell_sandbox.shell_sandbox() is box and bash_tool._shared is box
    monkeypatch.undo()
    assert shell_sandbox._shared is not box
