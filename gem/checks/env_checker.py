"""The env contract as code: ``check_env(env)`` runs small named checks and reports what to fix.

Public so that authors of third-party envs can run it on their own envs. Each check raises
:class:`EnvCheckError` with a message naming the check and the fix; ``check_env`` runs them all
and raises one error listing every failure, or returns its report (check name -> outcome).

A ``StepAfterEndWarning`` during a check (other than the step after the end that
``check_step_after_end`` makes on purpose) fails that check: the env ended an episode without
saying so, and a caller that trusts ``terminated``/``truncated`` would go on stepping it.

An env that cannot meet a check for a reason outside its control (a bridge to a remote env whose
seeds the remote side decides) declares it: ``declared_limits = {"check_seed_determinism": "the
remote server decides the episode"}``. The check is then not run, and the report (and the error,
if other checks fail) shows ``declared limit: <reason>`` for it. A name that is not a check
raises ``ValueError`` naming the checks.
"""

from __future__ import annotations

import copy
import logging
import threading
import warnings
from collections.abc import Mapping
from typing import Any, Callable, Iterable, Optional

from gem.core import Env, is_strict_step
from gem.errors import GemError, ResetNeeded, StepAfterEndWarning

__all__ = [
    "CHECKS",
    "DECLARED_LIMIT",
    "DECLARED_BOUND_CAP",
    "EPISODE_STEP_LIMIT",
    "EnvCheckError",
    "HOSTILE_ACTIONS",
    "SEEDS_COMPARED",
    "TEN_MB",
    "Trajectory",
    "check_close",
    "check_env",
    "check_episode_ends",
    "check_hostile_actions",
    "check_random_action_is_well_formed",
    "check_reset",
    "check_seed_determinism",
    "check_seed_sensitivity",
    "check_state_roundtrip",
    "check_step",
    "check_step_after_end",
    "check_thread_determinism",
    "declared_limits",
    "expect_reset_needed",
    "play",
    "play_to_end",
    "replay_determinism",
    "run_checks",
    "threads_agree",
]

logger = logging.getLogger(__name__)

TEN_MB = 10 * 1024 * 1024
DECLARED_LIMIT = "declared limit: "  # how a report shows a check the env declares it cannot meet

# Actions no env may choke on. None holds a complete answer (no \boxed{...}, no closed tag), so
# every env must score each as a format error.
HOSTILE_ACTIONS: dict[str, str] = {
    "empty": "",
    "whitespace": " \n\t ",
    "10 MB": "a" * TEN_MB,
    "NUL bytes": "\x00" * 1000 + "guess\x00",
    "invalid UTF-8 surrogates": "\ud800\udfff \udcff text \ud83d",
    "unbalanced tags": "\\boxed{ <python>print(1) <answer> <search> ``` {{{ [[",
}


class EnvCheckError(GemError, AssertionError):
    """An env broke the contract; the message says which check and what to fix."""


Trajectory = list[tuple[str, float, bool, bool]]


def _fail(check: str, message: str) -> EnvCheckError:
    return EnvCheckError(f"[{check}] {message}")


def _is_end(terminated: bool, truncated: bool) -> bool:
    return bool(terminated) or bool(truncated)


def check_reset(env: Env, seed: int = 0) -> None:
    """``reset(seed)`` returns ``(str, dict)``."""
    result = env.reset(seed=seed)
    if not (isinstance(result, tuple) and len(result) == 2):
        raise _fail("check_reset", f"reset() must return (observation, info); got {type(result).__name__}.")
    obs, info = result
    if not isinstance(obs, str):
        raise _fail("check_reset", f"the observation must be a str, got {type(obs).__name__}.")
    if not isinstance(info, dict):
        raise _fail("check_reset", f"info must be a dict, got {type(info).__name__}.")


