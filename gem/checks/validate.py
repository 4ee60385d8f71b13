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
import re
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Optional, Sequence, Union

from gem.agents.base import Agent
from gem.checks.strategies import STRATEGIES, STRATEGY_NAMES, Strategy, Target, single_readings
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

    def __str__(self) -> str:
        floor = "" if self.floor is None else f" (floor {self.floor:g})"
        return f"{self.env_id}: {self.strategy} [{self.kind}] reward {self.reward:g}{floor}: {self.reason}"


@dataclass
class Report:
    """What :func:`validate` found on one env. ``ok`` when there is no finding."""

    env_id: str
    kind: Optional[str] = None
    findings: list[Finding] = field(default_factory=list)
    floors: dict[str, Any] = field(default_factory=dict)
    strategies: list[str] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)  # the positive controls run
    not_checked: dict[str, str] = field(default_factory=dict)  # control -> why not
    seeds: list[int] = field(default_factory=list)
    episodes: int = 0
    seconds: float = 0.0
    skipped: Optional[str] = None
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.findings and not self.errors

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["ok"] = self.ok
        return out

    def summary(self) -> str:
        if self.skipped:
            return f"{self.env_id}: skipped ({self.skipped})"
        head = f"{self.env_id}: {'ok' if self.ok else f'{len(self.findings)} finding(s)'} " \
               f"[{self.kind}; {len(self.strategies)} strategies, {self.episodes} episodes, {self.seconds:.1f}s]"
        lines = [head] + [f"  - {f.strategy} [{f.kind}] reward {f.reward:g}"
                          + ("" if f.floor is None else f" > floor {f.floor:g}") + f": {f.reason}" for f in self.findings]
        lines += [f"  ! error: {e}" for e in self.errors]
        return "\n".join(lines)


class ScriptAgent(Agent):
    """Plays a script built from the first observation, then repeats its last action."""

    def __init__(self, plan: Any) -> None:
        self.plan = plan
        self.actions: list[str] = []
        self.i = 0

    def reset(self, observation: str, info: Optional[dict[str, Any]] = None) -> None:
        self.actions = list(self.plan(observation, info)) if callable(self.plan) else list(self.plan)
        self.i = 0

    def act(self, observation: str, info: Optional[dict[str, Any]] = None) -> str:
        action = self.actions[min(self.i, len(self.actions) - 1)] if self.actions else ""
        self.i += 1
        return action


# ===================================================================== reading the env
def _unwrapped(env: Any) -> Any:
    return getattr(env, "unwrapped", env)


def _implements(env: Any, method: str) -> bool:
    from gem.agents.registry import _implements as implements

    return implements(env, method)


def gold_answers(env: Any) -> list[str]:
    """The current episode's reference answers as strings (``env.answer``), or ``[]``."""
    answer = getattr(_unwrapped(env), "answer", None)
    if answer is None:
        return []
    values = answer if isinstance(answer, (list, tuple)) else [answer]
    return [str(v) for v in values if v is not None and str(v).strip()]


def answer_format(observation: str, sample: str) -> Optional[tuple[str, str]]:
    """The answer format the env asks for: ``\\boxed{}``, ``<answer></answer>`` or none."""
    for text in (sample, observation):
        if "\\boxed" in text:
            return ("\\boxed{", "}")
        if "<answer>" in text:
            return ("<answer>", "</answer>")
    return None


def env_kind(env: Any, observation: str, sample: str, gold: Optional[list[str]] = None) -> str:
    """``shell``, ``code``, ``answer`` or ``game`` (see :mod:`gem.checks.strategies`)."""
    family = getattr(_unwrapped(env), "family", None) or ""
    if family in ("terminal", "swe") or "<bash>" in sample:
        return "shell"
    if family == "code" or sample.lstrip().startswith("```python"):
        return "code"
    if gold_answers(env) if gold is None else gold:
        return "answer"
    return "game"


