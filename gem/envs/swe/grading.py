"""Grade a repository workspace: tests run in a sandbox, the verdict is decided here.

The agent's code only ever runs in test child processes inside a fresh sandbox run
(:mod:`gem.envs.swe._supervisor`). For GEM's own runner (``runner="gem"``) a test's child receives
the test's source without any expected value, runs its checks and writes what each call returned
or raised as data (:mod:`gem.envs.swe._unit_child`); :func:`grade_workspace` compares those
observations with the task's expected values, which never leave this process, type-strictly
(:mod:`gem.envs.swe.values`). For pytest instances the child runs pytest and sends a signed
report (:mod:`gem.envs.swe._pytest_child`); the workspace is checked for planted pytest
configuration first. Missing, malformed or unsigned results count as failed; a run that could not
start is ungraded. The run and the reading of its nonce-marked lines are
:func:`gem.grading.harness.run_harness`'s (shared with the terminal envs); the result is a
:class:`~gem.grading.harness.Verdict`, a :class:`~gem.grading.result.GradeResult`.
"""

from __future__ import annotations

import ast
import configparser
import hashlib
import hmac
import io
import json
import logging
import secrets
import tarfile
from functools import lru_cache
from pathlib import Path
from typing import Any, Optional

from gem.envs.swe.checks import SameAsNext
from gem.envs.swe.values import DecodeError, decode, same, show
from gem.grading.harness import Verdict, run_harness
from gem.sandbox.shell_sandbox import RUNTIME_SOURCE
from gem.sandbox import Sandbox

logger = logging.getLogger(__name__)

_HERE = Path(__file__).parent
SUPERVISOR_SOURCE = RUNTIME_SOURCE + "\n" + (_HERE / "_supervisor.py").read_text(encoding="utf-8")
PROGRAMS = {"unit": (_HERE / "_unit_child.py").read_text(encoding="utf-8"),
            "pytest": (_HERE / "_equality.py").read_text(encoding="utf-8") + "\n\n"
            + (_HERE / "_pytest_child.py").read_text(encoding="utf-8")}
_SLACK = 15.0
_PER_TEST_OVERHEAD = 2.0
_CONFIG_FILES = ("pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml")
_STARTUP_FILES = ("sitecustomize.py", "usercustomize.py")


# ------------------------------------------------------------------ the workspace
def _tar_entries(data: bytes) -> dict[str, tuple[str, bytes]]:
    """``path -> (kind, content)`` of a tar: kind ``file``, ``link`` (content: the target) or ``dir``."""
    out: dict[str, tuple[str, bytes]] = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
        for member in tar:
            name = "/".join(p for p in member.name.split("/") if p not in ("", "."))
            if not name:
                continue
            if member.isfile():
                fh = tar.extractfile(member)
                out[name] = ("file", fh.read() if fh is not None else b"")
            elif member.issym() or member.islnk():
                out[name] = ("link", member.linkname.encode("utf-8", "replace"))
            elif member.isdir():
                out[name] = ("dir", b"")
    return out


def _bytecode(parts: list[str]) -> bool:
    return "__pycache__" in parts or parts[-1].endswith((".pyc", ".pyo"))


def merge_overlay(workspace_tar: bytes, overlay: dict[str, bytes], drop_bytecode: bool = False) -> bytes:
    """The workspace with ``overlay``'s files in place of whatever the agent left at (or above) their
    paths: an edited file, a directory, a symbolic link, a link in a parent directory. With
    ``drop_bytecode``, compiled files (``__pycache__``, ``.pyc``) are left out: the interpreter and
    pytest would load a planted one instead of the source GEM compiles."""
    blocked_parents = {"/".join(p.split("/")[:i]) for p in overlay for i in range(1, p.count("/") + 1)}
    out = io.BytesIO()
    with tarfile.open(fileobj=io.BytesIO(workspace_tar), mode="r:") as src, \
            tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as dst:
        for member in src:
            name = "/".join(p for p in member.name.split("/") if p not in ("", "."))
            parts = name.split("/")
            if not name or any("/".join(parts[:i]) in overlay for i in range(1, len(parts) + 1)):
                continue
            if drop_bytecode and _bytecode(parts):
                continue
            if name in blocked_parents and not member.isdir():
                continue
            dst.addfile(member, src.extractfile(member) if member.isfile() else None)
        for path, content in sorted(overlay.items()):
            info = tarfile.TarInfo(path)
            info.size = len(content)
            info.mode = 0o644
            info.mtime = 1_700_000_000
            dst.addfile(info, io.BytesIO(content))
    return out.getvalue()


def _is_test_path(path: str) -> bool:
    parts = path.split("/")
    base = parts[-1]
    if not base.endswith(".py"):
        return False
    return base.startswith("test_") or base.endswith("_test.py") or base == "conftest.py" or any(
        p in ("tests", "test", "testing") for p in parts[:-1])


@lru_cache(maxsize=8)
def _base_entries(tar: bytes) -> dict[str, tuple[str, bytes]]:
    return _tar_entries(tar)