def check_step(env: Env, seed: int = 0) -> None:
    """``step`` returns ``(str, float, bool, bool, dict)`` for a sampled action."""
    env.reset(seed=seed)
    action = env.sample_random_action()
    if not isinstance(action, str):
        raise _fail("check_step", f"sample_random_action() must return a str, got {type(action).__name__}.")
    result = env.step(action)
    if not (isinstance(result, tuple) and len(result) == 5):
        raise _fail("check_step", "step() must return (observation, reward, terminated, truncated, info).")
    obs, reward, terminated, truncated, info = result
    expected = ((obs, str), (terminated, bool), (truncated, bool), (info, dict))
    for value, kind in expected:
        if not isinstance(value, kind):
            raise _fail("check_step", f"step() returned {type(value).__name__} where {kind.__name__} belongs.")
    if not isinstance(reward, (int, float)) or isinstance(reward, bool):
        raise _fail("check_step", f"the reward must be a float, got {type(reward).__name__}.")


def check_random_action_is_well_formed(env: Env, seed: int = 0) -> None:
    """A sampled action is never scored as a format error."""
    env.reset(seed=seed)
    action = env.sample_random_action()
    _, reward, terminated, truncated, info = env.step(action)
    if reward == env.format_error_reward and env.format_error_reward != 0 and not info.get("success"):
        raise _fail(
            "check_random_action_is_well_formed",
            f"sample_random_action() gave {action[:80]!r}, which the env scored as a format error "
            f"({reward}); sample actions in the format the env parses.",
        )


def play(env: Env, seed: Optional[int], actions: Optional[list[str]] = None, max_steps: int = 50) -> tuple[Trajectory, list[str]]:
    """Reset with ``seed`` and play ``actions`` (sampled when ``None``); return what happened."""
    obs, _ = env.reset(seed=seed)
    trajectory: Trajectory = [(obs, 0.0, False, False)]
    taken: list[str] = []
    for step in range(max_steps if actions is None else len(actions)):
        action = env.sample_random_action() if actions is None else actions[step]
        taken.append(action)
        obs, reward, terminated, truncated, _ = env.step(action)
        trajectory.append((obs, float(reward), bool(terminated), bool(truncated)))
        if _is_end(terminated, truncated):
            break
    return trajectory, taken


def replay_determinism(
    play_fn: Callable[..., tuple[list[Any], list[Any]]],
    env: Any,
    seed: int,
    start: Callable[[list[Any]], Any] = lambda trajectory: trajectory[0],
) -> None:
    """Play ``env`` from ``seed``, replay the same actions, and require the same episode.

    ``play_fn(env, seed, actions=None) -> (trajectory, actions)``; ``start`` picks what reset
    returned out of a trajectory. Shared by the single- and multi-agent checkers.
    """
    first, actions = play_fn(env, seed)
    again, _ = play_fn(env, seed, actions)
    if start(first) != start(again):
        raise _fail(
            "check_seed_determinism",
            "reset(seed) gave different observations for the same seed; draw randomness from "
            "self.rng / self.np_random (seeded by reset), never from the random module.",
        )
    if first != again:
        step = next(i for i, (a, b) in enumerate(zip(first, again)) if a != b)
        raise _fail(
            "check_seed_determinism",
            f"the same seed and actions gave a different episode at step {step}; keep all "
            "randomness on the env's own generators.",
        )


def check_seed_determinism(env: Env, seed: int = 0) -> None:
    """The same seed gives the same first observation and, for the same actions, the same episode."""
    replay_determinism(play, env, seed, start=lambda trajectory: trajectory[0][0])


SEEDS_COMPARED = 4  # seeds tried by check_seed_sensitivity
EPISODE_STEP_LIMIT = 500  # steps check_episode_ends allows a solver, or an env that declares no bound
# (an env that declares max_turns but no max_episode_steps gets at least 2 * max_turns, up to the cap)
DECLARED_BOUND_CAP = 10_000  # the most sampled steps check_episode_ends drives, whatever bound is declared


def check_seed_sensitivity(env: Env, seed: int = 0, seeds: int = SEEDS_COMPARED) -> None:
    """Different seeds give different episodes, unless the env declares ``deterministic = True``.

    The actions sampled for ``seed`` are replayed from ``seed + 1``, ``seed + 2``...; when every
    replay repeats the first episode exactly, the env ignores its seed.
    """
    if getattr(env, "deterministic", False):
        return
    first, actions = play(env, seed)
    for other in range(seed + 1, seed + seeds):
        if play(env, other, actions)[0] != first:
            return
    raise _fail(
        "check_seed_sensitivity",
        f"seeds {seed} to {seed + seeds - 1} all gave the same episode; draw the episode from self.rng "
        "(seeded by reset(seed)), or declare deterministic = True on the class if it has nothing to vary.",
    )


