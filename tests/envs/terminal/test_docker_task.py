"""A container task's shell (gem.envs.terminal.docker.TaskDockerShell) against a stand-in for the
`docker` command: the container it starts, and how Harbor's grading reads the verifier's result."""

import subprocess

import pytest

from gem.envs.terminal import docker
from gem.envs.terminal.task import ContainerSpec, TerminalTask
from gem.sandbox import shell_docker
from gem.sandbox.shell import ShellError


class ScriptedDocker:
    """Records each `docker` call; the test script exits ``test_code``, the reward file holds ``reward``."""

    def __init__(self, test_code=0, reward=b""):
        self.calls = []
        self.test_code = test_code
        self.reward = reward

    def __call__(self, *args, timeout=600.0, input=None):
        self.calls.append(args)
        out, code = b"", 0
        if args[0] == "exec" and "/logs/verifier/reward.txt" in args[-1]:
            out = self.reward
        elif args[0] == "exec" and "TEST_DIR=/tests" in args:
            out, code = b"test output\n", self.test_code
        return subprocess.CompletedProcess(["docker", *args], code, out, b"")


def task(**spec):
    spec.setdefault("tests_dir", "/task/tests")
    return TerminalTask(name="Boxed", instruction="x", source="test", container=ContainerSpec(**spec))


def started(fake, **spec):
    sh = docker.DockerShell(task(**spec), command_timeout=5)
    sh._docker = fake
    sh.start()
    return sh


@pytest.fixture(autouse=True)
def docker_answers(monkeypatch):
    monkeypatch.setattr(docker, "docker_status", lambda timeout=10.0: None)
    monkeypatch.setattr(shell_docker, "docker_status", lambda timeout=10.0: None)


def test_the_task_container_runs_its_image_without_network_in_its_workdir():
    fake = ScriptedDocker()
    sh = started(fake, image="task:1", workdir="/srv")
    run = fake.calls[0]
    assert run[0] == "run" and "--network" in run and run[run.index("--network") + 1] == "none"
    assert run[-2:] == ("task:1", "infinity")
    sh.run("ls")
    assert fake.calls[-1][:3] == ("exec", "-w", "/srv")
    sh.close()
    assert fake.calls[-1][:2] == ("rm", "-f") and not sh.started


@pytest.mark.parametrize(
    "reward, test_code, score",
    [(b"1\n", 1, 1.0), (b"0.25", 0, 0.25), (b'{"reward": 0.5}', 0, 0.5), (b"7", 1, 1.0), (b"-3", 0, 0.0),
     (b"", 0, 1.0), (b"", 2, 0.0), (b"junk", 0, 1.0), (b'{"score": 1}', 1, 0.0)],
)
def test_grading_reads_the_reward_file_else_the_exit_status(reward, test_code, score):
    fake = ScriptedDocker(test_code=test_code, reward=reward)
    sh = started(fake, image="task:1")
    verdict = sh.grade()
    assert verdict.graded and verdict.total == 1 and verdict.score == score
    assert verdict.results[0]["passed"] == (score >= 1.0) and "test output" in verdict.results[0]["detail"]
    assert ("cp", "/task/tests/.", f"{sh.container}:/tests") in fake.calls


def test_terminal_bench_copies_its_run_tests_script_beside_the_tests():
    fake = ScriptedDocker(reward=b"1")
    sh = started(fake, context_dir="/task", test_script="run-tests.sh", image="task:1")
    sh.grade()
    assert ("cp", "/task/run-tests.sh", f"{sh.container}:/tests/run-tests.sh") in fake.calls
    assert fake.calls[-2][-2:] == ("bash", "/tests/run-tests.sh")


def test_a_gone_container_is_ungraded_and_a_task_without_an_image_says_so():
    sh = docker.DockerShell(task(image="task:1"))
    verdict = sh.grade()
    assert not verdict.graded and "gone" in verdict.reason
    bare = docker.DockerShell(task())
    bare._docker = ScriptedDocker()
    with pytest.raises(ShellError, match="'Boxed' has neither an image nor a build context"):
        bare.start()
    with pytest.raises(ValueError, match="does not use a container"):
        docker.DockerShell(TerminalTask(name="Plain", instruction="x"))
