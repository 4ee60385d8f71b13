"""Running untrusted code with limits: the Python sandbox, its warm worker, the host check and
the shells an agent's commands run in.

- :class:`Sandbox` / :func:`run_python`: run a program (``gem.sandbox.sandbox``; the worker
  that forks and confines each run is ``gem/sandbox/_zygote.py``, started as its own process from
  the parts ``gem/sandbox/_worker_source.py`` lists, with the seccomp filter built by
  ``gem.sandbox.seccomp`` and the request format of ``gem.sandbox.wire``);
- :class:`SandboxSession`: a stateful Python kernel whose cells run one at a time;
- :func:`check_host` (``python -m gem.sandbox --check``): which protections this host provides;
- :class:`Shell`: what a shell backend provides to the bash tool and terminal tasks
  (:mod:`gem.sandbox.shell`), with two backends: :class:`SandboxShell` (a sandbox session,
  :mod:`gem.sandbox.shell_sandbox`) and :class:`DockerShell` (a container,
  :mod:`gem.sandbox.shell_docker`).

docs/tools.md describes the confinement and what it costs.
"""

from gem.sandbox.host import check_host
from gem.sandbox.sandbox import (
    DEFAULT_FILE_SIZE_MB,
    DEFAULT_MAX_PROCESSES,
    DEFAULT_MEMORY_MB,
    DEFAULT_OUTPUT_BYTES,
    DEFAULT_TIMEOUT,
    REASONS,
    Sandbox,
    SandboxError,
    SandboxLimits,
    SandboxResult,
    SandboxSession,
    default_hidden_paths,
    default_sandbox,
    run_python,
)
from gem.sandbox.shell import CommandResult, Shell, ShellError
from gem.sandbox.shell_docker import DockerShell
from gem.sandbox.shell_sandbox import SandboxShell

__all__ = [
    "DEFAULT_FILE_SIZE_MB",
    "DEFAULT_MAX_PROCESSES",
    "DEFAULT_MEMORY_MB",
    "DEFAULT_OUTPUT_BYTES",
    "DEFAULT_TIMEOUT",
    "REASONS",
    "Sandbox",
    "SandboxError",
    "SandboxLimits",
    "SandboxResult",
    "SandboxSession",
    "check_host",
    "CommandResult",
    "DockerShell",
    "SandboxShell",
    "Shell",
    "ShellError",
    "default_hidden_paths",
    "default_sandbox",
    "run_python",
]
