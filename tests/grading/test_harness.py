"""gem.grading.harness: the hidden tests' harness run and reader the terminal and SWE envs share,
and its Verdict, a GradeResult with each test's result in details."""

from __future__ import annotations

import json
import pickle
from typing import Any

import pytest

from gem.grading import GradeResult
from gem.grading.harness import HarnessRun, Verdict, run_harness
from gem.sandbox import SandboxError
from gem.sandbox.sandbox import SandboxResult

# A trusted program as the harnesses are: it reads its framed stdin (the header, then as many parts
# as the header says, each after its 8-byte length) and the nonce after them, and writes records.
PROGRAM = r'''
import json, sys
data = sys.stdin.buffer.read()
pos, parts = 0, []
for _ in range(2):
    n = int.from_bytes(data[pos:pos + 8], "little")
    parts.append(data[pos + 8:pos + 8 + n])
    pos += 8 + n
header = json.loads(parts[0])
nonce = data[pos:].decode("ascii")
def emit(record):
    print(nonce + " " + json.dumps(record), flush=True)
print(json.dumps({"test": "a", "passed": True}))              # no nonce: not a verdict
print("0" * 32 + " " + json.dumps({"test": "a", "passed": True}))  # a guessed nonce
emit({"start": True})
for name in header["tests"]:
    emit({"test": name, "passed": parts[1] == b"right answer", "detail": header["note"]})
emit({"test": header["tests"][0], "passed": True, "detail": "a second verdict for the same test"})
'''


def _run(sandbox, payload: bytes) -> HarnessRun:
    header = {"tests": ["a", "b"], "note": "judged here"}
    return run_harness(sandbox, PROGRAM, "<test-harness>", header, [payload], timeout=30, memory_mb=256,
                       output_bytes=1 << 16, name="the test program")


def test_a_real_run_reads_only_the_nonce_lines_and_keeps_each_tests_first_verdict():
    from gem.sandbox.shell_sandbox import shell_sandbox

    run = _run(shell_sandbox(), b"right answer")
    assert run.ungraded is None and run.stop_reason == "ok"
    verdicts = run.first_by("test")
    assert set(verdicts) == {"a", "b"} and all(v["passed"] for v in verdicts.values())
    assert verdicts["a"]["detail"] == "judged here"  # the later record for "a" does not overwrite it
    wrong = _run(shell_sandbox(), b"wrong answer").first_by("test")
    assert not wrong["a"]["passed"] and not wrong["b"]["passed"]  # the unmarked and guessed lines don't count


class FakeSandbox:
    """A sandbox whose run writes ``lines`` (``{nonce}`` replaced by the nonce the caller sent)."""

    def __init__(self, lines: list[str], reason: str = "ok", stderr: str = "", error: Exception | None = None):
        self.lines, self.reason, self.stderr, self.error = lines, reason, stderr, error
        self.calls: list[dict[str, Any]] = []

    def run(self, code: str, stdin: bytes, **limits: Any) -> SandboxResult:
        self.calls.append(dict(limits, stdin=stdin))
        if self.error is not None:
            raise self.error
        nonce = stdin[-32:].decode("ascii")
        stdout = "\n".join(line.replace("{nonce}", nonce) for line in self.lines)
        return SandboxResult(stdout, self.stderr, 0, self.reason, 0.1)


def test_the_stdin_is_the_framed_header_and_parts_then_the_nonce_and_the_limits_are_passed():
    box = FakeSandbox(['{nonce} {"start": 1}'])
    run_harness(box, "pass", "<x>", {"k": 1}, [b"work", b"inputs"], timeout=7, memory_mb=128, output_bytes=999)
    call = box.calls[0]
    head = json.dumps({"k": 1}).encode()
    framed = b"".join(len(p).to_bytes(8, "little") + p for p in (head, b"work", b"inputs"))
    assert call["stdin"][:-32] == framed and len(call["stdin"]) == len(framed) + 32
    assert (call["timeout"], call["memory_mb"], call["output_bytes"], call["max_processes"]) == (7, 128, 999, 64)


