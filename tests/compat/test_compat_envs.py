"""Code written for the original GEM (gem-llm 0.1.0 and its main branch) runs unchanged: debug helpers,
ReasoningGym, multi-agent, games and parsing. One test per behaviour the original's users rely on."""

from __future__ import annotations

import io
import re

import pytest

import gem


# ------------------------------------------------------------------- gem.utils.debug
def test_debug_run_and_print_episode_prints_each_step_until_done():
    from gem.utils.debug import run_and_print_episode

    env = gem.make("game:GuessTheNumber-v0-easy")
    out = io.StringIO()
    guesses = iter(range(1, 11))
    run_and_print_episode(env, lambda obs: f"\\boxed{{{next(guesses)}}}", file=out)
    text = out.getvalue()
    steps = text.count("---------- action ----------")
    assert 1 <= steps <= 4 and text.count("---------- observation ----------") == steps
    assert re.search(r"terminated: (True truncated: (True|False)|False truncated: True)\n=+\n----TIME", text)
    assert re.search(r"----TIME: \d+\.\d\d seconds", text)


def test_debug_helpers_on_a_vector_env_and_async(capsys):
    import asyncio

    from gem.utils.debug import run_and_print_episode, run_and_print_episode_async

    vec = gem.make_vec(["game:GuessTheNumber-v0-easy"] * 2)
    run_and_print_episode(vec, lambda obs: ["\\boxed{1}"] * len(obs), ignore_done=True, max_steps=3)
    printed = capsys.readouterr().out  # stdout by default: it is a debugging printer
    assert printed.count("---------- reward ----------") == 3

    class AsyncEnv:
        def __init__(self) -> None:
            self.env = gem.make("game:GuessTheNumber-v0-easy")

        async def reset(self):
            return self.env.reset(seed=0)

        async def step(self, action):
            return self.env.step(action)

    out = io.StringIO()
    asyncio.run(run_and_print_episode_async(AsyncEnv(), lambda obs: "no box", file=out))
    assert out.getvalue().count("---------- action ----------") == 1  # a format error ends it


# ------------------------------------------------------------------------ ReasoningGym
@pytest.fixture
def rg():
    return pytest.importorskip("reasoning_gym")


def test_rg_huge_size_is_lazy(rg):
    import tracemalloc

    gem.make("rg:leg_counting").reset()  # imports outside the measurement
    tracemalloc.start()
    try:
        env = gem.make("rg:leg_counting", seed=10, size=int(1e9))
        obs, _ = env.reset()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 5_000_000 and "legs" in obs
    # the original's walk: item i of the seed's stream, in order
    assert obs == rg.create_dataset("leg_counting", size=5, seed=10)[0]["question"]


def test_rg_seed_is_the_given_one_and_spawned_children_keep_theirs(rg):
    env = gem.make("rg:simple_equations", seed=5)
    assert env.seed == 5
    children = [env.spawn(seed=s) for s in (6, 7)]
    assert [c.seed for c in children] == [6, 7]
    for child, seed in zip(children, (6, 7)):
        assert child.reset()[0] == rg.create_dataset("simple_equations", size=500, seed=seed)[0]["question"]


def test_rg_single_step_semantics_follow_the_original(rg):
    env = gem.make("rg:leg_counting")
    env.reset(seed=0)
    _, reward, terminated, truncated, _ = env.step("I think it is thirty")  # no \boxed{}
    assert (reward, terminated, truncated) == (0.0, True, True)
    env.reset(seed=0)
    gold = env.unwrapped.item["answer"]
    assert env.step(f"\\boxed{{{gold}}}")[1:4] == (1.0, True, True)
    env.reset(seed=1)
    entry = env.unwrapped.data  # the original's names for the item and the dataset
    assert entry == env.unwrapped.item and env.unwrapped.dataset.score_answer(entry["answer"], entry) == 1.0
    assert env.unwrapped.ds is env.unwrapped.dataset
    strict = gem.make("rg:leg_counting", use_format_error_reward=True)
    strict.reset(seed=0)
    assert strict.step("no box")[1] == -0.1


def test_rg_vector_of_seeded_envs_as_the_original_test(rg):
    vec = gem.make_vec(
        "rg:leg_counting", num_envs=3, vec_kwargs=[{"seed": 42 + i} for i in range(3)], size=int(1e9)
    )
    obs, _ = vec.reset()
    assert obs == [rg.create_dataset("leg_counting", size=1, seed=42 + i)[0]["question"] for i in range(3)]


