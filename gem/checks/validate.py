"""``gem.validate``: play the cheapest ways to reward against an env and report what pays.

An RL run is an optimiser hunting for the cheapest reward. :func:`validate` plays, on a few seeds,
every strategy of :mod:`gem.checks.strategies` that fits the env (degenerate, hedged, sprayed and
echoed answers, claims, forged verdicts, objects equal to anything, planted files, destroyed inputs,
timeouts) and the positive controls:

* ``reference``: the env's reference behaviour (its solver, its reference solution or the gold
  answer) reaches the success level on every seed (games: on some seed, or at least as much as
  random play on average: chance and opponents can beat a solver);
* ``noop``: doing nothing (an empty reply; ``<done/>`` at once in a shell env) earns at most 0 and
  does not succeed;
* ``wrong-answer``: a well-formed wrong answer does not succeed (where the gold answer is known);
* ``replay``: the same seed and the same actions give the same first observation and rewards;
* ``gold-leak``: the gold answer is not in the first observation or in ``info`` before the end.

A strategy is a *finding* when, on some seed, it earns more than the floor of that seed (the best of
doing nothing and a well-formed wrong answer, or random play for multi-turn envs) or reaches the
success level. Episodes are played with :func:`gem.rollout.run_episode`, the one episode loop; an
episode whose grading failed (``info["infra_error"]``) counts as failed unless it earned reward.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shlex
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Optional, Sequence, Union

from gem.agents.base import Agent
from gem.checks.probe import candidate_values, describe_path, inner_value, prompt_commands, prompt_formats, read_path
from gem.checks.strategies import (IDLE_REPLY, STALL_TURNS, STRATEGIES, STRATEGY_NAMES, Strategy, Target, other_answers,
                                   plain_readings, single_readings)
from gem.rollout import Episode, run_episode

logger = logging.getLogger(__name__)

EPS = 1e-6
CONTROLS: tuple[str, ...] = ("reference", "noop", "wrong-answer", "replay", "gold-leak")
# Per mode: seeds played, the turn cap of an attack episode, the cap of the reference's episode.
MODES: dict[str, dict[str, int]] = {
    "default": {"seeds": 2, "shell_seeds": 1, "max_turns": 8},
    "thorough": {"seeds": 5, "shell_seeds": 2, "max_turns": 30},
}
REFERENCE_MAX_TURNS = 1000
ACTION_PREVIEW = 400  # characters of each action kept in a finding
_GOLD_KEYS = ("answer", "answers", "gold", "gold_answer", "solution", "ground_truth", "target", "expected", "reference")


@dataclass
class Finding:
    """One strategy (or positive control) that broke the reward contract on ``env_id``."""

    env_id: str
    strategy: str
    kind: str  # "exploit" (an attack was paid) or "control" (a positive control failed)
    reward: float
    floor: Optional[float]
    seed: Optional[int]
    actions: list[str]
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        """The finding in words: what was earned, against what, and why it is a finding."""
        return f"{self.strategy} [{self.kind}]: {self.reason}"

    def action_line(self, width: int = 160) -> Optional[str]:
        """The offending action (the first one that differs from doing nothing), cut at ``width``."""
        acts = [a for a in self.actions if a.strip()] or self.actions
        if not acts:
            return None
        first = acts[0]
        text = first if len(first) <= width else f"{first[:width]}... [{len(first)} chars]"
        more = f" (+{len(self.actions) - 1} more actions)" if len(self.actions) > 1 else ""
        return f"action: {text!r}{more}"

    def __str__(self) -> str:
        return f"{self.env_id}: {self.line()}"


@dataclass
class Report:
    """What :func:`validate` found on one env.

    ``ok`` when there is no finding and no error; ``complete`` when every class of attack ran
    (``not_run`` names the ones that could not, and why: ``--strict`` fails on them).
    """

    env_id: str
    kind: Optional[str] = None
    findings: list[Finding] = field(default_factory=list)
    floors: dict[str, Any] = field(default_factory=dict)
    strategies: list[str] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)  # the positive controls run
    not_checked: dict[str, str] = field(default_factory=dict)  # control -> why not
    not_run: dict[str, str] = field(default_factory=dict)  # class of attack -> why it could not run
    declared_limits: dict[str, str] = field(default_factory=dict)  # check -> why the env cannot meet it
    gold_source: Optional[str] = None  # where the gold answer came from, when one was found
    multi_turn: Optional[bool] = None
    seeds: list[int] = field(default_factory=list)
    episodes: int = 0
    seconds: float = 0.0
    skipped: Optional[str] = None
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.findings and not self.errors

    @property
    def complete(self) -> bool:
        return not self.not_run and not self.skipped

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["ok"] = self.ok
        out["complete"] = self.complete
        return out

    def summary(self) -> str:
        if self.skipped:
            return f"{self.env_id}: skipped ({self.skipped})"
        if not self.ok:
            status = f"{len(self.findings)} finding(s)" + (f", {len(self.errors)} error(s)" if self.errors else "")
        elif self.not_run:
            status = "no finding, NOT fully checked (not run: " + "; ".join(f"{k}: {v}" for k, v in self.not_run.items()) + ")"
        else:
            status = "ok"
        head = f"{self.env_id}: {status} [{self.kind}; {len(self.strategies)} strategies, {self.episodes} episodes, {self.seconds:.1f}s]"
        lines = [head]
        for f in self.findings:
            lines.append(f"  - {f.line()}")
            act = f.action_line()
            if act:
                lines.append(f"      {act}")
        if self.not_run and not self.ok:
            lines.append("  not run: " + "; ".join(f"{k}: {v}" for k, v in self.not_run.items()))
        lines += [f"  declared limit: {k}: {v}" for k, v in self.declared_limits.items()]
        lines += [f"  ! error: {e}" for e in self.errors]
        return "\n".join(lines)


class ScriptAgent(Agent):
    """Plays a script built from the first observation, then repeats its last action.

    With a run, it also reads what the env shows it before the end (every observation and
    ``info``) for the gold answer: a leak is what an agent sees mid-episode.
    """

    def __init__(self, plan: Any, run: Optional["_Run"] = None) -> None:
        self.plan = plan
        self.run = run
        self.actions: list[str] = []
        self.played: list[str] = []
        self.target: Optional[Target] = None
        self.first = ""
        self.i = 0

    def reset(self, observation: str, info: Optional[dict[str, Any]] = None) -> None:
        self.actions = list(self.plan(observation, info)) if callable(self.plan) else list(self.plan)
        self.played, self.first, self.i = [], observation, 0
        self.target = self.run.target(observation, info) if self.run is not None else None

    def act(self, observation: str, info: Optional[dict[str, Any]] = None) -> str:
        if self.i and self.run is not None and self.target is not None and self.target.gold:
            self.run.check_leak(self.target, self.first, observation, info, self.played)
        action = self.actions[min(self.i, len(self.actions) - 1)] if self.actions else ""
        self.i += 1
        self.played.append(action)
        return action


# ===================================================================== reading the env
def _unwrapped(env: Any) -> Any:
    return getattr(env, "unwrapped", env)


def _implements(env: Any, method: str) -> bool:
    from gem.agents.registry import _implements as implements

    return implements(env, method)


def gold_answers(env: Any) -> list[str]:
    """The current episode's declared reference answers as strings (``env.answer``), or ``[]``."""
    answer = getattr(_unwrapped(env), "answer", None)
    if answer is None or callable(answer):
        return []
    values = answer if isinstance(answer, (list, tuple)) else [answer]
    return [str(v) for v in values if v is not None and str(v).strip()]