@pytest.mark.parametrize("lines, reason, why", [
    ([], "timeout", "the harness did not start (timeout): boom"),
    (['{"start": 1}', '{nonce} {"test": "a", "passed": true}'], "ok", "the harness did not start (ok): boom"),
    (['{nonce} {"start": 1}', '{nonce} {"error": "the tests could not be unpacked"}'], "ok", "the tests could not be unpacked"),
])
def test_a_run_without_a_start_or_with_an_error_is_ungraded(lines, reason, why):
    run = run_harness(FakeSandbox(lines, reason, stderr="boom\n"), "pass", "<x>", {}, [], timeout=1, memory_mb=64,
                      output_bytes=1024)
    assert run.records == [] and isinstance(run.ungraded, Verdict) and isinstance(run.ungraded, GradeResult)
    assert (run.ungraded.status, run.ungraded.correct, run.ungraded.score) == ("error", None, 0.0)
    assert run.ungraded.reason == why and run.ungraded.component == "harness"


@pytest.mark.parametrize("error", [SandboxError("no namespaces"), ValueError("bad limit")])
def test_a_sandbox_that_cannot_run_leaves_the_tests_ungraded(error):
    run = run_harness(FakeSandbox([], error=error), "pass", "<x>", {}, [], timeout=1, memory_mb=64, output_bytes=1024)
    assert not run.ungraded.graded and run.ungraded.component == "sandbox"
    assert run.ungraded.info()["grading_error"] == {"component": "sandbox",
                                                     "reason": f"the sandbox could not run the tests: {error}"}


def test_malformed_records_are_skipped_and_keys_must_be_strings_or_ints():
    lines = ['{nonce} {"start": 1}', "{nonce} not json", "{nonce} 5", '{nonce} ["test", "a"]',
             '{nonce} {"i": true, "status": "ok"}', '{nonce} {"i": 1, "status": "ok"}',
             '{nonce} {"test": ["a"], "passed": true}', '{nonce} {"test": "a", "passed": false}']
    run = run_harness(FakeSandbox(lines), "pass", "<x>", {}, [], timeout=1, memory_mb=64, output_bytes=1024)
    assert run.ungraded is None and len(run.records) == 4
    assert run.first_by("i") == {1: {"i": 1, "status": "ok"}}  # True is not test 1
    assert run.first_by("test") == {"a": {"test": "a", "passed": False}}


# ------------------------------------------------------------------ Verdict
def test_a_verdict_is_a_grade_result_of_its_tests():
    every = Verdict([{"test": "a", "passed": True, "detail": ""}, {"test": "b", "passed": True, "detail": ""}])
    assert isinstance(every, GradeResult) and (every.status, every.correct, every.score) == ("ok", True, 1.0)
    half = Verdict([{"test": "a", "passed": True, "detail": ""}, {"test": "b", "passed": False, "detail": "x"}])
    assert (half.correct, half.score, half.passed, half.total) == (False, 0.5, 1, 2) and half.info() == {"grading": "ok"}
    assert half.details["results"][1] == {"test": "b", "passed": False, "detail": "x"} and half.results is half.details["results"]
    script = Verdict([{"test": "test.sh", "passed": False, "score": 0.25, "detail": ""}])
    assert (script.correct, script.score) == (False, 0.25)
    none = Verdict([])
    assert (none.graded, none.correct, none.score) == (True, False, 0.0)  # no tests: nothing was shown to pass


def test_an_ungraded_verdict_says_why_and_never_scores():
    verdict = Verdict([], graded=False, reason="the workspace could not be exported")
    assert (verdict.graded, verdict.status, verdict.correct, verdict.score) == (False, "error", None, 0.0)
    assert verdict.summary() == "Not graded: the workspace could not be exported"
    assert verdict.to_info() == {"tests_passed": 0, "tests_total": 0, "graded": False, "test_results": [],
                                 "ungraded_reason": "the workspace could not be exported"}


def test_skipped_files_are_details_and_shown():
    verdict = Verdict([{"test": "a", "passed": False, "detail": "wrong output"}])
    verdict.skipped = [f"sock{i} (a socket)" for i in range(12)]
    assert verdict.details["skipped"] == verdict.skipped and len(verdict.skipped) == 12
    summary = verdict.summary()
    assert "[FAIL] a - wrong output" in summary and "sock9 (a socket); and 2 more" in summary
    assert verdict.to_info()["export_skipped"] == verdict.skipped
    with pytest.raises(AttributeError):
        verdict.score = 1.0  # type: ignore[misc]  (the result itself stays frozen)
    assert pickle.loads(pickle.dumps(verdict)).to_info() == verdict.to_info()


def test_verdict_keeps_its_homes():
    import gem.envs.terminal as terminal
    from gem.envs.swe import grading as swe_grading
    from gem.envs.terminal import verify
    from gem.grading import Verdict as from_grading

    assert verify.Verdict is Verdict and terminal.Verdict is Verdict and from_grading is Verdict
    assert swe_grading.Verdict is Verdict