def _has_solver(env: Env) -> Optional[Any]:
    try:
        return env.make_solver()
    except NotImplementedError:
        return None


def play_to_end(env: Env, seed: int = 0, use_solver: bool = True) -> tuple[str, int]:
    """Play an episode to its end; return who ended it (``"solver"``, ``"bound"``, ``"sampled"``)
    and the number of steps.

    With ``make_solver()`` (and ``use_solver``) the solver plays (up to :data:`EPISODE_STEP_LIMIT`
    steps); otherwise sampled actions play, up to the declared ``max_episode_steps`` (at most
    :data:`DECLARED_BOUND_CAP`) or, for an env that declares none, :data:`EPISODE_STEP_LIMIT`
    (or twice a declared ``max_turns``, when that is more: a legitimately long game gets its
    length). Raises :class:`EnvCheckError` when the episode has not ended by then.
    """
    has_solver = _has_solver(env)
    solver = has_solver if use_solver else None
    bound = getattr(env, "max_episode_steps", None)
    turns = _declared_turns(env)
    obs, info = env.reset(seed=seed)
    if solver is not None:
        solver.reset(obs, info)
    if solver is None and bound is not None:
        limit = min(int(bound), DECLARED_BOUND_CAP)
    elif solver is None and turns is not None:
        limit = min(max(EPISODE_STEP_LIMIT, 2 * turns), DECLARED_BOUND_CAP)
    else:
        limit = EPISODE_STEP_LIMIT
    for steps in range(1, limit + 1):
        action = env.sample_random_action() if solver is None else solver.act(obs, info)
        obs, _, terminated, truncated, info = env.step(action)
        if _is_end(terminated, truncated):
            return ("solver" if solver is not None else "bound" if bound is not None else "sampled"), steps
    if solver is not None:
        raise _fail(
            "check_episode_ends",
            f"the episode did not end after {limit} steps of make_solver(); end it (terminated or truncated) by then.",
        )
    if bound is not None:
        beyond = f" (max_episode_steps = {bound} is more than check_env drives)" if limit < bound else ""
        raise _fail(
            "check_episode_ends",
            f"the episode did not end after max_episode_steps = {limit} sampled actions{beyond}; end it "
            "(terminated or truncated) by then.",
        )
    if turns is not None:
        raise _fail(
            "check_episode_ends",
            f"{limit} sampled actions did not end the episode, though the env declares max_turns = {turns}; "
            "end the episode when the turn limit is reached (truncated=True), counting every step, and "
            "declare the bound as max_episode_steps.",
        )
    if has_solver is not None:
        raise _fail(
            "check_episode_ends",
            f"{limit} sampled actions did not end the episode, though make_solver()'s play did; end every "
            "episode whatever the actions (a turn limit), and declare the bound as max_episode_steps.",
        )
    raise _fail(
        "check_episode_ends",
        f"{limit} sampled actions did not end the episode; end episodes (a turn limit), and declare the "
        "bound as max_episode_steps or provide make_solver().",
    )


def _declared_turns(env: Any) -> Optional[int]:
    """The env's ``max_turns`` when it is a positive int (GEM's games declare their turn limit so)."""
    turns = getattr(env, "max_turns", None)
    if isinstance(turns, bool) or not isinstance(turns, int) or turns < 1:
        return None
    return turns


def check_episode_ends(env: Env, seed: int = 0) -> None:
    """Every episode ends, whatever the actions: ``make_solver()`` finishes it (when the env has a
    solver), and sampled actions end it within the declared ``max_episode_steps``
    (:data:`EPISODE_STEP_LIMIT` steps when the env declares no bound). An env whose
    ``terminated`` and ``truncated`` are never true fails."""
    who, _ = play_to_end(env, seed)
    if who == "solver":  # the solver wins; a policy that does not must still reach an end
        play_to_end(env, seed, use_solver=False)