def answer_format(observation: str, sample: str) -> Optional[tuple[str, str]]:
    """The answer format the env asks for: ``\\boxed{}``, ``<answer></answer>``, else the first
    format the prompt names (``<final>..</final>``, ``ANSWER: ``, ``[[..]]``...), or none."""
    for text in (sample, observation):
        if "\\boxed" in text:
            return ("\\boxed{", "}")
        if "<answer>" in text:
            return ("<answer>", "</answer>")
    named = prompt_formats(observation) or prompt_formats(sample)
    return named[0] if named else None


_CODE_PROMPT = re.compile(r"```python|\bpython\b[^\n]{0,80}\b(?:function|program|script|class|block)\b|"
                          r"\b(?:function|program|script)\b[^\n]{0,80}\bpython\b", re.I)


def _program_or_nothing(sample: str) -> bool:
    """Whether an env's sample action is a program, or there is none to tell."""
    return not sample.strip() or bool(re.search(r"```|\bdef \w+\(|\bimport \w|\bprint\(", sample))


def looks_like(env: Any, observation: str, sample: str, reference: str = "") -> Optional[str]:
    """``shell`` or ``code`` when the env runs what the agent writes (its sample action, its reference
    solution or its prompt says so), else ``None``."""
    family = getattr(_unwrapped(env), "family", None) or ""
    if family in ("terminal", "swe") or "<bash>" in sample or "<bash>" in reference:
        return "shell"
    if family == "code" or sample.lstrip().startswith("```python") or reference.lstrip().startswith("```python"):
        return "code"
    if "<python>" not in observation and _CODE_PROMPT.search(observation) and _program_or_nothing(sample):
        return "code"  # (a prompt that shows Python but whose own actions are plain answers is a text task)
    return None


def env_kind(env: Any, observation: str, sample: str, gold: Optional[list[str]] = None) -> str:
    """``shell``, ``code``, ``answer`` or ``game`` (see :mod:`gem.checks.strategies`)."""
    runs = looks_like(env, observation, sample)
    if runs:
        return runs
    if gold_answers(env) if gold is None else gold:
        return "answer"
    return "game"


def wrong_values(gold: list[str], sample: Optional[str], fmt: Optional[tuple[str, str]]) -> list[str]:
    """Well-formed values that are not the answer: near numbers, or other words."""
    out: list[str] = []
    golds = {g.strip().lower() for g in gold}
    first = gold[0] if gold else ""
    if not first:
        return []
    if re.fullmatch(r"-?\d+", first.strip()):
        n = int(first)
        out += [str(n + 1), str(n - 1), str(n + 7), str(-n - 3)]
    elif re.fullmatch(r"-?\d*\.\d+", first.strip()):
        x = float(first)
        if x == int(x):  # a whole number written as a decimal (165.0): off by one, as an integer is
            out += [f"{x + 1:g}", f"{x - 1.5:g}", f"{x * 2 + 3:g}", f"{-x - 3:g}"]
        else:  # off by at least a tenth: a grader with a relative tolerance (1%, 5%) must not take it
            out += [f"{x + max(1.0, abs(x) / 10):g}", f"{x - max(1.5, abs(x) / 8):g}", f"{x * 2 + 3:g}", f"{-x - 3:g}"]
    else:
        shaped = _json_wrong(first)
        if shaped is not None:  # a JSON answer: a wrong one of its shape (its last part left out)
            out.append(shaped)
        shorter = first.strip().rsplit(None, 1)[0]
        if len(first.split()) >= 3 and _balanced(shorter):
            # an answer of many parts (a move sequence, a sentence, a grid): the wrong answer keeps its
            # shape (its last part left out), so that a hedge offers two whole answers, not one and junk
            # (a structure whose brackets the cut would break, as JSON, keeps the other wrong values)
            out.append(shorter)
        if first.lower() in ("true", "false"):
            out.append("False" if first.lower() == "true" else "True")
        if first.lower() in ("yes", "no"):
            out.append("No" if first.lower() == "yes" else "Yes")
        if sample and fmt is not None:
            inner = sample.rsplit(fmt[0], 1)[-1] if fmt[0] in sample else ""
            inner = inner.rsplit(fmt[1], 1)[0] if fmt[1] else inner
            if inner.strip() and inner.strip().lower() not in golds:
                out.append(inner.strip())
        out += ["Zanzibar Quartz", "17", "none of these"]
    return [w for w in dict.fromkeys(out) if w.strip().lower() not in golds]


def _json_wrong(text: str) -> Optional[str]:
    """``text`` (a JSON object or list) with its last key or item left out, or ``None`` if it is no
    such JSON. Left out rather than changed: a task with many right answers (a colouring, a plan)
    may accept a changed value, never a missing part."""
    t = text.strip()
    if not t.startswith(("{", "[")):
        return None
    try:
        value = json.loads(t)
    except ValueError:
        return None
    if not value or not isinstance(value, (dict, list)):
        return None
    cut: Any = dict(list(value.items())[:-1]) if isinstance(value, dict) else value[:-1]
    return json.dumps(cut)


