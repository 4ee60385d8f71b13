"""``TerminalEnv``: do a task in a sandboxed shell; hidden tests decide the reward.

An episode is one task (:class:`~gem.envs.terminal.task.TerminalTask`). ``reset`` starts a
:class:`~gem.sandbox.shell_sandbox.SandboxShell` whose workspace holds the task's files and shows the
instruction. Each action is one of:

* ``<bash>COMMAND</bash>`` (or a fenced ``bash`` block, or the function call
  ``{"name": "bash", "arguments": {"command": "..."}}``): the command runs in the persistent
  shell; the observation is its output (cut in the middle past ``max_output`` bytes), its exit
  code, and the turns and time left. Reward 0.
* ``<done/>`` (also ``<submit/>``, or the function call ``submit``): the agent is finished.

Anything else is a format error (``format_error_reward``, the episode goes on). When the agent
is done, or the turn limit or the time budget (seconds of command time) is reached, the
workspace is exported and the hidden tests run on a copy of it in a fresh sandbox run
(:mod:`gem.envs.terminal.verify`). The reward is the share of tests passed (1.0 only when all
pass); ``info`` carries each test's verdict. ``terminated`` when the agent said done,
``truncated`` when a limit ended the episode (the workspace is graded either way).
"""

from __future__ import annotations

import base64
import copy
import json
import logging
import math
import re
from typing import Any, Optional, Sequence, Union

from gem.core import Agent, Env
from gem.envs.terminal.docker import TaskDockerShell
from gem.envs.terminal.task import TerminalTask
from gem.envs.terminal.verify import EXPORT_SOURCE, Verdict, verify_task
from gem.params import Param, check_params
from gem.tools.bash_tool import BASH_SCHEMA, find_bash_command, parse_function_call
from gem.sandbox import Sandbox, SandboxError
from gem.sandbox.shell import MAX_ARCHIVE_BYTES, CommandResult, Shell, ShellError
from gem.sandbox.shell_sandbox import DEFAULT_MAX_OUTPUT, SandboxShell, compiled_cell, shell_sandbox
from gem.utils.text import preview

logger = logging.getLogger(__name__)

_DONE_TAG = re.compile(r"<(done|submit)\s*/>|<(done|submit)>\s*</(done|submit)>", re.IGNORECASE)
SUBMIT_SCHEMA: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "submit",
        "description": "Say that the task is finished; the workspace is then graded. Takes no arguments.",
        "parameters": {"type": "object", "properties": {}},
    },
}
# Commands sample_random_action draws from: harmless, and their output does not depend on time,
# uid or absolute paths (so a seeded episode repeats exactly).
_RANDOM_COMMANDS = ("ls", "ls -a", "find . -type f | sort | head -20", "echo hello", "true", "wc -c {f}",
                    "head -n 3 {f}", "cat {f} | tail -n 2", "grep -c . {f}")


class ScriptedAgent(Agent):
    """Plays a fixed list of actions (a reference solution), then ``<done/>`` forever."""

    def __init__(self, actions: Sequence[str]) -> None:
        self.actions = list(actions)
        self.i = 0

    def reset(self, observation: str, info: Optional[dict[str, Any]] = None) -> None:
        self.i = 0

    def act(self, observation: str, info: Optional[dict[str, Any]] = None) -> str:
        action = self.actions[self.i] if self.i < len(self.actions) else "<done/>"
        self.i += 1
        return action


