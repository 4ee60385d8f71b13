"""Multi-agent envs written the original GEM's way (``observe`` + ``_process_actions``) run unchanged
on the original's class, ``gem.multiagent.MultiAgentEnv``."""

from __future__ import annotations

import pytest

import gem
import gem.multiagent


class Relay:
    """Shared body of the test games: each action adds its length to a total; "quit" leaves."""

    def observe(self, agent: str) -> str:
        return f"{agent} sees total {self.total}"

    def _process_actions(self, actions):
        observations, rewards, terminations, truncations, infos = {}, {}, {}, {}, {}
        for agent, action in actions.items():
            self.total += len(action)
            rewards[agent] = float(len(action))
            if action == "quit":
                self.terminations[agent] = True
            observations[agent] = self.observe(agent)
            terminations[agent] = self.terminations[agent]
            truncations[agent] = False
            infos[agent] = {"total": self.total}
        return observations, rewards, terminations, truncations, infos


def make_turn_game(module_path: str):
    """A sequential game subclassing the MultiAgentEnv found at ``module_path``."""
    import importlib

    module = importlib.import_module(module_path)

    class TurnGame(Relay, module.MultiAgentEnv):
        def __init__(self):
            super().__init__()
            self.possible_agents = ["p1", "p2", "p3"]
            self.agent_selector = module.AgentSelector(self.possible_agents, mode="sequential")
            self.total = 0

    return TurnGame


class AllAtOnce(Relay, gem.multiagent.MultiAgentEnv):
    """No selector: every live agent acts each step (as in the original)."""

    def __init__(self):
        super().__init__()
        self.possible_agents = ["a", "b"]
        self.total = 0


@pytest.mark.parametrize(
    "module_path",
    ["gem.multiagent", "gem.multiagent.multi_agent_env", "gem.envs.multiagent.multi_agent_env", "gem.envs.multiagent"],
)
def test_original_module_paths_give_the_same_classes(module_path):
    import importlib

    module = importlib.import_module(module_path)
    assert module.MultiAgentEnv is gem.multiagent.MultiAgentEnv and module.AgentSelector is gem.multiagent.AgentSelector
    assert issubclass(module.MultiAgentEnv, gem.MultiAgentEnv) and module.MultiAgentEnv is not gem.MultiAgentEnv
    game = make_turn_game(module_path)()
    obs, infos = game.reset(seed=1)
    assert obs == {a: f"{a} sees total 0" for a in ("p1", "p2", "p3")}
    assert infos == {"p1": {}, "p2": {}, "p3": {}}


def test_sequential_turns_rewards_and_leaving():
    env = make_turn_game("gem.multiagent")()
    env.reset()
    assert env.agent_selector.get_active_agents() == ["p1"]
    obs, rew, term, trunc, info = env.step({"p1": "abc"})
    assert (obs, rew, term, trunc, info) == (
        {"p1": "p1 sees total 3"}, {"p1": 3.0}, {"p1": False}, {"p1": False}, {"p1": {"total": 3}}
    )
    assert env.agent_selector.selected == "p2"
    with pytest.raises(ValueError, match="Missing action for active agent p2"):
        env.step({})
    with pytest.raises(ValueError, match="p3 provided action but is not active"):
        env.step({"p2": "x", "p3": "y"})
    env.step({"p2": "quit"})  # p2 leaves; the turn goes on to p3
    assert env.agents == ["p1", "p3"] and "p2" not in env.terminations
    assert env.agent_selector.selected == "p3"
    env.step({"p3": "zz"})
    env.step({"p1": "q"})
    assert env._cumulative_rewards == {"p1": 4.0, "p3": 2.0}
    assert env.get_state("p1") == ("p1 sees total 10", 4.0, False, False, {})
    assert set(env.get_active_states()) == {"p3"}
    with pytest.raises(ValueError, match="must be a dict"):
        env.step("p3's move")


def test_first_agent_leaving_does_not_skip_the_next():
    env = make_turn_game("gem.multiagent")()
    env.reset()
    env.step({"p1": "quit"})
    assert env.agent_selector.selected == "p2"


def test_without_a_selector_everyone_acts():
    env = AllAtOnce()
    assert env.mode == "simultaneous"
    env.reset()
    _, rewards, term, _, _ = env.step({"a": "quit", "b": "xy"})
    assert rewards == {"a": 4.0, "b": 2.0} and term == {"a": True, "b": False}
    assert env.agents == ["b"]
    with pytest.raises(ValueError, match="Missing action for active agent b"):
        env.step({})
    env.add_agent("c")
    assert env.agents == ["b", "c"] and env.possible_agents == ["a", "b"]
    env.send_message("b", "c", "hello")
    env.broadcast_message("c", "hi all")
    assert env.shared_memory == [
        {"from": "b", "to": "c", "message": "hello"},
        {"from": "c", "to": "b", "message": "hi all"},
    ]
    env.reset()
    assert env.agents == ["a", "b"] and env.shared_memory == []


def test_incomplete_subclasses_cannot_be_instantiated():
    class NoHooks(gem.MultiAgentEnv):
        def observe(self, agent):
            return ""

    with pytest.raises(TypeError, match="_process_actions subclasses gem.multiagent.MultiAgentEnv"):
        NoHooks()

    class NoObserve(gem.multiagent.MultiAgentEnv):
        def _process_actions(self, actions):
            return {}, {}, {}, {}, {}

    with pytest.raises(TypeError):
        NoObserve()

    class NoProcessActions(gem.multiagent.MultiAgentEnv):  # abstract in the original too
        def observe(self, agent):
            return ""

    with pytest.raises(TypeError, match="_process_actions"):
        NoProcessActions()


def test_the_original_contract_on_gem_multiagentenv_is_refused_with_the_class_to_use():
    with pytest.raises(TypeError, match=r"Relayed implements _process_actions.*subclass gem\.multiagent\.MultiAgentEnv"):
        class Relayed(Relay, gem.MultiAgentEnv):
            pass


def test_the_original_contract_lives_in_gem_compat_and_native_games_do_not_carry_it():
    from gem.compat.multiagent import MultiAgentEnv as OriginalMultiAgentEnv
    from gem.envs.multiagent.tictactoe import TicTacToeEnv

    assert OriginalMultiAgentEnv is gem.multiagent.MultiAgentEnv
    assert OriginalMultiAgentEnv in make_turn_game("gem.multiagent").__mro__
    assert OriginalMultiAgentEnv not in TicTacToeEnv.__mro__
    assert all(not k.__module__.startswith("gem.compat") for k in gem.MultiAgentEnv.__mro__)
    assert not hasattr(TicTacToeEnv, "_process_actions")
    env = AllAtOnce()
    env.reset(seed=0)
    assert env.mode == "simultaneous" and env.active_agents() == ["a", "b"]
