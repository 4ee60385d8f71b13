"""Load SWE-bench / SWE-Gym instances as :class:`SweTask` s.

An instance has ``instance_id``, ``repo`` (``owner/name``), ``base_commit``, ``problem_statement``,
``patch`` (the gold fix), ``test_patch`` (the tests that judge it), ``FAIL_TO_PASS`` and
``PASS_TO_PASS`` (lists of pytest ids, or JSON strings of them, as on the hub).

The repository at ``base_commit`` becomes the workspace (``git archive``, so no ``.git`` and no
history the agent could read the fix from). ``test_patch`` is applied here, on the env's side, to
a scratch copy; the files it touches become the hidden files laid over the agent's workspace at
grading time. ``repo`` must be a hub name (``owner/name``); where the repository comes from, first
match wins:

1. ``repo_paths[repo]``, a local git repository the caller names for that ``repo`` value (the only
   way a row reaches a local path: a row's own ``repo`` never names a directory of the host);
2. ``repos_dir/<owner>__<name>`` (SWE-bench's naming) or ``repos_dir/<name>`` is one;
3. otherwise it is cloned from ``https://github.com/<repo>`` into ``repos_dir`` (network).

Rows come from outside and are checked before anything runs (:func:`validate_row`): field types,
``base_commit`` a hexadecimal commit id, the test ids lists of strings (JSON strings of lists as on
the hub), relative ``path::name`` ids that are not pytest options, and sizes capped.

Tests run with ``python -m pytest <id>`` inside the sandbox (``runner="pytest"``), so the sandbox's
Python needs pytest and whatever the repository imports.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional

from gem.envs.swe.task import SweTask
from gem.errors import ResourceUnavailable, missing_extra

logger = logging.getLogger(__name__)

REQUIRED = ("instance_id", "repo", "base_commit", "problem_statement", "test_patch", "FAIL_TO_PASS")
MAX_TEXT = 1 << 20  # problem_statement
MAX_PATCH = 16 << 20  # patch, test_patch
MAX_TESTS = 20_000  # ids per list
MAX_ID = 2_000  # characters per id
_HUB_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}/[A-Za-z0-9_.-]{1,100}")
_COMMIT = re.compile(r"[0-9a-fA-F]{7,64}")
_INSTANCE_ID = re.compile(r"[A-Za-z0-9_.\-/]{1,200}")


def _git(args: list[str], cwd: Optional[str] = None, input: Optional[bytes] = None) -> bytes:
    proc = subprocess.run(["git", *args], cwd=cwd, input=input, capture_output=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args[:3])} failed: {proc.stderr.decode(errors='replace')[-500:]}")
    return proc.stdout


def _id_list(value: Any, field: str = "test ids", where: str = "?") -> tuple[str, ...]:
    """A list of pytest ids (or a JSON string of one, as on the hub), checked."""
    if isinstance(value, str):
        if len(value) > MAX_TESTS * MAX_ID:
            raise ValueError(f"Instance {where!r}: {field} is {len(value)} characters; at most {MAX_TESTS * MAX_ID}.")
        try:
            value = json.loads(value) if value.strip() else []
        except ValueError as exc:
            raise ValueError(f"Instance {where!r}: {field} is not a JSON list of test ids: {exc}") from exc
    if value is None:
        value = []
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"Instance {where!r}: {field} must be a list of test ids (strings), got {type(value).__name__}.")
    if len(value) > MAX_TESTS:
        raise ValueError(f"Instance {where!r}: {field} has {len(value)} ids; at most {MAX_TESTS}.")
    out = []
    for v in value:
        if not isinstance(v, str) or not v.strip():
            raise ValueError(f"Instance {where!r}: {field} must hold non-empty strings, got {v!r:.80}.")
        if len(v) > MAX_ID or any(c in v for c in "\0\n\r"):
            raise ValueError(f"Instance {where!r}: {field} id {v[:80]!r} is too long or holds a NUL or newline.")
        path = v.split("::", 1)[0]
        parts = path.replace("\\", "/").split("/")
        if v.startswith("-") or path.startswith("/") or ".." in parts:
            raise ValueError(f"Instance {where!r}: {field} id {v[:80]!r} must be a relative 'path::name' pytest id "
                             "(no option, no absolute path, no '..').")
        out.append(v)
    return tuple(out)


def _text(row: dict[str, Any], key: str, limit: int, where: str, default: Optional[str] = None) -> str:
    value = row.get(key, default)
    if value is None and default is not None:
        value = default
    if not isinstance(value, str):
        raise ValueError(f"Instance {where!r}: {key} must be a string, got {type(value).__name__}.")
    if len(value) > limit:
        raise ValueError(f"Instance {where!r}: {key} is {len(value)} characters; at most {limit}.")
    return value


def validate_row(row: Any, repo_paths: Optional[Mapping[str, str]] = None) -> dict[str, Any]:
    """The instance's fields, checked (``ValueError`` / ``KeyError`` naming what is wrong and what
    is allowed): strings where strings go, ``repo`` a hub name ``owner/name`` (or a key of
    ``repo_paths``), ``base_commit`` a hexadecimal commit id, FAIL_TO_PASS a non-empty list of test
    ids, PASS_TO_PASS a list, ``test_timeout`` a number of seconds in (0, 3600]."""
    if not isinstance(row, dict):
        raise ValueError(f"An instance must be a JSON object, got {type(row).__name__}.")
    where = str(row.get("instance_id", "?"))[:80]
    missing = [k for k in REQUIRED if k not in row]
    if missing:
        raise KeyError(f"Instance {where!r} lacks {missing}; required: {list(REQUIRED)}.")
    instance_id = _text(row, "instance_id", 200, where)
    if not _INSTANCE_ID.fullmatch(instance_id) or ".." in instance_id:
        raise ValueError(f"Instance {where!r}: instance_id must be 1-200 letters, digits, '_', '-', '.', '/' (no '..').")
    repo = row["repo"]
    if not isinstance(repo, str):
        raise ValueError(f"Instance {where!r}: repo must be a string, got {type(repo).__name__}.")
    if not (repo_paths and repo in repo_paths) and (not _HUB_NAME.fullmatch(repo) or ".." in repo.split("/")):
        raise ValueError(f"Instance {where!r}: repo {repo[:120]!r} is not a hub name 'owner/name'. A local "
                         "repository is used only when the caller names it: repo_paths={repo: '/path/to/clone'}.")
    commit = row["base_commit"]
    if not isinstance(commit, str) or not _COMMIT.fullmatch(commit):
        raise ValueError(f"Instance {where!r}: base_commit must be a hexadecimal commit id (7-64 digits), got {str(commit)[:80]!r}.")
    timeout = row.get("test_timeout", 120.0)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not math.isfinite(timeout) or not 0 < timeout <= 3600:
        raise ValueError(f"Instance {where!r}: test_timeout must be a number of seconds in (0, 3600], got {timeout!r:.40}.")
    fail_to_pass = _id_list(row["FAIL_TO_PASS"], "FAIL_TO_PASS", where)
    if not fail_to_pass:
        raise ValueError(f"Instance {where!r}: FAIL_TO_PASS must name at least one test.")
    return {
        "instance_id": instance_id, "repo": repo, "base_commit": commit,
        "problem_statement": _text(row, "problem_statement", MAX_TEXT, where),
        "patch": _text(row, "patch", MAX_PATCH, where, default=""),
        "test_patch": _text(row, "test_patch", MAX_PATCH, where),
        "FAIL_TO_PASS": fail_to_pass,
        "PASS_TO_PASS": _id_list(row.get("PASS_TO_PASS", []), "PASS_TO_PASS", where),
        "test_timeout": float(timeout),
    }


def read_rows(source: str, split: str = "test") -> list[dict[str, Any]]:
    """Instances from a local ``.jsonl`` / ``.json`` file, or a hub dataset id (``datasets``)."""
    path = Path(source)
    if path.suffix in (".jsonl", ".json") or path.exists():
        if not path.is_file():
            raise FileNotFoundError(f"No instance file at {source!r}.")
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".json":
            data = json.loads(text)
            return list(data if isinstance(data, list) else data.get("instances", []))
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    try:
        import datasets
    except ImportError as exc:
        raise missing_extra("Loading SWE instances from the hub", "swe", "datasets") from exc
    try:
        return [dict(r) for r in datasets.load_dataset(source, split=split)]
    except Exception as exc:  # network, unknown dataset
        raise ResourceUnavailable(f"Could not load {source!r} ({split}) from the hub: {exc}") from exc


def _repo_path(repo: str, repos_dir: Optional[str], repo_paths: Optional[Mapping[str, str]] = None) -> str:
    """The local git repository for ``repo`` (a hub name, or a key of ``repo_paths``)."""
    if repo_paths and repo in repo_paths:
        path = os.path.abspath(str(repo_paths[repo]))
        if not (os.path.isdir(os.path.join(path, ".git")) or os.path.isfile(os.path.join(path, "HEAD"))):
            raise ValueError(f"repo_paths[{repo!r}] = {path!r} is not a git repository.")
        return path
    base = Path(repos_dir or os.path.join(tempfile.gettempdir(), "gem-swe-repos"))
    for name in (repo.replace("/", "__"), repo.rsplit("/", 1)[-1]):
        if (base / name / ".git").is_dir():
            return str(base / name)
    target = base / repo.replace("/", "__")
    base.mkdir(parents=True, exist_ok=True)
    try:
        _git(["clone", "--quiet", "--", f"https://github.com/{repo}.git", str(target)])
    except (RuntimeError, subprocess.TimeoutExpired, OSError) as exc:
        raise ResourceUnavailable(f"Repository {repo!r} is not in {base} and could not be cloned: {exc}") from exc
    return str(target)


def _hidden_files(repo_dir: str, commit: str, test_patch: str) -> dict[str, str]:
    """The files ``test_patch`` creates or changes, as they are after applying it to ``commit``."""
    with tempfile.TemporaryDirectory(prefix="gem-swe-") as scratch:
        archive = _git(["archive", "--format=tar", commit], cwd=repo_dir)
        subprocess.run(["tar", "-xf", "-"], cwd=scratch, input=archive, check=True)
        _git(["apply", "--whitespace=nowarn", "-"], cwd=scratch, input=test_patch.encode())
        touched = _git(["apply", "--numstat", "-"], cwd=scratch, input=test_patch.encode()).decode()
        out = {}
        for line in touched.splitlines():
            path = line.split("\t")[-1]
            full = os.path.join(scratch, path)
            if os.path.isfile(full):
                out[path] = Path(full).read_text(encoding="utf-8", errors="replace")
        return out


def instance_to_task(row: dict[str, Any], repos_dir: Optional[str] = None,
                     repo_paths: Optional[Mapping[str, str]] = None) -> SweTask:
    """One instance as a :class:`SweTask` (see the module doc); the row is checked first
    (:func:`validate_row`)."""
    row = validate_row(row, repo_paths)
    repo_dir = _repo_path(row["repo"], repos_dir, repo_paths)
    archive = _git(["archive", "--format=tar", row["base_commit"]], cwd=repo_dir)
    return SweTask(
        name=row["instance_id"].replace("/", "__"),
        instruction=row["problem_statement"],
        archive=archive,
        hidden_files=_hidden_files(repo_dir, row["base_commit"], row["test_patch"]),
        fail_to_pass=row["FAIL_TO_PASS"],
        pass_to_pass=row["PASS_TO_PASS"],
        patch=row["patch"],
        runner="pytest",
        difficulty="hard",
        source=row["repo"],
        test_timeout=row["test_timeout"],
        max_turns=100,
        time_budget=1800.0,
    )


def load_instances(
    source: str, split: str = "test", repos_dir: Optional[str] = None, limit: Optional[int] = None,
    ids: Optional[Iterable[str]] = None, repo_paths: Optional[Mapping[str, str]] = None,
) -> list[SweTask]:
    """Tasks from a jsonl/json file or a hub dataset (SWE-bench, SWE-Gym, ...).

    ``repo_paths`` maps a row's ``repo`` value to a local git repository the caller names (for
    example ``{"acme/shapes": "/data/shapes"}``); without it a row's ``repo`` must be a hub name
    ``owner/name``, found in ``repos_dir`` or cloned."""
    rows = read_rows(source, split)
    if ids is not None:
        wanted = set(ids)
        rows = [r for r in rows if r.get("instance_id") in wanted]
    if limit is not None:
        rows = rows[: int(limit)]
    if not rows:
        raise ValueError(f"No instances in {source!r}.")
    return [instance_to_task(r, repos_dir, repo_paths) for r in rows]
