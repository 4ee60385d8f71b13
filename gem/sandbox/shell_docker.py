"""The Docker shell backend: one episode's persistent bash in a container.

:class:`DockerShell` is a :class:`~gem.sandbox.shell.Shell` whose commands run in a container of a
given image (pulled, or built from a directory holding a Dockerfile), through ``docker exec``,
with the same persistent-shell wrapper as the sandboxed shell (the working directory and
variables carry over; background processes do not). The container runs ``sleep infinity`` with
no network by default and is removed by :meth:`DockerShell.close`. Its state is the container:
:meth:`DockerShell.export` and :meth:`DockerShell.get_state` raise :class:`ShellError`; a verifier
runs inside the container instead (the terminal environment's container tasks do so, as Harbor
does).

This backend needs a Docker daemon; :func:`docker_status` says whether one answers. Harbor task
directories with a Dockerfile use it through :mod:`gem.envs.terminal.docker`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any, Optional

from gem.errors import ResourceUnavailable
from gem.sandbox.shell import MAX_ARCHIVE_BYTES, CommandResult, ShellError, refuse_command, sanitize_command

logger = logging.getLogger(__name__)
_STATE = "/tmp/.gem-shell"  # inside the container: the wrapper's saved directory and variables


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


def _wrapper() -> str:
    from gem.sandbox import _shell_runtime

    return _shell_runtime._GEM_WRAPPER


class DockerShell:
    """A persistent shell in a container (see the module doc). Constructing one runs nothing;
    :meth:`start` needs the daemon.

    Args:
        image: the image to run (pulled by ``docker run`` when absent), or ``None`` to build
            ``context_dir``.
        context_dir: a directory with a Dockerfile, built once per content (tagged
            ``<image_name>:<digest of its files>``) when ``image`` is ``None``.
        workdir: the directory commands start in.
        network: ``docker run --network`` (``"none"``: no network).
        command_timeout: default (and largest) seconds per command.
        max_output: characters of output kept per command (head and tail around a marker).
        memory_mb, max_processes: ``--memory`` and ``--pids-limit`` of the container (no limit
            when ``None``).
        image_name: the repository name of a built image.
    """

    def __init__(
        self,
        image: Optional[str] = None,
        context_dir: Optional[str] = None,
        workdir: str = "/app",
        network: str = "none",
        command_timeout: float = 30.0,
        max_output: int = 8000,
        memory_mb: Optional[int] = None,
        max_processes: Optional[int] = None,
        image_name: str = "gem-shell",
    ) -> None:
        if command_timeout <= 0:
            raise ValueError(f"command_timeout must be positive, got {command_timeout!r}.")
        self.image = image
        self.context_dir = context_dir
        self.workdir = workdir
        self.network = network
        self.command_timeout = float(command_timeout)
        self.max_output = int(max_output)
        self.memory_mb = memory_mb
        self.max_processes = max_processes
        self.image_name = image_name
        self.container: Optional[str] = None

    @property
    def started(self) -> bool:
        return self.container is not None

    def _docker(self, *args: str, timeout: float = 600.0, input: Optional[bytes] = None) -> subprocess.CompletedProcess:
        return subprocess.run(["docker", *args], capture_output=True, timeout=timeout, input=input)

    def _require_docker(self) -> None:
        """Raise :class:`~gem.errors.ResourceUnavailable` saying why when no Docker daemon answers."""
        why = docker_status()
        if why is not None:
            raise ResourceUnavailable(
                f"This shell runs in a Docker container, and Docker is not available here: {why.rstrip('.?')}. "
                "Start a Docker daemon, or use GEM's sandboxed shell (gem.sandbox.shell_sandbox.SandboxShell)."
            )

    def _image(self) -> str:
        """The image to run: ``image``, or ``context_dir`` built (once per content)."""
        if self.image:
            return self.image
        if not self.context_dir:
            raise ShellError("the shell has neither an image nor a build context.")
        digest = hashlib.sha256(json.dumps(sorted(self._context_files())).encode()).hexdigest()[:12]
        tag = f"{self.image_name}:{digest}"
        if self._docker("image", "inspect", tag, timeout=60).returncode != 0:
            built = self._docker("build", "-q", "-t", tag, self.context_dir, timeout=1800)
            if built.returncode != 0:
                raise ShellError(f"docker build failed: {built.stderr.decode(errors='replace')[-800:]}")
        return tag

    def _context_files(self) -> list[tuple[str, str]]:
        root = Path(self.context_dir or ".")
        return [(p.relative_to(root).as_posix(), hashlib.sha256(p.read_bytes()).hexdigest())
                for p in sorted(root.rglob("*")) if p.is_file()]

    def _run_options(self) -> list[str]:
        """``docker run`` options: the network and the limits."""
        options = ["--network", self.network]
        if self.memory_mb is not None:
            options += ["--memory", f"{int(self.memory_mb)}m"]
        if self.max_processes is not None:
            options += ["--pids-limit", str(int(self.max_processes))]
        return options

    def start(self, files: Optional[bytes] = None) -> None:
        """Start a fresh container (closing the one before). ``files`` is ignored: the image holds
        the starting state."""
        self._require_docker()
        self.close()
        name = f"gem-{uuid.uuid4().hex[:12]}"
        run = self._docker("run", "-d", "--rm", *self._run_options(), "--name", name, "--entrypoint", "sleep",
                           self._image(), "infinity", timeout=300)
        if run.returncode != 0:
            raise ShellError(f"docker run failed: {run.stderr.decode(errors='replace')[-800:]}")
        self.container = name
        init = f"mkdir -p {_STATE} && printf %s {self.workdir} > {_STATE}/cwd && : > {_STATE}/vars"
        self._docker("exec", name, "bash", "-c", init, timeout=60)

    def run(self, command: str, timeout: Optional[float] = None) -> CommandResult:
        """Run one command line in the container (``docker exec``); never raises for what it does."""
        if self.container is None:
            raise ShellError("The container is not started; call start() first.")
        limit = self.command_timeout if timeout is None else max(1.0, min(float(timeout), self.command_timeout))
        refused = refuse_command(command)
        if refused is not None:
            return refused
        command = sanitize_command(command)
        start = time.monotonic()
        try:
            proc = self._docker("exec", "-w", self.workdir, self.container, "timeout", "-s", "KILL",
                                 f"{limit:g}", "bash", "--noprofile", "--norc", "-c", _wrapper(), "gem", _STATE,
                                 command, timeout=limit + 30)
        except subprocess.TimeoutExpired:
            return CommandResult("the container did not answer", 137, timed_out=True, seconds=time.monotonic() - start)
        except (ValueError, OSError) as exc:  # a NUL byte, an argument too long for exec: as the sandbox says
            return CommandResult(f"cannot run this command: {exc}", 126)
        out = (proc.stdout + proc.stderr).decode("utf-8", "replace")
        truncated = len(out) > self.max_output
        if truncated:
            head = self.max_output * 2 // 3
            out = out[:head] + f"\n[... {len(out) - self.max_output} characters truncated ...]\n" + out[-(self.max_output - head):]
        code = proc.returncode
        return CommandResult(out, -9 if code == 137 else code, timed_out=code == 137, truncated=truncated,
                             seconds=time.monotonic() - start)

    def export(self, limit: int = MAX_ARCHIVE_BYTES) -> bytes:
        """Not supported: :class:`ShellError` (the state stays in the container)."""
        raise ShellError("a container task's state stays in its container")

    def get_state(self) -> dict[str, Any]:
        """Not supported: :class:`ShellError`."""
        raise ShellError("container tasks cannot be snapshotted")

    def set_state(self, state: dict[str, Any]) -> None:
        """Not supported: :class:`ShellError`."""
        raise ShellError("container tasks cannot be snapshotted")

    def close(self) -> None:
        """Remove the container (``docker rm -f``); a failure to remove it is logged."""
        if self.container is not None:
            try:
                self._docker("rm", "-f", self.container, timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                logger.warning("could not remove container %s", self.container)
            self.container = None


__all__ = ["DockerShell", "docker_status"]