def check_step_after_end(env: Env, seed: int = 0) -> None:
    """Stepping after the episode ended warns once and returns a terminal result (strict mode: raises).

    The end is reached on purpose (see :func:`play_to_end`), so this check never passes vacuously.
    """
    play_to_end(env, seed)
    expect_reset_needed(
        lambda: env.step(env.sample_random_action()),
        "step() after the episode ended was not handled; call super().reset(seed) in reset() and implement "
        "_step() rather than step() (Env.step then handles it).",
        env,
    )


def check_close(env: Env, seed: int = 0) -> None:
    """``close()`` may be called twice, on a fresh copy that played a step."""
    copy_env = _fresh_copy(env)
    copy_env.reset(seed=seed)
    copy_env.step(copy_env.sample_random_action())
    for attempt in ("first", "second"):
        try:
            copy_env.close()
        except Exception as exc:
            raise _fail(
                "check_close", f"the {attempt} close() raised {type(exc).__name__}: {exc}; make close() idempotent."
            ) from exc


def _chain(env: Any) -> list[Any]:
    """``env`` and every env it wraps, outermost first."""
    chain = [env]
    while isinstance(getattr(chain[-1], "env", None), Env):
        chain.append(chain[-1].env)
    return chain


def _is_terminal_result(result: Any) -> bool:
    """A 5-tuple whose flags end the episode: bools, or (multi-agent) dicts ending every agent."""
    if not (isinstance(result, tuple) and len(result) == 5):
        return False
    terminated, truncated = result[2], result[3]
    if isinstance(terminated, dict) and isinstance(truncated, dict):
        agents = set(terminated) | set(truncated)
        return bool(agents) and all(terminated.get(a) or truncated.get(a) for a in agents)
    return isinstance(terminated, bool) and isinstance(truncated, bool) and (terminated or truncated)


def expect_reset_needed(step: Callable[[], Any], if_not_handled: str, env: Any = None) -> None:
    """``step()``, a step (of ``env``, if given) after the end, follows the contract.

    By default it warns (:class:`StepAfterEndWarning`, once per env: an env that already warned
    need not warn again) and returns a terminal result. In strict mode (``gem.core.set_strict_step``)
    it raises :class:`ResetNeeded` naming ``reset``.
    """
    strict = is_strict_step() if getattr(env, "strict_step", None) is None else env.strict_step
    warned_before = env is not None and any(vars(e).get("_warned_step_after_end", False) for e in _chain(env))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", StepAfterEndWarning)
        try:
            result = step()
        except ResetNeeded as exc:
            if not strict:
                raise _fail(
                    "check_step_after_end",
                    "step() after the end raised ResetNeeded outside strict mode; it must warn and return a "
                    "terminal result (Env.step does both for an env that implements _step()).",
                ) from exc
            if "reset" not in str(exc):
                raise _fail("check_step_after_end", "the ResetNeeded message must tell the user to call reset().")
            return
        except Exception as exc:
            raise _fail(
                "check_step_after_end",
                f"step() after the end raised {type(exc).__name__}: {exc}; {if_not_handled}",
            ) from exc
    if strict:
        raise _fail("check_step_after_end", f"in strict mode step() after the end must raise ResetNeeded; {if_not_handled}")
    warnings_seen = [w for w in caught if issubclass(w.category, StepAfterEndWarning)]
    if not warnings_seen and not warned_before:
        raise _fail("check_step_after_end", f"step() after the end gave no StepAfterEndWarning; {if_not_handled}")
    if any("reset" not in str(w.message) for w in warnings_seen):
        raise _fail("check_step_after_end", "the StepAfterEndWarning message must tell the user to call reset().")
    if not _is_terminal_result(result):
        raise _fail(
            "check_step_after_end",
            f"step() after the end must return a terminal result (terminated or truncated); got {result!r:.200}.",
        )