def wrong_values(gold: list[str], sample: Optional[str], fmt: Optional[tuple[str, str]]) -> list[str]:
    """Well-formed values that are not the answer: near numbers, or other words."""
    out: list[str] = []
    golds = {g.strip().lower() for g in gold}
    first = gold[0] if gold else ""
    if re.fullmatch(r"-?\d+", first.strip()):
        n = int(first)
        out += [str(n + 1), str(n - 1), str(n + 7), str(-n - 3)]
    elif re.fullmatch(r"-?\d*\.\d+", first.strip()):
        x = float(first)
        out += [f"{x + 1:g}", f"{x - 1.5:g}", f"{x * 2 + 3:g}", f"{-x - 3:g}"]
    else:
        if first.lower() in ("true", "false"):
            out.append("False" if first.lower() == "true" else "True")
        if first.lower() in ("yes", "no"):
            out.append("No" if first.lower() == "yes" else "Yes")
        if sample and fmt is not None:
            inner = sample.rsplit(fmt[0], 1)[-1].rsplit(fmt[1], 1)[0] if fmt[0] in sample else ""
            if inner.strip() and inner.strip().lower() not in golds:
                out.append(inner.strip())
        out += ["Zanzibar Quartz", "17", "none of these"]
    return [w for w in dict.fromkeys(out) if w.strip().lower() not in golds]


# ===================================================================== playing
@dataclass
class _Played:
    reward: float
    success: bool
    actions: list[str]
    episode: Episode


def _play(env: Any, agent: Agent, seed: int, max_turns: int) -> _Played:
    episode = run_episode(env, agent, seed=seed, max_steps=max_turns, record=True, catch=True)
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