def _pristine(task: Any) -> dict[str, bytes]:
    """The files the grading must see as the task made them.

    pytest instances: the hidden tests and every test file and ``conftest.py`` of the repository
    as it was. GEM's runner sends each test's source to its process on its own, so the test
    modules are not written into the workspace at all (a test's process cannot read the other
    hidden tests from disk); other hidden files (helpers, data) are laid over it."""
    test_paths = {t.split("::", 1)[0] for t in task.test_names}
    hidden = {p: c.encode("utf-8") if isinstance(c, str) else bytes(c) for p, c in task.hidden_files.items()}
    if task.runner != "pytest":
        return {p: c for p, c in hidden.items() if p not in test_paths}
    overlay = dict(hidden)
    for path, (kind, content) in _base_entries(task.files_tar).items():
        if kind == "file" and path not in overlay and (path in test_paths or _is_test_path(path)):
            overlay[path] = content
    return overlay


def _pytest_section(name: str, text: bytes) -> Any:
    """The part of a configuration file pytest reads (the whole file when it cannot be parsed)."""
    decoded = text.decode("utf-8", "replace")
    try:
        if name == "pyproject.toml":
            import tomllib

            section = tomllib.loads(decoded).get("tool", {}).get("pytest")
            return None if section is None else json.dumps(section, sort_keys=True, default=str)
        if name in ("pytest.ini", ".pytest.ini"):
            return decoded
        parser = configparser.ConfigParser(interpolation=None, strict=False)
        parser.read_string(decoded)
        section = "tool:pytest" if name == "setup.cfg" else "pytest"
        return sorted(parser.items(section)) if parser.has_section(section) else None
    except Exception:  # noqa: BLE001 - unparseable: compare it whole
        return decoded


def tampering(task: Any, workspace_tar: bytes) -> list[str]:
    """What the agent planted or changed that would change how pytest runs the tests (empty: none).

    ``conftest.py`` files, ``sitecustomize.py`` / ``usercustomize.py``, ``.pth`` files, and the
    pytest sections of ``pytest.ini`` / ``tox.ini`` / ``setup.cfg`` / ``pyproject.toml``, anywhere in
    the repository, must be as the task made them (the base commit with the test patch).
    """
    base = _base_entries(task.files_tar)
    hidden = {p: ("file", c.encode("utf-8") if isinstance(c, str) else bytes(c)) for p, c in task.hidden_files.items()}
    original = {**base, **hidden}
    now = _tar_entries(workspace_tar)
    problems = []
    for path in sorted(set(now) | set(original)):
        name = path.rsplit("/", 1)[-1]
        was, new = original.get(path), now.get(path)
        if was == new:
            continue
        if name == "conftest.py" or name in _STARTUP_FILES or name.endswith(".pth"):
            if new is None:
                continue  # removed: restored from the task (conftest.py) or harmless
            problems.append(f"{path} {'added' if was is None else 'changed'}")
        elif name in _CONFIG_FILES:
            before = None if was is None or was[0] != "file" else _pytest_section(name, was[1])
            after = None if new is None or new[0] != "file" else _pytest_section(name, new[1])
            if (new is not None and new[0] != "file") or before != after:
                problems.append(f"pytest configuration in {path} {'added' if was is None else 'changed'}")
    return problems


# ------------------------------------------------------------------ the tests' inputs
@lru_cache(maxsize=512)
def _unit_source(module_source: str, test: str) -> str:
    """The test module with only ``test`` among its tests (the child sees no other test)."""
    tree = ast.parse(module_source)
    head = test.split("::", 1)[0]
    body = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name.startswith(("test", "Test")):
            if node.name != head:
                continue
        body.append(node)
    return ast.unparse(ast.Module(body=body, type_ignores=[]))