def check_hostile_actions(env: Env, seed: int = 0, actions: Optional[dict[str, str]] = None) -> None:
    """Hostile actions never raise, get the format-error reward, and leave the env consistent."""
    for name, action in (actions or HOSTILE_ACTIONS).items():
        env.reset(seed=seed)
        try:
            obs, reward, terminated, truncated, info = env.step(action)
        except Exception as exc:
            raise _fail("check_hostile_actions", f"the {name} action raised {type(exc).__name__}: {exc}") from exc
        if not isinstance(obs, str) or not obs.strip():
            raise _fail("check_hostile_actions", f"the {name} action gave no observation saying what was wrong.")
        try:
            obs.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise _fail(
                "check_hostile_actions",
                f"the observation after the {name} action is not valid UTF-8; echo actions "
                "through gem.utils.text.preview().",
            ) from exc
        if len(obs) > TEN_MB // 10:
            raise _fail("check_hostile_actions", f"the {name} action was echoed back whole ({len(obs)} chars).")
        if reward != env.format_error_reward:
            raise _fail(
                "check_hostile_actions",
                f"the {name} action got reward {reward}, not the format-error reward {env.format_error_reward}.",
            )
        if not _is_end(terminated, truncated):
            try:
                env.step(env.sample_random_action())
            except Exception as exc:
                raise _fail(
                    "check_hostile_actions",
                    f"after the {name} action the env could not go on: {type(exc).__name__}: {exc}",
                ) from exc


def _fresh_copy(env: Env) -> Env:
    return env.spawn() if env.spec is not None else copy.deepcopy(env)


def threads_agree(
    play_fn: Callable[..., tuple[list[Any], list[Any]]],
    reference: list[Any],
    actions: list[Any],
    copies: list[Any],
    seed: int,
    noun: str = "episode",
) -> None:
    """Play ``copies`` at once, one thread each, from ``seed`` with ``actions``; all must match
    ``reference``. Shared by the single- and multi-agent checkers."""
    results: list[Any] = [None] * len(copies)
    barrier = threading.Barrier(len(copies))

    def run(k: int) -> None:
        barrier.wait()
        try:
            results[k] = play_fn(copies[k], seed, actions)[0]
        except Exception as exc:  # reported below
            results[k] = exc

    workers = [threading.Thread(target=run, args=(k,)) for k in range(len(copies))]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    for k, result in enumerate(results):
        if isinstance(result, Exception):
            raise _fail("check_thread_determinism", f"thread {k} raised {type(result).__name__}: {result}")
        if result != reference:
            raise _fail(
                "check_thread_determinism",
                f"thread {k} played a different {noun} for the same seed; the env shares random "
                "or mutable state across instances (module globals, class attributes).",
            )


def check_thread_determinism(env: Env, seed: int = 0, threads: int = 8) -> None:
    """Copies reset with the same seed in ``threads`` threads at once play the same episode."""
    reference, actions = play(env, seed)
    copies = [_fresh_copy(env) for _ in range(threads)]
    try:
        threads_agree(play, reference, actions, copies, seed)
    finally:
        for copy_env in copies:
            copy_env.close()


def check_state_roundtrip(env: Env, seed: int = 0) -> None:
    """``set_state(get_state())`` puts the env back so the next step repeats exactly."""
    env.reset(seed=seed)
    state = env.get_state()
    action = env.sample_random_action()
    first = env.step(action)[:4]
    env.set_state(state)
    second = env.step(action)[:4]
    if first != second:
        raise _fail(
            "check_state_roundtrip",
            "after set_state(get_state()) the same action gave a different result; include all "
            "episode state (and generators) in get_state().",
        )


CHECKS: dict[str, Callable[..., None]] = {
    "check_reset": check_reset,
    "check_step": check_step,
    "check_random_action_is_well_formed": check_random_action_is_well_formed,
    "check_seed_determinism": check_seed_determinism,
    "check_seed_sensitivity": check_seed_sensitivity,
    "check_episode_ends": check_episode_ends,
    "check_step_after_end": check_step_after_end,
    "check_hostile_actions": check_hostile_actions,
    "check_state_roundtrip": check_state_roundtrip,
    "check_thread_determinism": check_thread_determinism,
    "check_close": check_close,
}


