"""What a shell backend provides: the :class:`Shell` protocol and the types its methods return.

A shell is one episode's persistent bash: the working directory, variables, functions and aliases
carry over from one command to the next. The bash tool (:class:`~gem.tools.bash_tool.BashTool`)
and the terminal and repository environments (:class:`~gem.envs.terminal.env.TerminalEnv`) talk
to their shell only through the members below, so any object that has them can back them.

Two backends ship with GEM, one file each:

- :class:`~gem.sandbox.shell_sandbox.SandboxShell`: a session of GEM's sandbox holding a private
  workspace directory (no network, limits on memory, processes and file size);
- :class:`~gem.sandbox.shell_docker.DockerShell`: a container of a given image, commands through
  ``docker exec`` (needs a Docker daemon).

A backend raises :class:`ShellError` when the shell itself is unavailable (not started, its
session or container gone); what a command does (fail, hang, print too much) is never an error,
it is in the :class:`CommandResult`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Protocol, runtime_checkable

from gem.utils.text import clean_text

#: The largest workspace archive :meth:`Shell.export` returns by default (bytes).
MAX_ARCHIVE_BYTES = 32 << 20
#: The longest command line a backend runs (characters); a longer one is refused (exit code 126).
MAX_COMMAND_CHARS = 100_000


class ShellError(RuntimeError):
    """The sandbox session or container behind a shell failed (not something a command did)."""


@dataclass
class CommandResult:
    """What one command did. ``exit_code`` is ``-N`` when a signal ``N`` ended it."""

    output: str
    exit_code: int
    timed_out: bool = False
    truncated: bool = False
    seconds: float = 0.0
    restarted: bool = False

    def render(self) -> str:
        """The observation text: output, then a status line."""
        body = self.output if self.output.endswith("\n") or not self.output else self.output + "\n"
        if self.timed_out:
            status = f"[command timed out after {self.seconds:.0f} s and was killed; exit code {self.exit_code}]"
        else:
            status = f"[exit code {self.exit_code}]"
        if self.restarted:
            status += " [the shell was restarted: variables and directory were reset]"
        return body + status


def sanitize_command(command: str) -> str:
    """``command`` as text bash can take: surrogates replaced; NUL bytes stay (bash refuses them)."""
    return clean_text(command) if "\x00" not in command else command.encode("utf-8", "replace").decode()


def refuse_command(command: str) -> Optional[CommandResult]:
    """The result of a command no backend runs (longer than :data:`MAX_COMMAND_CHARS`), else ``None``."""
    if len(command) > MAX_COMMAND_CHARS:
        return CommandResult(f"command refused: it is {len(command)} characters long (limit {MAX_COMMAND_CHARS}).", 126)
    return None


@runtime_checkable
class Shell(Protocol):
    """One episode's persistent shell, as the bash tool and the terminal environments use it.

    ``isinstance(obj, Shell)`` checks only that the members exist (as for any runtime-checkable
    protocol); what each must do is written here.
    """

    #: Default (and largest) seconds one command may run; :meth:`run` caps its ``timeout`` by it.
    command_timeout: float
    #: How much of a command's output :meth:`run` keeps (head and tail around a marker).
    max_output: int

    @property
    def started(self) -> bool:
        """Whether :meth:`start` ran and :meth:`close` has not since."""
        ...

    def start(self, files: Optional[bytes] = None) -> None:
        """(Re)start the shell: whatever ran before is closed; the working directory starts empty, or
        with the files of the tar archive ``files``. :class:`ShellError` when the shell cannot start."""
        ...

    def run(self, command: str, timeout: Optional[float] = None) -> CommandResult:
        """Run one command line (``timeout`` seconds, capped by :attr:`command_timeout`) and return
        its output, exit code and duration. Never raises for anything the command does;
        :class:`ShellError` when the shell is not started or is gone."""
        ...

    def close(self) -> None:
        """End the shell and every process it started; safe to call twice or before :meth:`start`."""
        ...

    def export(self, limit: int = MAX_ARCHIVE_BYTES) -> bytes:
        """The working directory as a tar archive, for a verifier to grade a copy of it;
        :class:`ShellError` when it is larger than ``limit`` bytes or the backend keeps its state
        elsewhere (a container)."""
        ...

    def get_state(self) -> dict[str, Any]:
        """A snapshot of the files and the shell's state (directory, variables) for
        :meth:`set_state`; :class:`ShellError` when the backend cannot take one."""
        ...

    def set_state(self, state: dict[str, Any]) -> None:
        """Restore a snapshot of :meth:`get_state` into this started shell."""
        ...


__all__ = ["MAX_ARCHIVE_BYTES", "MAX_COMMAND_CHARS", "CommandResult", "Shell", "ShellError", "refuse_command", "sanitize_command"]