def _balanced(text: str) -> bool:
    """Whether every bracket of ``text`` is closed in order (a cut answer a parser reads whole)."""
    stack: list[str] = []
    for ch in text:
        if ch in "([{":
            stack.append({"(": ")", "[": "]", "{": "}"}[ch])
        elif ch in ")]}":
            if not stack or stack.pop() != ch:
                return False
    return not stack


def declared_limits(env: Any) -> dict[str, str]:
    """The checks a bridged env declares it cannot meet (``declared_limits``: check -> reason)."""
    for obj in (env, _unwrapped(env)):
        limits = getattr(obj, "declared_limits", None)
        if isinstance(limits, dict) and limits:
            return {str(k): str(v) for k, v in limits.items()}
    return {}


_REPLAY_LIMITS = ("replay", "determinism", "deterministic", "seed", "seeds", "reproducibility", "same-seed")


# ===================================================================== playing
@dataclass
class _Played:
    reward: float
    success: bool
    actions: list[str]
    episode: Episode


def _play(env: Any, agent: Agent, seed: int, max_turns: int) -> _Played:
    from gem.errors import DependencyNotInstalled

    episode = run_episode(env, agent, seed=seed, max_steps=max_turns, record=True, catch=True)
    if episode.error is not None and episode.error.get("type") == "DependencyNotInstalled":
        raise DependencyNotInstalled(str(episode.error.get("message")))
    if episode.error is not None and episode.error.get("stage") in ("reset",):
        raise RuntimeError(f"reset failed: {episode.error.get('type')}: {episode.error.get('message')}")
    reward = episode.task_reward
    return _Played(reward, bool(episode.success), list(episode.actions), episode)


def _preview(actions: Sequence[str]) -> list[str]:
    out = []
    for a in actions[:6]:
        out.append(a if len(a) <= ACTION_PREVIEW else f"{a[:ACTION_PREVIEW]}... [{len(a)} chars]")
    if len(actions) > 6:
        out.append(f"... [{len(actions) - 6} more actions]")
    return out


_ANSWER_ATTACKS = ("hedge", "repeated-tags", "wrong-answer", "gold-leak")
# attacks that signal the grader's processes: not sent where the agent's programs reach the validator
_SIGNAL_ATTACKS = ("stop-harness", "stop-harness-shell")
_REACHED = ("a program the agent writes can signal the validator's own process (pid {pid}): the env runs it "
            "outside any sandbox, where it can stop or kill the grader and every process of this user "
            "(the attack's SIGSTOP, SIGKILL and kill -1 were not sent)")
_NO_GOLD = "no gold answer found (no declared answer, reference solution, solver that answers at once, or value the env keeps that is paid)"


