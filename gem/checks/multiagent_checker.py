"""The multi-agent env contract as code: ``check_multiagent_env(env)`` runs small named checks.

Each check raises :class:`gem.checks.env_checker.EnvCheckError` with a message that names the
check and says what to fix; ``check_multiagent_env`` runs them all and raises one error listing
every failure. Public, so that authors of third-party multi-agent envs can run it.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Optional

from gem.envs.multiagent.base import MultiAgentEnv
from gem.checks.env_checker import (
    HOSTILE_ACTIONS,
    TEN_MB,
    EnvCheckError,
    expect_reset_needed,
    replay_determinism,
    run_checks,
    threads_agree,
)

__all__ = [
    "CHECKS",
    "NON_TEXT_ACTIONS",
    "PING",
    "Record",
    "check_agents",
    "check_hostile_actions",
    "check_message_delivery",
    "check_multiagent_env",
    "check_random_actions_are_well_formed",
    "check_reset",
    "check_seed_determinism",
    "check_state_roundtrip",
    "check_step",
    "check_step_after_end",
    "check_thread_determinism",
    "play",
]

PING = "gem-checker-ping"
# Actions that are not text at all: a missing action, None, a number.
NON_TEXT_ACTIONS: dict[str, Any] = {"None": None, "an int": 42, "a list": ["\\boxed{1}"]}

Record = tuple[dict[str, str], dict[str, float], dict[str, bool], dict[str, bool]]


def _fail(check: str, message: str) -> EnvCheckError:
    return EnvCheckError(f"[{check}] {message}")


def play(
    env: MultiAgentEnv,
    seed: Optional[int],
    actions: Optional[list[dict[str, Any]]] = None,
    max_steps: int = 500,
) -> tuple[list[Record], list[dict[str, Any]]]:
    """Reset with ``seed`` and play ``actions`` (sampled when ``None``) to the end or the limit."""
    obs, _ = env.reset(seed=seed)
    trajectory: list[Record] = [(obs, {}, {}, {})]
    taken: list[dict[str, Any]] = []
    for k in range(max_steps if actions is None else len(actions)):
        if not env.agents:
            break
        step_actions = env.sample_random_actions() if actions is None else actions[k]
        taken.append(step_actions)
        obs, rewards, terminations, truncations, _ = env.step(step_actions)
        trajectory.append((obs, rewards, terminations, truncations))
    return trajectory, taken


def check_agents(env: MultiAgentEnv, seed: int = 0) -> None:
    """``possible_agents`` are unique ids; after reset ``agents`` and ``active_agents()`` are among them."""
    possible = env.possible_agents
    if (
        not isinstance(possible, list)
        or not possible
        or len(set(possible)) != len(possible)
        or not all(isinstance(a, str) for a in possible)
    ):
        raise _fail(
            "check_agents", f"possible_agents must be a non-empty list of unique str ids, got {possible!r}."
        )
    env.reset(seed=seed)
    if not env.agents or any(a not in possible for a in env.agents):
        raise _fail(
            "check_agents",
            f"after reset, agents must be a non-empty subset of possible_agents; got "
            f"{env.agents!r}. Set self.agents in reset (the base class does).",
        )
    active = env.active_agents()
    if not active or any(a not in env.agents for a in active):
        raise _fail(
            "check_agents",
            f"active_agents() must name live agents who act next; got {active!r} for agents {env.agents!r}.",
        )


def check_reset(env: MultiAgentEnv, seed: int = 0) -> None:
    """``reset(seed)`` returns ``(observations, infos)``, dicts keyed by exactly the live agents."""
    result = env.reset(seed=seed)
    if not (isinstance(result, tuple) and len(result) == 2):
        raise _fail("check_reset", f"reset() must return (observations, infos); got {type(result).__name__}.")
    obs, infos = result
    for name, value in (("observations", obs), ("infos", infos)):
        if not isinstance(value, dict):
            raise _fail("check_reset", f"{name} must be a dict keyed by agent, got {type(value).__name__}.")
        if set(value) != set(env.agents):
            raise _fail(
                "check_reset",
                f"{name} keys {sorted(map(str, value))} do not match the live agents "
                f"{sorted(env.agents)}; return one entry per live agent.",
            )
    bad = [a for a, o in obs.items() if not isinstance(o, str)]
    if bad:
        raise _fail("check_reset", f"observations must be str; {bad[0]!r} got {type(obs[bad[0]]).__name__}.")


def check_step(env: MultiAgentEnv, seed: int = 0) -> None:
    """``step`` returns five dicts keyed by the agents live at the start of the step, with the right
    types, and removes the agents that finished from ``agents``."""
    env.reset(seed=seed)
    before = list(env.agents)
    result = env.step(env.sample_random_actions())
    if not (isinstance(result, tuple) and len(result) == 5):
        raise _fail(
            "check_step", "step() must return (observations, rewards, terminations, truncations, infos)."
        )
    names = ("observations", "rewards", "terminations", "truncations", "infos")
    kinds: tuple[Any, ...] = (str, (int, float), bool, bool, dict)
    for name, value, kind in zip(names, result, kinds):
        if not isinstance(value, dict):
            raise _fail("check_step", f"{name} must be a dict keyed by agent, got {type(value).__name__}.")
        if set(value) != set(before):
            raise _fail(
                "check_step",
                f"{name} keys {sorted(map(str, value))} do not match the agents live when "
                f"the step began {sorted(before)}; key every returned dict by those agents.",
            )
        for agent, item in value.items():
            if not isinstance(item, kind) or (name == "rewards" and isinstance(item, bool)):
                raise _fail(
                    "check_step",
                    f"{name}[{agent!r}] is {type(item).__name__}; expected "
                    f"{getattr(kind, '__name__', 'float')}.",
                )
    _, _, terminations, truncations, _ = result
    expected = [a for a in before if not (terminations[a] or truncations[a])]
    if sorted(env.agents) != sorted(expected):
        raise _fail(
            "check_step",
            f"after the step agents is {env.agents!r}, expected {expected!r}: remove agents "
            "whose episode ended (terminated or truncated) and keep the others.",
        )


def check_random_actions_are_well_formed(env: MultiAgentEnv, seed: int = 0) -> None:
    """Sampled actions are never scored as format errors."""
    env.reset(seed=seed)
    actions = env.sample_random_actions()
    _, rewards, _, _, infos = env.step(actions)
    for agent, action in actions.items():
        if rewards.get(agent) == env.format_error_reward != 0 and not infos.get(agent, {}).get("success"):
            raise _fail(
                "check_random_actions_are_well_formed",
                f"sample_random_action({agent!r}) gave {str(action)[:80]!r}, which was scored as a format "
                f"error; make legal_actions() return actions in the format parse_action() reads.",
            )


def check_seed_determinism(env: MultiAgentEnv, seed: int = 0) -> None:
    """The same seed gives the same first observations and, for the same actions, the same episode."""
    replay_determinism(play, env, seed)


def check_step_after_end(env: MultiAgentEnv, seed: int = 0, max_steps: int = 500) -> None:
    """Stepping after every agent is done warns once and returns a terminal result (strict mode:
    raises :class:`ResetNeeded` naming ``reset``)."""
    play(env, seed, max_steps=max_steps)
    if env.agents:
        return  # random play did not finish the game; nothing to check here
    expect_reset_needed(
        lambda: env.step({a: "\\boxed{1}" for a in env.possible_agents}),
        "step() after every agent finished was not handled; implement _step() rather than step() "
        "(MultiAgentEnv.step checks the episode) and set self._needs_reset when agents is empty "
        "(the base class does both).",
        env,
    )


def _check_offender(env: MultiAgentEnv, name: str, agent: str, result: Any) -> None:
    obs, rewards, terminations, truncations, _ = result
    text = obs.get(agent)
    if agent not in obs:
        raise _fail(
            "check_hostile_actions",
            f"after {name} from {agent!r} step() returned no observation for it; "
            "key every returned dict by the agents live when the step began.",
        )
    if not isinstance(text, str) or not text.strip():
        raise _fail(
            "check_hostile_actions",
            f"after {name} from {agent!r} its observation does not say what was wrong.",
        )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise _fail(
            "check_hostile_actions",
            f"the observation after {name} is not valid UTF-8; echo actions "
            "through gem.utils.text.preview().",
        ) from exc
    if len(text) > TEN_MB // 10:
        raise _fail(
            "check_hostile_actions", f"{name} was echoed back whole ({len(text)} chars); use preview()."
        )
    if rewards.get(agent) != env.format_error_reward:
        raise _fail(
            "check_hostile_actions",
            f"{name} from {agent!r} got reward {rewards.get(agent)!r}, not the "
            f"format-error reward {env.format_error_reward}.",
        )


def check_hostile_actions(
    env: MultiAgentEnv, seed: int = 0, actions: Optional[dict[str, str]] = None
) -> None:
    """Hostile, missing and non-text actions never raise and get the format-error reward."""
    cases: dict[str, Any] = {f"the {k} action": v for k, v in (actions or HOSTILE_ACTIONS).items()}
    cases.update({f"an action that is {k}": v for k, v in NON_TEXT_ACTIONS.items()})
    env.reset(seed=seed)
    for agent in env.active_agents():
        for name, action in [*cases.items(), ("a missing action", ...)]:
            env.reset(seed=seed)
            step_actions = env.sample_random_actions()
            if action is ...:
                del step_actions[agent]
            else:
                step_actions[agent] = action
            try:
                result = env.step(step_actions)
            except Exception as exc:
                raise _fail(
                    "check_hostile_actions",
                    f"{name} from {agent!r} raised {type(exc).__name__}: {exc}; "
                    "score it as a format error instead.",
                ) from exc
            _check_offender(env, name, agent, result)
            if env.agents:
                try:
                    env.step(env.sample_random_actions())
                except Exception as exc:
                    raise _fail(
                        "check_hostile_actions",
                        f"after {name} the env could not go on: {type(exc).__name__}: {exc}",
                    ) from exc
    env.reset(seed=seed)
    stranger = "no-such-agent"
    try:
        env.step({**env.sample_random_actions(), stranger: "\\boxed{1}"})
    except Exception as exc:
        raise _fail(
            "check_hostile_actions",
            f"an action keyed by an unknown agent raised {type(exc).__name__}: "
            f"{exc}; ignore actions from agents that are not acting.",
        ) from exc


def check_message_delivery(env: MultiAgentEnv, seed: int = 0) -> None:
    """A ``<message>`` on an action reaches the other live agents' next observations."""
    env.reset(seed=seed)
    actions = env.sample_random_actions()
    sender = next(iter(actions))
    actions[sender] = f"<message>{PING}</message> {actions[sender]}"
    obs, _, _, _, infos = env.step(actions)
    for agent in env.agents:  # the recipients still playing
        if agent == sender:
            continue
        if PING not in obs.get(agent, ""):
            raise _fail(
                "check_message_delivery",
                f"{sender!r} sent <message>{PING}</message> but {agent!r}'s next observation does not show "
                "it; build observations with the base class (_observation adds the inbox).",
            )
        if not any(m.get("message") == PING for m in infos[agent].get("messages", [])):
            raise _fail(
                "check_message_delivery",
                f"info['messages'] of {agent!r} does not list the message sent to it; keep the base "
                "class's _agent_info.",
            )