def declared_limits(env: Any, checks: Iterable[str]) -> dict[str, str]:
    """The env's ``declared_limits`` (check name -> why the env cannot meet it), validated.

    Raises ``ValueError`` for a name that is not one of ``checks`` (naming them) or a reason that
    is not a non-empty string.
    """
    declared = getattr(env, "declared_limits", None)
    if declared is None:
        return {}
    valid = list(checks)
    if not isinstance(declared, Mapping):
        raise ValueError(
            f"declared_limits must be a dict of check name -> reason, got {type(declared).__name__}; "
            f"valid check names: {', '.join(valid)}."
        )
    unknown = sorted(str(name) for name in declared if name not in valid)
    if unknown:
        raise ValueError(f"declared_limits names unknown checks {unknown}; valid: {', '.join(valid)}.")
    for name, reason in declared.items():
        if not isinstance(reason, str) or not reason.strip():
            raise ValueError(
                f"declared_limits[{name!r}] must say why the env cannot meet it (a non-empty str)."
            )
    return {name: reason.strip() for name, reason in declared.items()}


def _unreported_end(name: str, caught: list[warnings.WarningMessage]) -> Optional[str]:
    ended = [w for w in caught if issubclass(w.category, StepAfterEndWarning)]
    if not ended:
        return None
    return (
        f"[{name}] the env warned {str(ended[0].message)[:200]!r} while the check stepped it: it ended "
        "the episode without reporting it. Return the end's flags from the step that ends it "
        "(terminated or truncated True, e.g. through self._result(..., terminated=True))."
    )


def run_checks(
    checks: dict[str, Callable[..., None]], env: Any, seed: int = 0, skip: Iterable[str] = ()
) -> dict[str, str]:
    """Run ``checks`` (minus ``skip`` and the env's declared limits) on ``env``.

    Returns the report: check name -> ``"passed"``, ``"skipped"`` or ``"declared limit: <reason>"``.
    Raises one :class:`EnvCheckError` listing every failure (and the declared limits); its
    ``report`` holds the same mapping, with ``"failed"`` for the failed checks.
    """
    skip = set(skip)
    unknown = skip - set(checks)
    if unknown:
        raise ValueError(f"Unknown checks {sorted(unknown)}; valid: {', '.join(checks)}.")
    limits = declared_limits(env, checks)
    report: dict[str, str] = {}
    failures = []
    for name, check in checks.items():
        if name in skip:
            report[name] = "skipped"
            continue
        if name in limits:
            report[name] = DECLARED_LIMIT + limits[name]
            logger.info("%s: %s is a %s%s", env, name, DECLARED_LIMIT, limits[name])
            continue
        for wrapped in _chain(env):  # each check may see the env's warn-once StepAfterEndWarning
            if vars(wrapped).get("_warned_step_after_end"):
                wrapped._warned_step_after_end = False
        failure = None
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", StepAfterEndWarning)
            try:
                check(env, seed=seed)
            except EnvCheckError as exc:
                failure = str(exc)
            except Exception as exc:
                failure = f"[{name}] raised {type(exc).__name__}: {exc}"
        for w in caught:  # other warnings go on to the caller's filters
            if not issubclass(w.category, StepAfterEndWarning):
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        failure = failure or _unreported_end(name, caught)
        report[name] = "passed" if failure is None else "failed"
        if failure is not None:
            failures.append(failure)
    if failures:
        declared = [f"[{name}] {DECLARED_LIMIT}{why}" for name, why in limits.items() if name not in skip]
        error = EnvCheckError(f"{env} failed {len(failures)} check(s):\n" + "\n".join(failures + declared))
        error.report = report
        raise error
    return report


def check_env(env: Env, seed: int = 0, skip: Iterable[str] = ()) -> dict[str, str]:
    """Run every check in :data:`CHECKS` (minus ``skip`` and the env's ``declared_limits``) on ``env``.

    Returns the report, check name -> ``"passed"``, ``"skipped"`` or ``"declared limit: <reason>"``.
    Raises :class:`EnvCheckError` listing every failed check, each with what to fix, or
    ``ValueError`` when ``skip`` or the env's ``declared_limits`` name a check that does not exist.
    """
    return run_checks(CHECKS, env, seed, skip)