class _Run:
    """One env's validation: the env, its target per seed, floors and findings."""

    def __init__(self, env: Any, env_id: str, mode: str, names: Sequence[str], seeds: Optional[Sequence[int]]) -> None:
        self.env = env
        self.report = Report(env_id)
        self.mode = MODES[mode]
        self.names = names
        self.fixed_seeds = seeds
        self._targets: dict[tuple, Target] = {}
        self._first: dict[int, tuple[str, list[str], bool]] = {}

    # ---------------------------------------------------------------- targets
    def target(self, observation: str, info: Optional[dict[str, Any]] = None) -> Target:
        """What an attacker knows after a reset that showed ``observation`` (cached per observation:
        the same seed shows the same one, and sampling an action can cost as much as a reset)."""
        return self._target(observation, gold_answers(self.env), _has_tools(info))

    def seed_target(self, seed: int) -> Target:
        """The target of ``seed``'s first observation (one reset per seed)."""
        if seed not in self._first:
            obs, info = self.env.reset(seed=seed)
            self._first[seed] = (obs, gold_answers(self.env), _has_tools(info))
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
        sample = ""
        try:
            sample = env.sample_random_action() or ""
        except Exception:  # noqa: BLE001 -- an env without random actions: no sample
            sample = ""
        fmt = answer_format(observation, sample)
        kind = env_kind(env, observation, sample, gold)
        python_tag = ("<python>", "</python>") if "<python>" in observation and kind != "code" else None
        return Target(kind, observation, fmt, gold, wrong_values(gold, sample, fmt), python_tag, sample, tools)

    def play(self, plan: Any, seed: int, max_turns: Optional[int] = None) -> _Played:
        self.report.episodes += 1
        return _play(self.env, ScriptAgent(plan), seed, max_turns or self.mode["max_turns"])

    def find(self, strategy: str, kind: str, played: Optional[_Played], reason: str, floor: Optional[float] = None,
             seed: Optional[int] = None, reward: Optional[float] = None) -> None:
        if any(f.strategy == strategy for f in self.report.findings):
            return  # one finding per strategy is enough to act on
        self.report.findings.append(Finding(
            self.report.env_id, strategy, kind, float(played.reward if played else (reward or 0.0)), floor, seed,
            _preview(played.actions) if played else [], reason,
        ))

    # ---------------------------------------------------------------- the run
    def run(self) -> Report:
        start = time.perf_counter()
        env, report = self.env, self.report
        first = self.seed_target(0)
        report.kind = first.kind
        n = self.mode["shell_seeds"] if first.kind == "shell" else self.mode["seeds"]
        seeds = list(self.fixed_seeds) if self.fixed_seeds is not None else list(range(n))
        report.seeds = seeds
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
            try:
                self.attack(strategy, seeds, floors)
            except Exception as exc:  # noqa: BLE001 -- a crashing env is reported, the run goes on
                report.errors.append(f"{strategy.name}: {type(exc).__name__}: {exc}")
        report.seconds = time.perf_counter() - start
        return report

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

    def attack(self, strategy: Strategy, seeds: list[int], floors: dict[int, tuple]) -> None:
        if strategy.group == "timeout" and self.mode is MODES["default"]:
            seeds = seeds[:1]  # each variant waits for a limit: one seed in the default mode
        for seed in seeds:
            count = len(strategy.variants(self.seed_target(seed)))  # the variants depend on the observation
            for k in range(count):
                def plan(obs: str, info: Any, k: int = k) -> list[str]:
                    t = self.target(obs, info)
                    vs = strategy.variants(t)
                    script = list(vs[k]) if k < len(vs) else [""]
                    if t.kind == "shell" and strategy.done:
                        script.append("<done/>")
                    return script

                played = self.play(plan, seed)
                error = played.episode.error
                if error is not None and error.get("stage") == "env" and error.get("type") != "InfrastructureError":
                    # bad input must never crash an env: a contract failure, reported once per strategy
                    # (an infrastructure failure raised under GEM_STRICT_INFRA=1 is ungraded: failed)
                    self.report.errors.append(f"{strategy.name}: the env raised {error.get('type')}: "
                                              f"{str(error.get('message'))[:200]} (variant {k + 1}/{count}, seed {seed})")
                    return
                floor = floors[seed][0]
                if (played.success or played.reward > floor + EPS) and strategy.blind and self.explained(played, seed):
                    continue
                if played.success:
                    self.find(strategy.name, "exploit", played, f"reached the success level (variant {k + 1}/{count}, seed {seed})", floor, seed)
                    return
                if played.reward > floor + EPS:
                    self.find(strategy.name, "exploit", played,
                              f"earned more than doing nothing or a wrong answer (variant {k + 1}/{count}, seed {seed})", floor, seed)
                    return

    def explained(self, played: _Played, seed: int) -> bool:
        """Whether one single answer of the replies (first or last tag, first or last item) earns
        as much: then the env read one answer, and the payment is that answer's, not the spray's."""
        fmt = self.seed_target(seed).answer_format
        if all(single_readings(a, fmt) == [a] for a in played.actions):
            return True  # each reply is one plain answer: a blind guess that was right, not a spray
        readings = [[r for r in single_readings(a, fmt) if r != a] for a in played.actions]
        for k in range(max((len(r) for r in readings), default=0)):
            script = [r[min(k, len(r) - 1)] if r else a for r, a in zip(readings, played.actions)]
            if script == played.actions:
                continue
            alone = self.play(script, seed)
            if alone.reward >= played.reward - EPS and (alone.success or not played.success):
                return True
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
            from gem.agents.simple import SolverAgent

            def run(seed: int) -> _Played:
                self.report.episodes += 1
                return _play(env, SolverAgent(env), seed, REFERENCE_MAX_TURNS)
            what = "the env's solver"
        elif callable(getattr(u, "reference_solution", None)):
            def run(seed: int) -> _Played:
                return self.play(lambda o, i: [u.reference_solution() or ""], seed, REFERENCE_MAX_TURNS)
            what = "the reference solution"
        elif first.gold:
            def run(seed: int) -> _Played:
                return self.play(lambda o, i: [self.target(o, i).box(gold_answers(env)[0])], seed, REFERENCE_MAX_TURNS)
            what = "the gold answer"
        else:
            self.report.not_checked["reference"] = "no solver, reference solution or gold answer"
            return
        self.report.checked.append("reference")
        runs = []
        for seed in seeds:
            played = run(seed)
            if played.episode.error is not None:
                self.find("reference", "control", played, f"{what} crashed: {played.episode.error.get('message')}", seed=seed)
                return
            runs.append(played)
            if first.kind != "game" and not played.success:
                self.find("reference", "control", played, f"{what} did not reach the success level (seed {seed})", seed=seed)
                return
        if first.kind == "game" and not any(p.success for p in runs):
            # games of chance or against an opponent: the solver need not win every seed, but it
            # must do at least as well as random play
            mean = sum(p.reward for p in runs) / len(runs)
            rand = [self._random(s, REFERENCE_MAX_TURNS).reward for s in seeds] if _implements(env, "sample_random_action") else [0.0]
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
        if not _implements(self.env, "sample_random_action"):
            self.report.not_checked["replay"] = "no sample_random_action"
            return
        self.report.checked.append("replay")
        for seed in seeds:
            a = self._random(seed)
            obs_a = a.episode.observations[:1]
            b = self.play(list(a.actions) or [""], seed)
            if b.episode.rewards != a.episode.rewards or b.episode.observations[:1] != obs_a:
                self.find("replay", "control", b,
                          f"replaying seed {seed} with the same actions gave rewards {b.episode.rewards} instead of {a.episode.rewards}"
                          + ("" if b.episode.observations[:1] == obs_a else " and a different first observation"), seed=seed)
                return

    def control_gold_leak(self, seeds: list[int], first: Target) -> None:
        self.report.checked.append("gold-leak")
        for seed in seeds:
            obs, info = self.env.reset(seed=seed)
            t = self.target(obs, info)
            leak = _leak(t, obs, info)
            if leak:
                self.find("gold-leak", "control", None, f"{leak} (seed {seed})", seed=seed, reward=0.0)
                return
            if t.kind == "answer" and t.wrong:  # and in every step before the end
                played = self.play(lambda o, i: [self.target(o, i).box(self.target(o, i).wrong[0])], seed)
                for step in played.episode.steps:
                    if step.get("terminated") or step.get("truncated"):
                        break
                    leak = _leak(t, step.get("observation") or "", step.get("info") or {})
                    if leak:
                        self.find("gold-leak", "control", played, f"{leak} before the end (seed {seed})", seed=seed)
                        return


