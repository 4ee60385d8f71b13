"""Grade a workspace against hidden tests in a fresh sandbox run (the env's side of the boundary).

The agent's session never holds the tests. :func:`verify` starts a new
:meth:`~gem.sandbox.Sandbox.run` whose program is the harness
(:mod:`gem.envs.terminal._harness`) and whose stdin carries the tests, the exported workspace and
a fresh random nonce, last. Only lines of the run's stdout that start with the nonce count; tests
with no verdict (the harness was killed, it timed out) count as failed.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import secrets
from pathlib import Path
from typing import Any, Optional

from gem.sandbox.shell_sandbox import RUNTIME_SOURCE, compiled_cell
from gem.sandbox import Sandbox, SandboxError

logger = logging.getLogger(__name__)

EXPORT_SOURCE = Path(__file__).with_name("_export.py").read_text(encoding="utf-8")
HARNESS_SOURCE = "\n".join([RUNTIME_SOURCE, EXPORT_SOURCE, Path(__file__).with_name("_harness.py").read_text(encoding="utf-8")])
_SLACK = 15.0


@dataclasses.dataclass
class Verdict:
    """The outcome of a verification.

    Attributes:
        results: one ``{"test", "passed", "detail"}`` per test, in order.
        graded: False when grading itself could not run (the sandbox failed, the workspace could
            not be exported); ``reason`` says why. An ungraded episode scores 0 but is not a failure.
        skipped: what the workspace held that was not exported to the tests (sockets, fifos,
            device nodes, files over the size limit, trees nested too deep), one line each.
    """

    results: list[dict[str, Any]]
    graded: bool = True
    reason: str = ""
    skipped: list[str] = dataclasses.field(default_factory=list)

    @property
    def passed(self) -> int:
        return sum(1 for r in self.results if r.get("passed"))

    @property
    def total(self) -> int:
        return len(self.results)

    @property
    def score(self) -> float:
        """Share of tests passed (a script test may give a fractional score)."""
        if not self.results or not self.graded:
            return 0.0
        if len(self.results) == 1 and isinstance(self.results[0].get("score"), (int, float)):
            return float(self.results[0]["score"])
        return self.passed / self.total

    def summary(self) -> str:
        if not self.graded:
            return f"Not graded: {self.reason}"
        lines = [f"Tests passed: {self.passed}/{self.total}"]
        for r in self.results:
            mark = "PASS" if r.get("passed") else "FAIL"
            detail = f" - {r['detail'][:200]}" if r.get("detail") and not r.get("passed") else ""
            lines.append(f"  [{mark}] {r['test']}{detail}")
        if self.skipped:
            lines.append("Not exported to the tests: " + "; ".join(self.skipped[:10])
                         + (f"; and {len(self.skipped) - 10} more" if len(self.skipped) > 10 else ""))
        return "\n".join(lines)

    def to_info(self) -> dict[str, Any]:
        return {"tests_passed": self.passed, "tests_total": self.total, "graded": self.graded,
                "test_results": [dict(r) for r in self.results], **({"ungraded_reason": self.reason} if not self.graded else {}),
                **({"export_skipped": list(self.skipped)} if self.skipped else {})}


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
    nonce = secrets.token_hex(16)
    if inputs_tar is not None:
        header = dict(header, inputs=True)
    head = json.dumps(header).encode("utf-8")
    parts = [len(head).to_bytes(8, "little"), head, len(workspace_tar).to_bytes(8, "little"), workspace_tar]
    if inputs_tar is not None:
        parts += [len(inputs_tar).to_bytes(8, "little"), inputs_tar]
    stdin = b"".join(parts + [nonce.encode("ascii")])
    try:
        result = sandbox.run(compiled_cell(HARNESS_SOURCE, "<gem-harness>"), stdin, timeout=timeout, memory_mb=memory_mb, max_processes=64,
                             file_size_mb=64, output_bytes=4 << 20)
    except (SandboxError, ValueError) as exc:
        return Verdict([], graded=False, reason=f"the sandbox could not run the tests: {exc}")
    started = False
    verdicts: dict[str, dict[str, Any]] = {}
    prefix = nonce + " "
    for line in result.stdout.splitlines():
        if not line.startswith(prefix):
            continue
        try:
            record = json.loads(line[len(prefix):])
        except ValueError:
            continue
        if "error" in record:
            return Verdict([], graded=False, reason=str(record["error"]))
        if "start" in record:
            started = True
        elif "test" in record and record["test"] in test_names and record["test"] not in verdicts:
            verdicts[record["test"]] = record
    if not started:
        return Verdict([], graded=False, reason=f"the harness did not start ({result.reason}): {result.stderr.strip()[-300:]}")
    results = []
    for name in test_names:
        rec = verdicts.get(name)
        if rec is None:
            rec = {"test": name, "passed": False, "detail": f"no verdict (the harness stopped: {result.reason})"}
        if rec.get("ungraded"):  # the test could not give a verdict (a reward file holding inf or nan)
            return Verdict([], graded=False, reason=str(rec["ungraded"]))
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
