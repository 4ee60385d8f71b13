"""Harbor / Terminal-Bench task directories: load them as :class:`TerminalTask` s, write ours out.

A Harbor task is a directory::

    task.toml          [metadata] difficulty, category; [agent] timeout_sec; [verifier] timeout_sec;
                       [environment] docker_image (optional); [gem] setup, max_turns, mutable,
                       sandbox, test_timeout (GEM's own keys)
    instruction.md     what the agent is asked to do
    environment/       Dockerfile (or docker-compose.yaml) and its build context
    tests/test.sh      the verifier: writes a reward to $REWARD_FILE (/logs/verifier/reward.txt)
    solution/solve.sh  the reference solution

The older Terminal-Bench layout (``task.yaml``, ``Dockerfile``, ``run-tests.sh``,
``solution.sh``, ``tests/``) loads too. How a task runs:

* with a Dockerfile, a compose file or a ``docker_image`` it needs its own container, which
  :mod:`gem.envs.terminal.docker` provides when Docker is reachable (otherwise ``reset`` raises
  :class:`~gem.errors.ResourceUnavailable` saying so);
* without one (or with ``[gem] sandbox = true``, which GEM's own exports carry), it runs in
  GEM's sandbox: the files under ``environment/`` (``environment/files/`` for an export with a
  Dockerfile) are the starting workspace (paths in the instruction are then relative to it), and
  the tests are either ``tests/gem_checks.py`` (``test_*`` functions run by GEM's harness, whose
  verdicts the agent cannot forge) or ``tests/test.sh`` (run with ``TEST_DIR`` and
  ``REWARD_FILE`` set; its reward is only as trustworthy as the script, since the agent's
  programs it runs could write the reward file too, exactly as under Harbor).

A task directory is untrusted input, read by :class:`TaskReader`: every file comes from inside
the directory (a symlink that leads out of it, ``instruction.md``, ``tests/`` or ``solution/``
included, is a ``ValueError``; links within it are followed for single files and left out of
trees), only regular files are read, each at most :data:`MAX_FILE_BYTES` (text files
:data:`MAX_TEXT_BYTES`) and all of one task at most :data:`MAX_TASK_BYTES`, and every number of
``task.toml``/``task.yaml`` is range-checked (seconds finite, more than 0 and at most a day; turns
from 1 to 100 000). A reward file that holds no finite number (``inf``, ``nan``) leaves the
episode ungraded, never paid.

``[gem] mutable`` lists the starting files the task may change (paths or glob patterns); every
other starting file must be unchanged when the workspace is graded, or every test fails.

:func:`write_task` writes a task in this layout, runnable by Harbor itself: a Dockerfile that
copies the starting files to ``/app``, and a ``tests/test.sh`` that runs the checks with GEM's
harness (``tests/gem_runner.py``, standard library only) against the pristine inputs it carries
(``tests/gem_inputs.tar``) and writes ``/logs/verifier/reward.txt`` and ``reward.json``. GEM's
bundled tasks round-trip through it.
"""

from __future__ import annotations

import json
import logging
import os
import stat
from pathlib import Path
from typing import Any, Optional, Union

from gem.envs.terminal.task import MAX_TURNS, ContainerSpec, TerminalTask, build_tar, check_seconds

logger = logging.getLogger(__name__)

CHECKS_FILE = "gem_checks.py"
RUNNER_FILE = "gem_runner.py"
SPEC_FILE = "gem_task.json"
INPUTS_FILE = "gem_inputs.tar"
FILES_DIR = "files"  # under environment/, next to the Dockerfile of an export
VERIFIERS = ("auto", "script")
_DOCKERFILE = """FROM python:3.12-slim
WORKDIR /app
COPY files/ /app/
"""
_TEST_SH = """#!/bin/bash
# Runs this task's checks (gem_checks.py) with GEM's harness on the workspace (the current
# directory), against the pristine inputs in gem_inputs.tar; writes reward.txt and reward.json.
TESTS="${TEST_DIR:-/tests}"
LOGS="${LOGS_DIR:-/logs/verifier}"
mkdir -p "$LOGS"
exec env -i PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 HOME="$LOGS" \\
    python3 -I "$TESTS/gem_runner.py" --harbor "$TESTS" "$LOGS"
"""
_CONTAINER_FILES = ("Dockerfile", "docker-compose.yaml", "docker-compose.yml")
MAX_FILE_BYTES = 32 << 20  # one file of a task directory
MAX_TEXT_BYTES = 1 << 20  # task.toml, task.yaml, instruction.md, the solution, the checks
MAX_TASK_BYTES = 64 << 20  # everything read from one task directory


