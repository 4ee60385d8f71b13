"""``SweEnv``: fix an issue in a repository with a shell and a file editor; hidden tests decide.

The workspace holds the repository; the first observation is the issue (``problem_statement``).
Actions are those of :class:`~gem.envs.terminal.env.TerminalEnv` (``<bash>``, ``<done/>``) plus
the editor's (:mod:`gem.tools.editor_tool`: ``<view .../>``, ``<str_replace>``, ``<insert>``,
``<create>``, or the same as function calls). When the agent is done, the hidden test files (the
instance's ``test_patch``) are laid over a copy of its workspace in a fresh sandbox run and the
FAIL_TO_PASS and PASS_TO_PASS tests run. Reward 1.0 when every one of them passes (the issue is
resolved without breaking anything), else 0; ``info`` has the counts of each group.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Mapping, Optional, Sequence, Union

from gem.core import Agent
from gem.envs.swe.grading import grade_workspace
from gem.envs.swe.task import SweTask
from gem.envs.terminal.env import ScriptedAgent, TerminalEnv
from gem.envs.terminal.verify import Verdict
from gem.sandbox.shell import ShellError
from gem.tools.editor_tool import EDITOR_SCHEMAS, parse_editor_tag, request_from_call, run_editor_request
from gem.sandbox import SandboxError
from gem.utils.text import preview


class SweEnv(TerminalEnv):
    """Repository tasks (see the module doc).

    Args:
        task: a task name, a :class:`SweTask`, or ``None`` to draw one per reset.
        tasks: ``"bundled"`` (GEM's repositories), a SWE-bench / SWE-Gym jsonl or json file, a
            hub dataset id (needs ``datasets`` and network), or a list of :class:`SweTask`.
        split, repos_dir, limit, repo_paths: passed to :func:`gem.envs.swe.loader.load_instances`
            for a file or hub source (``repo_paths`` maps a row's ``repo`` to a local git
            repository you name; without it ``repo`` must be a hub name ``owner/name``).
        Other arguments as :class:`TerminalEnv`.
    """

    family = "swe"

    # TerminalEnv's params, which a client may not set here (a repository task's limits are the operator's)
    PARAMS = tuple(dataclasses.replace(p, client=False) for p in TerminalEnv.PARAMS)

    def __init__(
        self,
        task: Union[str, SweTask, None] = None,
        tasks: Union[str, Sequence[SweTask]] = "bundled",
        split: str = "test",
        repos_dir: Optional[str] = None,
        limit: Optional[int] = None,
        repo_paths: Optional[Mapping[str, str]] = None,
        **kwargs: Any,
    ) -> None:
        self._loader_kwargs = {"split": split, "repos_dir": repos_dir, "limit": limit,
                               "repo_paths": dict(repo_paths) if repo_paths else None}
        super().__init__(task=task, tasks=tasks, **kwargs)

    def _load_pool(self, tasks: Union[str, Sequence[SweTask]]) -> list:
        if isinstance(tasks, str):
            if tasks == "bundled":
                from gem.envs.swe.bundled import bundled_tasks

                return bundled_tasks()
            from gem.envs.swe.loader import load_instances

            return load_instances(tasks, **self._loader_kwargs)
        pool = list(tasks)
        if not pool or not all(isinstance(t, SweTask) for t in pool):
            raise ValueError("tasks must be 'bundled', a file or hub id of instances, or a non-empty list of SweTask.")
        return pool

    def tool_schemas(self) -> list[dict[str, Any]]:
        return super().tool_schemas()[:1] + [dict(s) for s in EDITOR_SCHEMAS] + super().tool_schemas()[1:]

    def _how_to_act(self) -> str:
        return (
            "Act with exactly one of these per turn:\n"
            "  <bash>COMMAND</bash>   run a command in bash in the repository (no network)\n"
            "  <view path=\"FILE\"/>    show a file with line numbers (range=\"A,B\" for some lines) or list a directory\n"
            "  <str_replace path=\"FILE\"><old>EXACT TEXT</old><new>REPLACEMENT</new></str_replace>\n"
            "                         replace text that occurs exactly once in FILE\n"
            "  <create path=\"FILE\">CONTENT</create>   write a whole file\n"
            "  <done/>                finish; hidden tests then check the repository."
        )

    def _intro(self) -> str:
        assert self.task is not None
        return (f"Repository task: {self.task.name}\n\nResolve this issue in the repository in your working "
                f"directory:\n\n{self.task.instruction.strip()}")

    def _parse_tags(self, action: str) -> Optional[tuple[str, Any, int]]:
        found = parse_editor_tag(action)
        return None if found is None else ("edit", found[0], found[1])

    def _parse_call(self, name: str, args: dict[str, Any]) -> tuple[str, Any]:
        req = request_from_call(name, args)
        if req is None:
            return super()._parse_call(name, args)
        return "edit", req

    def _run_tool(self, kind: str, payload: Any, info: dict[str, Any]) -> str:
        if kind != "edit":
            return super()._run_tool(kind, payload, info)
        ok, text = run_editor_request(self.shell, payload)
        info["edit_ok"] = ok
        return text

    def grade(self) -> Verdict:
        """Run the hidden tests on a copy of the workspace as it is now; the verdict is decided in
        this process (:mod:`gem.envs.swe.grading`), never in one that runs the repository's code."""
        assert self.task is not None
        if self.task.container is not None:
            return self.shell.grade()
        try:
            files = self.shell.export()
        except (ShellError, SandboxError) as exc:
            return Verdict([], graded=False, reason=f"the workspace could not be exported: {exc}")
        return grade_workspace(self.sandbox, self.task, files)

    def _score(self, verdict: Verdict) -> float:
        """1.0 when every FAIL_TO_PASS and PASS_TO_PASS test passes, else 0."""
        return 1.0 if verdict.graded and verdict.total > 0 and verdict.passed == verdict.total else 0.0

    def _finish(self, info: dict[str, Any], truncated: bool, why: str = "") -> tuple[str, float, bool, bool, dict[str, Any]]:
        obs, reward, term, trunc, info = super()._finish(info, truncated, why)
        task = self.task
        results = {r["test"]: r["passed"] for r in info.get("test_results", [])}
        info["fail_to_pass"] = {"passed": sum(results.get(t, False) for t in task.fail_to_pass), "total": len(task.fail_to_pass)}
        info["pass_to_pass"] = {"passed": sum(results.get(t, False) for t in task.pass_to_pass), "total": len(task.pass_to_pass)}
        info["resolved"] = reward >= self.success_reward
        refused = self.last_verdict.reason if self.last_verdict is not None and self.last_verdict.graded else ""
        if refused.startswith("refused: "):
            info["refused"] = refused[len("refused: "):]
        return obs, reward, term, trunc, info

    def sample_random_action(self) -> str:
        rng = self.action_rng
        roll = rng.random()
        if roll < 0.2:
            return "<done/>"
        files = sorted(p for p in (self.task.files if self.task else {}) if p.endswith(".py"))
        if roll < 0.6 and files:
            return f'<view path="{rng.choice(files)}"/>'
        return "<bash>" + rng.choice(["ls", "find . -name '*.py' | sort", "grep -rn def --include=*.py . | head -5"]) + "</bash>"

    def make_solver(self) -> Agent:
        """The reference fix: its exact edits through the editor, or its patch through ``git apply``."""
        if self.task is None:
            raise RuntimeError("make_solver() needs a task: call reset() first.")
        if self.task.edits:
            actions = [json.dumps({"name": "str_replace", "arguments": {"path": p, "old_str": old, "new_str": new}})
                       for p, old, new in self.task.edits]
        else:
            actions = [f"<bash>git apply --whitespace=nowarn <<'GEM_PATCH_EOF'\n{self.task.patch}GEM_PATCH_EOF</bash>"]
        return ScriptedAgent(actions + ["<done/>"])

    def __repr__(self) -> str:
        return f"<SweEnv {preview(self.task.name if self.task else None, 40)}>"
