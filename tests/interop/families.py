"""What the bridge and conformance tests share: one id of every family (each runs offline), and
playing an episode locally, recording its actions, then replaying them through a bridge."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import gem

FAMILY_IDS = {
    "game": "game:Mastermind-v0-easy",
    "math": "math:Arithmetic",
    "code": "code:Bundled",
    "qa": "qa:FictionalSearch",
    "rg": "rg:basic_arithmetic",
    "logic": "logic:RuleReasoning-d1",
    "multi": "multi:TicTacToe-v0-vs-scripted",
    "terminal": "terminal:CountLines",
}


@dataclass
class Trace:
    """An episode as the agent saw it: the first observation, then one entry per step."""

    first: str
    actions: list[str] = field(default_factory=list)
    steps: list[tuple[str, float, bool, bool]] = field(default_factory=list)  # obs, reward, term, trunc
    infos: list[dict] = field(default_factory=list, compare=False)  # reset's info, then each step's

    def as_user_messages(self) -> "Trace":
        """The episode as a chat sees it: each observation with its info's instruction
        (:func:`gem.utils.prompting.user_content`), as GEM's agents send it to a model."""
        from gem.utils.prompting import user_content

        first = user_content(self.first, self.infos[0])
        steps = [(user_content(o, i), r, t, tr) for (o, r, t, tr), i in zip(self.steps, self.infos[1:])]
        return Trace(first, list(self.actions), steps, list(self.infos))

    @property
    def total(self) -> float:
        return sum(s[1] for s in self.steps)


def record(env_id: str, seed: int, max_steps: int = 30, **kwargs: Any) -> Trace:
    """Play ``env_id`` locally: its solver where it has one, else its own random actions."""
    env = gem.make(env_id, **kwargs)
    try:
        obs, info = env.reset(seed=seed)
        trace = Trace(obs, infos=[info])
        try:
            agent = env.make_solver()
            agent.reset(obs, info)
            act: Callable[[str, dict], str] = agent.act
        except NotImplementedError:
            act = lambda _obs, _info: env.sample_random_action()  # noqa: E731
        for _ in range(max_steps):
            action = act(obs, info)
            obs, reward, terminated, truncated, info = env.step(action)
            trace.actions.append(action)
            trace.steps.append((obs, float(reward), bool(terminated), bool(truncated)))
            trace.infos.append(info)
            if terminated or truncated:
                break
        return trace
    finally:
        env.close()


def replay(env: Any, seed: int, actions: list[str]) -> Trace:
    """The same actions through ``env`` (a GEM env, or anything with GEM's reset/step)."""
    obs, _ = env.reset(seed=seed)
    trace = Trace(obs)
    for action in actions:
        obs, reward, terminated, truncated, _ = env.step(action)
        trace.actions.append(action)
        trace.steps.append((obs, float(reward), bool(terminated), bool(truncated)))
        if terminated or truncated:
            break
    return trace
