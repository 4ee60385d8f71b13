"""What a terminal task is: an instruction, starting files, hidden tests and a reference solution."""

from __future__ import annotations

import ast
import dataclasses
import fnmatch
import io
import math
import tarfile
from functools import cached_property
from typing import Any, Optional, Union

FileSpec = Union[str, bytes, tuple]  # content, or (content, mode)
DIFFICULTIES = ("easy", "medium", "hard")
TEST_KINDS = ("checks", "script", "unit")
MAX_SECONDS = 86_400.0  # a time budget or test timeout of at most a day
MAX_TURNS = 100_000


@dataclasses.dataclass(frozen=True)
class ContainerSpec:
    """A task that needs its own container image (Harbor / Terminal-Bench with a Dockerfile)."""

    context_dir: Optional[str] = None  # the directory holding the Dockerfile
    image: Optional[str] = None  # a prebuilt image instead
    workdir: str = "/app"
    tests_dir: Optional[str] = None  # copied to /tests for verification
    test_script: str = "tests/test.sh"


@dataclasses.dataclass(frozen=True)
class TerminalTask:
    """One task.

    Attributes:
        name: the id part after ``terminal:`` (letters, digits, ``-`` and ``_``).
        instruction: what the agent is asked to do (paths relative to its workspace).
        files: the workspace's starting files, ``path -> content`` or ``path -> (content, mode)``.
        tests: for ``kind="checks"``, Python source defining ``test_*`` functions, run by GEM's
            harness with the helpers ``sh``, ``read``, ``lines``, ``exists``, ``mode``, ...
            For ``kind="script"``, a Harbor ``tests/`` directory (``path -> content``) whose
            ``test.sh`` writes a reward. Never shown to the agent.
        solution: a bash script that solves the task from its starting state.
        setup: bash run in the workspace at reset, after the files are in place.
        difficulty: ``easy``, ``medium`` or ``hard``.
        time_budget: seconds of command time the agent may spend.
        max_turns: actions the agent may take.
        test_timeout: seconds per test.
        container: set when the task must run in its own container (Docker).
        mutable: the starting files the task may change (edit, rename, delete, chmod), as paths
            or glob patterns (``*`` also matches ``/``; ``dir/`` means everything under ``dir``).
            Every other starting file must still be there, byte for byte and with its mode, when
            the workspace is graded, or every test fails. Default: none may change.
    """

    name: str
    instruction: str
    files: dict = dataclasses.field(default_factory=dict)
    tests: Any = ""
    solution: str = ""
    setup: str = ""
    difficulty: str = "easy"
    category: str = "general"
    kind: str = "checks"
    time_budget: float = 600.0
    max_turns: int = 40
    test_timeout: float = 20.0
    container: Optional[ContainerSpec] = None
    source: str = "bundled"
    archive: Optional[bytes] = dataclasses.field(default=None, repr=False)  # a ready tar instead of ``files``
    mutable: tuple = ()

    def __post_init__(self) -> None:
        if self.difficulty not in DIFFICULTIES:
            raise ValueError(f"task {self.name!r}: difficulty must be one of {DIFFICULTIES}, got {self.difficulty!r}.")
        if self.kind not in TEST_KINDS:
            raise ValueError(f"task {self.name!r}: kind must be one of {TEST_KINDS}, got {self.kind!r}.")
        if isinstance(self.mutable, str) or not all(isinstance(p, str) and p for p in self.mutable):
            raise ValueError(f"task {self.name!r}: mutable must be a list of paths or glob patterns, got {self.mutable!r}.")
        object.__setattr__(self, "mutable", tuple(self.mutable))
        for name in ("time_budget", "test_timeout"):
            object.__setattr__(self, name, check_seconds(getattr(self, name), f"task {self.name!r}: {name}"))
        turns = self.max_turns
        if isinstance(turns, bool) or not isinstance(turns, int) or not 1 <= turns <= MAX_TURNS:
            raise ValueError(f"task {self.name!r}: max_turns must be an int from 1 to {MAX_TURNS}, got {turns!r}.")

    def may_change(self, path: str) -> bool:
        """Whether the starting file ``path`` is one the task allows the agent to change."""
        return is_mutable(path, self.mutable)

    @property
    def checks_inputs(self) -> bool:
        """Whether grading verifies that the starting files the task does not declare ``mutable``
        are unchanged. Unit-test tasks (SWE) are judged by their tests alone: the repository is
        what they change."""
        return self.kind != "unit"

    @cached_property
    def test_names(self) -> tuple[str, ...]:
        """The tests, in order (``test_*`` functions of a checks module; one script otherwise)."""
        if self.kind == "script":
            return ("test.sh",)
        if self.kind == "unit":
            return tuple(dict.fromkeys([*getattr(self, "fail_to_pass", ()), *getattr(self, "pass_to_pass", ())]))
        tree = ast.parse(self.tests)
        return tuple(
            node.name for node in tree.body if isinstance(node, ast.FunctionDef) and node.name.startswith("test")
        )

    @cached_property
    def files_tar(self) -> bytes:
        """The starting files as a tar (built once)."""
        return self.archive if self.archive is not None else build_tar(self.files)


def check_seconds(value: Any, what: str) -> float:
    """``value`` as seconds if it is a finite number in (0, :data:`MAX_SECONDS`]; else ``ValueError``
    naming ``what`` (task files are untrusted: ``inf`` or ``1e12`` would overflow the timers)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{what} must be a number of seconds, got {value!r}.")
    try:
        seconds = float(value)
    except OverflowError:
        seconds = math.inf
    if not (math.isfinite(seconds) and 0 < seconds <= MAX_SECONDS):
        raise ValueError(f"{what} must be more than 0 and at most {MAX_SECONDS:g} seconds, got {value!r}.")
    return seconds


def build_tar(files: dict) -> bytes:
    """A tar of ``path -> content | (content, mode)``; parent directories are implied."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path, spec in sorted(files.items()):
            content, mode = (spec if isinstance(spec, tuple) else (spec, None))
            data = content.encode("utf-8") if isinstance(content, str) else bytes(content)
            info = tarfile.TarInfo(path)
            info.size = len(data)
            info.mode = 0o644 if mode is None else int(mode)
            info.mtime = 1_700_000_000
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def is_mutable(path: str, patterns: tuple) -> bool:
    """Whether ``path`` matches one of ``patterns`` (glob; ``dir/`` covers everything under it)."""
    path = path.strip("/")
    for pattern in patterns:
        if pattern.endswith("/") and path.startswith(pattern):
            return True
        if fnmatch.fnmatchcase(path, pattern.strip("/")):
            return True
    return False


def read_tar(data: bytes) -> dict[str, bytes]:
    """``path -> bytes`` of the regular files of a tar (for tests and exports)."""
    out = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
        for member in tar:
            if member.isfile():
                fh = tar.extractfile(member)
                out[member.name] = fh.read() if fh is not None else b""
    return out