# ------------------------------------------------------------------------ multi-agent
def test_multiagent_original_module_paths():
    from gem.envs.multiagent.multi_agent_env import AgentSelector as MainSelector
    from gem.multiagent import AgentSelector, MultiAgentEnv
    from gem.multiagent.multi_agent_env import MultiAgentEnv as OldPath

    assert MainSelector is AgentSelector and OldPath is MultiAgentEnv
    # the original's class, at its paths: gem.MultiAgentEnv with the original's subclass contract
    assert issubclass(MultiAgentEnv, gem.MultiAgentEnv) and MultiAgentEnv is not gem.MultiAgentEnv
    from gem.envs.multiagent.multi_agent_env import MultiAgentEnv as MainBranchPath

    assert MainBranchPath is MultiAgentEnv


def test_multiagent_subclass_written_the_original_way():
    from gem.multiagent import AgentSelector, MultiAgentEnv

    class Echo(MultiAgentEnv):
        def __init__(self):
            super().__init__()
            self.possible_agents = ["alice", "bob"]
            self.agent_selector = AgentSelector(self.possible_agents, mode="sequential")
            self.said: list[str] = []

        def observe(self, agent):
            return f"{agent}: heard {self.said[-1] if self.said else 'nothing'}"

        def _process_actions(self, actions):
            (agent, text), = actions.items()
            self.said.append(text)
            done = text == "bye"
            if done:
                self.terminations[agent] = True
            reward = 1.0 if done else 0.0
            return {agent: self.observe(agent)}, {agent: reward}, {agent: done}, {agent: False}, {agent: {}}

    env = Echo()
    obs, infos = env.reset(seed=0)
    assert obs == {"alice": "alice: heard nothing", "bob": "bob: heard nothing"}
    assert infos == {"alice": {}, "bob": {}}
    assert env.step({"alice": "hi"})[0] == {"alice": "alice: heard hi"}
    assert env.agent_selector.selected == "bob"
    with pytest.raises(ValueError):
        env.step({"alice": "out of turn"})
    _, rewards, terms, _, _ = env.step({"bob": "bye"})
    assert rewards == {"bob": 1.0} and terms == {"bob": True} and env.agents == ["alice"]
    assert env._cumulative_rewards == {"alice": 0.0}


# ------------------------------------------------------------------------------- games
def test_fifteen_puzzle_original_options():
    from gem.envs.game_env.fifteen_puzzle import FifteenPuzzleEnv, goal_board, is_solvable

    env = FifteenPuzzleEnv(max_turns=100, num_rows=4, init_algo="monte_carlo", mc_rand_moves=20)
    env.reset(seed=3)
    assert env.scramble_moves == 20 and is_solvable(env.tiles, 4) and env.tiles != goal_board(4)
    twin = FifteenPuzzleEnv(max_turns=100, num_rows=4, init_algo="monte_carlo", mc_rand_moves=20)
    twin.reset(seed=3)
    assert twin.tiles == env.tiles
    random_env = FifteenPuzzleEnv(max_turns=100, num_rows=4, init_algo="pure_random")
    random_env.reset(seed=3)
    assert is_solvable(random_env.tiles, 4)
    with pytest.raises(ValueError, match="monte_carlo, pure_random"):
        FifteenPuzzleEnv(init_algo="greedy")


def test_minesweeper_sample_random_action_reveal_or_flag():
    env = gem.make("game:Minesweeper-v0-easy")
    env.reset(seed=0)
    assert env.sample_random_action(reveal_or_flag="flag").startswith("\\boxed{flag ")
    assert env.unwrapped.sample_random_action(reveal_or_flag="reveal").startswith("\\boxed{reveal ")


# ----------------------------------------------------------------------------- parsing
def test_parsing_keyword_names_of_the_original():
    from gem.utils.parsing import (
        extract_code_from_model,
        extract_last_boxed_answer,
        extract_last_tagged_answer,
        last_boxed_only_string,
        remove_boxed,
    )

    assert extract_last_boxed_answer(solution="a \\boxed{1} b \\boxed{2}") == "2"
    assert last_boxed_only_string(string="x \\boxed{y}") == "\\boxed{y}"
    assert remove_boxed(s="\\boxed{z}") == "z"
    assert extract_code_from_model(model_response="```\nprint(2)\n```") == "print(2)"
    assert extract_last_tagged_answer(model_response="<answer> yes </answer>") == "yes"


def test_data_names_lists_the_search_eval_splits():
    from gem.envs import data_names

    assert ("nq", "NaturalQuestions") in data_names and len(data_names) == 7
    for split, name in data_names:
        assert gem.spec(f"eval:{name}").kwargs["split"] == split
