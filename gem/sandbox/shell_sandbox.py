"""The sandboxed shell backend: one episode's persistent bash in a sandbox session.

:class:`SandboxShell` is a :class:`~gem.sandbox.SandboxSession` holding a private workspace
directory. Each :meth:`SandboxShell.run` runs one command in bash and returns its output (stdout
and stderr interleaved, as a terminal shows them, cut in the middle past a limit), its exit status
and its duration. The working directory, variables, functions and aliases carry over from one
command to the next; background processes do not (every process a command started is killed when
it returns). The workspace can be filled from a tar archive and exported as one, which is how the
terminal and SWE environments hand it to their verifier. It is a :class:`~gem.sandbox.shell.Shell`;
beyond the protocol it runs helper Python in its session (:meth:`SandboxShell.python`, which the
file editor uses) and loads archives into a running workspace (:meth:`SandboxShell.load`).

The session runs ``gem/sandbox/_shell_runtime.py`` (the ``_gem_*`` helpers); its sandbox worker
preloads what that runtime imports (:data:`PRELOAD`), so a new shell costs little.
"""

from __future__ import annotations

import base64
import json
import logging
import marshal
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any, Optional

from gem.sandbox.sandbox import Sandbox, SandboxLimits, SandboxSession
from gem.sandbox.shell import (
    MAX_ARCHIVE_BYTES,
    MAX_COMMAND_CHARS,
    CommandResult,
    ShellError,
    refuse_command,
    sanitize_command,
)
from gem.utils.text import clean_text

logger = logging.getLogger(__name__)

RUNTIME_SOURCE = (Path(__file__).parent / "_shell_runtime.py").read_text(encoding="utf-8")
DEFAULT_COMMAND_TIMEOUT = 30.0
DEFAULT_MAX_OUTPUT = 8000  # bytes of a command's output shown (head and tail)
WORKSPACE_DIR = "workspace"
# A cell's own overhead on top of the command's timeout before the session itself is killed.
_CELL_SLACK = 10.0
# What the runtime imports: loaded once in the sandbox's warm worker, so a new shell costs little.
PRELOAD = ("subprocess", "tarfile", "base64", "ctypes")
_shared: Optional[Sandbox] = None
_shared_lock = threading.Lock()