class TaskReader:
    """Reads the files of one task directory: from inside it only, regular files only, within caps.

    ``ValueError`` (naming the file) for a path that resolves outside the directory, a file that is
    not a regular file, one over its cap, or a task whose files together pass :data:`MAX_TASK_BYTES`.
    """

    def __init__(self, root: Path) -> None:
        self.given = root
        self.root = root.resolve()
        self.total = 0

    def inside(self, path: Path) -> Path:
        """``path`` resolved (symlinks followed), if that is inside the task directory."""
        real = path.resolve()
        if real != self.root and self.root not in real.parents:
            raise ValueError(
                f"{path} leads out of the task directory {self.given} (to {real}); a task's files come "
                "from inside its directory only."
            )
        return real

    def exists(self, path: Path) -> bool:
        """Whether ``path`` is there (as a file, a directory or any link, to be checked on reading)."""
        return os.path.lexists(path)

    def is_file(self, path: Path) -> bool:
        return self.exists(path) and self.inside(path).is_file()

    def is_dir(self, path: Path) -> bool:
        return self.exists(path) and self.inside(path).is_dir()

    def read(self, path: Path, cap: int = MAX_FILE_BYTES) -> tuple[bytes, int]:
        """``(content, permission bits)`` of the regular file at ``path``."""
        real = self.inside(path)
        info = real.stat()
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"{path} is not a regular file.")
        if info.st_size > cap:
            raise ValueError(f"{path} holds {info.st_size} bytes; a task file may hold at most {cap}.")
        with open(real, "rb") as fh:
            data = fh.read(cap + 1)
        if len(data) > cap:
            raise ValueError(f"{path} holds more than {cap} bytes; a task file may hold at most {cap}.")
        self.total += len(data)
        if self.total > MAX_TASK_BYTES:
            raise ValueError(f"{self.given}: the task's files hold more than {MAX_TASK_BYTES} bytes in all.")
        return data, stat.S_IMODE(info.st_mode)

    def text(self, path: Path, cap: int = MAX_TEXT_BYTES) -> str:
        data, _ = self.read(path, cap)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"{path} is not UTF-8 text: {exc}") from exc

    def tree(self, top: Path, skip: tuple[str, ...] = ()) -> dict[str, Any]:
        """``relative path -> (bytes, mode)`` of the regular files under ``top``. Links are not
        followed; one that leads out of the task is an error, one within it is left out."""
        files: dict[str, Any] = {}
        if not self.is_dir(top):
            return files
        start = self.inside(top)
        for folder, dirs, names in os.walk(start, followlinks=False):
            for name in sorted(dirs) + sorted(names):
                path = Path(folder) / name
                if path.is_symlink():
                    self.inside(path)  # raises for a link out of the task
                    logger.debug("%s: the link %s is left out of the task's files", self.given, path)
            dirs.sort()
            for name in sorted(names):
                path = Path(folder) / name
                rel = path.relative_to(start).as_posix()
                if path.is_symlink() or rel in skip or not stat.S_ISREG(path.lstat().st_mode):
                    continue
                files[rel] = self.read(path)
        return files


def _toml(reader: TaskReader, path: Path) -> dict[str, Any]:
    try:
        import tomllib  # Python 3.11+
    except ImportError:  # pragma: no cover - 3.10
        try:
            import tomli as tomllib  # type: ignore[no-redef]
        except ImportError as exc:
            from gem.errors import missing_extra

            raise missing_extra("Reading task.toml on Python 3.10", "terminal", "tomli") from exc
    try:
        return tomllib.loads(reader.text(path))
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path} is not valid TOML: {exc}") from exc


def _section(root: Path, config: dict[str, Any], name: str) -> dict[str, Any]:
    value = config.get(name, {})
    if not isinstance(value, dict):
        raise ValueError(f"{root}: [{name}] must be a table, got {type(value).__name__}.")
    return value


def _seconds(root: Path, where: str, value: Any) -> float:
    return check_seconds(value, f"{root}: {where}")


def _turns(root: Path, where: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_TURNS:
        raise ValueError(f"{root}: {where} must be an int from 1 to {MAX_TURNS}, got {value!r}.")
    return value


def is_task_dir(path: Union[str, Path]) -> bool:
    p = Path(path)
    return (p / "task.toml").is_file() or (p / "task.yaml").is_file()


def load_task(path: Union[str, Path], verifier: str = "auto") -> TerminalTask:
    """One task directory (Harbor or Terminal-Bench layout).

    ``verifier="script"`` grades with ``tests/test.sh`` even where ``tests/gem_checks.py`` is
    there too (as Harbor itself would); ``"auto"`` prefers the checks.
    """
    if verifier not in VERIFIERS:
        raise ValueError(f"verifier must be one of {VERIFIERS}, got {verifier!r}.")
    root = Path(path)
    if os.path.lexists(root / "task.toml"):
        return _load_harbor(root, verifier)
    if os.path.lexists(root / "task.yaml"):
        return _load_tbench(root)
    raise ValueError(f"{root} is not a task directory: it has neither task.toml (Harbor) nor task.yaml (Terminal-Bench).")


def load_tasks(path: Union[str, Path], verifier: str = "auto") -> list[TerminalTask]:
    """A task directory, or a directory of task directories (sorted by name)."""
    root = Path(path)
    if not root.is_dir():
        raise FileNotFoundError(f"No task directory at {str(path)!r}.")
    if is_task_dir(root):
        return [load_task(root, verifier)]
    tasks = [load_task(p, verifier) for p in sorted(root.iterdir()) if p.is_dir() and is_task_dir(p)]
    if not tasks:
        raise ValueError(f"{root} holds no task directories (each needs a task.toml or task.yaml).")
    return tasks


def _name(root: Path) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in root.name)