def check_state_roundtrip(env: MultiAgentEnv, seed: int = 0) -> None:
    """``set_state(get_state())`` puts the env back so the next step repeats exactly."""
    env.reset(seed=seed)
    state = env.get_state()
    actions = env.sample_random_actions()
    first = env.step(dict(actions))[:4]
    env.set_state(state)
    second = env.step(dict(actions))[:4]
    if first != second:
        raise _fail(
            "check_state_roundtrip",
            "after set_state(get_state()) the same actions gave a different "
            "result; keep all game state (and generators) in instance attributes.",
        )


def check_thread_determinism(env: MultiAgentEnv, seed: int = 0, threads: int = 4) -> None:
    """Copies played in several threads at once with the same seed and actions agree."""
    reference, actions = play(env, seed)
    copies = [env.spawn() if env.spec is not None else env.spawn(same_state=True) for _ in range(threads)]
    threads_agree(play, reference, actions, copies, seed, noun="game")


CHECKS: dict[str, Callable[..., None]] = {
    "check_agents": check_agents,
    "check_reset": check_reset,
    "check_step": check_step,
    "check_random_actions_are_well_formed": check_random_actions_are_well_formed,
    "check_seed_determinism": check_seed_determinism,
    "check_step_after_end": check_step_after_end,
    "check_hostile_actions": check_hostile_actions,
    "check_message_delivery": check_message_delivery,
    "check_state_roundtrip": check_state_roundtrip,
    "check_thread_determinism": check_thread_determinism,
}


def check_multiagent_env(env: MultiAgentEnv, seed: int = 0, skip: Iterable[str] = ()) -> None:
    """Run every check in :data:`CHECKS` (minus ``skip``) on ``env``.

    Raises :class:`EnvCheckError` listing every failed check, each with what to fix.
    """
    if not isinstance(env, MultiAgentEnv):
        raise TypeError(
            f"check_multiagent_env takes a gem.MultiAgentEnv, got {type(env).__name__}; "
            "use gem.checks.check_env for single-agent envs."
        )
    run_checks(CHECKS, env, seed, skip)
