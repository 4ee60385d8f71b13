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

import builtins as _builtins
import json as _json
import os as _os
import sys as _sys
from _hashlib import hmac_digest as _hmac_digest  # C functions: patching a module changes nothing here
from json.encoder import encode_basestring_ascii as _quote

_write = _os.write
_exit = _os._exit
_type = type
_int_repr = int.__repr__
_id = id


def _encode(value):
    """JSON of None / int / str / list / dict (str keys), with functions captured before any of the
    repository's code ran (a patched ``json`` or ``builtins`` cannot change the report)."""
    t = _type(value)
    if value is None:
        return "null"
    if t is int:
        return _int_repr(value)
    if t is str:
        return _quote(value)
    if t is list:
        return "[" + ",".join([_encode(v) for v in value]) + "]"
    if t is dict:
        return "{" + ",".join([_quote(k) + ":" + _encode(v) for k, v in dict.items(value)]) + "}"
    return _quote("?")


# What pytest itself calls to run a test and report it: replaced by the tested code, the report
# would lie. Their identities are noted before collection and compared at the end.
_WATCHED = (
    ("_pytest.python", "Function", "runtest"), ("_pytest.python", None, "pytest_pyfunc_call"),
    ("_pytest.runner", None, "call_and_report"), ("_pytest.runner", None, "runtestprotocol"),
    ("_pytest.runner", None, "call_runtest_hook"), ("_pytest.runner", None, "pytest_runtest_makereport"),
    ("_pytest.runner", "CallInfo", "from_call"), ("_pytest.reports", "TestReport", "from_item_and_call"),
    ("_pytest.reports", "BaseReport", "passed"), ("_pytest.reports", "BaseReport", "failed"),
    ("_pytest.main", None, "pytest_runtestloop"), ("_pytest.skipping", None, "pytest_runtest_makereport"),
    ("_pytest.terminal", "TerminalReporter", "pytest_runtest_logreport"),
    ("pluggy._callers", None, "_multicall"), ("pluggy._hooks", "HookCaller", "__call__"),
)


def _snapshot():
    out = {}
    for mod, cls, attr in _WATCHED:
        module = _sys.modules.get(mod)
        owner = getattr(module, cls, None) if cls else module
        out[f"{mod}.{cls + '.' if cls else ''}{attr}"] = _id(owner.__dict__.get(attr) if owner is not None and hasattr(owner, "__dict__") else None)
    out.update({f"sys.modules[{name}]": _id(m) for name, m in list(_sys.modules.items())
                if name == "pytest" or name.startswith(("_pytest", "pluggy"))})
    out.update({f"builtins.{name}": _id(v) for name, v in list(vars(_builtins).items()) if not name.startswith("_")})
    return out


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
    _sys.path.extend(p for p in data.get("paths", []) if p not in _sys.path)
    _sys.dont_write_bytecode = True
    records = []
    suspects = []
    try:
        import _pytest.main
        import _pytest.python
        import _pytest.reports
        import _pytest.runner
        import _pytest.skipping
        import _pytest.terminal  # noqa: F401
        import pluggy._callers
        import pluggy._hooks  # noqa: F401
        import pytest
    except ImportError as exc:
        _send(report_fd, key, _encode({"test": test_id, "error": f"pytest is not installed in the sandbox: {exc}"}))
        return
    before = _snapshot()
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

            after = _snapshot()
            changed = sorted(k for k, v in before.items() if after.get(k) != v)
            suspects.extend(f"{k} replaced" for k in changed[:10])

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
                        suspects.append(f"{getattr(obj, '__qualname__', '?')}.{name} equals anything")

    code = pytest.main(["-q", "-p", "no:cacheprovider", "-p", "no:randomly", "-W", "ignore", test_id],
                       plugins=[_Reporter()])
    try:
        code = int(code)
    except Exception:  # noqa: BLE001 - pytest's exit code, replaced
        code = -1
    _send(report_fd, key, _encode({"test": test_id, "exit": code, "records": records, "suspects": suspects[:20]}))


def _send(fd, key, body):
    data = body.encode("ascii")
    line = _hmac_digest(key, data, "sha256").hex().encode("ascii") + b" " + data
    while line:
        line = line[_write(fd, line):]
    _exit(0)


_main()