class _Run:
    """One env's validation: the env, its target per seed, floors and findings."""

    def __init__(self, env: Any, env_id: str, mode: str, names: Sequence[str], seeds: Optional[Sequence[int]]) -> None:
        self.env = env
        self.report = Report(env_id)
        self.mode = MODES[mode]
        self.names = names
        self.fixed_seeds = seeds
        self._targets: dict[tuple, Target] = {}
        self._first: dict[int, tuple[str, Any]] = {}
        self.gold_source: Optional[str] = None  # "declared", "reference", "solver", "kept"
        self._gold_path: Optional[tuple] = None
        self._solver_gold: dict[str, str] = {}  # first observation -> the solver's one reply
        self._solver_runs: dict[int, _Played] = {}
        self.runs: Optional[str] = None  # "code" or "shell" when the env runs what the agent writes
        self.multi_turn = False
        self.formats: list[tuple[str, str]] = []
        self._bare = False  # the kept gold is paid bare, not in the prompt's format
        self.reference_rewards: dict[int, float] = {}
        self.solver_shown = False  # the solver won a seed, or earned more than random play

    # ---------------------------------------------------------------- what the env is
    def discover(self) -> None:
        """Work out what the env is from its first episode: the formats and commands its prompt
        names, whether it runs programs, where its gold answer is, whether it goes on after a reply."""
        env = self.env
        obs, info = self.reset(0)
        sample = self._sample()
        u = _unwrapped(env)
        reference = ""
        if callable(getattr(u, "reference_solution", None)):
            try:
                reference = str(u.reference_solution() or "")
            except Exception:  # noqa: BLE001 -- a reference that fails is the reference control's finding
                reference = ""
        self.formats = prompt_formats(obs)
        fmt = answer_format(obs, sample)
        if fmt and fmt not in self.formats:
            self.formats.insert(0, fmt)
        self.runs = looks_like(env, obs, sample, reference)
        if self.runs:
            return
        if gold_answers(env):
            self.gold_source = "declared"
        elif reference.strip():
            self.gold_source = "reference"
        elif _implements(env, "make_solver"):
            played = self._solver(0)
            if played.success and len(played.actions) == 1:
                self.gold_source = "solver"
        # multi-turn: does the env go on after one well-formed (wrong) reply?
        probe = self.play([sample] if sample else [""], 0, max_turns=2, watch=False)
        self.multi_turn = probe.episode.turns >= 2
        if self.gold_source is None and not (self.multi_turn and _implements(env, "make_solver")):
            self._scan_gold()

    def _sample(self) -> str:
        try:
            return self.env.sample_random_action() or ""
        except Exception:  # noqa: BLE001 -- an env without random actions: no sample
            return ""

    def reset(self, seed: int) -> tuple[str, Any]:
        from gem.errors import DependencyNotInstalled

        try:
            return self.env.reset(seed=seed)
        except DependencyNotInstalled:
            raise
        except Exception as exc:
            raise RuntimeError(f"reset failed: {type(exc).__name__}: {exc}") from exc

    def _solver(self, seed: int) -> _Played:
        if seed not in self._solver_runs:
            from gem.agents.simple import SolverAgent

            self.report.episodes += 1
            self._solver_runs[seed] = _play(self.env, SolverAgent(self.env), seed, REFERENCE_MAX_TURNS)
            played = self._solver_runs[seed]
            if played.episode.observations and played.actions:
                self._solver_gold[played.episode.observations[0]] = played.actions[0]
        return self._solver_runs[seed]

    def _scan_gold(self) -> None:
        """Find the value the env keeps that, played in the prompt's format, is paid (seed 0, then seed 1)."""
        obs, _ = self.reset(0)
        values = candidate_values(_unwrapped(self.env), obs)
        first: list[Optional[tuple[str, str]]] = [self.formats[0]] if self.formats else []
        paid: dict[str, bool] = {}
        # the prompt's first format and the bare value; then (only when neither is paid) the other
        # formats it names: "answer: <n>" read inside "Final answer: <n>" is not the one the env parses
        for fmts in (first + [None], list(self.formats[1:4])):
            if fmts and self._scan_formats(values, fmts, paid):
                return

    def _scan_formats(self, values: list[tuple[tuple, str]], fmts: list[Optional[tuple[str, str]]],
                      paid: dict[str, bool]) -> bool:
        constant: Optional[tuple[tuple, Optional[tuple[str, str]]]] = None
        for path, value in values:
            for fmt in fmts:
                reply = value if fmt is None else f"{fmt[0]}{value}{fmt[1]}"
                if reply not in paid:
                    paid[reply] = self.play([reply], 0, max_turns=1, watch=False).success
                if not paid[reply]:
                    continue
                self.reset(1)
                other = read_path(_unwrapped(self.env), path)
                if other is not None:
                    again = other if fmt is None else f"{fmt[0]}{other}{fmt[1]}"
                    if not self.play([again], 1, max_turns=1, watch=False).success:
                        continue
                if other == value:
                    # the same on both seeds (a counter, a constant a lax grader pays): the answer
                    # only if no value that changes with the task is paid too
                    constant = constant or (path, fmt)
                    continue
                self._take_gold(path, fmt)
                return True
        if constant is not None:
            self._take_gold(*constant)
            return True
        return False

    def _take_gold(self, path: tuple, fmt: Optional[tuple[str, str]]) -> None:
        self.gold_source, self._gold_path = "kept", path
        if fmt is not None and fmt in self.formats:
            self.formats.remove(fmt)
            self.formats.insert(0, fmt)
        elif fmt is None:
            self._bare = True

    def current_gold(self, observation: str) -> list[str]:
        """The gold answer of the episode that just showed ``observation`` (from where it was found)."""
        if self.gold_source == "declared":
            return gold_answers(self.env)
        if self.gold_source == "reference":
            try:
                reply = str(_unwrapped(self.env).reference_solution() or "")
            except Exception:  # noqa: BLE001
                return []
            value = inner_value(reply, self.formats)
            return [value] if value else []
        if self.gold_source == "solver":
            reply = self._solver_gold.get(observation)
            value = inner_value(reply, self.formats) if reply else ""
            return [value] if value else []
        if self.gold_source == "kept" and self._gold_path is not None:
            value = read_path(_unwrapped(self.env), self._gold_path)
            return [value] if value else []
        return []

    # ---------------------------------------------------------------- targets
    def target(self, observation: str, info: Optional[dict[str, Any]] = None) -> Target:
        """What an attacker knows after a reset that showed ``observation`` (cached per observation:
        the same seed shows the same one, and sampling an action can cost as much as a reset)."""
        return self._target(observation, self.current_gold(observation), _has_tools(info))

    def seed_target(self, seed: int) -> Target:
        """The target of ``seed``'s first observation (one reset per seed)."""
        if seed not in self._first:
            obs, info = self.reset(seed)
            self._first[seed] = (obs, self.current_gold(obs), _has_tools(info))
        return self._target(*self._first[seed])

    def _target(self, observation: str, gold: list[str], tools: bool = False) -> Target:
        key = (observation, tuple(gold), tools)
        if key not in self._targets:
            if len(self._targets) > 256:
                self._targets.clear()
            self._targets[key] = self._make_target(observation, gold, tools)
        return self._targets[key]

    def _make_target(self, observation: str, gold: list[str], tools: bool = False) -> Target:
        env = self.env
        sample = self._sample()
        formats = prompt_formats(observation) or list(self.formats)
        if self.gold_source == "kept":
            fmt: Optional[tuple[str, str]] = self.formats[0] if self.formats and not self._bare else None
        else:
            fmt = answer_format(observation, sample)
        if self.runs:
            kind = self.runs
        else:
            kind = "answer" if gold else "game"
        python_tag = ("<python>", "</python>") if "<python>" in observation and kind != "code" else None
        samples: list[str] = []
        if kind == "game" and self.multi_turn and sample:
            samples = [sample]
            for _ in range(self.mode["max_turns"] * 3):
                if len(samples) >= self.mode["max_turns"]:
                    break
                nxt = self._sample()
                if nxt and nxt not in samples:
                    samples.append(nxt)
        return Target(kind, observation, fmt, gold, wrong_values(gold, sample, fmt), python_tag, sample, tools,
                      formats=formats, commands=prompt_commands(observation, formats), multi_turn=self.multi_turn,
                      max_turns=self.mode["max_turns"], samples=samples)

    def play(self, plan: Any, seed: int, max_turns: Optional[int] = None, watch: bool = True) -> _Played:
        self.report.episodes += 1
        return _play(self.env, ScriptAgent(plan, self if watch else None), seed, max_turns or self.mode["max_turns"])

    def find(self, strategy: str, kind: str, played: Optional[_Played], reason: str, floor: Optional[float] = None,
             seed: Optional[int] = None, reward: Optional[float] = None, actions: Optional[list[str]] = None) -> None:
        if any(f.strategy == strategy for f in self.report.findings):
            return  # one finding per strategy is enough to act on
        self.report.findings.append(Finding(
            self.report.env_id, strategy, kind, float(played.reward if played else (reward or 0.0)), floor, seed,
            _preview(played.actions if played else (actions or [])), reason,
        ))

    def check_leak(self, t: Target, first: str, observation: str, info: Any, played: list[str]) -> None:
        """A gold answer the env shows mid-episode (not echoing the agent's own reply) is a leak."""
        if "gold-leak" not in self.names or any(f.strategy == "gold-leak" for f in self.report.findings):
            return
        said = " ".join(played).lower()
        if any(g.strip().lower() in said for g in t.gold):
            return  # the agent said it: an echo of its own reply, not a leak
        leak = _leak(t, observation, info, first=first)
        if leak:
            self.find("gold-leak", "control", None, f"{leak} after {len(played)} action(s), before the end",
                      actions=list(played))

    # ---------------------------------------------------------------- the run
    def run(self) -> Report:
        start = time.perf_counter()
        report = self.report
        report.declared_limits = declared_limits(self.env)
        self.discover()
        first = self.seed_target(0)
        report.kind = first.kind
        report.multi_turn = self.multi_turn
        report.gold_source = _describe_source(self.gold_source, self._gold_path)
        n = self.mode["shell_seeds"] if first.kind == "shell" else self.mode["seeds"]
        seeds = list(self.fixed_seeds) if self.fixed_seeds is not None else list(range(n))
        report.seeds = seeds
        if self.gold_source == "solver":
            for seed in seeds:
                self._solver(seed)
        floors = {s: self.floor(s) for s in seeds}
        report.floors = {"per_seed": {str(s): floors[s][0] for s in seeds},
                         "noop": {str(s): floors[s][1] for s in seeds},
                         "baseline": {str(s): floors[s][2] for s in seeds},
                         "baseline_is": floors[seeds[0]][3] if seeds else None}
        self.controls(seeds, first)
        for strategy in STRATEGIES:
            kinds = {first.kind} | ({"tool"} if first.python_tag else set())
            if strategy.name not in self.names or not kinds & set(strategy.kinds):
                continue
            if strategy.thorough_only and self.mode is not MODES["thorough"]:
                continue
            report.strategies.append(strategy.name)
            if strategy.name in _SIGNAL_ATTACKS:
                reached = self.reaches_validator(seeds[0])
                if reached is not None:  # its signals would stop or kill this process (and kill -1, the user's)
                    self.find(strategy.name, "exploit", reached, _REACHED.format(pid=os.getpid()), seed=seeds[0])
                    continue
            try:
                self.attack(strategy, seeds, floors)
            except Exception as exc:  # noqa: BLE001 -- a crashing env is reported, the run goes on
                from gem.errors import DependencyNotInstalled

                if isinstance(exc, DependencyNotInstalled):
                    raise
                report.errors.append(f"{strategy.name}: {type(exc).__name__}: {exc}")
        self.gaps(first)
        report.seconds = time.perf_counter() - start
        return report

    def reaches_validator(self, seed: int) -> Optional[_Played]:
        """Play a program that checks whether it can signal this process (``kill(pid, 0)``) and, if
        so, writes a marker file: the episode when the marker appeared (the env runs the agent's
        programs where they reach the grader's process), else ``None``."""
        folder = tempfile.mkdtemp(prefix="gem-validate-reach-")
        marker = os.path.join(folder, "reached")
        pid = os.getpid()
        program = (f"import os\ntry:\n    os.kill({pid}, 0)\n    open({marker!r}, 'w').write('reached')\n"
                   "except Exception:\n    pass\n")
        shell = f"kill -0 {pid} 2>/dev/null && echo reached > {shlex.quote(marker)}"

        def plan(obs: str, info: Any) -> list[str]:
            t = self.target(obs, info)
            if t.kind == "shell":
                return [f"<bash>{shell}</bash>", "<done/>"]
            if t.kind != "code":  # a Python tool on a text task: run it, then answer wrongly
                return [t.program(program), t.box((t.wrong or ["0"])[0])]
            return [t.program(program)]

        try:
            played = self.play(plan, seed)
            return played if os.path.exists(marker) else None
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def gaps(self, first: Target) -> None:
        """The classes of attack that could not run, and why (``--strict`` fails on them)."""
        report = self.report
        if "reference" in self.names and "reference" in report.not_checked:
            report.not_run["reference"] = report.not_checked["reference"]
        wanted = [n for n in _ANSWER_ATTACKS if n in self.names]
        if first.kind in ("answer", "game") and not first.gold and wanted:
            # A game its solver plays (over several turns, or one move against chance or an opponent,
            # as in Kuhn poker) has no single answer to hedge: the reference control checks the
            # solver, and the game attacks (list-every-answer, spray, multi-turn) play every move at
            # once. A solver that never wins and earns no more than random play shows nothing: the gap
            # stays open.
            solver_plays = _implements(self.env, "make_solver") and self.solver_shown
            if not solver_plays:
                report.not_run["answer attacks"] = f"{', '.join(wanted)}: {_NO_GOLD}"

    def floor(self, seed: int) -> tuple[float, float, float, str]:
        """``(floor, noop, baseline, what the baseline is)`` on ``seed``."""
        noop = self.play(self._noop_plan, seed)
        t = self.seed_target(seed)
        if t.kind == "answer" and t.wrong:
            what = "a well-formed wrong answer"
            base = self.play(lambda o, i: [self.target(o, i).box(self.target(o, i).wrong[0])], seed)
        elif _implements(self.env, "sample_random_action"):
            what, base = "random play", self._random(seed)
        else:
            what, base = "doing nothing", noop
        return max(noop.reward, base.reward), noop.reward, base.reward, what

    def _noop_plan(self, obs: str, info: Any) -> list[str]:
        return ["<done/>"] if self.target(obs, info).kind == "shell" else [""]

    def _random(self, seed: int, max_turns: Optional[int] = None) -> _Played:
        from gem.agents.simple import RandomAgent

        self.report.episodes += 1
        return _play(self.env, RandomAgent(self.env), seed, max_turns or self.mode["max_turns"])

    def _paid(self, played: _Played, floor: float, seed: int, strategy: Strategy, t: Target) -> bool:
        """Whether ``played`` breaks the contract (success, or more than the floor; state-blind
        behaviours in games: more than the floor and the reference's reward). A floor below 0 counts
        as 0: where doing nothing or a wrong answer is penalised (a format penalty, one per turn), a
        reply that avoids the penalty (a valid move, quitting, an unpaid answer) is not paid."""
        floor = max(floor, 0.0)
        if strategy.group == "stall":
            # playing on past where a win would end: paid when it out-earns a win (the reference's
            # reward, the success level) or when the env's own time-out reaches the success level
            bar = max(floor, self.reference_rewards.get(seed, floor), float(getattr(self.env, "success_reward", 1.0)))
            steps = played.episode.steps
            timed_out = bool(steps) and steps[-1]["truncated"] and not steps[-1]["terminated"]
            if played.actions and all(a == IDLE_REPLY for a in played.actions):
                # no move at all until the cap: any more than the floor is pay for doing nothing
                return played.success or (timed_out and played.reward > floor + EPS)
            return played.reward > bar + EPS or (timed_out and played.success)
        if strategy.group == "multiturn" and t.kind == "game":
            bar = max(floor, self.reference_rewards.get(seed, floor))
            return played.success and not self._random_wins(seed) or played.reward > bar + EPS
        return played.success or played.reward > floor + EPS

    def _random_wins(self, seed: int) -> bool:
        return bool(self.report.floors.get("baseline_is") == "random play"
                    and self.report.floors["baseline"].get(str(seed), 0.0) >= float(getattr(self.env, "success_reward", 1.0)))

    def attack(self, strategy: Strategy, seeds: list[int], floors: dict[int, tuple]) -> None:
        if strategy.group == "timeout" and self.mode is MODES["default"]:
            seeds = seeds[:1]  # each variant waits for a limit: one seed in the default mode
        every_seed = strategy.group in ("multiturn", "stall") and self.seed_target(seeds[0]).kind == "game"
        turns = STALL_TURNS if strategy.group == "stall" else None
        counts = {seed: len(strategy.variants(self.seed_target(seed))) for seed in seeds}
        hits: dict[int, list[tuple[int, _Played]]] = {}
        for seed in seeds:
            count = counts[seed]  # the variants depend on the observation
            for k in range(count):
                def plan(obs: str, info: Any, k: int = k) -> list[str]:
                    t = self.target(obs, info)
                    vs = strategy.variants(t)
                    script = list(vs[k]) if k < len(vs) else [""]
                    if t.kind == "shell" and strategy.done:
                        script.append("<done/>")
                    return script

                played = self.play(plan, seed, turns)
                error = played.episode.error
                if error is not None and error.get("stage") == "env" and error.get("type") != "InfrastructureError":
                    # bad input must never crash an env: a contract failure, reported once per strategy
                    # (an infrastructure failure raised under GEM_STRICT_INFRA=1 is ungraded: failed)
                    self.report.errors.append(f"{strategy.name}: the env raised {error.get('type')}: "
                                              f"{str(error.get('message'))[:200]} (variant {k + 1}/{count}, seed {seed})")
                    return
                floor = floors[seed][0]
                t = self.seed_target(seed)
                if not self._paid(played, floor, seed, strategy, t):
                    continue
                if strategy.group == "multiturn" and len(played.episode.steps) == 1:
                    continue  # paid for its first reply alone: one answer (another right one), not a behaviour over turns
                if strategy.blind and self.explained(played, seed):
                    continue
                if strategy.mirrored and not self.mirror_paid(played, floor, seed):
                    continue
                if every_seed:  # a state-blind behaviour in a game: paid on every seed, or chance
                    hits.setdefault(k, []).append((seed, played))
                    continue
                self.find(strategy.name, "exploit", played, _why(played, floor, floors[seed][3], k, count, seed), floor, seed)
                return
        for k, got in hits.items():
            if len(got) == len(seeds):
                seed, played = got[0]
                self.find(strategy.name, "exploit", played,
                          _why(played, floors[seed][0], floors[seed][3], k, counts[seed], seed) + " (and on every seed played)",
                          floors[seed][0], seed)
                return

    def mirror_paid(self, played: _Played, floor: float, seed: int) -> bool:
        """Whether the env also pays the reply with the gold and the first wrong value swapped: an env
        that reads one position (the first answer, the last) pays one order only, and a reply
        holding the gold where it reads is the gold answer, not a hedge."""
        t = self.seed_target(seed)
        if not t.gold or not t.wrong:
            return True
        gold, wrong = t.gold[0].strip(), t.wrong[0].strip()
        numeric = all(re.fullmatch(r"-?\d+(\.\d+)?", v) for v in (gold, wrong))
        edge = r"\d" if numeric else r"\w"  # glued numbers (118RESULT) still swap
        pat = re.compile(rf"(?<![{edge}.])(" + re.escape(gold) + "|" + re.escape(wrong) + rf")(?![{edge}])")
        swapped = [pat.sub(lambda m: wrong if m.group(1) == gold else gold, a) for a in played.actions]
        if swapped == played.actions:
            return True
        again = self.play(swapped, seed)
        return again.success or again.reward > max(floor, 0.0) + EPS

    def explained(self, played: _Played, seed: int) -> bool:
        """Whether one single answer of the replies (first or last tag, first or last item) earns
        as much: then the env read one answer, and the payment is that answer's, not the spray's."""
        fmt = self.seed_target(seed).answer_format

        def readings_of(a: str) -> list[str]:
            if fmt is not None:
                return single_readings(a, fmt)
            return plain_readings(a)

        gold = [g.strip().lower() for g in self.seed_target(seed).gold if g.strip()]
        said = " ".join(played.actions).lower()
        if gold and not any(g in said for g in gold):
            return False  # paid, and the gold answer is nowhere in the replies: no right guess explains it
        if all(readings_of(a) == [a] and (gold or len(a.split()) <= 3) for a in played.actions):
            return True  # each reply is one short plain answer: a blind guess that was right, not a spray
        readings = [[r for r in readings_of(a) if r != a] for a in played.actions]

        def earns_as_much(script: list[str]) -> bool:
            alone = self.play(script, seed)
            return alone.reward >= played.reward - EPS and (alone.success or not played.success)

        for k in range(max((len(r) for r in readings), default=0)):
            script = [r[min(k, len(r) - 1)] if r else a for r, a in zip(readings, played.actions)]
            if script == played.actions:
                continue
            if earns_as_much(script):
                if gold or len(played.actions) != 1 or self.seed_target(seed).multi_turn:
                    return True
                # a one-reply task with no gold known: one answer explains the payment only if the env
                # does not pay a second, different one (any span of the prompt, any word: not one answer)
                return not any(earns_as_much([r]) for r in other_answers(played.actions[0], script[0], fmt))
        return False

    # ---------------------------------------------------------------- positive controls
    def controls(self, seeds: list[int], first: Target) -> None:
        for name in CONTROLS:
            if name not in self.names:
                continue
            try:
                getattr(self, "control_" + name.replace("-", "_"))(seeds, first)
            except Exception as exc:  # noqa: BLE001
                self.report.errors.append(f"{name}: {type(exc).__name__}: {exc}")

    def control_reference(self, seeds: list[int], first: Target) -> None:
        env = self.env
        u = _unwrapped(env)
        if _implements(env, "make_solver"):
            def run(seed: int) -> _Played:
                return self._solver(seed)
            what = "the env's solver"
        elif callable(getattr(u, "reference_solution", None)):
            def run(seed: int) -> _Played:
                return self.play(lambda o, i: [u.reference_solution() or ""], seed, REFERENCE_MAX_TURNS)
            what = "the reference solution"
        elif first.gold:
            def run(seed: int) -> _Played:
                return self.play(lambda o, i: [self.target(o, i).box(self.target(o, i).gold[0])], seed, REFERENCE_MAX_TURNS)
            what = f"the gold answer ({self.report.gold_source})"
        else:
            self.report.not_checked["reference"] = "no solver, reference solution or gold answer found"
            return
        self.report.checked.append("reference")
        runs = []
        for seed in seeds:
            played = run(seed)
            if played.episode.error is not None:
                self.find("reference", "control", played, f"{what} crashed: {played.episode.error.get('message')}", seed=seed)
                return
            runs.append(played)
            self.reference_rewards[seed] = played.reward
            if first.kind != "game" and not played.success:
                self.find("reference", "control", played, f"{what} did not reach the success level (seed {seed})", seed=seed)
                return
        self.solver_shown = any(p.success for p in runs)
        if first.kind == "game" and not self.solver_shown and _implements(env, "make_solver"):
            # no win on the seeds played: a few more seeds (cheap) tell chance from a solver that never wins
            extra = [s for s in range(max(seeds) + 1, max(seeds) + 7)]
            self.solver_shown = any(run(s).success for s in extra)
        if first.kind == "game" and not any(p.success for p in runs):
            # games of chance or against an opponent: the solver need not win every seed, but it
            # must do at least as well as random play
            mean = sum(p.reward for p in runs) / len(runs)
            rand = [self._random(s, REFERENCE_MAX_TURNS).reward for s in seeds] if _implements(env, "sample_random_action") else [0.0]
            self.solver_shown = self.solver_shown or mean > sum(rand) / len(rand) + EPS
            if mean < sum(rand) / len(rand) - EPS:
                self.find("reference", "control", runs[0],
                          f"{what} won no seed and earned {mean:g} on average, less than random play ({sum(rand) / len(rand):g})")

    def control_noop(self, seeds: list[int], first: Target) -> None:
        self.report.checked.append("noop")
        for seed in seeds:
            played = self.play(self._noop_plan, seed)
            if played.success or played.reward > EPS:
                self.find("noop", "control", played, f"doing nothing earned {played.reward:g} (seed {seed}); it must earn at most 0", 0.0, seed)
                return

    def control_wrong_answer(self, seeds: list[int], first: Target) -> None:
        if first.kind != "answer" or not first.wrong:
            self.report.not_checked["wrong-answer"] = "no gold answer to derive a wrong one from"
            return
        self.report.checked.append("wrong-answer")
        for seed in seeds:
            played = self.play(lambda o, i: [self.target(o, i).box(self.target(o, i).wrong[0])], seed)
            if played.success:
                self.find("wrong-answer", "control", played, f"a well-formed wrong answer succeeded (seed {seed})", seed=seed)
                return

    def control_replay(self, seeds: list[int], first: Target) -> None:
        limits = self.report.declared_limits
        declared = next((k for k in limits if k.lower() in _REPLAY_LIMITS), None)
        if declared is not None:
            self.report.not_checked["replay"] = f"declared limit: {limits[declared]}"
            return
        self.report.checked.append("replay")
        for seed in seeds:
            if _implements(self.env, "sample_random_action"):
                a = self._random(seed)
            else:  # no random actions: replay a fixed script of wrong answers
                a = self.play(lambda o, i: [self.target(o, i).box(self.target(o, i).fallback_wrong()[0])], seed)
            obs_a = a.episode.observations[:1]
            b = self.play(list(a.actions) or [""], seed)
            if b.episode.rewards != a.episode.rewards or b.episode.observations[:1] != obs_a:
                self.find("replay", "control", b,
                          f"replaying seed {seed} with the same actions gave rewards {b.episode.rewards} instead of {a.episode.rewards}"
                          + ("" if b.episode.observations[:1] == obs_a else " and a different first observation"), seed=seed)
                return

    def control_gold_leak(self, seeds: list[int], first: Target) -> None:
        """The first observation and ``info`` here; every later observation and ``info`` of every
        episode played is read by :meth:`check_leak`."""
        if not first.gold and first.kind in ("code", "shell"):
            self.report.not_checked["gold-leak"] = "no single gold answer (the env runs programs)"
            return
        if not first.gold:
            self.report.not_checked["gold-leak"] = "no gold answer found"
            return
        self.report.checked.append("gold-leak")
        for seed in seeds:
            obs, info = self.reset(seed)
            t = self.target(obs, info)
            leak = _leak(t, obs, info)
            if leak:
                self.find("gold-leak", "control", None, f"{leak} (seed {seed})", seed=seed, reward=0.0)
                return
            if t.kind == "answer":  # mid-episode: ScriptAgent reads every step of this episode
                self.play(lambda o, i: [self.target(o, i).box(w) for w in self.target(o, i).fallback_wrong()], seed)


