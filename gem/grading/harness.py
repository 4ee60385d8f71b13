"""Hidden tests run by a harness in a fresh sandbox run, their verdicts read here.

The terminal and SWE envs grade a workspace the same way: a trusted program (the terminal
harness, the SWE test supervisor) is started in a new :meth:`~gem.sandbox.Sandbox.run`; its stdin
carries length-prefixed parts (a JSON header, the exported workspace, the task's pristine files)
and, last, a fresh random nonce. Only stdout lines that start with the nonce count, so nothing the
agent's code prints can pass for a verdict. :func:`run_harness` does the run and the reading;
each env decides what a record means for its tests.

The result is a :class:`Verdict`: a :class:`~gem.grading.result.GradeResult` whose ``details``
hold one ``{"test", "passed", "detail"}`` per test (``details["results"]``) and what the export
left out (``details["skipped"]``). ``correct`` when every test passed, ``score`` the share passed
(or a script test's own score); ungraded (``status="error"``) when the harness could not run.
"""

from __future__ import annotations

import dataclasses
import json
import secrets
from typing import Any, Iterable, Optional, Sequence

from gem.grading.result import GradeResult
from gem.sandbox import Sandbox, SandboxError
from gem.sandbox.shell_sandbox import compiled_cell


class Verdict(GradeResult):
    """The outcome of running a task's hidden tests: a :class:`GradeResult` with the tests' results.

    ``Verdict(results, graded=True, reason="", skipped=None, component="harness")``:

    * ``results``: one ``{"test", "passed", "detail"}`` per test, in order (a script test may add
      its own ``score``); kept in ``details["results"]``.
    * ``graded=False``: grading itself could not run (the sandbox failed, the workspace could not
      be exported); ``reason`` says why and ``component`` what failed. Ungraded scores 0 and is
      not a failure of the agent.
    * ``reason`` on a graded verdict: why the tests were judged as they were (a refused run).
    * ``skipped``: what the workspace held that was not exported to the tests (sockets, fifos,
      device nodes, files over the size limit, trees nested too deep), one line each; kept in
      ``details["skipped"]``.
    """

    reason: str

    def __init__(
        self,
        results: Iterable[dict[str, Any]],
        graded: bool = True,
        reason: str = "",
        skipped: Optional[Sequence[str]] = None,
        component: str = "harness",
    ) -> None:
        results = list(results)
        details: dict[str, Any] = {"results": results, "skipped": list(skipped or [])}
        if not graded:
            super().__init__("error", None, component, str(reason), details=details)
            return
        passed = sum(1 for r in results if r.get("passed"))
        if len(results) == 1 and isinstance(results[0].get("score"), (int, float)):
            score = float(results[0]["score"])  # a script test's own score
        else:
            score = passed / len(results) if results else 0.0
        super().__init__("ok", bool(results) and passed == len(results), None, str(reason), score, details)

    @property
    def results(self) -> list[dict[str, Any]]:
        """One ``{"test", "passed", "detail"}`` per test, in order."""
        return self.details["results"]

    @property
    def skipped(self) -> list[str]:
        """What the workspace held that was not exported to the tests, one line each."""
        return self.details["skipped"]

    @skipped.setter
    def skipped(self, value: Sequence[str]) -> None:
        self.details["skipped"] = list(value)  # type: ignore[index]  (a Verdict's details are its own dict)

    @property
    def passed(self) -> int:
        return sum(1 for r in self.results if r.get("passed"))

    @property
    def total(self) -> int:
        return len(self.results)

    def summary(self) -> str:
        """The tests' results in words, as the agent is shown them."""
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
        """The keys the terminal and SWE envs put in ``info``."""
        return {"tests_passed": self.passed, "tests_total": self.total, "graded": self.graded,
                "test_results": [dict(r) for r in self.results], **({"ungraded_reason": self.reason} if not self.graded else {}),
                **({"export_skipped": list(self.skipped)} if self.skipped else {})}


@dataclasses.dataclass(frozen=True)
class HarnessRun:
    """What a harness run said.

    Attributes:
        records: the nonce-marked JSON objects it wrote after it started, in order.
        stop_reason: why the run stopped (the sandbox's ``reason``: ``ok``, ``timeout``, ...).
        ungraded: set when no verdict can be read from the run (the sandbox could not run it, the
            harness reported an error or never started); ``records`` is then empty.
    """

    records: list[dict[str, Any]]
    stop_reason: str = "ok"
    ungraded: Optional[Verdict] = None

    def first_by(self, key: str) -> dict[Any, dict[str, Any]]:
        """``record[key] -> record`` for the records that have a string or int ``key``; the
        first record for a value wins (a later one cannot overwrite a verdict)."""
        out: dict[Any, dict[str, Any]] = {}
        for record in self.records:
            value = record.get(key)
            if isinstance(value, (str, int)) and not isinstance(value, bool) and value not in out:
                out[value] = record
        return out


def run_harness(
    sandbox: Sandbox,
    source: str,
    filename: str,
    header: dict[str, Any],
    parts: Sequence[bytes],
    *,
    timeout: float,
    memory_mb: int,
    output_bytes: int,
    name: str = "the harness",
) -> HarnessRun:
    """Run the trusted program ``source`` in a fresh sandbox run and read its verdict lines.

    Its stdin: the JSON ``header`` and each of ``parts``, each after its length (8 bytes, little
    endian), then a fresh nonce. The program writes ``{"start": ...}`` once it has read its
    input, ``{"error": ...}`` when it cannot grade, and one record per test; each line begins
    with the nonce. ``name`` names the program in an ungraded verdict's reason.
    """
    nonce = secrets.token_hex(16)
    framed = [json.dumps(header).encode("utf-8"), *parts]
    stdin = b"".join(b for part in framed for b in (len(part).to_bytes(8, "little"), part)) + nonce.encode("ascii")
    try:
        result = sandbox.run(compiled_cell(source, filename), stdin, timeout=timeout, memory_mb=memory_mb,
                             max_processes=64, file_size_mb=64, output_bytes=output_bytes)
    except (SandboxError, ValueError) as exc:
        return HarnessRun([], ungraded=Verdict([], graded=False, reason=f"the sandbox could not run the tests: {exc}",
                                               component="sandbox"))
    started = False
    records: list[dict[str, Any]] = []
    prefix = nonce + " "
    for line in result.stdout.splitlines():
        if not line.startswith(prefix):
            continue
        try:
            record = json.loads(line[len(prefix):])
        except ValueError:
            continue
        if not isinstance(record, dict):
            continue
        if "error" in record:
            return HarnessRun([], result.reason, Verdict([], graded=False, reason=str(record["error"])))
        if "start" in record:
            started = True
        else:
            records.append(record)
    if not started:
        why = f"{name} did not start ({result.reason}): {result.stderr.strip()[-300:]}"
        return HarnessRun([], result.reason, Verdict([], graded=False, reason=why))
    return HarnessRun(records, result.reason)


__all__ = ["HarnessRun", "Verdict", "run_harness"]
