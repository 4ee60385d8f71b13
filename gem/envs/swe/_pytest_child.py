"""One pytest test id, run in a fresh interpreter (``python -I -S -B``) started by the supervisor.

pytest imports the repository's code into this process, so what this process reports can be forged
by code written against it (see docs/swe.md, "What holds for pytest instances"). What it does to
make tampering detectable:

* the installed ``pytest`` is imported before the workspace is put on ``sys.path`` (a ``pytest.py``
  of the workspace never stands in for it); no ``sitecustomize``/``usercustomize``/``.pth`` runs;
* the report travels on a private duplicate of the pipe it was given as fd 1, and fds 1 and 2
  then point at ``/dev/null``: bytes the tested code writes to the descriptors it inherited never
  land in the report;
* the report is signed with an HMAC key (per test, from GEM's process); GEM's process refuses a
  report that is not exactly one signed record for this test id. The key is taken out of the input
  before collection starts and lives only in this boot code's frame: a generic spray or patch
  cannot sign, code that searches this process's frames for it can;
* at the end, a class defined by the repository (outside its tests) whose ``__eq__`` says a fresh
  object of an unrelated class is equal, or whose ``__ne__`` says it is not different, is reported
  as tampering: such an object passes any ``assert x == expected``.

Input (JSON): ``test_id``, ``key`` (hex), ``paths`` (site-packages directories).
"""

import hashlib as _hashlib
import hmac as _hmac
import json as _json
import os as _os
import sys as _sys


def _main():
    data = _json.loads(_sys.stdin.buffer.read().decode("utf-8"))
    null = _os.open(_os.devnull, _os.O_RDWR)
    _os.dup2(null, 0)
    report_fd = _os.dup(1)  # not inheritable
    _os.dup2(null, 1)
    _os.dup2(null, 2)
    key = bytes.fromhex(data.pop("key"))
    test_id = data["test_id"]
    ws = _os.getcwd()
    _sys.path.extend(data.get("paths", []))
    _sys.dont_write_bytecode = True
    records = []
    suspects = []
    try:
        import pytest
    except ImportError as exc:
        body = _json.dumps({"test": test_id, "error": f"pytest is not installed in the sandbox: {exc}"})
        _send(report_fd, key, body)
        return
    _sys.path.insert(0, ws)

    class _Sentinel:
        pass

    def _test_file(path):
        rel = _os.path.relpath(path, ws)
        parts = rel.split(_os.sep)
        base = parts[-1]
        return (any(p in ("tests", "test", "testing") for p in parts[:-1]) or base.startswith("test_")
                or base.endswith("_test.py") or base == "conftest.py")

    class _Reporter:
        def pytest_runtest_logreport(self, report):
            records.append([str(report.nodeid), str(report.when), str(report.outcome)])

        def pytest_collectreport(self, report):
            if report.failed:
                records.append([str(report.nodeid), "collect", "failed"])

        def pytest_sessionfinish(self, session, exitstatus):
            import gc

            for obj in gc.get_objects():
                if not isinstance(obj, type):
                    continue
                for name in ("__eq__", "__ne__"):
                    fn = obj.__dict__.get(name)
                    code = getattr(fn, "__code__", None)
                    filename = getattr(code, "co_filename", "")
                    if not isinstance(filename, str) or not filename.startswith(ws + _os.sep) or _test_file(filename):
                        continue
                    try:
                        said = fn(_Sentinel(), _Sentinel())
                        claims = bool(said) if name == "__eq__" else (said is not NotImplemented and not said)
                    except Exception:  # noqa: BLE001 - a real __eq__ looks at its operands
                        claims = False
                    if claims:
                        suspects.append(f"{getattr(obj, '__qualname__', '?')}.{name}")

    code = pytest.main(["-q", "-p", "no:cacheprovider", "-p", "no:randomly", "-W", "ignore", test_id],
                       plugins=[_Reporter()])
    body = _json.dumps({"test": test_id, "exit": int(code), "records": records, "suspects": sorted(set(suspects))[:20]})
    _send(report_fd, key, body)


def _send(fd, key, body):
    line = (_hmac.new(key, body.encode("utf-8"), _hashlib.sha256).hexdigest() + " " + body).encode("utf-8")
    while line:
        line = line[_os.write(fd, line):]
    _os._exit(0)


_main()