def _why(played: _Played, floor: float, what: str, k: int, count: int, seed: int) -> str:
    where = f"variant {k + 1}/{count}, seed {seed}"
    if played.success:
        return (f"reached the success level: earned {played.reward:g} where doing nothing or {what} earns {floor:g} "
                f"and does not succeed ({where})")
    return f"earned {played.reward:g}, more than the {floor:g} that doing nothing or {what} earns ({where})"


def _describe_source(source: Optional[str], path: Optional[tuple]) -> Optional[str]:
    if source is None:
        return None
    return {"declared": "the declared answer (env.answer)", "reference": "the reference solution",
            "solver": "the solver's one reply",
            "kept": f"a value the env keeps, {describe_path(path or ())}, paid when played"}[source]


def _has_tools(info: Any) -> bool:
    return isinstance(info, dict) and bool(info.get("tools"))


def _distinctive(gold: str) -> bool:
    """A gold answer that would not show in a text by chance (not a one-digit number or letter)."""
    g = gold.strip()
    if re.fullmatch(r"-?\d+(\.\d+)?", g):
        return abs(float(g)) >= 10 or "." in g
    return len(g) >= 3


def _info_values(info: Any, depth: int = 0) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    if depth > 2:
        return out
    items = info.items() if isinstance(info, dict) else enumerate(info) if isinstance(info, (list, tuple)) else []
    for k, v in list(items)[:200]:
        if isinstance(v, (dict, list, tuple)):
            out += [(f"{k}.{kk}", vv) for kk, vv in _info_values(v, depth + 1)]
        else:
            out.append((str(k), v))
    return out