def _difficulty(value: Any) -> str:
    value = str(value or "medium").lower()
    return value if value in ("easy", "medium", "hard") else "hard"


def _mutable(root: Path, value: Any) -> tuple:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) and v for v in value):
        raise ValueError(f"{root}/task.toml: [gem] mutable must be a list of paths or glob patterns, got {value!r}.")
    return tuple(value)


def _load_harbor(root: Path, verifier_kind: str = "auto") -> TerminalTask:
    reader = TaskReader(root)
    config = _toml(reader, root / "task.toml")
    meta, agent, verifier = (_section(root, config, name) for name in ("metadata", "agent", "verifier"))
    env_cfg, gem_cfg = _section(root, config, "environment"), _section(root, config, "gem")
    env_dir = root / "environment"
    tests_dir = root / "tests"
    container = None
    in_sandbox = gem_cfg.get("sandbox", False)
    if not isinstance(in_sandbox, bool):
        raise ValueError(f"{root}: [gem] sandbox must be true or false, got {in_sandbox!r}.")
    if not in_sandbox and (env_cfg.get("docker_image") or any(reader.is_file(env_dir / f) for f in _CONTAINER_FILES)):
        container = ContainerSpec(context_dir=str(reader.inside(env_dir)) if reader.is_dir(env_dir) else None,
                                  image=env_cfg.get("docker_image"), workdir=str(gem_cfg.get("workdir", "/app")),
                                  tests_dir=str(reader.inside(tests_dir) if reader.exists(tests_dir) else tests_dir))
    checks = tests_dir / CHECKS_FILE
    test_timeout = _seconds(root, "[verifier] timeout_sec", verifier.get("timeout_sec", 60.0))
    if reader.is_file(checks) and container is None and verifier_kind == "auto":
        kind, tests = "checks", reader.text(checks)
        test_timeout = _seconds(root, "[gem] test_timeout", gem_cfg.get("test_timeout", test_timeout))
    elif reader.is_file(tests_dir / "test.sh"):
        kind, tests = "script", reader.tree(tests_dir)
    else:
        raise ValueError(f"{root}: no tests/test.sh (or tests/{CHECKS_FILE}) to verify the task with.")
    workspace_dir = env_dir / FILES_DIR if in_sandbox and reader.is_file(env_dir / "Dockerfile") else env_dir
    solve = root / "solution" / "solve.sh"
    return TerminalTask(
        name=_name(root),
        instruction=reader.text(root / "instruction.md"),
        files={} if container else reader.tree(workspace_dir),
        tests=tests,
        solution=reader.text(solve) if reader.is_file(solve) else "",
        setup=str(gem_cfg.get("setup", "")),
        difficulty=_difficulty(meta.get("difficulty")),
        category=str(meta.get("category", "general")),
        kind=kind,
        time_budget=_seconds(root, "[agent] timeout_sec", agent.get("timeout_sec", 600.0)),
        max_turns=_turns(root, "[gem] max_turns", gem_cfg.get("max_turns", 40)),
        test_timeout=test_timeout,
        container=container,
        source=str(root),
        mutable=_mutable(root, gem_cfg.get("mutable", [])),
    )


