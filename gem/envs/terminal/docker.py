"""Run a container task (Harbor / Terminal-Bench with a Dockerfile) in Docker.

:class:`DockerShell` has the interface of :class:`~gem.tools.bash_tool.SandboxShell` that
:class:`~gem.envs.terminal.env.TerminalEnv` uses: ``start``, ``run``, ``close``, ``export`` (not
supported: the container is the state) and adds :meth:`DockerShell.grade`. The image is built from
the task's ``environment/`` (or pulled, for ``docker_image``), the container runs without network,
commands go through ``docker exec`` with the same persistent-shell wrapper as the sandbox, and the
verifier copies ``tests/`` to ``/tests`` and runs ``bash /tests/test.sh`` in the container,
reading ``/logs/verifier/reward.txt`` (or ``reward.json``), as Harbor does. Harbor's trust model
applies: the tests run in the container the agent used.

This path needs a Docker daemon; GEM's test suite checks only that its absence is reported
clearly (:func:`docker_status`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import subprocess
import uuid
from typing import Any, Optional

from gem.envs.terminal.task import ContainerSpec, TerminalTask
from gem.envs.terminal.verify import Verdict
from gem.errors import ResourceUnavailable
from gem.tools.bash_tool import CommandResult, ShellError

logger = logging.getLogger(__name__)
_STATE = "/tmp/.gem-shell"


def docker_status(timeout: float = 10.0) -> Optional[str]:
    """``None`` when a Docker daemon answers, else why not (for the error message)."""
    exe = shutil.which("docker")
    if exe is None:
        return "the `docker` command is not installed"
    try:
        proc = subprocess.run([exe, "version", "--format", "{{.Server.Version}}"], capture_output=True,
                              text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"`docker version` failed: {exc}"
    if proc.returncode != 0 or not proc.stdout.strip():
        return "the Docker daemon is not reachable: " + (proc.stderr.strip().splitlines() or ["no answer"])[-1]
    return None


def require_docker(task: TerminalTask) -> None:
    why = docker_status()
    if why is not None:
        why = why.rstrip(".?")
        raise ResourceUnavailable(
            f"Task {task.name!r} needs its own container ({task.source}: a Dockerfile or docker_image), "
            f"and Docker is not available here: {why}. Start a Docker daemon, or use tasks that run in "
            "GEM's sandbox (no environment/Dockerfile)."
        )


def _wrapper() -> str:
    from gem.sandbox import _shell_runtime

    return _shell_runtime._GEM_WRAPPER


class DockerShell:
    """A persistent shell in a task's container (see the module doc)."""

    def __init__(self, task: TerminalTask, command_timeout: float = 30.0, max_output: int = 8000) -> None:
        if task.container is None:
            raise ValueError(f"task {task.name!r} does not use a container.")
        self.task = task
        self.spec: ContainerSpec = task.container
        self.command_timeout = float(command_timeout)
        self.max_output = int(max_output)
        self.container: Optional[str] = None

    @property
    def started(self) -> bool:
        return self.container is not None

    def _docker(self, *args: str, timeout: float = 600.0, input: Optional[bytes] = None) -> subprocess.CompletedProcess:
        return subprocess.run(["docker", *args], capture_output=True, timeout=timeout, input=input)

    def _image(self) -> str:
        if self.spec.image:
            return self.spec.image
        if not self.spec.context_dir:
            raise ShellError(f"task {self.task.name!r} has neither an image nor a build context.")
        digest = hashlib.sha256(json.dumps(sorted(self._context_files())).encode()).hexdigest()[:12]
        tag = f"gem-terminal-{self.task.name.lower()}:{digest}"
        if self._docker("image", "inspect", tag, timeout=60).returncode != 0:
            built = self._docker("build", "-q", "-t", tag, self.spec.context_dir, timeout=1800)
            if built.returncode != 0:
                raise ShellError(f"docker build failed: {built.stderr.decode(errors='replace')[-800:]}")
        return tag

    def _context_files(self) -> list[tuple[str, str]]:
        from pathlib import Path

        root = Path(self.spec.context_dir or ".")
        return [(p.relative_to(root).as_posix(), hashlib.sha256(p.read_bytes()).hexdigest())
                for p in sorted(root.rglob("*")) if p.is_file()]

    def start(self, files: Optional[bytes] = None) -> None:
        require_docker(self.task)
        self.close()
        name = f"gem-{uuid.uuid4().hex[:12]}"
        run = self._docker("run", "-d", "--rm", "--network", "none", "--name", name, "--entrypoint", "sleep",
                           self._image(), "infinity", timeout=300)
        if run.returncode != 0:
            raise ShellError(f"docker run failed: {run.stderr.decode(errors='replace')[-800:]}")
        self.container = name
        init = f"mkdir -p {_STATE} && printf %s {self.spec.workdir} > {_STATE}/cwd && : > {_STATE}/vars"
        self._docker("exec", name, "bash", "-c", init, timeout=60)

    def run(self, command: str, timeout: Optional[float] = None) -> CommandResult:
        if self.container is None:
            raise ShellError("The container is not started; call start() first.")
        limit = self.command_timeout if timeout is None else max(1.0, min(float(timeout), self.command_timeout))
        import time

        start = time.monotonic()
        try:
            proc = self._docker("exec", "-w", self.spec.workdir, self.container, "timeout", "-s", "KILL",
                                 f"{limit:g}", "bash", "--noprofile", "--norc", "-c", _wrapper(), "gem", _STATE,
                                 command, timeout=limit + 30)
        except subprocess.TimeoutExpired:
            return CommandResult("the container did not answer", 137, timed_out=True, seconds=time.monotonic() - start)
        out = (proc.stdout + proc.stderr).decode("utf-8", "replace")
        truncated = len(out) > self.max_output
        if truncated:
            head = self.max_output * 2 // 3
            out = out[:head] + f"\n[... {len(out) - self.max_output} characters truncated ...]\n" + out[-(self.max_output - head):]
        code = proc.returncode
        return CommandResult(out, -9 if code == 137 else code, timed_out=code == 137, truncated=truncated,
                             seconds=time.monotonic() - start)

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
        score = min(1.0, max(0.0, score))
        detail = (proc.stdout + proc.stderr).decode(errors="replace")[-800:]
        return Verdict([{"test": "test.sh", "passed": score >= 1.0, "score": score, "detail": detail}])

    def export(self, limit: int = 0) -> bytes:
        raise ShellError("a container task's state stays in its container")

    def get_state(self) -> dict[str, Any]:
        raise ShellError("container tasks cannot be snapshotted")

    def close(self) -> None:
        if self.container is not None:
            try:
                self._docker("rm", "-f", self.container, timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                logger.warning("could not remove container %s", self.container)
            self.container = None