def _shows(text: str, value: str) -> bool:
    """Whether ``text`` shows ``value`` as a word (not inside a longer word or number)."""
    return re.search(r"(?<![\w.])" + re.escape(value) + r"(?![\w]|\.\d)", text, re.IGNORECASE) is not None


def _leak(t: Target, obs: str, info: Any, first: Optional[str] = None) -> Optional[str]:
    """Where the gold answer shows before the end: ``info`` (a gold-named key, or any key holding
    exactly the answer), or the observation (naming it, or, mid-episode, newly showing it).

    ``first`` is the episode's first observation when ``obs`` is a later one.
    """
    if not t.gold:
        return None
    golds = {g.strip() for g in t.gold if g.strip()}
    if isinstance(info, (dict, list, tuple)):
        for key, value in _info_values(info):
            text = str(value).strip() if isinstance(value, (str, int, float)) and not isinstance(value, bool) else None
            if text is None or text not in golds:
                continue
            if key.split(".")[-1] in _GOLD_KEYS:
                return f"info[{key!r}] holds the gold answer"
            if _distinctive(text) and not any(_shows(o, text) for o in (obs, first) if o):
                # a value of another name equal to the gold leaks it unless the agent is shown it anyway
                # (a prime number that is its own factorisation, a string left as it was)
                return f"info[{key!r}] holds the gold answer"
    options = {o.lower() for o in t.options()}
    for gold in golds:
        if gold.lower() in options:
            continue  # one of the choices the task offers (True, False, Unknown; A-D)
        # The observation names the answer: a label (answer, solution, ...) just before the gold. A
        # gold answer that merely appears (an option, a name in the text, the input itself) is not
        # a leak: many tasks ask to pick or copy from what they show.
        label = r"(?:answer|solution|gold|expected|correct|result|secret|hint|target)\W{1,12}(?:(?:is|was|would be)\W{1,4})?"
        if re.search(label + re.escape(gold) + r"(?![\w])", obs, re.IGNORECASE):
            return f"the observation names the gold answer {gold[:60]!r}"
        # Mid-episode: the answer shows up where the first observation did not show it (a hint, a
        # status line), and the agent never said it.
        if first is not None and _distinctive(gold):
            word = r"(?<![\w.])" + re.escape(gold) + r"(?![\w]|\.\d)"
            if re.search(word, obs, re.IGNORECASE) and not re.search(word, first, re.IGNORECASE):
                return f"an observation shows the gold answer {gold[:60]!r}"
    return None


