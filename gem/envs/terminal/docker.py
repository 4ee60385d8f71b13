"""Run a container task (Harbor / Terminal-Bench with a Dockerfile) in Docker.

:class:`TaskDockerShell` is the :class:`~gem.sandbox.shell_docker.DockerShell` of one
:class:`~gem.envs.terminal.task.TerminalTask`: the image is built from the task's
``environment/`` (or pulled, for ``docker_image``), the container runs without network, and
:meth:`TaskDockerShell.grade` is the task's verifier: it copies ``tests/`` to ``/tests`` and runs
``bash /tests/test.sh`` in the container, reading ``/logs/verifier/reward.txt`` (or
``reward.json``), as Harbor does. Harbor's trust model applies: the tests run in the container the
agent used. :class:`~gem.envs.terminal.env.TerminalEnv` uses it for tasks with a container.

``DockerShell`` here is the same class under its first name (it takes a task);
:func:`docker_status` is re-exported from :mod:`gem.sandbox.shell_docker`.

This path needs a Docker daemon; GEM's test suite checks that its absence is reported clearly
(:func:`require_docker`) and, against a stand-in for the ``docker`` command, the commands the
shell and the grading issue and how the reward is read.
"""

from __future__ import annotations

import json
import math
from typing import Any

from gem.envs.terminal.task import ContainerSpec, TerminalTask
from gem.envs.terminal.verify import Verdict
from gem.errors import ResourceUnavailable
from gem.sandbox.shell import ShellError
from gem.sandbox.shell_docker import DockerShell as _DockerShell
from gem.sandbox.shell_docker import docker_status


def require_docker(task: TerminalTask) -> None:
    """Raise :class:`~gem.errors.ResourceUnavailable` naming ``task`` when Docker is not available."""
    why = docker_status()
    if why is not None:
        why = why.rstrip(".?")
        raise ResourceUnavailable(
            f"Task {task.name!r} needs its own container ({task.source}: a Dockerfile or docker_image), "
            f"and Docker is not available here: {why}. Start a Docker daemon, or use tasks that run in "
            "GEM's sandbox (no environment/Dockerfile)."
        )


class TaskDockerShell(_DockerShell):
    """A persistent shell in a task's container, and the task's verifier (see the module doc)."""

    def __init__(self, task: TerminalTask, command_timeout: float = 30.0, max_output: int = 8000) -> None:
        if task.container is None:
            raise ValueError(f"task {task.name!r} does not use a container.")
        spec: ContainerSpec = task.container
        super().__init__(image=spec.image, context_dir=spec.context_dir, workdir=spec.workdir, network="none",
                         command_timeout=command_timeout, max_output=max_output,
                         image_name=f"gem-terminal-{task.name.lower()}")
        self.task = task
        self.spec = spec

    def _require_docker(self) -> None:
        require_docker(self.task)

    def _image(self) -> str:
        if not self.spec.image and not self.spec.context_dir:
            raise ShellError(f"task {self.task.name!r} has neither an image nor a build context.")
        return super()._image()

    def grade(self) -> Verdict:
        """Copy the tests in, run the task's test script, read the reward file."""
        if self.container is None:
            return Verdict([], graded=False, reason="the container is gone")
        name = self.spec.test_script.rsplit("/", 1)[-1]
        self._docker("exec", self.container, "mkdir", "-p", "/logs/verifier", "/tests", timeout=60)
        copied = self._docker("cp", f"{self.spec.tests_dir}/.", f"{self.container}:/tests", timeout=300)
        if copied.returncode != 0:
            return Verdict([], graded=False, reason=f"docker cp failed: {copied.stderr.decode(errors='replace')[-300:]}")
        script = f"/tests/{name}"
        if self.spec.test_script != "tests/test.sh":  # Terminal-Bench: run-tests.sh beside tests/
            self._docker("cp", f"{self.spec.context_dir}/{self.spec.test_script}", f"{self.container}:{script}", timeout=60)
        proc = self._docker("exec", "-w", self.spec.workdir, "-e", "TEST_DIR=/tests", self.container, "bash", script,
                            timeout=self.task.test_timeout + 60)
        reward = self._docker("exec", self.container, "bash", "-c",
                              "cat /logs/verifier/reward.txt 2>/dev/null || cat /logs/verifier/reward.json 2>/dev/null",
                              timeout=60).stdout.decode(errors="replace").strip()
        score: Any
        try:
            score = json.loads(reward) if reward.startswith("{") else float(reward)
            score = float(score["reward"] if isinstance(score, dict) else score)
        except (ValueError, KeyError, TypeError):
            score = 1.0 if proc.returncode == 0 else 0.0
        except OverflowError:
            score = float("inf")
        if not math.isfinite(score):  # inf, nan: no verdict, never a pass
            return Verdict([], graded=False, reason=f"the reward file holds {score!r}, not a finite number")
        score = min(1.0, max(0.0, score))
        detail = (proc.stdout + proc.stderr).decode(errors="replace")[-800:]
        return Verdict([{"test": "test.sh", "passed": score >= 1.0, "score": score, "detail": detail}])


DockerShell = TaskDockerShell  # its first name

__all__ = ["DockerShell", "TaskDockerShell", "docker_status", "require_docker"]