class TerminalEnv(Env):
    """Tasks in a sandboxed shell (see the module doc).

    Args:
        task: a task name (of ``tasks``), a :class:`TerminalTask`, or ``None`` to draw one per
            reset from ``tasks`` with the env's seeded generator.
        tasks: the pool: ``"bundled"`` (GEM's tasks), a directory of Harbor / Terminal-Bench
            tasks, or a list of :class:`TerminalTask`.
        max_turns, time_budget: override the task's limits (actions; seconds of command time).
        command_timeout: seconds one command may run (capped by the time left).
        max_output: bytes of a command's output shown (head and tail).
        sandbox: a :class:`~gem.sandbox.Sandbox` (the shared one by default).
    """

    family = "terminal"

    PARAMS = (
        Param("max_turns", int, "commands before the episode is cut (None: the task's own)", min=1, nullable=True,
              client={"max": 500}),
        Param("time_budget", float, "seconds of commands before the episode is cut (None: the task's own)",
              min=0, min_exclusive=True, nullable=True, client={"min": 1.0, "max": 3600.0}),
        Param("command_timeout", float, "seconds one command may run", min=0, min_exclusive=True,
              client={"min": 0.1, "max": 120.0}),
        Param("max_output", int, "bytes of a command's output shown", min=100, client={"max": 100_000}),
    )

    def __init__(
        self,
        task: Union[str, TerminalTask, None] = None,
        tasks: Union[str, Sequence[TerminalTask]] = "bundled",
        max_turns: Optional[int] = None,
        time_budget: Optional[float] = None,
        command_timeout: float = 30.0,
        max_output: int = DEFAULT_MAX_OUTPUT,
        sandbox: Optional[Sandbox] = None,
    ) -> None:
        check_params(self, locals())
        super().__init__()
        self.pool = self._load_pool(tasks)
        self.fixed_task = self._pick_fixed(task)
        self.deterministic = self.fixed_task is not None or len(self.pool) == 1  # one task, whatever the seed
        self.max_turns_override = max_turns
        self.time_budget_override = time_budget
        self.command_timeout = float(command_timeout)
        self.max_output = int(max_output)
        self._sandbox = sandbox
        self.shell: Shell = self._make_shell()
        self.task: Optional[TerminalTask] = None
        self.turns = 0
        self.time_spent = 0.0
        self.last_verdict: Optional[Verdict] = None
        self._pristine: Optional[bytes] = None  # the starting state after a task's setup script

    # ---------------------------------------------------------------- setup
    def _load_pool(self, tasks: Union[str, Sequence[TerminalTask]]) -> list[TerminalTask]:
        if isinstance(tasks, str):
            if tasks == "bundled":
                from gem.envs.terminal.bundled import bundled_tasks

                return bundled_tasks()
            from gem.envs.terminal.harbor import load_tasks

            return load_tasks(tasks)
        pool = list(tasks)
        if not pool or not all(isinstance(t, TerminalTask) for t in pool):
            raise ValueError("tasks must be 'bundled', a directory of tasks, or a non-empty list of TerminalTask.")
        return pool

    def _pick_fixed(self, task: Union[str, TerminalTask, None]) -> Optional[TerminalTask]:
        if task is None or isinstance(task, TerminalTask):
            return task
        by_name = {t.name: t for t in self.pool}
        if task not in by_name:
            import difflib

            close = difflib.get_close_matches(str(task), list(by_name), n=3)
            raise KeyError(f"Unknown task {task!r}" + (f"; did you mean {close}?" if close else f"; valid: {sorted(by_name)}."))
        return by_name[task]

    def _make_shell(self) -> Shell:
        """The shell of a task without a container: a :class:`SandboxShell` (a subclass may return
        any :class:`~gem.sandbox.shell.Shell`; its workspace is then graded from its ``export``)."""
        return SandboxShell(sandbox=self._sandbox, command_timeout=self.command_timeout, max_output=self.max_output)

    @property
    def sandbox(self) -> Sandbox:
        return self._sandbox if self._sandbox is not None else shell_sandbox()

    @property
    def max_turns(self) -> int:
        assert self.task is not None
        return self.max_turns_override or self.task.max_turns

    @property
    def time_budget(self) -> float:
        assert self.task is not None
        return self.time_budget_override or self.task.time_budget

    # ---------------------------------------------------------------- episode
    def reset(self, seed: Optional[int] = None, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        super().reset(seed)
        self.task = self.fixed_task or self.pool[self.rng.randrange(len(self.pool))]
        self.turns = 0
        self.time_spent = 0.0
        self.last_verdict = None
        self._start_workspace(self.task)
        return self._first_observation(), {"task": self.task.name, "difficulty": self.task.difficulty,
                                           "tools": self.tool_schemas()}

    def _start_workspace(self, task: TerminalTask) -> None:
        self.shell.close()
        if task.container is not None:
            self.shell = TaskDockerShell(task, command_timeout=self.command_timeout, max_output=self.max_output)
        elif isinstance(self.shell, TaskDockerShell):  # the last task had a container: back to the env's own
            self.shell = self._make_shell()
        self.shell.start(task.files_tar)
        self._pristine = None
        if task.setup:
            result = self.shell.run(task.setup, timeout=self.command_timeout)
            if result.exit_code != 0:
                raise RuntimeError(f"task {task.name!r}: its setup failed ({result.exit_code}): {result.output[-500:]}")
            if task.container is None:
                # What setup made is part of the starting state the tests judge against (taken
                # before the agent's first command, so it is the task's, not the agent's).
                self._pristine, _ = self._export_workspace()

    def tool_schemas(self) -> list[dict[str, Any]]:
        """OpenAI function-calling schemas of the actions (``bash`` and ``submit``)."""
        return [copy.deepcopy(BASH_SCHEMA), copy.deepcopy(SUBMIT_SCHEMA)]

    def _how_to_act(self) -> str:
        return (
            "Act with exactly one of these per turn:\n"
            "  <bash>COMMAND</bash>  run a command in bash in your workspace (the current directory); "
            "the directory and variables persist, background processes do not; there is no network.\n"
            "  <done/>               finish; hidden tests then check the workspace."
        )

    def _intro(self) -> str:
        assert self.task is not None
        return f"Task: {self.task.name} ({self.task.difficulty})\n\n{self.task.instruction.strip()}"

    def _first_observation(self) -> str:
        return (
            f"{self._intro()}\n\n{self._how_to_act()}\n"
            f"You have {self.max_turns} turns and {self._time_left_text()} of command time."
        )

    def _time_left_text(self) -> str:
        left = max(0.0, self.time_budget - self.time_spent)
        # Whole minutes while there is time (a seeded episode prints the same text), seconds near the end.
        return f"{math.ceil(left / 60)} min" if left >= 120 else f"{math.ceil(left)} s"

    def _status_line(self) -> str:
        return f"[turns left: {max(0, self.max_turns - self.turns)} | time left: {self._time_left_text()}]"

    def _step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if not isinstance(action, str):
            action = str(action)
        self.turns += 1
        kind, payload = self._parse(action)
        info: dict[str, Any] = {"turn": self.turns, "action_kind": kind}
        if kind == "done":
            return self._finish(info, truncated=False)
        if kind == "format_error":
            obs = (f"Format error: {payload}\n{self._how_to_act()}\n"
                   f"Your action began: {preview(action, 120)!r}")
            return self._after_action(obs, self.format_error_reward, info)
        obs = self._run_tool(kind, payload, info)
        if kind == "bash" and isinstance(payload, dict) and payload.get("then_done"):
            obs_end = self._finish(info, truncated=False)
            return (obs + "\n" + obs_end[0],) + obs_end[1:]
        return self._after_action(obs, self.internal_step_reward, info)

    def _after_action(self, obs: str, reward: float, info: dict[str, Any]) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self.turns >= self.max_turns or self.time_spent >= self.time_budget:
            limit = "turn limit" if self.turns >= self.max_turns else "time budget"
            obs_end, final, term, trunc, info = self._finish(info, truncated=True, why=limit)
            return obs + "\n" + obs_end, reward + final, term, trunc, info
        return obs + "\n" + self._status_line(), reward, False, False, info

    def _parse(self, action: str) -> tuple[str, Any]:
        """``(kind, payload)``: ``bash`` (a command), ``done``, another tool, or ``format_error``."""
        call = parse_function_call(action)
        if call is not None:
            name, args = call
            if name in ("submit", "done"):
                return "done", None
            if name == "bash":
                if isinstance(args.get("command"), str):
                    return "bash", {"command": args["command"]}
                return "format_error", 'the bash call needs a string "command" argument.'
            return self._parse_call(name, args)
        # The first call in the text is the one that counts (a <done/> inside a command is text).
        found = find_bash_command(action)
        other = self._parse_tags(action)  # (kind, payload, start) of another tool's tag
        done = _DONE_TAG.search(action)
        starts = {"bash": found.start if found else None, "other": other[2] if other else None,
                  "done": done.start() if done else None}
        present = {k: v for k, v in starts.items() if v is not None}
        if not present:
            return "format_error", "no <bash>...</bash> command and no <done/> found."
        first = min(present, key=present.__getitem__)
        if first == "bash":
            assert found is not None
            return "bash", {"command": found.command, "then_done": _DONE_TAG.search(action, found.end) is not None}
        if first == "other":
            assert other is not None
            return other[0], other[1]
        return "done", None

    def _parse_call(self, name: str, args: dict[str, Any]) -> tuple[str, Any]:
        valid = [s["function"]["name"] for s in self.tool_schemas()]
        return "format_error", f"unknown function {preview(name, 40)!r}; the functions are {valid}."

    def _parse_tags(self, action: str) -> Optional[tuple[str, Any, int]]:
        """The first tag of another tool, ``(kind, payload, start offset)`` (the SWE env adds file
        editing); ``None`` when there is none."""
        return None

    def _run_tool(self, kind: str, payload: Any, info: dict[str, Any]) -> str:
        command = payload["command"]
        left = self.time_budget - self.time_spent
        try:
            result = self.shell.run(command, timeout=max(0.01, min(self.command_timeout, left)))
        except (ShellError, SandboxError) as exc:
            result = CommandResult(f"the shell failed: {exc}", 1)
        self.time_spent += result.seconds
        info.update(exit_code=result.exit_code, timed_out=result.timed_out, output_truncated=result.truncated)
        return result.render()

    # ---------------------------------------------------------------- grading
    def _finish(self, info: dict[str, Any], truncated: bool, why: str = "") -> tuple[str, float, bool, bool, dict[str, Any]]:
        verdict = self.grade()
        self.last_verdict = verdict
        info.update(verdict.to_info())
        info["success"] = verdict.graded and verdict.total > 0 and verdict.passed == verdict.total
        head = f"Episode over ({why} reached). " if truncated else "Submitted. "
        reward = self.success_reward * self._score(verdict)
        return head + verdict.summary(), reward, not truncated, truncated, self._close_episode(info)

    def _score(self, verdict: Verdict) -> float:
        """The share of tests passed (subclasses may judge differently)."""
        return verdict.score

    def _close_episode(self, info: dict[str, Any]) -> dict[str, Any]:
        self._needs_reset = True
        self.shell.close()
        return info

    def grade(self) -> Verdict:
        """Run the hidden tests on a copy of the workspace as it is now."""
        assert self.task is not None
        if self.task.container is not None:
            return self.shell.grade()
        try:
            files, skipped = self._export_workspace()
        except (ShellError, SandboxError) as exc:
            return Verdict([], graded=False, reason=f"the workspace could not be exported: {exc}")
        verdict = verify_task(self.sandbox, self.task, files, overlay=getattr(self.task, "hidden_files", None),
                              inputs_tar=self._pristine)
        verdict.skipped = skipped
        return verdict

    def _export_workspace(self, limit: int = MAX_ARCHIVE_BYTES) -> tuple[bytes, list[str]]:
        """The workspace as a tar, and what was left out of it (sockets, fifos, device nodes, files
        over ``limit``, trees nested too deep): whatever the agent left, the rest is graded.
        :class:`ShellError` when the exportable content is larger than ``limit`` in all."""
        if not isinstance(self.shell, SandboxShell):
            return self.shell.export(limit), []
        code = compiled_cell(EXPORT_SOURCE, "<gem-export>") + f"print(_gem_export_json(_gem['ws'], {int(limit)}))\n"
        text = self.shell.python(code, timeout=120.0).strip()
        try:
            reply = json.loads(text)
        except ValueError:
            raise ShellError(f"unreadable export reply: {preview(text, 200)!r}") from None
        if "error" in reply:
            raise ShellError(str(reply["error"]))
        return base64.b64decode(reply["tar"]), [str(s) for s in reply.get("skipped", [])]

    # ---------------------------------------------------------------- helpers
    def sample_random_action(self) -> str:
        rng = self.action_rng
        if rng.random() < 0.2:
            return "<done/>"
        names = sorted(p for p in (self.task.files if self.task else {}) if "/" not in p) or ["nothing"]
        return "<bash>" + rng.choice(_RANDOM_COMMANDS).format(f=rng.choice(names)) + "</bash>"

    def make_solver(self) -> Agent:
        """The reference solution as an agent: one command with the whole script, then ``<done/>``."""
        if self.task is None:
            raise RuntimeError("make_solver() needs a task: call reset() first.")
        return ScriptedAgent([f"<bash>{self.task.solution}</bash>", "<done/>"])

    def close(self) -> None:
        self.shell.close()

    # ---------------------------------------------------------------- state
    def get_state(self) -> dict[str, Any]:
        state = {k: copy.deepcopy(v) for k, v in self.__dict__.items() if k != "shell"}
        state["shell"] = self.shell.get_state() if (self.shell.started and not self._needs_reset) else None
        return state

    def set_state(self, state: dict[str, Any]) -> None:
        shell_state = state.get("shell")
        self.__dict__.update({k: copy.deepcopy(v) for k, v in state.items() if k != "shell"})
        if shell_state is not None:
            if not self.shell.started:
                self.shell.start()
            self.shell.set_state(shell_state)

    def __deepcopy__(self, memo: dict[int, Any]) -> "TerminalEnv":
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        new.__dict__.update({k: copy.deepcopy(v, memo) for k, v in self.__dict__.items()
                             if k not in ("shell", "_sandbox", "pool", "fixed_task")})
        new._sandbox = self._sandbox
        new.pool = self.pool
        new.fixed_task = self.fixed_task
        new.shell = new._make_shell()
        if self.shell.started and not self._needs_reset:
            new.shell.start()
            new.shell.set_state(self.shell.get_state())
        return new