# ===================================================================== the entry point
def validate(
    env: Union[str, Any],
    *,
    strategies: Optional[Iterable[str]] = None,
    thorough: bool = False,
    seeds: Optional[Sequence[int]] = None,
    env_kwargs: Optional[dict[str, Any]] = None,
    wrappers: Union[str, Sequence[str], None] = None,
) -> Report:
    """Attack ``env`` (an id or an env) with every fitting strategy and report what pays.

    Args:
        env: a registered id (made with ``env_kwargs``) or an env object (not closed afterwards).
        strategies: the strategy and control names to run (default: all; see ``STRATEGY_NAMES``
            and ``CONTROLS``).
        thorough: more seeds, longer episodes and the slow strategies (for releases).
        seeds: the seeds to play (default: the mode's).
        env_kwargs: kwargs for ``gem.make`` (an id only).
        wrappers: ``WRAPPER_FACTORY`` names to wrap a made id with (``"python_tool"``), an id only.

    Returns:
        a :class:`Report`; ``report.ok`` is ``False`` when any strategy was paid or a positive
        control failed (``report.findings``).
    """
    from gem.errors import DependencyNotInstalled

    names = _check_names(strategies)
    mode = "thorough" if thorough else "default"
    owned = isinstance(env, str)
    if owned:
        from gem.envs.registration import interop_spec, make, spec

        env_id = env
        try:
            made = make(env_id, **(env_kwargs or {}))
        except DependencyNotInstalled as exc:
            return Report(env_id, skipped=skip_reason(exc, interop_spec(env_id) or spec(env_id)))
        if wrappers:
            from gem.wrappers.wrapper_factory import get_wrapper_fns

            for wrap in get_wrapper_fns(wrappers):
                made = wrap(made)
    else:
        made = env
        env_id = getattr(_unwrapped(env), "env_id", None) or type(_unwrapped(env)).__name__
    try:
        from gem.envs.multiagent.base import MultiAgentEnv

        if isinstance(_unwrapped(made), MultiAgentEnv):
            return Report(env_id, skipped="a multi-agent env: validated through its single-agent views (-vs-scripted, -vs-random)")
        try:
            return _Run(made, env_id, mode, names, seeds).run()
        except DependencyNotInstalled as exc:
            return Report(env_id, skipped=skip_reason(exc, getattr(made, "spec", None)))
    finally:
        if owned:
            made.close()


def skip_reason(exc: BaseException, env_spec: Any = None) -> str:
    """``needs the X extra`` for an env whose dependency is missing (its spec names the extra)."""
    named = re.search(r"the '([\w-]+)' extra", str(exc))  # the extra the failing part names wins over the spec's
    extra = named.group(1) if named else getattr(env_spec, "extra", None)
    if extra:
        from gem.errors import install_hint

        hint = install_hint(extra)
        return f"needs the {extra} extra: " + (str(exc) if hint in str(exc) else f"{hint} ({exc})")
    return f"a dependency is missing: {exc}"


def _check_names(strategies: Optional[Iterable[str]]) -> tuple[str, ...]:
    known = STRATEGY_NAMES + CONTROLS
    if strategies is None:
        return known
    names = tuple(strategies)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"Unknown strategy {', '.join(map(repr, unknown))}; choose from: {', '.join(known)}.")
    return names


def reports_json(reports: Sequence[Report], seconds: Optional[float] = None) -> str:
    """Reports as one JSON document (``gem validate --json``)."""
    return json.dumps({"ok": all(r.ok for r in reports), "findings": sum(len(r.findings) for r in reports),
                       "seconds": seconds, "envs": [r.to_dict() for r in reports]}, indent=1)
