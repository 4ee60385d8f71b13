"""Attacks on the sandbox by the code it runs: each test is one that worked before its fix.

* Session status forgery: a cell's status line comes from the session's own process, which the
  cell's code controls. A cell that writes "exited 0, nothing else runs" itself returns at once
  and goes on running after its result (outside any cell's wall-time limit). The caller must
  freeze the session after every cell, whatever the status line says.
"""

from __future__ import annotations

import time

import pytest

from gem.utils.sandbox import Sandbox, SandboxLimits


@pytest.fixture(scope="module")
def box():
    sb = Sandbox(SandboxLimits(timeout=20), slots=4)
    try:
        yield sb
    finally:
        sb.close()


# Writes a forged status line ("exit 0, 0 s of CPU, nothing else runs") to every pipe this process
# holds open for writing but its stdout and stderr (the cell's status pipe is one of them), then
# keeps recording the time for 1.5 s.
FORGE_STATUS = r"""
import fcntl, os, stat, time
for name in os.listdir("/proc/self/fd"):
    fd = int(name)
    try:
        if fd > 2 and stat.S_ISFIFO(os.fstat(fd).st_mode) and fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY:
            os.write(fd, b"0 0.0 0\n")
    except OSError:
        pass
STAMPS = []
t0 = time.time()
while time.time() - t0 < 1.5:
    STAMPS.append(time.time())
    time.sleep(0.005)
"""


def test_a_cell_that_forges_its_status_does_not_run_after_its_result(box):
    with box.session(timeout=10) as s:
        first = s.run(FORGE_STATUS)
        returned = time.time()
        assert first.reason == "ok"
        time.sleep(0.6)
        resumed = time.time()
        second = s.run("print(repr([t for t in STAMPS]))")
        assert second.reason == "ok", second.stderr
        stamps = eval(second.stdout)  # noqa: S307 - our own repr of floats
        assert stamps, "the first cell recorded nothing"
        between = [t for t in stamps if returned + 0.05 < t < resumed - 0.01]
        assert not between, f"the first cell ran {len(between)} times between its result and the next cell"