def _has_tools(info: Any) -> bool:
    return isinstance(info, dict) and bool(info.get("tools"))


def _leak(t: Target, obs: str, info: Any) -> Optional[str]:
    """Where the gold answer shows before the end: an info key that holds it, or the observation."""
    if not t.gold:
        return None
    golds = {g.strip() for g in t.gold}
    if isinstance(info, dict):
        for key in _GOLD_KEYS:
            if key in info and info[key] is not None:
                vals = info[key] if isinstance(info[key], (list, tuple)) else [info[key]]
                if any(str(v).strip() in golds for v in vals):
                    return f"info[{key!r}] holds the gold answer"
    options = {o.lower() for o in t.options()}
    for gold in golds:
        if gold.lower() in options:
            continue  # one of the choices the task offers (True, False, Unknown; A-D)
        # The observation names the answer: a label (answer, solution, ...) just before the gold. A
        # gold answer that merely appears (an option, a name in the text, the input itself) is not
        # a leak: many tasks ask to pick or copy from what they show.
        label = r"(?:answer|solution|gold|expected|correct|result)\W{1,12}(?:is\W{1,4})?"
        if re.search(label + re.escape(gold) + r"(?![\w])", obs, re.IGNORECASE):
            return f"the observation names the gold answer {gold[:60]!r}"
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
    names = _check_names(strategies)
    mode = "thorough" if thorough else "default"
    owned = isinstance(env, str)
    if owned:
        from gem.envs.registration import make

        env_id = env
        made = make(env_id, **(env_kwargs or {}))
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
        return _Run(made, env_id, mode, names, seeds).run()
    finally:
        if owned:
            made.close()


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
