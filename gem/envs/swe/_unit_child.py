"""One repository test, run in a fresh interpreter (``python -I -S -B``) started by the supervisor.

This process imports the repository's code, so nothing in it is trusted and nothing it holds is
secret: it gets on stdin only its own test's source (no expected values, no nonce, no other test)
and writes what the test's checks observed to stdout, the pipe the supervisor reads for this test
alone. It decides nothing: GEM's process compares the observations with the expected values.

Input (JSON): ``source`` (the test module: imports and this one test function), ``test`` (the
function's name), ``paths`` (directories to append to ``sys.path``: the interpreter's
site-packages, read without running any ``.pth`` or ``sitecustomize``).

Output (JSON): ``{"observations": [tagged, ...], "error": null | "Type: message"}``. Each tagged
value is ``["int", "3"]``, ``["str", "x"]``, ``["list", [...]]``, ``["raised", [classes], message]``,
``["object", "type name"]`` ... (see :mod:`gem.envs.swe.values`).
"""

import builtins as _b
import json as _json
import os as _os
import sys as _sys

_BUILTIN_EXC = {cls: name for name, cls in vars(_b).items() if isinstance(cls, type) and issubclass(cls, BaseException)}
_type = type
_str_of_exc = BaseException.__str__
_MAX_NODES = 100_000


def _encode(value, budget):
    """``value`` as a tagged JSON node; exact built-in types only (anything else is opaque)."""
    budget[0] -= 1
    if budget[0] < 0:
        raise OverflowError("too many values")
    t = _type(value)
    if value is None:
        return ["none"]
    if t is bool:
        return ["bool", value is True]
    if t is int:
        return ["int", int.__repr__(value)]
    if t is float:
        return ["float", float.__repr__(value)]
    if t is str:
        return ["str", str.__str__(value)]
    if t is bytes:
        return ["bytes", bytes.hex(value)]
    if t in (list, tuple, set, frozenset):
        items = list.__iter__(value) if t is list else (tuple.__iter__(value) if t is tuple else
                                                       (set.__iter__(value) if t is set else frozenset.__iter__(value)))
        return [t.__name__, [_encode(x, budget) for x in items]]
    if t is dict:
        return ["dict", [[_encode(k, budget), _encode(v, budget)] for k, v in dict.items(value)]]
    try:
        name = _type.__getattribute__(t, "__qualname__")
        name = name if _type(name) is str else "?"
    except BaseException:  # noqa: BLE001 - a hostile metaclass
        name = "?"
    return ["object", name[:200]]


def _observe(fn):
    """Call ``fn`` and return what it returned or raised, tagged."""
    try:
        value = fn()
    except BaseException as exc:  # noqa: BLE001 - raising is an observation
        classes = [_BUILTIN_EXC[c] for c in _type(exc).__mro__ if c in _BUILTIN_EXC]
        try:
            message = _str_of_exc(exc)
            message = message[:2000] if _type(message) is str else None
        except BaseException:  # noqa: BLE001
            message = None
        return ["raised", classes, message]
    try:
        return _encode(value, [_MAX_NODES])
    except (OverflowError, RecursionError):
        return ["object", "(too large to observe)"]


def _main():
    data = _json.loads(_sys.stdin.buffer.read().decode("utf-8"))
    null = _os.open(_os.devnull, _os.O_RDWR)
    _os.dup2(null, 0)
    _sys.setrecursionlimit(3000)
    observations = []
    error = None
    namespace = {"__name__": "gem_test_module", "__builtins__": _b,
                 "_gem_check": lambda fn: observations.append(_observe(fn))}
    try:
        _sys.path[:0] = [_os.getcwd()]
        _sys.path.extend(p for p in data.get("paths", []) if p not in _sys.path)
        _sys.dont_write_bytecode = True
        exec(compile(data["source"], data.get("filename", "test.py"), "exec"), namespace)
        namespace[data["test"]]()
    except BaseException as exc:  # noqa: BLE001 - a test that errors is an observation
        error = f"{_BUILTIN_EXC.get(_type(exc), 'an exception of a type of its own')}"
        try:
            message = _str_of_exc(exc)
            if _type(message) is str and message:
                error += ": " + message[:500]
        except BaseException:  # noqa: BLE001
            pass
    out = _json.dumps({"observations": observations, "error": error}).encode("utf-8")
    while out:
        out = out[_os.write(1, out):]
    _os._exit(0)


_main()
