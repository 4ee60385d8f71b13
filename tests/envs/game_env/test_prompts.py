"""Every game's prompts ask for a move once, the first one for the first move, and none after the end.

A prompt is what a model is shown: the observation plus ``info["suffix"]``, joined by
``gem.utils.prompting.user_content`` (as agents, ``gem eval``, ``gem.rl`` and the observation
wrappers build it). Episodes are played by the solver, by random moves and by an unreadable reply.
"""

from __future__ import annotations

import re

import pytest

import gem
from gem.envs.registration import ENV_REGISTRY
from gem.utils.prompting import user_content
from tests.conftest import extra_installed, needs_extra

GAME_IDS = sorted(i for i in ENV_REGISTRY if i.startswith("game:"))


def _installed(env_id: str) -> bool:
    """Whether the id's extra (the word games need `games`) is installed."""
    extra = gem.spec(env_id).extra
    return not extra or extra_installed(extra)
# A request for the player's move, in any of the words the games use.
REQUEST = re.compile(
    r"\b(?:enter|submit|type|choose|pick)\s+(?:your|a|the)\s+(?:first\s+|next\s+)?"
    r"(?:guess|move|letter|find|answer|word|action|title)\b",
    re.I,
)
# A sentence that tells the player to do something (a terminal prompt must hold none).
IMPERATIVE = re.compile(r"(?:^|[.!?:]\s+)(?:Enter|Put|Write|Answer|Submit|Type|Choose|Pick|Try|Make|Guess)\b")
MAX_STEPS = 400


def _requests(prompt: str) -> list[str]:
    return [m.group(0) for m in REQUEST.finditer(prompt)]


def _play(env_id: str, policy: str, seed: int) -> list[tuple[str, bool]]:
    """(prompt, whether the step ended the episode) for the first prompt and every step after it."""
    if not _installed(env_id):
        needs_extra(gem.spec(env_id).extra)
    env = gem.make(env_id)
    obs, info = env.reset(seed=seed)
    prompts = [(user_content(obs, info), False)]
    solver = env.make_solver() if policy == "solver" else None
    if solver is not None:
        solver.reset(obs, info)
    for _ in range(MAX_STEPS):
        if policy == "junk":
            action = "I would rather not say."
        elif solver is not None:
            action = solver.act(obs, info)
        else:
            action = env.sample_random_action()
        obs, _, terminated, truncated, info = env.step(action)
        prompts.append((user_content(obs, info), terminated or truncated))
        if terminated or truncated:
            return prompts
    raise AssertionError(f"{env_id} did not end within {MAX_STEPS} steps of {policy} play")


@pytest.mark.parametrize("policy", ["solver", "random", "junk"])
@pytest.mark.parametrize("env_id", GAME_IDS)
def test_each_prompt_asks_once_and_the_end_asks_nothing(env_id, policy):
    prompts = _play(env_id, policy, seed=1)
    first = prompts[0][0]
    assert len(_requests(first)) == 1, f"first prompt asks {_requests(first)}:\n{first[-300:]}"
    assert not re.search(r"\bnext\s+(?:guess|move|letter|find)\b", first, re.I), first[-300:]
    for prompt, ended in prompts[1:]:
        if ended:
            assert _requests(prompt) == [], f"the game is over, yet the prompt asks {_requests(prompt)}:\n{prompt[-300:]}"
            told = [m.group(0).strip(" .!?:") for m in IMPERATIVE.finditer(prompt)]
            assert told == [], f"the game is over, yet the prompt says {told}:\n{prompt[-300:]}"
        else:
            assert len(_requests(prompt)) == 1, f"prompt asks {_requests(prompt)}:\n{prompt[-300:]}"
            assert not re.search(r"\bfirst\s+(?:guess|move|letter|find)\b", prompt, re.I), prompt[-300:]


def test_no_first_prompt_holds_two_enter_your_guess_instructions():
    """The case as users met it: "Enter your first guess." followed by "Enter your next guess."."""
    for env_id in filter(_installed, ("game:GuessTheNumber-v0", "game:Mastermind-v0-easy", "game:Wordle-v0-easy")):
        env = gem.make(env_id)
        obs, info = env.reset(seed=0)
        prompt = user_content(obs, info)
        assert len(re.findall(r"enter your [a-z ]*guess", prompt, re.I)) == 1, prompt[-200:]
        assert "Enter your first guess." in prompt


def test_the_original_get_task_suffix_still_answers():
    """``get_task_suffix()`` is the original's public method; it still returns the request for a move."""
    for env_id in filter(_installed, ("game:GuessTheNumber-v0", "game:Sudoku-v0-easy", "game:Wordle-v0-easy")):
        env = gem.make(env_id)
        env.reset(seed=0)
        assert _requests(env.get_task_suffix())