def shell_sandbox() -> Sandbox:
    """The sandbox shells and their verifiers share by default (its worker preloads :data:`PRELOAD`)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = Sandbox(preload=PRELOAD)
        return _shared


@lru_cache(maxsize=8)
def compiled_cell(source: str, filename: str) -> str:
    """A cell that runs ``source`` from its compiled form (the sandbox runs this same interpreter),
    which skips compiling it again in every new session."""
    blob = base64.b64encode(marshal.dumps(compile(source, filename, "exec"))).decode("ascii")
    return f"import marshal as _gem_m, base64 as _gem_b\nexec(_gem_m.loads(_gem_b.b64decode({blob!r})))\n"


class SandboxShell:
    """One episode's shell in a sandbox session (see the module doc).

    Args:
        sandbox: the :class:`Sandbox` to use (the shared default when ``None``).
        command_timeout: default seconds per command.
        max_output: bytes of output kept per command (head and tail around a marker).
        memory_mb, max_processes, file_size_mb: limits of the session (all its processes).
    """

    def __init__(
        self,
        sandbox: Optional[Sandbox] = None,
        command_timeout: float = DEFAULT_COMMAND_TIMEOUT,
        max_output: int = DEFAULT_MAX_OUTPUT,
        memory_mb: int = 1024,
        max_processes: int = 64,
        file_size_mb: float = 64,
    ) -> None:
        if command_timeout <= 0:
            raise ValueError(f"command_timeout must be positive, got {command_timeout!r}.")
        if max_output < 100:
            raise ValueError(f"max_output must be at least 100 bytes, got {max_output!r}.")
        self._sandbox = sandbox
        self.command_timeout = float(command_timeout)
        self.max_output = int(max_output)
        self.limits = SandboxLimits(
            timeout=self.command_timeout + _CELL_SLACK,
            cpu_time=None,
            memory_mb=memory_mb,
            max_processes=max_processes,
            file_size_mb=file_size_mb,
            output_bytes=MAX_ARCHIVE_BYTES * 2,
        )
        self._session: Optional[SandboxSession] = None
        self._lock = threading.Lock()

    @property
    def sandbox(self) -> Sandbox:
        return self._sandbox if self._sandbox is not None else shell_sandbox()

    @property
    def started(self) -> bool:
        return self._session is not None

    # ---------------------------------------------------------------- lifecycle
    def start(self, files: Optional[bytes] = None) -> None:
        """(Re)start the session with an empty workspace, or the files of the tar ``files``."""
        with self._lock:
            self._close_locked()
            self._session = self.sandbox.session(limits=self.limits)
            code = compiled_cell(RUNTIME_SOURCE, "<gem-shell>") + f"_gem_init({WORKSPACE_DIR!r}, {self.max_output})\n"
            if files:
                code += "import sys as _gem_sys\n_gem_load(_gem_sys.stdin.buffer.read())\n"
            self._cell(code, stdin=files, timeout=60.0)

    def _cell(self, code: str, stdin: Optional[bytes] = None, timeout: float = 60.0) -> str:
        """Run a helper cell; raise :class:`ShellError` if it failed."""
        if self._session is None:
            raise ShellError("The shell is not started; call start() first.")
        result = self._session.run(code, stdin, timeout=timeout)
        if not result.ok or result.isolation.get("restarted"):
            raise ShellError(f"the sandbox session failed ({result.reason}): {result.stderr.strip()[-500:]}")
        return result.stdout

    def close(self) -> None:
        with self._lock:
            self._close_locked()

    def _close_locked(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None

    # ---------------------------------------------------------------- commands
    def run(self, command: str, timeout: Optional[float] = None) -> CommandResult:
        """Run one command line; never raises for anything the command does."""
        limit = self.command_timeout if timeout is None else max(0.01, min(float(timeout), self.command_timeout))
        refused = refuse_command(command)
        if refused is not None:
            return refused
        command = sanitize_command(command)
        with self._lock:
            if self._session is None:
                raise ShellError("The shell is not started; call start() first.")
            result = self._session.run(f"print(_gem_run({command!r}, {limit!r}))", timeout=limit + _CELL_SLACK)
        if result.isolation.get("restarted") or not result.ok:
            # The session process itself died (it only runs our helper, so the sandbox killed it).
            logger.warning("shell session failed (%s); restarting it empty", result.reason)
            self.start()
            return CommandResult(
                f"the shell failed ({result.reason}) and was restarted with an empty workspace", 137, restarted=True
            )
        try:
            data = json.loads(result.stdout)
        except ValueError:
            return CommandResult(f"(unreadable shell reply: {clean_text(result.stdout[:200])})", 1)
        return CommandResult(
            output=data["output"],
            exit_code=int(data["exit_code"]),
            timed_out=bool(data["timed_out"]),
            truncated=bool(data["truncated"]),
            seconds=float(data["seconds"]),
        )

    def python(self, code: str, stdin: Optional[bytes] = None, timeout: float = 30.0) -> str:
        """Run helper Python in the session (the runtime's ``_gem_*`` functions are defined)."""
        with self._lock:
            return self._cell(code, stdin=stdin, timeout=timeout)

    # ---------------------------------------------------------------- files
    def export(self, limit: int = MAX_ARCHIVE_BYTES) -> bytes:
        """The workspace as a tar archive; :class:`ShellError` if it is larger than ``limit``."""
        text = self.python(f"print(_gem_archive({int(limit)}))").strip()
        if text.startswith("ERROR:"):
            raise ShellError(text[6:].strip())
        return base64.b64decode(text)

    def load(self, files: bytes) -> None:
        """Replace the workspace with the files of the tar ``files``."""
        self.python("import sys as _gem_sys\n_gem_load(_gem_sys.stdin.buffer.read())", stdin=files)

    def get_state(self) -> dict[str, Any]:
        """Workspace and shell state (directory, variables), for :meth:`set_state`."""
        state = json.loads(self.python("print(_gem_get_shell_state())"))
        return {"files": self.export(), "shell": state}

    def set_state(self, state: dict[str, Any]) -> None:
        self.load(state["files"])
        self.python(f"_gem_set_shell_state(__import__('json').loads({json.dumps(state['shell'])!r}))")


__all__ = [
    "DEFAULT_COMMAND_TIMEOUT",
    "DEFAULT_MAX_OUTPUT",
    "MAX_ARCHIVE_BYTES",
    "MAX_COMMAND_CHARS",
    "PRELOAD",
    "RUNTIME_SOURCE",
    "WORKSPACE_DIR",
    "SandboxShell",
    "compiled_cell",
    "shell_sandbox",
]
