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
* every test file of the workspace is compiled by GEM inside pytest's import hook, its comparisons
  and assertion calls going through the guard of :mod:`gem.envs.swe._equality` (this program's
  first part): an operand the test did not write that is equal to what it was never given is
  reported;
* the classes of every module loaded before the workspace's code runs (the standard library,
  pytest and its installed plugins) and the module-level functions of the comparison-relevant ones
  are held at that point and compared at the end; the tests that ran must be functions GEM
  compiled, from modules it compiled, still holding its guard;
* at the end, a class defined by the repository (outside its tests) whose ``__eq__`` says a fresh
  object of an unrelated class is equal, or whose ``__ne__`` says it is not different, is reported.

Input (JSON): ``test_id``, ``key`` (hex), ``paths`` (site-packages directories).
"""

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


# Modules whose functions decide comparisons and verdicts: their module-level functions and classes
# are watched too (every class of every module loaded before the repository's code is watched).
_MODULE_LEVEL = ("builtins", "operator", "functools", "copy", "math", "dataclasses", "enum", "numbers", "decimal",
                 "fractions", "collections", "types", "inspect", "unittest", "pytest", "_pytest", "pluggy")
# Class attributes that decide comparisons, watched whether or not they are callables.
_DUNDERS = frozenset({"__eq__", "__ne__", "__hash__", "__bool__", "__len__", "__contains__", "__lt__", "__le__",
                      "__gt__", "__ge__", "__instancecheck__", "__subclasscheck__", "__getattr__", "__getattribute__",
                      "__class__", "__iter__", "__getitem__", "__call__", "__enter__", "__exit__"})
# Comparison-relevant modules imported before the repository's code runs, so that what they hold
# is what the interpreter installed (and is watched).
_PREIMPORT = ("unittest", "unittest.mock", "operator", "decimal", "fractions", "numbers", "enum", "dataclasses",
              "collections", "functools", "copy", "math")


_MISSING = object()


def _snapshot(names):
    """What pytest and the standard library run a test and compare with: ``name -> object`` (held,
    so that an address freed later cannot be taken for the same object)."""
    out = {}
    for mod, cls, attr in _WATCHED:
        module = _sys.modules.get(mod)
        owner = getattr(module, cls, None) if cls else module
        out[f"{mod}.{cls + '.' if cls else ''}{attr}"] = (
            owner.__dict__.get(attr) if owner is not None and hasattr(owner, "__dict__") else None)
    for name in names:
        module = _sys.modules.get(name, _MISSING)
        out[f"sys.modules[{name}]"] = module
        space = getattr(module, "__dict__", None) if module is not _MISSING else None
        if type(space) is not dict:
            continue
        top = name.split(".")[0] in _MODULE_LEVEL
        for key, value in list(space.items()):
            if isinstance(value, type):
                if top:
                    out[f"{name}.{key}"] = value
                if getattr(value, "__module__", None) != name:
                    continue
                for attr, member in list(type.__dict__["__dict__"].__get__(value).items()):
                    if attr in _DUNDERS or callable(member) or isinstance(member, (staticmethod, classmethod, property)):
                        out[f"{name}.{key}.{attr}"] = member
            elif top and callable(value):
                out[f"{name}.{key}"] = value
    return out


def _tampered(before, after):
    """What changed between two snapshots: replaced entries, and comparison methods added to a
    watched class. pytest patches some of its own classes with its own functions when it configures
    (``legacypath``): a ``_pytest`` class attribute set to an object pytest already had is not
    tampering."""
    known = {_id(v) for v in before.values()}
    out = []
    for k, v in before.items():
        new = after.get(k, _MISSING)
        if new is v:
            continue
        if k.startswith("_pytest.") and not k.startswith("_pytest.assertion") and _id(new) in known:
            continue
        out.append(f"{k} replaced")
    for k in after:
        if k not in before and k.rsplit(".", 1)[-1] in _DUNDERS:
            out.append(f"{k} added")
    return sorted(out)


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
        import _pytest.assertion.rewrite as _rw
        import _pytest.main
        import _pytest.python
        import _pytest.reports
        import _pytest.runner
        import _pytest.skipping
        import _pytest.terminal  # noqa: F401
        import pluggy._callers
        import pluggy._hooks  # noqa: F401
        import pytest  # noqa: F401 - with it, everything pytest exports (approx, raises, ...)
    except ImportError as exc:
        _send(report_fd, key, _encode({"test": test_id, "error": f"pytest is not installed in the sandbox: {exc}"}))
        return
    for name in _PREIMPORT:
        try:
            __import__(name)
        except ImportError:  # an interpreter without it: nothing of it to watch
            pass
    try:
        guard = _install_guard(_rw, ws, suspects)
    except Exception as exc:  # noqa: BLE001 - a pytest whose rewriting GEM cannot hook: no sound verdict
        _send(report_fd, key, _encode({"test": test_id, "error": f"GEM cannot guard comparisons with this pytest: {exc!r}"}))
        return
    names = []
    before = {}

    class _Sentinel:
        def __init__(self):
            self.gem_left = _os.urandom(8)

    class _Other:
        def __init__(self):
            self.gem_right = _os.urandom(8)

    def _test_file(path):
        rel = _os.path.relpath(path, ws)
        parts = rel.split(_os.sep)
        base = parts[-1]
        return (any(p in ("tests", "test", "testing") for p in parts[:-1]) or base.startswith("test_")
                or base.endswith("_test.py") or base == "conftest.py")

    class _Reporter:
        @pytest.hookimpl(tryfirst=True)
        def pytest_load_initial_conftests(self, early_config, parser, args):
            # installed plugins are loaded (and may have patched pytest); no code of the workspace
            # has run: what is here now is what the tests' run must find at the end
            names.extend(_sys.modules)
            before.update(_snapshot(names))
            _sys.path.insert(0, ws)

        def pytest_runtest_logreport(self, report):
            records.append([str(report.nodeid), str(report.when), str(report.outcome)])

        def pytest_collectreport(self, report):
            if report.failed:
                records.append([str(report.nodeid), "collect", "failed"])

        def pytest_sessionfinish(self, session, exitstatus):
            import gc

            if not before:
                suspects.append("GEM's snapshot of pytest was not taken")
            suspects.extend(_tampered(before, _snapshot(names))[:10])
            guard["verify"](session)

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
                        said = fn(_Sentinel(), _Other())
                        claims = said is not NotImplemented and (bool(said) if name == "__eq__" else not said)
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
    _send(report_fd, key, _encode({"test": test_id, "exit": code, "records": records,
                                   "suspects": list(dict.fromkeys(suspects))[:20]}))


def _install_guard(_rw, ws, suspects):
    """Make pytest compile every test file of the workspace (the task's own, as GEM laid it) with its
    comparisons going through the guard (:mod:`gem.envs.swe._equality`). Returns ``verify``,
    called at the end of the session: the tests that ran are functions GEM compiled, from modules it
    compiled, whose guard is still GEM's."""
    import ast
    import types

    hook_cls = _rw.AssertionRewritingHook
    original_rewrite = _rw.rewrite_asserts
    original_should = hook_cls._should_rewrite
    original_bailout = hook_cls._early_rewrite_bailout
    original_exec = hook_cls.exec_module
    for attr in ("exec_module", "_should_rewrite", "_early_rewrite_bailout"):
        if not callable(getattr(hook_cls, attr, None)):
            raise RuntimeError(f"pytest's AssertionRewritingHook has no {attr}")
    # make_guard, CMP_NAME, CALL_NAME, rewrite_comparisons: gem/envs/swe/_equality.py, sent ahead of this file
    cmp, call = make_guard(suspects.append, _os.urandom(32))  # noqa: F821
    names = {CMP_NAME: cmp, CALL_NAME: call}  # noqa: F821
    modules = []
    codes = set()
    keep = []
    prefix = ws + _os.sep

    def is_test_path(fn):
        if not isinstance(fn, str) or not fn.startswith(prefix) or not fn.endswith(".py"):
            return False
        parts = fn[len(prefix):].split(_os.sep)
        base = parts[-1]
        return (base.startswith("test_") or base.endswith("_test.py") or base == "conftest.py"
                or any(p in ("tests", "test", "testing") for p in parts[:-1]))

    def collect(co):
        keep.append(co)
        codes.add(_id(co))
        for const in co.co_consts:
            if isinstance(const, types.CodeType):
                collect(const)

    def compile_test(fn, config):
        with open(fn, "rb") as fh:
            source = fh.read()
        for chains in (True, False):
            tree = ast.parse(source, filename=fn)
            rewrite_comparisons(tree, chains=chains)  # noqa: F821
            original_rewrite(tree, source, fn, config)
            try:
                return compile(tree, fn, "exec", dont_inherit=True)
            except SyntaxError:
                if not chains:
                    raise
        raise AssertionError("unreachable")

    def exec_module(self, module):
        fn = module.__spec__.origin
        if not is_test_path(fn):  # an installed module pytest rewrites (a plugin): as pytest does
            return original_exec(self, module)
        done = getattr(self, "_rewritten_names", None)
        if isinstance(done, dict):
            done[module.__name__] = _rw.Path(fn) if hasattr(_rw, "Path") else fn
        elif isinstance(done, set):
            done.add(module.__name__)
        co = compile_test(fn, self.config)
        collect(co)
        module.__dict__.update(names)
        modules.append(module)
        exec(co, module.__dict__)

    def should_rewrite(self, name, fn, state):
        return is_test_path(fn) or (not original_bailout(self, name, state) and original_should(self, name, fn, state))

    def no_bailout(self, name, state):
        return False  # every module's file is looked at: a test helper under tests/ is compiled by GEM too

    hook_cls.exec_module = exec_module
    hook_cls._should_rewrite = should_rewrite
    hook_cls._early_rewrite_bailout = no_bailout

    def ours(fn):
        for _ in range(32):
            if fn is None:
                return False
            code = getattr(fn, "__code__", None)
            if code is not None and _id(code) in codes:
                return True
            fn = getattr(fn, "__wrapped__", None) or getattr(fn, "__func__", None)
        return False

    def verify(session):
        rewritten = {_id(m) for m in modules}
        for module in modules:
            space = getattr(module, "__dict__", {})
            if any(space.get(k) is not v for k, v in names.items()):
                suspects.append(f"GEM's comparison guard in {module.__name__} replaced")
        roots = [p for p in _sys.path if isinstance(p, str) and (p == ws or p.startswith(prefix))]
        for name, module in list(_sys.modules.items()):
            files = {getattr(module, "__file__", None)}
            files.update(_os.path.join(root, *name.split(".")) + ".py" for root in roots)
            files.update(_os.path.join(root, *name.split("."), "__init__.py") for root in roots)
            if any(is_test_path(f) and _os.path.isfile(f) for f in files if isinstance(f, str)) and _id(module) not in rewritten:
                suspects.append(f"test module {name} was not compiled by GEM (sys.modules tampering?)")
        for item in getattr(session, "items", []) or []:
            module = getattr(item, "module", None)
            if module is not None and _id(module) not in rewritten:
                suspects.append(f"{item.nodeid}: its module was not compiled by GEM")
            fn = getattr(item, "function", None) or getattr(item, "obj", None)
            if fn is not None and not ours(fn):
                suspects.append(f"{item.nodeid}: the test function is not the test file's")

    return {"verify": verify}


def _send(fd, key, body):
    data = body.encode("ascii")
    line = _hmac_digest(key, data, "sha256").hex().encode("ascii") + b" " + data
    while line:
        line = line[_write(fd, line):]
    _exit(0)


_main()
