"""Load SWE-bench / SWE-Gym instances as :class:`SweTask` s.

An instance has ``instance_id``, ``repo`` (``owner/name``), ``base_commit``, ``problem_statement``,
``patch`` (the gold fix), ``test_patch`` (the tests that judge it), ``FAIL_TO_PASS`` and
``PASS_TO_PASS`` (lists of pytest ids, or JSON strings of them, as on the hub).

The repository at ``base_commit`` becomes the workspace (``git archive``, so no ``.git`` and no
history the agent could read the fix from). ``test_patch`` is applied here, on the env's side, to
a scratch copy; the files it touches become the hidden files laid over the agent's workspace at
grading time. Where the repository comes from, first match wins:

1. ``repo`` is a local git repository path;
2. ``repos_dir/<owner>__<name>`` (SWE-bench's naming) or ``repos_dir/<name>`` is one;
3. otherwise it is cloned from ``https://github.com/<repo>`` into ``repos_dir`` (network).

Tests run with ``python -m pytest <id>`` inside the sandbox (``runner="pytest"``), so the sandbox's
Python needs pytest and whatever the repository imports.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Iterable, Optional

from gem.envs.swe.task import SweTask
from gem.errors import ResourceUnavailable, missing_extra

logger = logging.getLogger(__name__)

REQUIRED = ("instance_id", "repo", "base_commit", "problem_statement", "test_patch", "FAIL_TO_PASS")


def _git(args: list[str], cwd: Optional[str] = None, input: Optional[bytes] = None) -> bytes:
    proc = subprocess.run(["git", *args], cwd=cwd, input=input, capture_output=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args[:3])} failed: {proc.stderr.decode(errors='replace')[-500:]}")
    return proc.stdout


def _id_list(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = json.loads(value) if value.strip() else []
    return tuple(str(v) for v in (value or ()))


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


def _repo_path(repo: str, repos_dir: Optional[str]) -> str:
    if os.path.isdir(os.path.join(repo, ".git")) or os.path.isfile(os.path.join(repo, "HEAD")):
        return repo
    base = Path(repos_dir or os.path.join(tempfile.gettempdir(), "gem-swe-repos"))
    for name in (repo.replace("/", "__"), repo.rsplit("/", 1)[-1]):
        if (base / name / ".git").is_dir():
            return str(base / name)
    target = base / repo.replace("/", "__")
    base.mkdir(parents=True, exist_ok=True)
    try:
        _git(["clone", "--quiet", f"https://github.com/{repo}.git", str(target)])
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


def instance_to_task(row: dict[str, Any], repos_dir: Optional[str] = None) -> SweTask:
    """One instance as a :class:`SweTask` (see the module doc)."""
    missing = [k for k in REQUIRED if k not in row]
    if missing:
        raise KeyError(f"Instance {row.get('instance_id', '?')!r} lacks {missing}; required: {list(REQUIRED)}.")
    repo_dir = _repo_path(str(row["repo"]), repos_dir)
    archive = _git(["archive", "--format=tar", str(row["base_commit"])], cwd=repo_dir)
    name = str(row["instance_id"]).replace("/", "__")
    return SweTask(
        name=name,
        instruction=str(row["problem_statement"]),
        archive=archive,
        hidden_files=_hidden_files(repo_dir, str(row["base_commit"]), str(row["test_patch"])),
        fail_to_pass=_id_list(row["FAIL_TO_PASS"]),
        pass_to_pass=_id_list(row.get("PASS_TO_PASS", [])),
        patch=str(row.get("patch", "")),
        runner="pytest",
        difficulty="hard",
        source=str(row["repo"]),
        test_timeout=float(row.get("test_timeout", 120.0)),
        max_turns=100,
        time_budget=1800.0,
    )


def load_instances(
    source: str, split: str = "test", repos_dir: Optional[str] = None, limit: Optional[int] = None,
    ids: Optional[Iterable[str]] = None,
) -> list[SweTask]:
    """Tasks from a jsonl/json file or a hub dataset (SWE-bench, SWE-Gym, ...)."""
    rows = read_rows(source, split)
    if ids is not None:
        wanted = set(ids)
        rows = [r for r in rows if r.get("instance_id") in wanted]
    if limit is not None:
        rows = rows[: int(limit)]
    if not rows:
        raise ValueError(f"No instances in {source!r}.")
    return [instance_to_task(r, repos_dir) for r in rows]
