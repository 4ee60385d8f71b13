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
import os
import stat
from pathlib import Path
from typing import Any, Optional, Union

from gem.envs.terminal.task import ContainerSpec, TerminalTask, build_tar

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


def _toml(path: Path) -> dict[str, Any]:
    try:
        import tomllib  # Python 3.11+
    except ImportError:  # pragma: no cover - 3.10
        try:
            import tomli as tomllib  # type: ignore[no-redef]
        except ImportError as exc:
            from gem.errors import missing_extra

            raise missing_extra("Reading task.toml on Python 3.10", "terminal", "tomli") from exc
    return tomllib.loads(path.read_text(encoding="utf-8"))


def _read_tree(root: Path, skip: tuple[str, ...] = ()) -> dict[str, Any]:
    """``relative path -> (bytes, mode)`` of the regular files under ``root``."""
    files: dict[str, Any] = {}
    if not root.is_dir():
        return files
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and not path.is_symlink() and rel not in skip:
            files[rel] = (path.read_bytes(), stat.S_IMODE(path.stat().st_mode))
    return files


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
    if (root / "task.toml").is_file():
        return _load_harbor(root, verifier)
    if (root / "task.yaml").is_file():
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
    config = _toml(root / "task.toml")
    meta, agent, verifier = config.get("metadata", {}), config.get("agent", {}), config.get("verifier", {})
    env_cfg, gem_cfg = config.get("environment", {}), config.get("gem", {})
    env_dir = root / "environment"
    container = None
    in_sandbox = bool(gem_cfg.get("sandbox", False))
    if not in_sandbox and (env_cfg.get("docker_image") or any((env_dir / f).is_file() for f in _CONTAINER_FILES)):
        container = ContainerSpec(context_dir=str(env_dir) if env_dir.is_dir() else None,
                                  image=env_cfg.get("docker_image"), workdir=str(gem_cfg.get("workdir", "/app")),
                                  tests_dir=str(root / "tests"))
    checks = root / "tests" / CHECKS_FILE
    test_timeout = float(verifier.get("timeout_sec", 60.0))
    if checks.is_file() and container is None and verifier_kind == "auto":
        kind, tests = "checks", checks.read_text(encoding="utf-8")
        test_timeout = float(gem_cfg.get("test_timeout", test_timeout))
    elif (root / "tests" / "test.sh").is_file():
        kind, tests = "script", {k: v for k, v in _read_tree(root / "tests").items()}
    else:
        raise ValueError(f"{root}: no tests/test.sh (or tests/{CHECKS_FILE}) to verify the task with.")
    workspace_dir = env_dir / FILES_DIR if in_sandbox and (env_dir / "Dockerfile").is_file() else env_dir
    solve = root / "solution" / "solve.sh"
    return TerminalTask(
        name=_name(root),
        instruction=(root / "instruction.md").read_text(encoding="utf-8"),
        files={} if container else _read_tree(workspace_dir),
        tests=tests,
        solution=solve.read_text(encoding="utf-8") if solve.is_file() else "",
        setup=str(gem_cfg.get("setup", "")),
        difficulty=_difficulty(meta.get("difficulty")),
        category=str(meta.get("category", "general")),
        kind=kind,
        time_budget=float(agent.get("timeout_sec", 600.0)),
        max_turns=int(gem_cfg.get("max_turns", 40)),
        test_timeout=test_timeout,
        container=container,
        source=str(root),
        mutable=_mutable(root, gem_cfg.get("mutable", [])),
    )


def _load_tbench(root: Path) -> TerminalTask:
    import yaml  # Terminal-Bench's format is YAML

    config = yaml.safe_load((root / "task.yaml").read_text(encoding="utf-8")) or {}
    instruction = config.get("instruction")
    if instruction is None and config.get("descriptions"):
        instruction = config["descriptions"][0].get("description", "")
    tests = _read_tree(root / "tests")
    script = root / "run-tests.sh"
    if script.is_file():
        tests["test.sh"] = (script.read_bytes(), 0o755)
    elif "test.sh" not in tests:
        raise ValueError(f"{root}: no run-tests.sh to verify the task with.")
    solution = root / "solution.sh"
    return TerminalTask(
        name=_name(root),
        instruction=str(instruction or ""),
        tests=tests,
        solution=solution.read_text(encoding="utf-8") if solution.is_file() else "",
        difficulty=_difficulty(config.get("difficulty")),
        category=str(config.get("category", "general")),
        kind="script",
        time_budget=float(config.get("max_agent_timeout_sec", 600.0)),
        test_timeout=float(config.get("max_test_timeout_sec", 60.0)),
        container=ContainerSpec(context_dir=str(root), workdir="/app", tests_dir=str(root / "tests"),
                                test_script="run-tests.sh"),
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
