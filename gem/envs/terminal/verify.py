"""Grade a workspace against hidden tests in a fresh sandbox run (the env's side of the boundary).

The agent's session never holds the tests. :func:`verify_task` starts a new
:meth:`~gem.sandbox.Sandbox.run` whose program is the harness
(:mod:`gem.envs.terminal._harness`) and whose stdin carries the tests, the exported workspace and
a fresh random nonce, last. Only lines of the run's stdout that start with the nonce count; tests
with no verdict (the harness was killed, it timed out) count as failed. The run and the reading
are :func:`gem.grading.harness.run_harness`'s, shared with the SWE envs; the result is a
:class:`~gem.grading.harness.Verdict` (a :class:`~gem.grading.result.GradeResult`), importable
from here as before.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Optional

from gem.grading import harness
from gem.grading.harness import Verdict
from gem.sandbox.shell_sandbox import RUNTIME_SOURCE
from gem.sandbox import Sandbox

logger = logging.getLogger(__name__)

EXPORT_SOURCE = Path(__file__).with_name("_export.py").read_text(encoding="utf-8")
HARNESS_SOURCE = "\n".join([RUNTIME_SOURCE, EXPORT_SOURCE, Path(__file__).with_name("_harness.py").read_text(encoding="utf-8")])
_SLACK = 15.0


def run_harness(
    sandbox: Sandbox,
    header: dict[str, Any],
    workspace_tar: bytes,
    test_names: list[str],
    timeout: float,
    memory_mb: int = 1024,
    inputs_tar: Optional[bytes] = None,
) -> Verdict:
    """Run the harness on ``workspace_tar`` with ``header`` (tests and their kind); parse verdicts.

    ``inputs_tar`` holds the task's pristine starting files: the checks read them with
    ``original()``, and those named in ``header["protected"]`` must be in the workspace unchanged.
    """
    parts = [workspace_tar]
    if inputs_tar is not None:
        header = dict(header, inputs=True)
        parts.append(inputs_tar)
    run = harness.run_harness(sandbox, HARNESS_SOURCE, "<gem-harness>", header, parts, timeout=timeout,
                              memory_mb=memory_mb, output_bytes=4 << 20, name="the harness")
    if run.ungraded is not None:
        return run.ungraded
    verdicts = run.first_by("test")
    results = []
    for name in test_names:
        rec = verdicts.get(name)
        if rec is None:
            rec = {"test": name, "passed": False, "detail": f"no verdict (the harness stopped: {run.stop_reason})"}
        if rec.get("ungraded"):  # the test could not give a verdict (a reward file holding inf or nan)
            return Verdict([], graded=False, reason=str(rec["ungraded"]), component="tests")
        rec = {"test": name, "passed": rec.get("passed") is True, "detail": str(rec.get("detail") or ""),
               **({"score": rec["score"]} if isinstance(rec.get("score"), (int, float)) else {})}
        results.append(rec)
    return Verdict(results)


def protected_inputs(task: Any, inputs_tar: Optional[bytes] = None) -> list[str]:
    """The starting files of ``task`` that grading requires unchanged (all those it does not
    declare ``mutable``; none for a task that does not check its inputs)."""
    if not getattr(task, "checks_inputs", True):
        return []
    from gem.envs.terminal.task import is_mutable, read_tar

    files = read_tar(inputs_tar if inputs_tar is not None else task.files_tar)
    return sorted(p for p in files if not is_mutable(p, tuple(getattr(task, "mutable", ()))))


def verify_task(sandbox: Sandbox, task: Any, workspace_tar: Optional[bytes], overlay: Optional[dict] = None,
                inputs_tar: Optional[bytes] = None) -> Verdict:
    """Grade ``workspace_tar`` against ``task``'s hidden tests (checks or a Harbor test script).

    ``inputs_tar`` is the task's pristine starting state (by default its ``files``); the tests
    judge against it, never against the agent's copy, and every starting file the task does not
    declare ``mutable`` must be unchanged in the workspace.
    """
    if workspace_tar is None:
        return Verdict([], graded=False, reason="the workspace could not be exported")
    if inputs_tar is None:
        inputs_tar = task.files_tar
    names = list(task.test_names)
    header: dict[str, Any] = {"kind": task.kind, "tests": [{"name": n} for n in names],
                              "test_timeout": task.test_timeout, "command_timeout": task.test_timeout}
    if task.kind == "checks":
        header["source"] = task.tests
    elif task.kind == "script":
        import base64

        from gem.envs.terminal.task import build_tar

        header["tests_tar"] = base64.b64encode(build_tar(task.tests)).decode("ascii")
    elif task.kind == "unit":
        header["runner"] = task.runner
    if overlay:
        header["overlay"] = overlay
    header["protected"] = protected_inputs(task, inputs_tar)
    timeout = task.test_timeout * max(1, len(names)) + _SLACK
    return run_harness(sandbox, header, workspace_tar, names, timeout, inputs_tar=inputs_tar)