def _test_inputs(task: Any, names: list[str]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The supervisor's per-test entries and, for pytest tests, each test's report key."""
    tests, keys = [], {}
    base = _base_entries(task.files_tar)
    for name in names:
        if task.runner == "pytest":
            keys[name] = secrets.token_hex(32)
            tests.append({"program": "pytest", "input": {"test_id": name, "key": keys[name]}})
            continue
        path, _, rest = name.partition("::")
        if path in task.hidden_files:
            module = task.hidden_files[path]
        elif path in base and base[path][0] == "file":
            module = base[path][1].decode("utf-8", "replace")
        else:
            module = ""
        try:
            source = _unit_source(module, rest)
        except SyntaxError:
            source = module
        tests.append({"program": "unit", "input": {"source": source, "test": rest, "filename": path}})
    return tests, keys


# ------------------------------------------------------------------ verdicts
def _same_observed(left: Any, right: Any) -> bool:
    """Two observed values are the same (plain data on both sides; opaque or raised never are)."""
    try:
        return same(left, right)
    except TypeError:  # a decoded dict or set on the left: not plain data
        return False


def _judge_unit(task: Any, name: str, out: str) -> tuple[bool, str]:
    expected = dict(getattr(task, "expected", {}) or {}).get(name)
    try:
        doc = json.loads(out)
        if not isinstance(doc, dict) or set(doc) != {"observations", "error"} or not isinstance(doc["observations"], list):
            raise DecodeError("not a result document")
        observed = [decode(o) for o in doc["observations"]]
    except (ValueError, DecodeError) as exc:
        return False, f"the test process wrote no valid result ({str(exc)[:120]})"
    error = doc["error"]
    if expected is None:  # a test with plain asserts: it must finish without an exception
        if error is not None:
            return False, str(error)[:800]
        return True, ""
    for i, want in enumerate(expected):
        if i >= len(observed):
            return False, f"check {i + 1} did not run" + (f": the test raised {str(error)[:600]}" if error else "")
        if isinstance(want, SameAsNext):
            if i + 1 >= len(observed):
                continue  # reported as not run at the next position
            if not _same_observed(observed[i], observed[i + 1]):
                return False, f"check {i + 1}: {show(observed[i])} is not {show(observed[i + 1])}"
        elif i > 0 and isinstance(expected[i - 1], SameAsNext):
            continue
        elif not same(want, observed[i]):
            return False, f"check {i + 1}: got {show(observed[i])}"
    if len(observed) != len(expected):
        return False, f"{len(observed)} checks ran, {len(expected)} expected"
    if error is not None:
        return False, f"the test raised after its checks: {str(error)[:600]}"
    return True, ""


def _judge_pytest(name: str, out: str, key: str) -> tuple[bool, str]:
    sig, _, body = out.partition(" ")
    good = hmac.new(bytes.fromhex(key), body.encode("utf-8"), hashlib.sha256).hexdigest()
    if not body or not hmac.compare_digest(sig, good):
        return False, "refused: the test process's report is missing or not signed by GEM's runner (tampering?)"
    try:
        doc = json.loads(body)
    except ValueError:
        return False, "refused: malformed report"
    if doc.get("test") != name:
        return False, "refused: the report is for another test"
    if doc.get("error"):
        return False, str(doc["error"])[:800]
    if doc.get("suspects"):
        return False, "refused: tampering with the test run: " + ", ".join(map(str, doc["suspects"]))[:600]
    records = [r for r in doc.get("records", []) if isinstance(r, list) and len(r) == 3]
    mine = [r for r in records if r[0] == name]
    failed = [r for r in records if r[2] == "failed"]
    if failed:
        return False, f"{failed[0][1]} {failed[0][2]}: {failed[0][0]}"[:800]
    call = [r for r in mine if r[1] == "call"]
    if doc.get("exit") != 0 or len(call) != 1 or call[0][2] != "passed":
        outcome = call[0][2] if call else "not run (no test with this id was collected)"
        return False, f"{name}: {outcome} (pytest exit {doc.get('exit')})"
    return True, ""


def grade_workspace(sandbox: Sandbox, task: Any, workspace_tar: Optional[bytes]) -> Verdict:
    """Run ``task``'s FAIL_TO_PASS and PASS_TO_PASS tests on ``workspace_tar``; decide each here."""
    if workspace_tar is None:
        return Verdict([], graded=False, reason="the workspace could not be exported")
    names = list(task.test_names)
    if task.runner == "pytest":
        refused = tampering(task, workspace_tar)
        if refused:
            detail = "refused: " + "; ".join(refused)[:700]
            return Verdict([{"test": n, "passed": False, "detail": detail} for n in names], reason=detail)
    workspace = merge_overlay(workspace_tar, _pristine(task), drop_bytecode=task.runner == "pytest")
    tests, keys = _test_inputs(task, names)
    header = {"tests": tests, "test_timeout": task.test_timeout, "programs": PROGRAMS}
    timeout = (task.test_timeout + _PER_TEST_OVERHEAD) * max(1, len(names)) + _SLACK
    run = run_harness(sandbox, SUPERVISOR_SOURCE, "<gem-swe-supervisor>", header, [workspace], timeout=timeout,
                      memory_mb=2048 if task.runner == "pytest" else 1024,
                      output_bytes=(1 << 20) + len(names) * (1 << 20) + (1 << 16), name="the test supervisor")
    if run.ungraded is not None:
        return run.ungraded
    outputs = run.first_by("i")
    results = []
    for i, name in enumerate(names):
        rec = outputs.get(i)
        if rec is None:
            passed, detail = False, f"no result (the run stopped: {run.stop_reason})"
        elif rec.get("status") == "timeout":
            passed, detail = False, f"the test did not finish within {task.test_timeout:g} s"
        elif rec.get("status") != "ok":
            passed, detail = False, f"the test process failed ({rec.get('status')}): {str(rec.get('out', ''))[:200]}"
        elif task.runner == "pytest":
            passed, detail = _judge_pytest(name, str(rec.get("out", "")), keys[name])
        else:
            passed, detail = _judge_unit(task, name, str(rec.get("out", "")))
        results.append({"test": name, "passed": passed, "detail": detail})
    return Verdict(results)