def _load_tbench(root: Path) -> TerminalTask:
    import yaml  # Terminal-Bench's format is YAML

    reader = TaskReader(root)
    try:
        config = yaml.safe_load(reader.text(root / "task.yaml")) or {}
    except yaml.YAMLError as exc:
        raise ValueError(f"{root}/task.yaml is not valid YAML: {exc}") from exc
    if not isinstance(config, dict):
        raise ValueError(f"{root}/task.yaml must hold a mapping, got {type(config).__name__}.")
    instruction = config.get("instruction")
    descriptions = config.get("descriptions")
    if instruction is None and isinstance(descriptions, list) and descriptions and isinstance(descriptions[0], dict):
        instruction = descriptions[0].get("description", "")
    tests_dir = root / "tests"
    tests = reader.tree(tests_dir)
    script = root / "run-tests.sh"
    if reader.is_file(script):
        tests["test.sh"] = (reader.read(script)[0], 0o755)
    elif "test.sh" not in tests:
        raise ValueError(f"{root}: no run-tests.sh to verify the task with.")
    solution = root / "solution.sh"
    return TerminalTask(
        name=_name(root),
        instruction=str(instruction or ""),
        tests=tests,
        solution=reader.text(solution) if reader.is_file(solution) else "",
        difficulty=_difficulty(config.get("difficulty")),
        category=str(config.get("category", "general")),
        kind="script",
        time_budget=_seconds(root, "max_agent_timeout_sec", config.get("max_agent_timeout_sec", 600.0)),
        test_timeout=_seconds(root, "max_test_timeout_sec", config.get("max_test_timeout_sec", 60.0)),
        container=ContainerSpec(context_dir=str(reader.root), workdir="/app", test_script="run-tests.sh",
                                tests_dir=str(reader.inside(tests_dir) if reader.exists(tests_dir) else tests_dir)),
        source=str(root),
    )


def _write(path: Path, content: Union[str, bytes], mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    os.chmod(path, mode)


def write_task(task: TerminalTask, root: Union[str, Path]) -> Path:
    """Write ``task`` as a Harbor task directory under ``root``; return its path.

    The directory runs under Harbor as it is (a Dockerfile puts the starting files in ``/app``;
    ``tests/test.sh`` grades and writes ``/logs/verifier/reward.txt`` and ``reward.json``) and
    loads back into GEM with the same tests, inputs and ``mutable`` declaration.
    """
    if task.container is not None:
        raise ValueError(f"task {task.name!r} is a container task; copy its directory instead.")
    from gem.envs.terminal.verify import HARNESS_SOURCE, protected_inputs

    out = Path(root) / task.name
    names = list(task.test_names)
    whole = float(task.test_timeout) * max(1, len(names)) + 30.0
    toml = [
        'version = "1.0"', "", "[metadata]", f"difficulty = {json.dumps(task.difficulty)}",
        f"category = {json.dumps(task.category)}", "", "[agent]", f"timeout_sec = {float(task.time_budget)}", "",
        "[verifier]", f"timeout_sec = {whole}", "", "[gem]", "sandbox = true", f"max_turns = {int(task.max_turns)}",
        f"test_timeout = {float(task.test_timeout)}", f"setup = {json.dumps(task.setup)}",
        f"mutable = {json.dumps(list(task.mutable))}", "",
    ]
    _write(out / "task.toml", "\n".join(toml))
    _write(out / "instruction.md", task.instruction.rstrip("\n") + "\n")
    _write(out / "environment" / "Dockerfile", _DOCKERFILE)
    (out / "environment" / FILES_DIR).mkdir(parents=True, exist_ok=True)
    for rel, spec in task.files.items():
        content, mode = spec if isinstance(spec, tuple) else (spec, 0o644)
        _write(out / "environment" / FILES_DIR / rel, content, mode)
    if task.kind == "checks":
        _write(out / "tests" / CHECKS_FILE, task.tests)
        _write(out / "tests" / RUNNER_FILE, HARNESS_SOURCE)
        _write(out / "tests" / INPUTS_FILE, build_tar(task.files) if task.archive is None else task.archive)
        spec = {"tests": names, "test_timeout": float(task.test_timeout), "protected": protected_inputs(task)}
        _write(out / "tests" / SPEC_FILE, json.dumps(spec, indent=1) + "\n")
        _write(out / "tests" / "test.sh", _TEST_SH, 0o755)
    else:
        for rel, spec in task.tests.items():
            content, mode = spec if isinstance(spec, tuple) else (spec, 0o644)
            _write(out / "tests" / rel, content, mode)
    _write(out / "solution" / "solve.sh", "#!/bin/bash\n" + task.solution.rstrip("\n") + "\n", 0o755)
    return out


def main(argv: Optional[list[str]] = None) -> int:
    """``python -m gem.envs.terminal.harbor export DIR``: write the bundled tasks as Harbor directories;
    ``... check DIR``: load a directory of tasks and list them."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m gem.envs.terminal.harbor", description=main.__doc__)
    parser.add_argument("command", choices=("export", "check"))
    parser.add_argument("directory")
    args = parser.parse_args(argv)
    if args.command == "export":
        from gem.envs.terminal.bundled import bundled_tasks

        for task in bundled_tasks():
            write_task(task, args.directory)
        print(f"wrote {len(bundled_tasks())} tasks under {args.directory}")
        return 0
    for task in load_tasks(args.directory):
        runs = "docker" if task.container else f"sandbox, tests: {task.kind}"
        print(f"{task.name}\t{task.difficulty}\t{runs}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
