"""A repository task: an issue, the repository's files, and the hidden tests that judge a fix."""

from __future__ import annotations

import dataclasses
import difflib

from gem.envs.terminal.task import TerminalTask


@dataclasses.dataclass(frozen=True)
class SweTask(TerminalTask):
    """A :class:`TerminalTask` judged by unit tests, as SWE-bench judges an instance.

    Attributes:
        hidden_files: test files laid over the agent's workspace before the tests run (the
            ``test_patch`` applied); the agent never sees them.
        fail_to_pass: test ids (``path::name``) that fail before the fix and must pass after it.
        pass_to_pass: test ids that pass before and must still pass.
        patch: the reference fix as a unified diff (``git apply`` format).
        edits: the reference fix as exact replacements ``(path, old, new)`` (bundled tasks).
        runner: ``"gem"`` (GEM's runner, no pytest needed) or ``"pytest"``.
        expected: for GEM's runner, ``test id -> expected values`` of the test's checks (see
            :mod:`gem.envs.swe.checks`); they stay in GEM's process, the test process only
            reports what it observed. A test without an entry passes when it finishes without an
            exception (decided in the test's own process: see docs/swe.md).
    """

    kind: str = "unit"
    hidden_files: dict = dataclasses.field(default_factory=dict)
    fail_to_pass: tuple = ()
    pass_to_pass: tuple = ()
    patch: str = ""
    edits: tuple = ()
    runner: str = "gem"
    expected: dict = dataclasses.field(default_factory=dict, repr=False)
    test_timeout: float = 30.0
    category: str = "repository"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.runner not in ("gem", "pytest"):
            raise ValueError(f"task {self.name!r}: runner must be 'gem' or 'pytest', got {self.runner!r}.")
        if not self.fail_to_pass:
            raise ValueError(f"task {self.name!r}: fail_to_pass must name at least one test.")


def unified_diff(path: str, before: str, after: str) -> str:
    """A ``git apply``-able diff of one file."""
    return "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True), f"a/{path}", f"b/{path}"))
